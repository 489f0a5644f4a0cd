"""VGF -> run on tosa_vk's Vulkan runtime: each COMPUTE segment becomes a Kernel whose SPIR-V comes from the file.

Supported: COMPUTE segments with SPIR-V modules (entry point `main`), storage-buffer resources bound at set 0,
bindings 0..n-1, no push-constant ranges (VGF carries no push-constant values). Every MRT entry gets its own
range of one arena (alias groups share one range); CONSTANT entries are filled from the constant section, also
when they are listed as model-sequence inputs (as tosa_vk's exporter does), so callers feed only the real inputs.
GRAPH segments (TOSA graphs for VK_ARM_data_graph) are refused with a clear error for now.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from vgf import VGF, read_vgf
from vgf.scenario import FORMAT_SIZES, STORAGE_BUFFER

from .errors import TosaError
from .plan.resources import FORMAT_VALUES, SCALAR_FORMATS
from .program import Buffer, Kernel, Program
from .vulkan import Device
from .vulkan.memory import align

# VkFormat value -> numpy storage dtype
_DTYPES = {13: np.uint8, 74: np.uint16, 98: np.uint32, 110: np.uint64, 112: np.float64}
for _dt, _fmt in SCALAR_FORMATS.items():
    _DTYPES.setdefault(FORMAT_VALUES[_fmt], _dt.numpy)


def vgf_program(vgf: VGF, file: str | None = None, alignment: int = 256) -> Program:
    """A Program running the VGF's segments in order (kernels carry the modules' SPIR-V)."""
    def fail(rule: str, op: str | None = None) -> TosaError:
        return TosaError(rule, op=op, file=file)
    graph = [s.name for s in vgf.segments if s.type == "GRAPH"]
    if graph:
        raise fail(f"graph segments are not supported (segment '{graph[0]}'; {len(graph)} of "
                   f"{len(vgf.segments)} segments are GRAPH): only COMPUTE segments run on tosa_vk")
    names: dict[int, str] = {}
    for slots, labels in ((vgf.inputs, vgf.input_names), (vgf.outputs, vgf.output_names)):
        for i, slot in enumerate(slots):
            names.setdefault(slot.mrt_index, labels[i] if i < len(labels) and labels[i] else f"mrt_{slot.mrt_index}")
    buffers: dict[str, Buffer] = {}
    offsets: dict[int, int] = {}      # alias group -> offset
    arena = 0
    constants: dict[str, np.ndarray] = {}
    for index, r in enumerate(vgf.resources):
        name = names.setdefault(index, f"mrt_{index}")
        dtype = _DTYPES.get(r.format)
        if dtype is None or r.format not in FORMAT_SIZES:
            raise fail(f"resource {index} '{name}': VkFormat {r.format} is not supported")
        if r.descriptor_type not in (STORAGE_BUFFER, None):
            raise fail(f"resource {index} '{name}': descriptor type {r.descriptor_type} is not supported (only "
                       f"storage buffers, {STORAGE_BUFFER})")
        shape = tuple(int(d) for d in r.shape)
        if any(d < 0 for d in shape):
            raise fail(f"resource {index} '{name}': shape {list(shape)} has unknown dimensions")
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if r.alias_group is not None and r.alias_group in offsets:
            offset = offsets[r.alias_group]
        else:
            offset = arena
            arena = align(arena + max(nbytes, 4), alignment)
            if r.alias_group is not None:
                offsets[r.alias_group] = offset
        kind = {"INPUT": "input", "OUTPUT": "output", "CONSTANT": "constant"}.get(r.category, "intermediate")
        buffers[name] = Buffer(name, offset, nbytes, shape, np.dtype(dtype), kind)
        if r.category == "CONSTANT":
            c = vgf.constant_for(index)
            if c is None:
                raise fail(f"constant resource {index} '{name}' has no data in the constant section")
            if len(c.data) != nbytes:
                raise fail(f"constant resource {index} '{name}': {len(c.data)} bytes of data for shape "
                           f"{list(shape)} ({nbytes} bytes)")
            constants[name] = np.frombuffer(c.data, dtype).reshape(shape)
    steps = []
    for s in vgf.segments:
        module = vgf.modules[s.module_index]
        if module.language != "SPIR-V" or not module.code:
            raise fail(f"module {s.module_index} '{module.name}' holds {module.language or 'no'} code; only SPIR-V "
                       f"modules run here", op=s.name)
        if s.push_constant_ranges:
            raise fail("the segment declares push-constant ranges, but a VGF carries no push-constant values",
                       op=s.name)
        if len(s.dispatch_shape) != 3:
            raise fail("a COMPUTE segment needs a 3-value dispatch shape", op=s.name)
        where = sorted((s.set_index(i), b.binding, b.mrt_index) for i, d in enumerate(s.set_infos)
                       for b in d.bindings)
        bound = tuple(names[m] for _, _, m in where)
        slots = tuple((st, b) for st, b, _ in where)
        if slots == tuple((0, b) for b in range(len(slots))):
            slots = ()
        reads = tuple(names[b.mrt_index] for b in s.inputs) if s.inputs or s.outputs else bound
        writes = tuple(names[b.mrt_index] for b in s.outputs) if s.inputs or s.outputs else bound
        steps.append(Kernel(s.name, f"vgf:{module.name or s.module_index}", (), bound, b"", tuple(s.dispatch_shape),
                            reads, writes, spirv=bytes(module.code), entry=module.entry_point or "main",
                            slots=slots))
    inputs = [names[b.mrt_index] for b in vgf.inputs if vgf.resources[b.mrt_index].category != "CONSTANT"]
    outputs = [names[b.mrt_index] for b in vgf.outputs]
    return Program(steps, buffers, max(arena, 16), inputs, outputs, constants)


class VGFModel:
    """A .vgf loaded onto a Vulkan device: run(feeds by input name) -> outputs by name."""

    def __init__(self, source: str | Path | VGF, device: Device | None = None, file: str | None = None):
        from .vulkan.runtime import Runtime
        if isinstance(source, VGF):
            self.vgf, self.file = source, file
        else:
            self.file = file or str(source)
            self.vgf = read_vgf(source, file=self.file)
        self.program = vgf_program(self.vgf, self.file)
        self.own_device = device is None
        self.device = device or Device()
        try:
            self.runtime = Runtime(self.program, self.device)
        except BaseException:
            self.close()
            raise

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {n: (self.program.buffer(n).shape, self.program.buffer(n).dtype.name) for n in self.program.inputs}

    @property
    def outputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {n: (self.program.buffer(n).shape, self.program.buffer(n).dtype.name) for n in self.program.outputs}

    def run(self, feeds: dict[str, np.ndarray] | None = None, **named) -> dict[str, np.ndarray]:
        feeds = {**(feeds or {}), **named}
        missing = [n for n in self.program.inputs if n not in feeds]
        unknown = sorted(set(feeds) - set(self.program.inputs))
        if missing or unknown:
            raise TosaError(f"VGF inputs {self.program.inputs} expected; missing {missing}, unknown {unknown}",
                            file=self.file)
        cast = {}
        for name in self.program.inputs:
            buf = self.program.buffer(name)
            value = np.asarray(feeds[name])
            if value.size != int(np.prod(buf.shape, dtype=np.int64)):
                raise TosaError(f"input '{name}' has shape {list(value.shape)}, the VGF expects {list(buf.shape)}",
                                file=self.file)
            cast[name] = value.astype(buf.dtype, copy=False).reshape(buf.shape)
        return self.runtime.run(cast)

    def close(self) -> None:
        runtime = getattr(self, "runtime", None)
        if runtime is not None:
            runtime.close()
            self.runtime = None
        if getattr(self, "own_device", False) and getattr(self, "device", None) is not None:
            self.device.close()
            self.device = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

"""A .vgf -> a Program for tosa_vk's Vulkan runtime (run by tosa_vk/backends/vgf.py): each COMPUTE segment becomes a
Kernel whose SPIR-V comes from the file.

Supported: COMPUTE segments with SPIR-V or GLSL modules (any entry point, any descriptor sets / bindings), no
push-constant ranges (VGF carries no push-constant values); resources bound as STORAGE_BUFFER, TENSOR_ARM (bound as
a storage buffer: the shaders tosa_vk and Arm's model-converter embed for custom ops declare buffers), STORAGE_IMAGE
and COMBINED_IMAGE_SAMPLER (fp32 texels of an [H, W, C] / [1, H, W, C] resource, the sampler from the entry's
SamplerConfig; the runtime copies them between the arena and VkImages around the dispatch). Every MRT entry gets
its own range of one arena (alias groups share one range); CONSTANT entries bound by compute segments are filled
from the constant section, also when they are listed as model-sequence inputs (as tosa_vk's exporter did before
its files carried a constant graph), so callers feed only the real inputs.

A constant graph (a GRAPH segment that only sets graph constants, tosa_vk/formats/spirv_graph/constants.py) fills its
output tensors' ranges of the arena once, at load; a compute segment writing into that memory (the tensor or its
alias group) is refused, since a file runner would restore the constant on every run and we would not. Other GRAPH
segments (TOSA graphs for VK_ARM_data_graph) are refused clearly. This runs the VGFs tosa_vk exports and those Arm's
model-converter writes for graphs of com.arm.VulkanCustomShader operators.

The translation, in the order vgf_program takes it: the constant graphs' data, each resource's name, the arena
(each resource's buffer, alias groups sharing memory), one Kernel per COMPUTE segment, the model's inputs and
outputs.
"""

from __future__ import annotations

import math

import numpy as np

from vgf import VGF
from vgf.scenario import FORMAT_SIZES, IMAGE_DESCRIPTORS, image_extent, resource_bytes
from vgf.vk_enums import DESCRIPTOR_NAMES, FORMAT_BY_VALUE, FORMAT_NAMES, FORMATS, SAMPLER_NAMES, STORAGE_BUFFER

from ..abi.glsl_preprocessor import refusal
from ..errors import TosaError
from ..program import Buffer, Image, Kernel, Program, Step
from ..vulkan.memory import align
from .spirv_graph.constants import constant_graph_outputs
from .vgf_graph import io_alias_problem

# VkFormat value -> numpy dtype of the arena view (a component's storage type; ml_dtypes names for bf16 / fp8)
_DTYPES = {f.value: np.dtype(f.numpy) for f in FORMATS.values()}


def vgf_program(vgf: VGF, file: str | None = None, alignment: int = 256) -> Program:
    """A Program running the VGF's segments in order (kernels carry the modules' SPIR-V)."""

    def fail(rule: str, op: str | None = None) -> TosaError:
        return TosaError(rule, op=op, file=file)

    filled = _constant_graphs(vgf, fail)  # MRT index -> its constant's data, set by a constant graph
    names = _resource_names(vgf, fail)
    buffers, constants, arena = _arena(vgf, names, filled, alignment, fail)
    held = {vgf.resources[m].alias_group for m in filled} - {None}  # memory a constant graph fills once
    # a GRAPH segment is a constant graph (_constant_graphs refused any other): its outputs are filled at load
    steps: list[Step] = [_kernel(vgf, s, names, filled, held, fail) for s in vgf.segments if s.type != "GRAPH"]
    inputs, outputs = _model_io(vgf, names, steps, filled, fail)
    return Program(steps, buffers, max(arena, 16), inputs, outputs, constants)


def _resource_names(vgf: VGF, fail) -> dict[int, str]:
    """MRT index -> the name of every resource: the model sequence's input / output name, else mrt_<index>; each
    name once, each model input and output listed once, no model output an INPUT or CONSTANT entry."""
    names: dict[int, str] = {}
    for io, labels in ((vgf.inputs, vgf.input_names), (vgf.outputs, vgf.output_names)):
        for i, slot in enumerate(io):
            names.setdefault(slot.mrt_index, labels[i] if i < len(labels) and labels[i] else f"mrt_{slot.mrt_index}")
    taken: dict[str, int] = {}
    for index in range(len(vgf.resources)):
        label = names.setdefault(index, f"mrt_{index}")
        if taken.setdefault(label, index) != index:
            raise fail(f"resources {taken[label]} and {index} are both named '{label}'")
    for kind, listed in (("input", vgf.inputs), ("output", vgf.outputs)):
        twice = [m for m in {b.mrt_index for b in listed} if sum(b.mrt_index == m for b in listed) > 1]
        if twice:
            raise fail(f"model {kind} resource {twice[0]} is listed twice in the model sequence")
    for b in vgf.outputs:
        if vgf.resources[b.mrt_index].category in ("INPUT", "CONSTANT"):
            raise fail(
                f"model output '{names[b.mrt_index]}' is resource {b.mrt_index}, an "
                f"{vgf.resources[b.mrt_index].category} entry"
            )
    return names


def _arena(
    vgf: VGF, names: dict[int, str], filled: dict[int, bytes], alignment: int, fail
) -> tuple[dict[str, Buffer], dict[str, np.ndarray], int]:
    """(name -> Buffer, name -> constant data, arena bytes): every resource's range of one arena, an alias group's
    members sharing one range, in resource order; constants from the constant section or a constant graph."""
    group_bytes = _alias_groups(vgf, fail)
    # CONSTANT entries only a constant graph reads need no memory of their own (their data is in `filled`)
    read_as_is = {b.mrt_index for s in vgf.segments if s.type == "COMPUTE" for d in s.set_infos for b in d.bindings}
    read_as_is |= {b.mrt_index for b in vgf.inputs}
    buffers: dict[str, Buffer] = {}
    offsets: dict[int, int] = {}  # alias group -> offset
    arena = 0
    constants: dict[str, np.ndarray] = {}
    for index, r in enumerate(vgf.resources):
        name = names[index]
        if r.category == "CONSTANT" and index not in read_as_is:
            continue
        shape, dtype = _resource_type(index, name, r, fail)
        nbytes = math.prod(shape) * dtype.itemsize
        if r.alias_group is not None and r.alias_group in offsets:
            offset = offsets[r.alias_group]
        else:
            offset = arena
            span = nbytes if r.alias_group is None else group_bytes[r.alias_group]
            arena = align(arena + max(span, 4), alignment)
            if r.alias_group is not None:
                offsets[r.alias_group] = offset
        kind = {"INPUT": "input", "OUTPUT": "output", "CONSTANT": "constant"}.get(r.category, "intermediate")
        if index in filled:
            kind = "output" if r.category == "OUTPUT" else "constant"
            if r.category == "INPUT" or len(filled[index]) != nbytes:
                raise fail(
                    f"resource {index} '{name}' ({r.category}, {nbytes} bytes) is a constant graph's output "
                    f"holding {len(filled[index])} bytes of constant data"
                )
            constants[name] = np.frombuffer(filled[index], dtype).reshape(shape)
        buffers[name] = Buffer(name, offset, nbytes, shape, dtype, kind)
        if r.category == "CONSTANT":
            c = vgf.constant_for(index)
            if c is None:
                raise fail(f"constant resource {index} '{name}' has no data in the constant section")
            if len(c.data) != nbytes:
                raise fail(
                    f"constant resource {index} '{name}': {len(c.data)} bytes of data for shape "
                    f"{list(shape)} ({nbytes} bytes)"
                )
            constants[name] = np.frombuffer(c.data, dtype).reshape(shape)
    return buffers, constants, arena


def _resource_type(index: int, name: str, r, fail) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, numpy dtype) of a resource whose format, descriptor type and shape tosa_vk runs: a scalar format for a
    buffer / tensor, an image's channels in the format's components."""
    dtype = _DTYPES.get(r.format)
    if dtype is None or r.format not in FORMAT_SIZES:
        raise fail(f"resource {index} '{name}': VkFormat {r.format} is not supported")
    if r.descriptor_type is not None and r.descriptor_type not in DESCRIPTOR_NAMES:
        raise fail(
            f"resource {index} '{name}': descriptor type {r.descriptor_type} is not supported (storage "
            f"buffers, tensors, storage images, combined image samplers)"
        )
    shape = tuple(int(d) for d in r.shape)
    if any(d < 0 for d in shape):
        raise fail(f"resource {index} '{name}': shape {list(shape)} has unknown dimensions")
    if r.descriptor_type in IMAGE_DESCRIPTORS:
        try:
            image_extent(r)
        except ValueError as err:
            raise fail(f"resource {index} '{name}': {err}") from None
        channels = FORMAT_BY_VALUE[r.format].components if r.format in FORMAT_BY_VALUE else None
        if channels != shape[-1]:
            raise fail(
                f"resource {index} '{name}': an image of format {r.format} needs C = {channels} "
                f"channels, the shape is {list(shape)}"
            )
    elif FORMAT_SIZES[r.format] != np.dtype(dtype).itemsize:
        raise fail(f"resource {index} '{name}': VkFormat {r.format} is not a scalar format for a buffer / tensor")
    return shape, np.dtype(dtype)


def _kernel(vgf: VGF, s, names: dict[int, str], filled: dict[int, bytes], held: set, fail) -> Kernel:
    """The Kernel of one COMPUTE segment: its module's SPIR-V (or GLSL), its bindings checked, what it reads and
    writes (its declared inputs / outputs, else what it binds), its descriptors."""
    module = vgf.modules[s.module_index]
    if module.language not in ("SPIR-V", "GLSL") or not module.code:
        raise fail(
            f"module {s.module_index} '{module.name}' holds {module.language or 'no'} code; only SPIR-V "
            f"and GLSL modules run here",
            op=s.name,
        )
    if s.push_constant_ranges:
        raise fail("the segment declares push-constant ranges, but a VGF carries no push-constant values", op=s.name)
    if len(s.dispatch_shape) != 3:
        raise fail("a COMPUTE segment needs a 3-value dispatch shape", op=s.name)
    where = sorted((s.set_index(i), b.binding, b.mrt_index) for i, d in enumerate(s.set_infos) for b in d.bindings)
    _check_bindings(s.name, where, [(b.mrt_index, vgf.resources[b.mrt_index].category) for b in s.outputs], fail)
    bound_mrts = {m for _, _, m in where}
    for kind, listed in (("input", s.inputs), ("output", s.outputs)):
        for b in listed:  # what the segment reads and writes is among what it binds
            if b.mrt_index not in bound_mrts:
                raise fail(
                    f"segment {kind} resource {b.mrt_index} is bound by none of the segment's descriptors",
                    op=s.name,
                )
    bound = tuple(names[m] for _, _, m in where)
    slots = tuple((st, b) for st, b, _ in where)
    if slots == tuple((0, b) for b in range(len(slots))):
        slots = ()
    declared = bool(s.inputs or s.outputs)  # else it may write whatever it binds but INPUT / CONSTANT entries
    reads = tuple(names[b.mrt_index] for b in s.inputs) if declared else bound
    writable = [m for _, _, m in where if vgf.resources[m].category not in ("INPUT", "CONSTANT")]
    writes = tuple(names[m] for m in ([b.mrt_index for b in s.outputs] if declared else writable))
    for m in [b.mrt_index for b in s.outputs] if declared else [m for _, _, m in where]:
        if m in filled or (vgf.resources[m].alias_group in held):
            raise fail(
                f"the segment {'writes' if declared else 'lists no inputs or outputs and binds'} resource {m} "
                f"'{names[m]}', memory a constant graph fills (tosa_vk fills it once, at load; a runner running "
                f"the graph every time would restore it)",
                op=s.name,
            )
    descriptors, images = _descriptors(vgf, [m for _, _, m in where])
    spirv = module.code if isinstance(module.code, bytes) and module.language == "SPIR-V" else b""
    source = str(module.code) if not spirv else ""
    if source and (why := refusal(source)):  # a model's GLSL may not read host files (gated at compile too)
        raise fail(f"module {s.module_index} '{module.name}': {why}", op=s.name)
    x, y, z = s.dispatch_shape
    return Kernel(
        s.name,
        f"vgf:{module.name or s.module_index}",
        (),
        bound,
        b"",
        (x, y, z),
        reads,
        writes,
        entry=module.entry_point or "main",
        slots=slots,
        descriptors=descriptors,
        images=images,
        source=source,
        spirv=spirv,
    )


def _descriptors(vgf: VGF, bound: list[int]) -> tuple[tuple[str, ...], tuple[Image | None, ...]]:
    """Each bound resource's descriptor type and image (None for a buffer); () and () when all are storage buffers."""
    descriptors: list[str] = []
    images: list[Image | None] = []
    for m in bound:
        r = vgf.resources[m]
        descriptors.append(
            STORAGE_BUFFER if r.descriptor_type is None else DESCRIPTOR_NAMES.get(r.descriptor_type, STORAGE_BUFFER)
        )
        if r.descriptor_type in IMAGE_DESCRIPTORS:
            w, h = image_extent(r)
            sampler = tuple(sorted((k, SAMPLER_NAMES[k].get(v, str(v))) for k, v in (r.sampler or {}).items()))
            images.append(Image(FORMAT_NAMES[r.format], w, h, sampler))
        else:
            images.append(None)
    if all(d == STORAGE_BUFFER for d in descriptors):
        return (), ()
    return tuple(descriptors), tuple(images)


def _model_io(vgf: VGF, names: dict[int, str], steps: list[Step], filled: dict[int, bytes], fail):
    """The model's input names (CONSTANT entries listed as inputs are filled, not fed) and output names, each output
    written by a segment or a constant graph."""
    inputs = [names[b.mrt_index] for b in vgf.inputs if vgf.resources[b.mrt_index].category != "CONSTANT"]
    outputs = [names[b.mrt_index] for b in vgf.outputs]
    if not outputs:
        raise fail("the model sequence has no outputs: nothing to run")
    written = {n for k in steps if isinstance(k, Kernel) for n in k.writes} | {names[m] for m in filled}
    unwritten = [n for n in outputs if n not in written]
    if unwritten:  # its bytes would be whatever the arena held: no result to report
        raise fail(f"model output '{unwritten[0]}' is written by no segment ({len(steps)} segment(s))")
    return inputs, outputs


def _constant_graphs(vgf: VGF, fail) -> dict[int, bytes]:
    """The data each constant graph sets into its output resources (MRT index -> bytes); any other GRAPH segment
    is refused. A graph constant id maps to a constant-section index by the segment's constant bindings (format
    0.5.0), or by its position in the segment's constants (earlier files)."""
    graph = [s for s in vgf.segments if s.type == "GRAPH"]
    filled: dict[int, bytes] = {}
    for s in graph:
        module = vgf.modules[s.module_index]
        outputs = constant_graph_outputs(module.code) if module.language == "SPIR-V" else None
        if outputs is None:
            raise fail(
                f"graph segments are not supported (segment '{s.name}'; {len(graph)} of {len(vgf.segments)} segments "
                f"are GRAPH): only COMPUTE segments, and GRAPH segments that only output constants, run on tosa_vk as "
                f"they are"
            )
        slots = {(s.set_index(i), b.binding): b.mrt_index for i, d in enumerate(s.set_infos) for b in d.bindings}
        ids = dict(s.graph_constants())
        for set_index, binding, gid in outputs:
            mrt, index = slots.get((set_index, binding)), ids.get(gid)
            if mrt is None or index is None or index >= len(vgf.constants):
                raise fail(
                    f"constant graph output at set {set_index} binding {binding} ("
                    + ("no resource is bound there" if mrt is None else f"graph constant {gid} names no constant")
                    + ")",
                    op=s.name,
                )
            if filled.setdefault(mrt, vgf.constants[index].data) != vgf.constants[index].data:
                raise fail(f"resource {mrt} is set to two different constants", op=s.name)
    return filled


def _alias_groups(vgf: VGF, fail) -> dict[int, int]:
    """Bytes each alias group spans (its largest member: every member's range must lie in the group's memory).
    A constant shares memory with no other category (writes to the others would change it between runs), a model
    input or output only with other views of itself (vgf_graph.io_alias_problem)."""
    sizes: dict[int, int] = {}
    categories: dict[int, set[str]] = {}
    for i, r in enumerate(vgf.resources):
        if r.alias_group is None or r.format not in FORMAT_SIZES:  # (an unknown format is refused by the caller)
            continue
        sizes[r.alias_group] = max(sizes.get(r.alias_group, 0), resource_bytes(vgf, i))
        categories.setdefault(r.alias_group, set()).add(r.category)
    for group, kinds in categories.items():
        if "CONSTANT" in kinds and len(kinds) > 1:
            raise fail(f"alias group {group} mixes a CONSTANT with {', '.join(sorted(kinds - {'CONSTANT'}))} entries")
    problem = io_alias_problem(vgf)
    if problem is not None:
        raise fail(problem)
    return sizes


def _check_bindings(op: str, where: list[tuple[int, int, int]], writes: list[tuple[int, str]], fail) -> None:
    """A segment's bindings: one resource per (set, binding); a resource the segment writes is bound once (a
    dispatch writing a buffer that it also reads through another binding has undefined results) and is no input
    or constant."""
    slots: dict[tuple[int, int], int] = {}
    for st, b, m in where:
        if slots.setdefault((st, b), m) != m:
            raise fail(f"set {st} binding {b} is bound to resources {slots[(st, b)]} and {m}", op=op)
    for m, category in writes:
        if category in ("INPUT", "CONSTANT"):
            raise fail(f"the segment writes resource {m}, an {category} entry", op=op)
        at = [f"set {st} binding {b}" for st, b, bound in where if bound == m]
        if len(at) > 1:
            raise fail(f"the segment writes resource {m} and binds it twice ({' and '.join(at)})", op=op)

"""Program -> VGF container (vgf/): one COMPUTE segment per kernel dispatch, in execution order.

- Modules: our SPIR-V, deduplicated by identical bytes. VGF carries push-constant *ranges* but no values (Arm's
  scenario-runner takes values from the scenario, per module name), while every tosa_vk dispatch has its own
  values. So a kernel with push constants is compiled as a baked variant: its preprocessed GLSL with the
  `layout(push_constant) uniform Params {...} p;` block turned into `const Params p = Params(<this dispatch's
  values>);` (std430 offsets decode the bytes). Its segment then declares no push-constant range and the file is
  self-contained. Dispatches with equal shader, defines and values share one module.
- Resources: one MRT entry per distinct memory (tosa_vk/plan/resources.py formats). Graph inputs INPUT, graph
  outputs OUTPUT, every other tensor memory INTERMEDIATE (scenario-runner allocates each; no arena packing); RESHAPE /
  IDENTITY aliases bind their storage's entry. Descriptor types follow the kernels: STORAGE_BUFFER, or for custom
  ops STORAGE_IMAGE / COMBINED_IMAGE_SAMPLER (shape [H, W, C] / [1, H, W, C], the packed texel format, a sampler's
  SamplerConfig in extra_config). A custom op's TENSOR_ARM binding is written as STORAGE_BUFFER: its shader declares
  a buffer (the runtime binds one there), and scenario-runner 0.11 binding a VkTensorARM to such a binding computes
  zeros. A memory bound as an image by one kernel and otherwise by another is refused (one descriptor type per
  entry; scenario-runner does not alias images with buffers).
- Custom kernels: inline GLSL (registered declarations, GLSL payloads) is compiled and baked like built-in kernels,
  with its (set, binding) slots and entry point; ready SPIR-V (SPIR-V payloads) is written as is, and refused when
  it has push constants (no values to give it, no source to bake them into).
- Constants: CONSTANT entries whose bytes are in the constant section. Scenario-runner only binds model-sequence
  I/O and INTERMEDIATE entries to compute segments, so each constant is also listed as a model-sequence input
  (named after its tensor) that a runner fills from the constant section (tosa_vk/vgf_run.py and the tests do);
  a runner that does not know this fails on the missing input instead of computing with garbage.
- An output sharing memory with an input, a constant or another output (RESHAPE(input), a repeated output) gets an
  OUTPUT entry of its own, filled by a data_layout/copy dispatch after all others.
Anything VGF cannot express (host steps, control flow, variables, the cases above) raises a TosaError naming the
step / tensor: the exporter never writes a file that would run wrong.
"""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import vulkan as vk

from vgf import VGF, Binding, Constant, DescriptorSet, Module, Resource, Segment, save_vgf

from .errors import TosaError
from .ir.dtype import DType
from .lower import grid_1d
from .lower.data_layout import MAX_RANK, UNIT_TYPES
from .plan.resources import DESCRIPTOR_VALUES, FORMAT_VALUES, IMAGE_TYPES, SCALAR_FORMATS, STORAGE_BUFFER
from .program import Kernel, Program, pack_push
from .vulkan.shaders import INCLUDE_DIR, SHADER_ROOT, TARGET_ENV, ShaderCache, ShaderError, Variant, variant_of

# numpy storage dtype -> VkFormat value (tensors the lowering made, which carry no TOSA DType)
_NUMPY_FORMATS = {np.dtype(np.uint8): 13, np.dtype(np.uint16): 74, np.dtype(np.uint32): 98,
                  np.dtype(np.uint64): 110, np.dtype(np.float64): 112}
for _dt, _fmt in SCALAR_FORMATS.items():
    _NUMPY_FORMATS.setdefault(_dt.numpy, FORMAT_VALUES[_fmt])
_NUMPY_FORMATS[DType.INT8.numpy] = FORMAT_VALUES["VK_FORMAT_R8_SINT"]
_NUMPY_FORMATS[DType.BOOL.numpy] = FORMAT_VALUES["VK_FORMAT_R8_BOOL_ARM"]

STORAGE_BUFFER_TYPE = DESCRIPTOR_VALUES[STORAGE_BUFFER]


@dataclass(frozen=True)
class _View:
    """How one tensor memory is bound in the exported file (one MRT entry): descriptor / format values, shape,
    and for a sampled image its SamplerConfig."""
    descriptor: int
    format: int | None                 # None: the scalar format of the tensor's element type
    sampler: tuple = ()                # (field, VK enum name) pairs
    shape: tuple[int, ...] | None = None

    @property
    def label(self) -> str:
        return _DESCRIPTOR_NAMES[self.descriptor]


_DESCRIPTOR_NAMES = {v: k.replace("VK_DESCRIPTOR_TYPE_", "") for k, v in DESCRIPTOR_VALUES.items()}


def export_vgf(program: Program, path: str | Path | None = None, dtypes: dict[str, DType] | None = None,
               cache: ShaderCache | None = None) -> VGF:
    """The VGF container of `program` (written to `path` if given). `dtypes` (tensor -> TOSA DType) picks the
    exact VkFormat where numpy storage is ambiguous (bf16 / fp8); other tensors are described by numpy dtype."""
    vgf = _Exporter(program, dtypes or {}, cache or ShaderCache()).run()
    if path is not None:
        save_vgf(vgf, path)
    return vgf


class _Exporter:
    def __init__(self, program: Program, dtypes: dict[str, DType], cache: ShaderCache):
        self.p, self.dtypes, self.cache = program, dtypes, cache
        self.vgf = VGF()
        self.mrt: dict[str, int] = {}      # storage tensor (or a copied output) -> MRT index
        self.views: dict[str, _View] = {}  # storage tensor -> how every kernel binds it
        self.kernels: list[Kernel] = []

    def run(self) -> VGF:
        p = self.p
        for step in p.steps:
            if not isinstance(step, Kernel):
                kind = type(step).__name__
                where = "runs on the host" if kind == "Host" else f"is a {kind} step"
                raise TosaError(f"{where}; VGF export needs every operator as a Vulkan compute kernel "
                                f"(load the graph with strict=True to see which operators lack one)", op=step.op)
        self.kernels = list(p.steps)
        self._views()
        self._resources()
        self._segments()
        return self.vgf

    # -- resources
    def _views(self) -> None:
        """One view per tensor memory; a memory bound as an image by one kernel and otherwise by another has no
        sound VGF form (MRT entries have one descriptor type; scenario-runner cannot alias images with buffers)."""
        p = self.p
        uses: dict[str, list[tuple[_View, str, str]]] = {}
        for k in self.kernels:
            for i, name in enumerate(k.bindings):
                desc = k.descriptors[i] if k.descriptors else STORAGE_BUFFER
                img = k.images[i] if k.images and i < len(k.images) else None
                if desc in IMAGE_TYPES:
                    if img is None:
                        raise TosaError(f"binds tensor '{name}' as {desc} without an image description", op=k.op)
                    shape = tuple(int(d) for d in p.buffer(name).shape)
                    if len(shape) not in (3, 4) or shape[-3:-1] != (img.height, img.width):
                        raise TosaError(f"image binding of tensor '{name}': shape {list(shape)} is not [H, W, C] / "
                                        f"[1, H, W, C] of the {img.width}x{img.height} image", op=k.op)
                    view = _View(DESCRIPTOR_VALUES[desc], FORMAT_VALUES[img.format], tuple(sorted(img.sampler)),
                                 shape)
                else:   # TENSOR_ARM bindings too: the shader declares a buffer (the runtime binds one)
                    view = _View(STORAGE_BUFFER_TYPE, None)
                uses.setdefault(p.storage(name), []).append((view, name, k.op))
        for storage, found in uses.items():
            kinds = list(dict.fromkeys(v for v, _, _ in found))
            if len(kinds) == 1:
                self.views[storage] = kinds[0]
                continue
            (a, name_a, op_a), (b, name_b, op_b) = found[0], next(u for u in found if u[0] != found[0][0])
            raise TosaError(f"tensor memory '{storage}' is bound as {a.label} ('{name_a}' by {op_a}) and as "
                            f"{b.label} ('{name_b}' by {op_b}); a VGF resource has one descriptor type and "
                            f"scenario-runner cannot alias an image with other memory, so this graph cannot be "
                            f"exported (bind the tensor the same way everywhere, e.g. as a buffer)")

    def _add(self, storage: str, category: str, shape=None, key: str | None = None) -> int:
        buf = self.p.buffer(storage)
        if buf.kind == "variable":
            raise TosaError(f"tensor '{storage}' is a variable (state kept across runs), which VGF cannot hold")
        view = self.views.get(storage, _View(STORAGE_BUFFER_TYPE, None))
        itemsize = np.dtype(buf.dtype).itemsize
        if view.format is not None:   # an image: [H, W, C] / [1, H, W, C] texels, C packed into the format
            fmt, shape = view.format, view.shape
            if int(np.prod(shape, dtype=np.int64)) * itemsize != buf.nbytes:
                raise TosaError(f"image tensor '{storage}': {buf.nbytes} bytes do not match shape {list(shape)}")
        else:
            fmt = self._format(storage, buf.dtype)
            shape = tuple(buf.shape if shape is None else shape)
            if int(np.prod(shape, dtype=np.int64)) * itemsize != buf.nbytes:
                if category in ("INPUT", "OUTPUT"):
                    raise TosaError(f"tensor '{storage}': {buf.nbytes} bytes do not match shape {list(shape)} of "
                                    f"{np.dtype(buf.dtype).name}; VGF I/O must be dense")
                shape = (-(-buf.nbytes // itemsize),)
        sampler = None
        if view.sampler:
            sampler = {field: int(getattr(vk, name)) for field, name in view.sampler}
        self.vgf.resources.append(Resource(category, view.descriptor, fmt, shape, sampler=sampler))
        self.mrt[key or storage] = len(self.vgf.resources) - 1
        return self.mrt[key or storage]

    def _format(self, name: str, dtype) -> int:
        dt = self.dtypes.get(name)
        if dt is not None and dt in SCALAR_FORMATS:
            return FORMAT_VALUES[SCALAR_FORMATS[dt]]
        fmt = _NUMPY_FORMATS.get(np.dtype(dtype))
        if fmt is None:
            raise TosaError(f"tensor '{name}': no Vulkan format for element type {np.dtype(dtype).name}")
        return fmt

    def _resources(self) -> None:
        p, vgf = self.p, self.vgf
        binding = 0
        for name in p.inputs:
            if p.storage(name) != name:
                raise TosaError(f"graph input '{name}' shares memory with '{p.storage(name)}'")
            vgf.inputs.append(Binding(binding, self._add(name, "INPUT")))
            vgf.input_names.append(name)
            binding += 1
        for name in p.constants:
            if p.storage(name) in self.mrt:
                continue
            index = self._add(p.storage(name), "CONSTANT")
            data = np.ascontiguousarray(p.constants[name]).astype(p.buffer(name).dtype, copy=False).tobytes()
            vgf.constants.append(Constant(index, data))
            vgf.inputs.append(Binding(binding, index))
            vgf.input_names.append(name)
            binding += 1
        for name in p.outputs:
            root = p.storage(name)
            if root in self.mrt:
                # Shares memory with an input, a constant or another output (a RESHAPE / IDENTITY chain, a repeated
                # output): the file gives it memory of its own, filled by a copy after every other dispatch.
                index = self._own_output(name, root)
            else:
                shape = p.buffer(name).shape if p.buffer(name).nbytes == p.buffer(root).nbytes else None
                index = self._add(root, "OUTPUT", shape)
            vgf.outputs.append(Binding(binding, index))
            vgf.output_names.append(name)
            binding += 1
        for k in self.kernels:
            for name in k.bindings:
                if name not in self.mrt and p.storage(name) not in self.mrt:
                    self._add(p.storage(name), "INTERMEDIATE")

    def _own_output(self, name: str, root: str) -> int:
        p = self.p
        if self.views.get(root, _View(STORAGE_BUFFER_TYPE, None)).format is not None:
            raise TosaError(f"graph output '{name}' shares the memory of image tensor '{root}'; a copy of an image "
                            f"into an output of its own is not supported")
        buf = p.buffer(name)
        key = f"{name} (VGF copy)"
        index = self._add(root, "OUTPUT", buf.shape, key=key)
        self.kernels.append(_copy_kernel(f"VGF output copy '{root}' -> '{name}'", root, key, p.buffer(root).nbytes))
        return index

    def _mrt_of(self, name: str) -> int:
        return self.mrt[name] if name in self.mrt else self.mrt[self.p.storage(name)]

    # -- modules and segments
    def _segments(self) -> None:
        vgf = self.vgf
        kernels = self.kernels
        spirv = self._spirv(kernels)
        modules: dict[bytes, int] = {}
        for i, (k, code) in enumerate(zip(kernels, spirv)):
            if code not in modules:
                modules[code] = len(vgf.modules)
                label = re.sub(r"\W", "_", k.shader)
                vgf.modules.append(Module(f"{label}_{len(vgf.modules)}", "COMPUTE", k.entry or "main", code,
                                          "SPIR-V"))
            where = list(k.slots) or [(0, b) for b in range(len(k.bindings))]
            slot = {name: Binding(b, self._mrt_of(name)) for (_, b), name in zip(where, k.bindings)}
            sets: dict[int, list[Binding]] = {}
            for (set_index, b), name in zip(where, k.bindings):
                sets.setdefault(set_index, []).append(Binding(b, self._mrt_of(name)))
            vgf.segments.append(Segment(
                f"compute_segment_{i}", modules[code], "COMPUTE",
                [DescriptorSet(sets[n], n) for n in sorted(sets)],
                inputs=[slot[n] for n in dict.fromkeys(k.reads) if n in slot],
                outputs=[slot[n] for n in dict.fromkeys(k.writes) if n in slot],
                dispatch_shape=tuple(int(g) for g in k.groups)))

    def _spirv(self, kernels: list[Kernel]) -> list[bytes]:
        variants = []
        for k in kernels:
            if k.spirv:
                if k.push_constants:
                    raise TosaError(f"a ready SPIR-V kernel (a VulkanCustomShader payload) declares "
                                    f"{len(k.push_constants)} bytes of push constants: VGF carries no push-constant "
                                    f"values and SPIR-V cannot be re-baked, so it cannot be exported", op=k.op)
                variants.append(Variant(k.shader, k.defines, spirv=k.spirv, op=k.op))
            elif k.push_constants:
                variants.append(Variant(k.shader, (), text=_bake(variant_of(k), k), op=k.op))
            else:
                variants.append(variant_of(k))
        return self.cache.get_many(variants)


def _copy_kernel(op: str, src: str, dst: str, nbytes: int) -> Kernel:
    """shaders/data_layout/copy.comp over `nbytes` bytes as one contiguous run (push layout: tosa_vk/lower/
    data_layout.py strided_copy)."""
    unit = 4 if nbytes % 4 == 0 else 1
    count = nbytes // unit
    pad = [0] * (MAX_RANK - 1)
    fields = [count, 1, 0, 0, count, *([1] * (MAX_RANK - 1)), 1, *pad, 1, *pad, count, *([1] * (MAX_RANK - 1))]
    return Kernel(op, "data_layout/copy", (("ELEM_T", UNIT_TYPES[unit]),), (src, dst),
                  pack_push(*fields, fmt="I" + "i" * (len(fields) - 1)), grid_1d(count), reads=(src,), writes=(dst,))


# ---------------------------------------------------------------------------------------------------------------
# Push constants baked into the shader source

_PUSH_BLOCK = re.compile(r"layout\s*\(\s*push_constant\s*\)\s*uniform\s+(\w+)\s*\{([^}]*)\}\s*(\w+)\s*;")
_MEMBER = re.compile(r"^(\w+)\s+(.+)$", re.S)
_DECL = re.compile(r"^(\w+)\s*(?:\[\s*(\d+)\s*\])?$")
# scalar type -> (bytes, struct code, literal kind)
_SCALARS = {"int": (4, "i", "int"), "uint": (4, "I", "uint"), "float": (4, "f", "float"),
            "float16_t": (2, "e", "half"), "int16_t": (2, "h", "int16"), "uint16_t": (2, "H", "uint16"),
            "int64_t": (8, "q", "int64"), "uint64_t": (8, "Q", "uint64"), "double": (8, "d", "double")}
_VECTORS = {"vec": "float", "ivec": "int", "uvec": "uint"}


def _member_type(name: str) -> tuple[str, int]:
    """(scalar type, components) of a push-constant member type."""
    if name in _SCALARS:
        return name, 1
    m = re.fullmatch(r"(i|u|)vec([234])", name)
    if m:
        return _VECTORS[m.group(1) + "vec"], int(m.group(2))
    raise ValueError(f"push-constant member type {name!r} is not supported by VGF export")


def _literal(kind: str, value) -> str:
    if kind in ("float", "half", "double"):
        v = float(value)
        if np.isnan(v):
            raise ValueError("a NaN push-constant value cannot be baked exactly")
        text = "(1.0/0.0)" if v == np.inf else "(-1.0/0.0)" if v == -np.inf else repr(v)
        if "e" not in text and "." not in text and "(" not in text:
            text += ".0"
        return {"float": text, "half": f"float16_t({text})", "double": f"double({text})"}[kind]
    v = int(value)
    return {"int": f"int(0x{v & 0xFFFFFFFF:08x}u)", "uint": f"0x{v:08x}u", "int16": f"int16_t({v})",
            "uint16": f"uint16_t({v})", "int64": f"int64_t(0x{v & (2 ** 64 - 1):016x}ul)",
            "uint64": f"uint64_t(0x{v:016x}ul)"}[kind]


def bake_push_constants(source: str, push: bytes, where: str = "") -> str:
    """Preprocessed GLSL with its push-constant block replaced by a const struct holding `push` (std430)."""
    m = _PUSH_BLOCK.search(source)
    if m is None:
        raise ValueError(f"{where}: no push-constant block found to bake {len(push)} bytes of values into")
    block, body, instance = m.groups()
    members, inits, offset = [], [], 0
    for decl in (d.strip() for d in body.split(";")):
        if not decl:
            continue
        mm = _MEMBER.match(decl)
        if mm is None:
            raise ValueError(f"{where}: cannot parse push-constant member {decl!r}")
        scalar, comps = _member_type(mm.group(1))
        size, code, kind = _SCALARS[scalar]
        align = size * (1 if comps == 1 else 2 if comps == 2 else 4)
        for name in (n.strip() for n in mm.group(2).split(",")):
            dm = _DECL.match(name)
            if dm is None:
                raise ValueError(f"{where}: cannot parse push-constant member {name!r}")
            count = int(dm.group(2)) if dm.group(2) else None
            offset += -offset % align
            elems = []
            for _ in range(count or 1):
                end = offset + size * comps
                if end > len(push):
                    raise ValueError(f"{where}: push-constant member '{dm.group(1)}' ends at byte {end}, past the "
                                     f"{len(push)} bytes the dispatch supplies")
                vals = struct.unpack_from("<" + code * comps, push, offset)
                lits = [_literal(kind, v) for v in vals]
                elems.append(lits[0] if comps == 1 else f"{mm.group(1)}({', '.join(lits)})")
                offset += size * comps if count is None else (size if comps == 1 else align)
            members.append(f"{mm.group(1)} {name};")
            inits.append(elems[0] if count is None else f"{mm.group(1)}[{count}]({', '.join(elems)})")
    const = (f"struct {block} {{ {' '.join(members)} }};\n"
             f"const {block} {instance} = {block}({', '.join(inits)});")
    return source[:m.start()] + const + source[m.end():]


_PREPROCESSED: dict[Variant, str] = {}


def _preprocess(variant: Variant) -> str:
    """`glslc -E` of a variant (macros and includes expanded)."""
    if variant not in _PREPROCESSED:
        exe = shutil.which("glslc")
        if exe is None:
            raise ShaderError("glslc is not installed (Debian: apt-get install glslc)")
        with tempfile.TemporaryDirectory(prefix="tosa_vk-vgf-") as tmp:
            src = Path(tmp) / "v.comp"
            src.write_text(variant.source())
            done = subprocess.run([exe, "-E", f"--target-env={TARGET_ENV}", "-I", str(INCLUDE_DIR), "-I",
                                   str(SHADER_ROOT), str(src)], capture_output=True, text=True)
        if done.returncode != 0:
            raise ShaderError(f"glslc -E failed for shaders/{variant.shader}.comp: {done.stderr.strip()}")
        _PREPROCESSED[variant] = done.stdout
    return _PREPROCESSED[variant]


def _bake(variant: Variant, kernel: Kernel) -> str:
    try:
        return bake_push_constants(_preprocess(variant), kernel.push_constants, f"shaders/{variant.shader}.comp")
    except ValueError as err:
        raise TosaError(f"cannot bake push constants for VGF: {err}", op=kernel.op) from None

"""Program -> VGF container (vgf/): one COMPUTE segment per kernel dispatch, in execution order.

- Modules: our SPIR-V, deduplicated by identical bytes. VGF carries push-constant *ranges* but no values (Arm's
  scenario-runner takes values from the scenario, per module name), while every tosa_vk dispatch has its own
  values. So a kernel with push constants is compiled as a baked variant: its preprocessed GLSL with the
  `layout(push_constant) uniform Params {...} p;` block turned into `const Params p = Params(<this dispatch's
  values>);` (std430 offsets decode the bytes). Its segment then declares no push-constant range and the file is
  self-contained. Dispatches with equal shader, defines and values share one module.
- Resources (one MRT entry per distinct memory, tosa_vk/plan/resources.py formats, STORAGE_BUFFER descriptors):
  graph inputs INPUT, graph outputs OUTPUT, every other tensor memory INTERMEDIATE (scenario-runner allocates
  each; no arena packing), RESHAPE / IDENTITY aliases bind their storage's entry.
- Constants: CONSTANT entries whose bytes are in the constant section. Scenario-runner only binds model-sequence
  I/O and INTERMEDIATE entries to compute segments, so each constant is also listed as a model-sequence input
  (named after its tensor) that a runner fills from the constant section (tosa_vk/vgf_run.py and the tests do);
  a runner that does not know this fails on the missing input instead of computing with garbage.
Anything VGF cannot express (host steps, control flow, variables, an output sharing memory with an input or a
constant) raises a TosaError naming the step / tensor: the exporter never writes a file that would run wrong.
"""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from vgf import VGF, Binding, Constant, DescriptorSet, Module, Resource, Segment, save_vgf

from .errors import TosaError
from .ir.dtype import DType
from .plan.resources import DESCRIPTOR_VALUES, FORMAT_VALUES, SCALAR_FORMATS, STORAGE_BUFFER
from .program import Kernel, Program
from .vulkan.shaders import INCLUDE_DIR, SHADER_ROOT, TARGET_ENV, ShaderCache, ShaderError, Variant, variant_of

# numpy storage dtype -> VkFormat value (tensors the lowering made, which carry no TOSA DType)
_NUMPY_FORMATS = {np.dtype(np.uint8): 13, np.dtype(np.uint16): 74, np.dtype(np.uint32): 98,
                  np.dtype(np.uint64): 110, np.dtype(np.float64): 112}
for _dt, _fmt in SCALAR_FORMATS.items():
    _NUMPY_FORMATS.setdefault(_dt.numpy, FORMAT_VALUES[_fmt])
_NUMPY_FORMATS[DType.INT8.numpy] = FORMAT_VALUES["VK_FORMAT_R8_SINT"]
_NUMPY_FORMATS[DType.BOOL.numpy] = FORMAT_VALUES["VK_FORMAT_R8_BOOL_ARM"]

STORAGE_BUFFER_TYPE = DESCRIPTOR_VALUES[STORAGE_BUFFER]


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
        self.mrt: dict[str, int] = {}      # storage tensor -> MRT index

    def run(self) -> VGF:
        p = self.p
        for step in p.steps:
            if not isinstance(step, Kernel):
                kind = type(step).__name__
                where = "runs on the host" if kind == "Host" else f"is a {kind} step"
                raise TosaError(f"{where}; VGF export needs every operator as a Vulkan compute kernel "
                                f"(load the graph with strict=True to see which operators lack one)", op=step.op)
        self._resources()
        self._segments()
        return self.vgf

    # -- resources
    def _add(self, storage: str, category: str, shape=None) -> int:
        buf = self.p.buffer(storage)
        if buf.kind == "variable":
            raise TosaError(f"tensor '{storage}' is a variable (state kept across runs), which VGF cannot hold")
        fmt = self._format(storage, buf.dtype)
        itemsize = np.dtype(buf.dtype).itemsize
        shape = tuple(buf.shape if shape is None else shape)
        if int(np.prod(shape, dtype=np.int64)) * itemsize != buf.nbytes:
            if category in ("INPUT", "OUTPUT"):
                raise TosaError(f"tensor '{storage}': {buf.nbytes} bytes do not match shape {list(shape)} of "
                                f"{np.dtype(buf.dtype).name}; VGF I/O must be dense")
            shape = (-(-buf.nbytes // itemsize),)
        self.vgf.resources.append(Resource(category, STORAGE_BUFFER_TYPE, fmt, shape))
        self.mrt[storage] = len(self.vgf.resources) - 1
        return self.mrt[storage]

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
                other = next(n for n, i in self.mrt.items() if i == self.mrt[root])
                kind = vgf.resources[self.mrt[root]].category.lower()
                raise TosaError(f"graph output '{name}' shares memory with {kind} '{other}' (a RESHAPE / IDENTITY "
                                f"chain or a repeated output); VGF outputs need memory of their own")
            shape = p.buffer(name).shape if p.buffer(name).nbytes == p.buffer(root).nbytes else None
            vgf.outputs.append(Binding(binding, self._add(root, "OUTPUT", shape)))
            vgf.output_names.append(name)
            binding += 1
        for step in p.steps:
            for name in step.bindings:
                root = p.storage(name)
                if root not in self.mrt:
                    self._add(root, "INTERMEDIATE")

    # -- modules and segments
    def _segments(self) -> None:
        p, vgf = self.p, self.vgf
        kernels = [s for s in p.steps if isinstance(s, Kernel)]
        spirv = self._spirv(kernels)
        modules: dict[bytes, int] = {}
        for i, (k, code) in enumerate(zip(kernels, spirv)):
            if code not in modules:
                modules[code] = len(vgf.modules)
                label = re.sub(r"\W", "_", k.shader)
                vgf.modules.append(Module(f"{label}_{len(vgf.modules)}", "COMPUTE",
                                          getattr(k, "entry", "") or "main", code, "SPIR-V"))
            where = list(getattr(k, "slots", ()) or ()) or [(0, b) for b in range(len(k.bindings))]
            slot = {name: Binding(b, self.mrt[p.storage(name)]) for (_, b), name in zip(where, k.bindings)}
            sets: dict[int, list[Binding]] = {}
            for (set_index, b), name in zip(where, k.bindings):
                sets.setdefault(set_index, []).append(Binding(b, self.mrt[p.storage(name)]))
            vgf.segments.append(Segment(
                f"compute_segment_{i}", modules[code], "COMPUTE",
                [DescriptorSet(sets[n], n) for n in sorted(sets)],
                inputs=[slot[n] for n in dict.fromkeys(k.reads) if n in slot],
                outputs=[slot[n] for n in dict.fromkeys(k.writes) if n in slot],
                dispatch_shape=tuple(int(g) for g in k.groups)))

    def _spirv(self, kernels: list[Kernel]) -> list[bytes]:
        variants = []
        for k in kernels:
            descriptors = getattr(k, "descriptors", ()) or ()
            if any(d != STORAGE_BUFFER for d in descriptors) or any(getattr(k, "images", ()) or ()):
                raise TosaError(f"binds {', '.join(sorted(set(descriptors) - {STORAGE_BUFFER}))}; VGF export "
                                f"writes storage-buffer kernels only so far", op=k.op)
            spirv = getattr(k, "spirv", b"")
            if spirv:
                if k.push_constants:
                    raise TosaError("a ready SPIR-V kernel with push-constant values cannot be exported: VGF "
                                    "carries no push-constant values and SPIR-V cannot be re-baked", op=k.op)
                variants.append(Variant(k.shader, k.defines, spirv=spirv, op=k.op))
            elif k.push_constants:
                variants.append(Variant(k.shader, (), text=_bake(variant_of(k), k), op=k.op))
            else:
                variants.append(variant_of(k))
        return self.cache.get_many(variants)


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

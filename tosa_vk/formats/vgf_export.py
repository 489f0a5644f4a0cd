"""Program -> VGF container (vgf/): one COMPUTE segment per kernel dispatch, in execution order, after the GRAPH
segments that fill the constants (below).

- Modules: our SPIR-V, deduplicated by identical bytes. VGF carries push-constant *ranges* but no values (Arm's
  scenario-runner takes values from the scenario, per module name), while every tosa_vk dispatch has its own
  values. So a kernel with push constants is compiled as a baked variant: a built-in shader with PUSH_BAKED
  defined to `const Params p = Params(<this dispatch's values>);`, built from the layout the lowering packed the
  values with (Kernel.push_layout, tosa_vk/stages/lower/push.py); a user's GLSL with its own push-constant block parsed
  and replaced the same way. Its segment then declares no push-constant range and the file is self-contained.
  Dispatches with equal shader, defines and values share one module.
- Resources: one MRT entry per distinct memory (tosa_vk/stages/plan/resources.py formats). Graph inputs INPUT, graph
  outputs OUTPUT, every other tensor memory INTERMEDIATE (scenario-runner allocates each; no arena packing); RESHAPE /
  IDENTITY aliases bind their storage's entry. Descriptor types follow the kernels: STORAGE_BUFFER, or for custom
  ops STORAGE_IMAGE / COMBINED_IMAGE_SAMPLER (shape [H, W, C] / [1, H, W, C], the packed texel format, a sampler's
  SamplerConfig in extra_config). A custom op's TENSOR_ARM binding is written as STORAGE_BUFFER: its shader declares
  a buffer (the runtime binds one there), and scenario-runner 0.11 binding a VkTensorARM to such a binding computes
  zeros.
- A tensor memory bound as a buffer by one kernel and as an image by another (ExecuTorch's TRANSPOSE -> image
  CUSTOM -> TRANSPOSE, a storage image read by ADD), or a constant bound as an image (constant graphs fill buffers),
  keeps the runtime's model: the buffer entry holds the truth (the graph I/O entry if it is one), each image view is
  an INTERMEDIATE entry of its own, and conversion dispatches (shaders/custom/buffer_to_image.comp,
  image_to_buffer.comp) are inserted where a view is stale: before a kernel binds it, and before the end for an
  output. A sampled image (COMBINED_IMAGE_SAMPLER) cannot be written, so its
  conversion writes a STORAGE_IMAGE entry of the same format and extent in the same alias group (scenario-runner
  gives an alias group one memory; two images of equal create info share one layout). A buffer cannot alias an
  image (linear images have padded rows: lavapipe aligns a row to 64 bytes), hence the copies.
- Custom kernels: inline GLSL (registered declarations, GLSL payloads) is compiled and baked like built-in kernels,
  with its (set, binding) slots and entry point; ready SPIR-V (SPIR-V payloads) is written as is, and refused when
  it has push constants (no values to give it, no source to bake them into).
- Constants: filled by a GRAPH segment that runs first, so that Arm's documented flow (`vgf_dump --scenario-template`,
  fill the TEMPLATE_PATH_* placeholders, `scenario-runner --scenario`) runs the file with no data but the model's
  inputs. What Arm's 0.11 tools allow: scenario-runner binds a COMPUTE segment's descriptors only to model-sequence
  inputs / outputs and to the INTERMEDIATE entries it allocates itself (a CONSTANT entry there fails with "No resource
  found for VGF binding", also when the segment lists it in SegmentInfo.constants and the constant bindings); the
  template refuses a model input whose entry is not INPUT; only a GRAPH segment's graph constants come from the
  constant section (by SegmentInfo's constant bindings); an alias group is one memory for INTERMEDIATE entries of any
  descriptor type. So a constant the kernels read is an INTERMEDIATE storage-buffer entry (what they bind) in an alias
  group with an INTERMEDIATE TENSOR_ARM entry, and a constant graph sets that tensor to the constant: a graph without
  inputs or operations whose outputs are graph constants (tosa_vk/formats/spirv_graph/constants.py: constant_graph,
  encoded by tosa_vk/formats/spirv_graph; the layout model-converter writes for a graph whose outputs are constants),
  GRAPH_OUTPUTS tensors per segment. The CONSTANT
  entry has the tensor's format and shape, or R8_SINT bytes where a graph tensor lacks the element type (bool, bf16,
  fp8, int48); rank 0 and ranks past 6 are flattened. The template then asks for the inputs, the outputs and each
  COMPUTE module's SPIR-V (TEMPLATE_PATH_SHADER_SPIRV_<module index>, which `vgf_dump --dump-spirv <index>` writes:
  the template substitutes every compute module, whatever the file holds). tosa_vk's reader fills the tensor once, at
  load. Constants no kernel reads (the source layout of a repacked weight) are left out. Rejected: the data in the
  compute shaders (lavapipe compiles a dynamically indexed constant array in time growing with its square: 1,024 words
  took 34 s; SPIR-V spends 5 words per 32-bit constant) and constants as model inputs (the user would have to provide
  them).
- An output sharing memory with an input, a constant or another output (RESHAPE(input), a repeated output) gets an
  OUTPUT entry of its own, filled by a data_layout/copy dispatch after all others.
Anything VGF cannot express (host steps, control flow, variables, the cases above) raises a TosaError naming the
step / tensor: the exporter never writes a file that would run wrong.
"""

from __future__ import annotations

import re
import struct
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vgf import VGF, Binding, Constant, DescriptorSet, Module, Resource, Segment, write_vgf
from vgf.scenario import resource_bytes
from vgf.vk_enums import (
    COMBINED_IMAGE_SAMPLER,
    DESCRIPTOR_NAMES,
    DESCRIPTOR_TYPES,
    FORMAT_NAMES,
    FORMATS,
    IMAGE_DESCRIPTORS,
    SAMPLER_FIELDS,
    STORAGE_BUFFER,
    STORAGE_IMAGE,
    TENSOR_ARM,
    short,
)

from ..errors import TosaError, TosaUnsupportedError
from ..ir.dtype import DType
from ..paths import find_tool
from ..program import Branch, Image, Kernel, Loop, Program
from ..stages.lower import grid_1d
from ..stages.lower.data_layout import UNIT_TYPES, copy_push
from ..stages.lower.push import baked, literal
from ..stages.plan.resources import SCALAR_FORMATS
from ..store.files import write_atomic
from ..vulkan import glsl_compiler
from ..vulkan.shaders import INCLUDE_DIR, SHADER_ROOT, ShaderCache, ShaderError, specialize
from ..vulkan.variant import TARGET_ENV, Variant, variant_of
from .spirv_graph.constants import GRAPH_ELEMENTS, GRAPH_MAX_RANK, constant_graph
from .vgf_graph import NO_CONTROL_FLOW

STORAGE_BUFFER_TYPE = DESCRIPTOR_TYPES[STORAGE_BUFFER]
STORAGE_IMAGE_TYPE = DESCRIPTOR_TYPES[STORAGE_IMAGE]
SAMPLED_TYPE = DESCRIPTOR_TYPES[COMBINED_IMAGE_SAMPLER]
TENSOR_TYPE = DESCRIPTOR_TYPES[TENSOR_ARM]
BYTES_FORMAT = FORMATS["VK_FORMAT_R8_SINT"].value  # a constant graph's tensor of a type GRAPH_ELEMENTS lacks
# outputs per constant graph segment: its descriptor set holds this many tensors (one more segment costs ~nothing:
# resnet_int8's 100 constants in 1, 7 or 13 segments ran equally fast in scenario-runner)
GRAPH_OUTPUTS = 16


@dataclass(frozen=True)
class _View:
    """How one tensor memory is bound in the exported file (one MRT entry): descriptor / format values, shape,
    and for a sampled image its SamplerConfig."""

    descriptor: int
    format: int | None  # None: the scalar format of the tensor's element type
    sampler: tuple = ()  # (field, VK enum name) pairs
    shape: tuple[int, ...] | None = None

    @property
    def label(self) -> str:
        return short(DESCRIPTOR_NAMES[self.descriptor])


def export_vgf(program: Program, path: str | Path | None = None, cache: ShaderCache | None = None) -> VGF:
    """The VGF container of `program` (written to `path` if given); formats from the planner's resources."""
    views = program.views()
    if views:  # a VGF resource is bound whole, as a storage buffer: no descriptor offsets, no texel views
        raise TosaError(
            f"tensor '{views[0]}' is a view of part of another's memory or read through a texel buffer, which a VGF "
            "cannot describe: compile with views=False to export"
        )
    vgf = _Exporter(program, cache or ShaderCache()).run()
    if path is not None:
        write_atomic(path, write_vgf(vgf), overwrite=True, what="the VGF")  # no link written through
    return vgf


class _Exporter:
    def __init__(self, program: Program, cache: ShaderCache):
        self.p, self.cache = program, cache
        self.vgf = VGF()
        self.mrt: dict[str, int] = {}  # storage tensor (or a copied output) -> MRT index
        self.views: dict[str, _View] = {}  # storage tensor -> how every kernel binds it (the buffer when mixed)
        # storage bound as a buffer and as image(s): image view -> its MRT key; sampled view key -> STORAGE_IMAGE
        # key written by conversions (same alias group)
        self.mixed: dict[str, dict[_View, str]] = {}
        self.writers: dict[str, str] = {}
        self.kernels: list[Kernel] = []
        self.constant_storages = {program.storage(n) for n in program.constants}
        self.filled: list[tuple[int, int]] = []  # (tensor MRT index, constant index) a constant graph sets
        self.groups = 0  # alias groups handed out

    def run(self) -> VGF:
        p = self.p
        for step in p.steps:
            if isinstance(step, (Loop, Branch)):
                raise TosaUnsupportedError(NO_CONTROL_FLOW, op=step.op)
            if not isinstance(step, Kernel):
                raise TosaUnsupportedError(
                    "runs on the host; VGF export needs every operator as a Vulkan compute kernel "
                    "(`tosa-vk placement` says why it has none)",
                    op=step.op,
                )
        self.kernels = [s for s in p.steps if isinstance(s, Kernel)]
        self._views()
        self._convert()
        self._resources()
        self._segments()
        return self.vgf

    # -- resources
    def _view_of(self, k: Kernel, i: int, name: str) -> _View:
        desc = k.descriptors[i] if k.descriptors else STORAGE_BUFFER
        img = k.images[i] if k.images and i < len(k.images) else None
        # TENSOR_ARM bindings too: the shader declares a buffer (the runtime binds one)
        if desc not in IMAGE_DESCRIPTORS:
            return _View(STORAGE_BUFFER_TYPE, None)
        if img is None:
            raise TosaError(f"binds tensor '{name}' as {desc} without an image description", op=k.op)
        shape = tuple(int(d) for d in self.p.buffer(name).shape)
        if len(shape) not in (3, 4) or shape[-3:-1] != (img.height, img.width):
            raise TosaError(
                f"image binding of tensor '{name}': shape {list(shape)} is not [H, W, C] / "
                f"[1, H, W, C] of the {img.width}x{img.height} image",
                op=k.op,
            )
        return _View(DESCRIPTOR_TYPES[desc], FORMATS[img.format].value, tuple(sorted(img.sampler)), shape)

    def _views(self) -> None:
        """One view per tensor memory bound one way; a memory bound in several ways (buffer and image, or two
        image kinds), or a constant bound as an image (a constant graph fills buffers only), keeps a buffer entry
        plus one entry per image view, kept in step by _convert()."""
        p = self.p
        uses: dict[str, list[tuple[_View, str, str]]] = {}
        for k in self.kernels:
            for i, name in enumerate(k.bindings):
                uses.setdefault(p.storage(name), []).append((self._view_of(k, i, name), name, k.op))
        for storage, found in uses.items():
            kinds = list(dict.fromkeys(v for v, _, _ in found))
            (a, name_a, op_a) = found[0]
            if len(kinds) == 1 and (a.format is None or storage not in self.constant_storages):
                self.views[storage] = kinds[0]
                continue
            if len(kinds) == 1:  # a constant read as an image: the constant graph fills a buffer, a dispatch converts
                why = f"constant '{storage}' is bound as {a.label} ('{name_a}' by {op_a}) and held in a buffer"
            else:
                (b, name_b, op_b) = next(u for u in found if u[0] != a)
                why = (
                    f"tensor memory '{storage}' is bound as {a.label} ('{name_a}' by {op_a}) and as {b.label} "
                    f"('{name_b}' by {op_b})"
                )
            dtype = np.dtype(p.buffer(storage).dtype)
            if dtype != np.float32:
                raise TosaError(
                    f"{why}; VGF export converts between the two with fp32 copy shaders, but the tensor is {dtype.name}"
                )
            self.views[storage] = _View(STORAGE_BUFFER_TYPE, None)
            images = [v for v in kinds if v.format is not None]
            self.mixed[storage] = {v: f"{storage} (VGF {v.label} view {j})" for j, v in enumerate(images)}
            for v, key in self.mixed[storage].items():
                if v.descriptor == SAMPLED_TYPE:
                    self.writers[key] = f"{storage} (VGF STORAGE_IMAGE writer of view {images.index(v)})"

    def _convert(self) -> None:
        """Conversion dispatches for mixed memories, mirroring the runtime (the arena, here the buffer entry, is
        the truth; images are filled before a dispatch reads them and a written storage image is copied back):
        before a kernel binds a stale view (except a storage image it only writes) and, for graph outputs, before
        the end. Image bindings are renamed to their view's MRT key."""
        if not self.mixed:
            return
        p = self.p
        fresh: dict[str, list[str | None]] = {s: [None] for s in self.mixed}  # None: the buffer entry
        kernels = []
        for k in self.kernels:
            keys: dict[str, str] = {}
            bindings = list(k.bindings)
            for i, name in enumerate(k.bindings):
                s = p.storage(name)
                if s not in self.mixed:
                    continue
                view = self._view_of(k, i, name)
                key = self.mixed[s].get(view)
                if key is not None:
                    if keys.get(name, key) != key:
                        raise TosaError(
                            f"binds tensor '{name}' in two ways; VGF export cannot rename both bindings", op=k.op
                        )
                    keys[name] = bindings[i] = key
                only_written = key is not None and name in k.writes and name not in k.reads
                if key not in fresh[s] and not only_written:
                    kernels += self._refresh(s, key, fresh)
            for name in k.writes:
                if p.storage(name) in self.mixed:
                    fresh[p.storage(name)] = [keys.get(name)]
            if keys:
                k = replace(
                    k,
                    bindings=tuple(bindings),
                    reads=tuple(keys.get(n, n) for n in k.reads),
                    writes=tuple(keys.get(n, n) for n in k.writes),
                )
            kernels.append(k)
        outputs = {p.storage(n) for n in p.outputs}
        for s in self.mixed:
            if s in outputs and None not in fresh[s]:
                kernels += self._refresh(s, None, fresh)
        self.kernels = kernels

    def _refresh(self, storage: str, key: str | None, fresh: dict) -> list[Kernel]:
        """Dispatches making view `key` (None: the buffer entry) of `storage` current; updates `fresh`."""
        done = []
        views = {k: v for v, k in self.mixed[storage].items()}
        if None not in fresh[storage]:  # the newest data is in a storage image (sampled views are never written)
            src = fresh[storage][0]
            done.append(_texel_kernel(f"VGF image -> buffer '{storage}'", "image_to_buffer", src, storage, views[src]))
            fresh[storage].append(None)
        if key is not None:
            done.append(
                _texel_kernel(
                    f"VGF buffer -> image '{storage}'",
                    "buffer_to_image",
                    storage,
                    self.writers.get(key, key),
                    views[key],
                )
            )
            fresh[storage].append(key)
        return done

    def _add(self, storage: str, category: str, shape=None, key: str | None = None, alias_group=None) -> int:
        buf = self.p.buffer(storage)
        if buf.kind == "variable":
            raise TosaError(f"tensor '{storage}' is a variable (state kept across runs), which VGF cannot hold")
        view = self.views.get(storage, _View(STORAGE_BUFFER_TYPE, None))
        itemsize = np.dtype(buf.dtype).itemsize
        if view.format is not None:  # an image: [H, W, C] / [1, H, W, C] texels, C packed into the format
            fmt, shape = view.format, view.shape
            if int(np.prod(shape, dtype=np.int64)) * itemsize != buf.nbytes:
                raise TosaError(f"image tensor '{storage}': {buf.nbytes} bytes do not match shape {list(shape)}")
        else:
            fmt = self._format(storage)
            shape = tuple(buf.shape if shape is None else shape)
            if int(np.prod(shape, dtype=np.int64)) * itemsize != buf.nbytes:
                if category in ("INPUT", "OUTPUT"):
                    raise TosaError(
                        f"tensor '{storage}': {buf.nbytes} bytes do not match shape {list(shape)} of "
                        f"{np.dtype(buf.dtype).name}; VGF I/O must be dense"
                    )
                shape = (-(-buf.nbytes // itemsize),)
        sampler = None
        if view.sampler:
            sampler = {field: SAMPLER_FIELDS[field][name] for field, name in view.sampler}
        self.vgf.resources.append(
            Resource(category, view.descriptor, fmt, shape, alias_group=alias_group, sampler=sampler)
        )
        self.mrt[key or storage] = len(self.vgf.resources) - 1
        return self.mrt[key or storage]

    def _group(self) -> int:
        self.groups += 1
        return self.groups - 1

    def _format(self, name: str) -> int:
        """The scalar VkFormat of a tensor's elements, from the planner's resource (TOSA dtypes: bf16 / fp8 exact)."""
        return FORMATS[SCALAR_FORMATS[DType[self.p.resources[name].dtype]]].value

    def _resources(self) -> None:
        p, vgf = self.p, self.vgf
        binding = 0
        for name in p.inputs:
            if p.storage(name) != name:
                raise TosaError(f"graph input '{name}' shares memory with '{p.storage(name)}'")
            vgf.inputs.append(Binding(binding, self._add(name, "INPUT")))
            vgf.input_names.append(name)
            binding += 1
        used = {p.storage(n) for k in p.steps if isinstance(k, Kernel) for n in k.bindings}
        used |= {p.storage(n) for n in p.outputs}
        for name in p.constants:
            if p.storage(name) not in self.mrt and p.storage(name) in used:
                self._constant(name, p.storage(name))
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
        for views in self.mixed.values():  # image views: INTERMEDIATE entries; sampled ones alias their writer
            for view, key in views.items():
                group = self._group() if key in self.writers else None
                self._add_view(key, view, group)
                if group is not None:
                    self._add_view(self.writers[key], _View(STORAGE_IMAGE_TYPE, view.format, (), view.shape), group)
        for k in self.kernels:
            for name in k.bindings:
                if name not in self.mrt and p.storage(name) not in self.mrt:
                    self._add(p.storage(name), "INTERMEDIATE")

    def _constant(self, name: str, storage: str) -> None:
        """The buffer entry kernels bind (INTERMEDIATE) and, in its alias group, the TENSOR_ARM entry a constant
        graph sets to the constant (a CONSTANT entry in the constant section): the tensor's format and shape when
        a graph tensor can have them, else R8_SINT bytes."""
        group = self._group()
        index = self._add(storage, "INTERMEDIATE", alias_group=group)
        entry = self.vgf.resources[index]
        nbytes = resource_bytes(self.vgf, index)
        if nbytes == 0:  # nothing to fill
            return
        data = np.ascontiguousarray(self.p.constants[name]).astype(self.p.buffer(name).dtype, copy=False).tobytes()
        if len(data) > nbytes:
            raise TosaError(f"constant '{name}': {len(data)} bytes of data for {nbytes} bytes of memory")
        fmt, shape = entry.format, tuple(entry.shape)
        if fmt not in GRAPH_ELEMENTS:
            fmt, shape = BYTES_FORMAT, (nbytes,)
        elif not (1 <= len(shape) <= GRAPH_MAX_RANK and min(shape) >= 1):
            shape = (max(int(np.prod(shape, dtype=np.int64)), 1),)
        self.vgf.resources.append(Resource("INTERMEDIATE", TENSOR_TYPE, fmt, shape, alias_group=group))
        self.vgf.resources.append(Resource("CONSTANT", None, fmt, shape))
        self.vgf.constants.append(Constant(len(self.vgf.resources) - 1, data + bytes(nbytes - len(data))))
        self.filled.append((len(self.vgf.resources) - 2, len(self.vgf.constants) - 1))

    def _add_view(self, key: str, view: _View, alias_group: int | None) -> None:
        assert view.format is not None and view.shape is not None, "only image views get entries of their own"
        sampler = {field: SAMPLER_FIELDS[field][name] for field, name in view.sampler} if view.sampler else None
        self.vgf.resources.append(
            Resource("INTERMEDIATE", view.descriptor, view.format, view.shape, alias_group=alias_group, sampler=sampler)
        )
        self.mrt[key] = len(self.vgf.resources) - 1

    def _own_output(self, name: str, root: str) -> int:
        p = self.p
        if self.views.get(root, _View(STORAGE_BUFFER_TYPE, None)).format is not None:
            raise TosaError(
                f"graph output '{name}' shares the memory of image tensor '{root}'; a copy of an image "
                f"into an output of its own is not supported"
            )
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
        for n, at in enumerate(range(0, len(self.filled), GRAPH_OUTPUTS)):  # constant graphs first
            chunk = self.filled[at : at + GRAPH_OUTPUTS]
            tensors = [(vgf.resources[t].format, tuple(vgf.resources[t].shape)) for t, _ in chunk]
            vgf.modules.append(
                Module(f"constants_{n}", "GRAPH", f"constants_{n}", constant_graph(f"constants_{n}", tensors))
            )
            slots = [Binding(k, t) for k, (t, _) in enumerate(chunk)]
            vgf.segments.append(
                Segment(
                    f"constant_segment_{n}",
                    len(vgf.modules) - 1,
                    "GRAPH",
                    [DescriptorSet(slots, 0)],
                    outputs=slots,
                    constants=[c for _, c in chunk],
                    dispatch_shape=(0, 0, 0),
                    constant_bindings=[(k, c) for k, (_, c) in enumerate(chunk)],
                )
            )
        kernels = self.kernels
        spirv = self._spirv(kernels)
        modules: dict[bytes, int] = {}
        for i, (k, code) in enumerate(zip(kernels, spirv)):
            if code not in modules:
                modules[code] = len(vgf.modules)
                label = re.sub(r"\W", "_", k.shader)
                vgf.modules.append(Module(f"{label}_{len(vgf.modules)}", "COMPUTE", k.entry or "main", code, "SPIR-V"))
            where = list(k.slots) or [(0, b) for b in range(len(k.bindings))]
            slot = {name: Binding(b, self._mrt_of(name)) for (_, b), name in zip(where, k.bindings)}
            sets: dict[int, list[Binding]] = {}
            for (set_index, b), name in zip(where, k.bindings):
                sets.setdefault(set_index, []).append(Binding(b, self._mrt_of(name)))
            vgf.segments.append(
                Segment(
                    f"compute_segment_{i}",
                    modules[code],
                    "COMPUTE",
                    [DescriptorSet(sets[n], n) for n in sorted(sets)],
                    inputs=[slot[n] for n in dict.fromkeys(k.reads) if n in slot],
                    outputs=[slot[n] for n in dict.fromkeys(k.writes) if n in slot],
                    dispatch_shape=tuple(int(g) for g in k.groups),
                )
            )

    def _spirv(self, kernels: list[Kernel]) -> list[bytes]:
        variants = []
        for k in kernels:
            if k.spirv:
                if k.push_constants:
                    raise TosaError(
                        f"a ready SPIR-V kernel (a VulkanCustomShader payload) declares "
                        f"{len(k.push_constants)} bytes of push constants: VGF carries no push-constant "
                        f"values and SPIR-V cannot be re-baked, so it cannot be exported",
                        op=k.op,
                    )
                variants.append(Variant(k.shader, k.defines, spirv=k.spirv, op=k.op))
            elif k.push_constants:
                variants.append(_bake(variant_of(k), k))
            else:
                variants.append(variant_of(k))
        return [specialize(m, k.spec_values) for m, k in zip(self.cache.get_many(variants), kernels)]


def _texel_kernel(op: str, shader: str, src: str, dst: str, view: _View) -> Kernel:
    """shaders/custom/<shader>.comp between a buffer and a storage image of `view`'s format and extent."""
    assert view.format is not None and view.shape is not None, "an image view"
    name = FORMAT_NAMES[view.format]
    fmt = FORMATS[name]
    height, width = view.shape[-3:-1]
    image = Image(name, width, height)
    to_image = shader == "buffer_to_image"
    defines = (("IMAGE_FORMAT", fmt.glsl), ("CHANNELS", f"{fmt.components}u"))
    return Kernel(
        op,
        f"custom/{shader}",
        defines,
        (src, dst),
        b"",
        (-(-width // 8), -(-height // 8), 1),
        reads=(src,),
        writes=(dst,),
        descriptors=(STORAGE_BUFFER, STORAGE_IMAGE) if to_image else (STORAGE_IMAGE, STORAGE_BUFFER),
        images=(None, image) if to_image else (image, None),
    )


def _copy_kernel(op: str, src: str, dst: str, nbytes: int) -> Kernel:
    """shaders/data_layout/copy.comp over `nbytes` bytes as one contiguous run."""
    unit = 4 if nbytes % 4 == 0 else 1
    count = nbytes // unit
    data, layout = copy_push(count, 0, 0, [[count, 1, 1, count]])
    return Kernel(
        op,
        "data_layout/copy",
        (("ELEM_T", UNIT_TYPES[unit]),),
        (src, dst),
        data,
        grid_1d(count),
        reads=(src,),
        writes=(dst,),
        push_layout=layout,
    )


# ---------------------------------------------------------------------------------------------------------------
# Push constants baked into a user's GLSL (custom ops: their source is the only declaration of the block)

_PUSH_BLOCK = re.compile(r"layout\s*\(\s*push_constant\s*\)\s*uniform\s+(\w+)\s*\{([^}]*)\}\s*(\w+)\s*;")
_MEMBER = re.compile(r"^(\w+)\s+(.+)$", re.S)
_DECL = re.compile(r"^(\w+)\s*(?:\[\s*(\d+)\s*\])?$")
# scalar type -> (bytes, struct code, literal kind)
_SCALARS = {
    "int": (4, "i", "int"),
    "uint": (4, "I", "uint"),
    "float": (4, "f", "float"),
    "float16_t": (2, "e", "half"),
    "int16_t": (2, "h", "int16"),
    "uint16_t": (2, "H", "uint16"),
    "int64_t": (8, "q", "int64"),
    "uint64_t": (8, "Q", "uint64"),
    "double": (8, "d", "double"),
}
_VECTORS = {"vec": "float", "ivec": "int", "uvec": "uint"}


def _member_type(name: str) -> tuple[str, int]:
    """(scalar type, components) of a push-constant member type."""
    if name in _SCALARS:
        return name, 1
    m = re.fullmatch(r"(i|u|)vec([234])", name)
    if m:
        return _VECTORS[m.group(1) + "vec"], int(m.group(2))
    raise ValueError(f"push-constant member type {name!r} is not supported by VGF export")


def bake_push_constants(source: str, push: bytes, where: str = "") -> str:
    """A user's preprocessed GLSL with its push-constant block replaced by a const struct holding `push`
    (std430)."""
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
                    raise ValueError(
                        f"{where}: push-constant member '{dm.group(1)}' ends at byte {end}, past the "
                        f"{len(push)} bytes the dispatch supplies"
                    )
                vals = struct.unpack_from("<" + code * comps, push, offset)
                lits = [literal(kind, v) for v in vals]
                elems.append(lits[0] if comps == 1 else f"{mm.group(1)}({', '.join(lits)})")
                offset += size * comps if count is None else (size if comps == 1 else align)
            members.append(f"{mm.group(1)} {name};")
            inits.append(elems[0] if count is None else f"{mm.group(1)}[{count}]({', '.join(elems)})")
    const = f"struct {block} {{ {' '.join(members)} }};\nconst {block} {instance} = {block}({', '.join(inits)});"
    return source[: m.start()] + const + source[m.end() :]


_PREPROCESSED: dict[Variant, str] = {}


def _preprocess(variant: Variant) -> str:
    """`glslc -E` of a variant (macros and includes expanded); cmeel's `glslang -E` where glslc is missing."""
    if variant not in _PREPROCESSED:
        exe, text, env = find_tool("glslc"), variant.source(), None
        if exe is not None:
            cmd = [exe, "-E", f"--target-env={TARGET_ENV}", "-I", str(INCLUDE_DIR), "-I", str(SHADER_ROOT)]
        else:
            glslang = glsl_compiler.glslang()
            if glslang is None:
                raise ShaderError(f"no GLSL compiler: {glsl_compiler.GET_ONE}")
            head, sep, rest = text.partition("\n")  # glslang wants #include asked for (glslc enables it itself)
            text = f"{head}{sep}#extension GL_GOOGLE_include_directive : require\n{rest}"
            exe, env = glslang.exe, glslang.env()
            cmd = [exe, "-E", f"-I{INCLUDE_DIR}", f"-I{SHADER_ROOT}"]  # (-E: no --target-env, which implies -V)
        with tempfile.TemporaryDirectory(prefix="tosa_vk-vgf-") as tmp:
            src = Path(tmp) / "v.comp"
            src.write_text(text)
            done = subprocess.run([*cmd, str(src)], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            tool = Path(exe).name
            raise ShaderError(
                f"{tool} -E failed for shaders/{variant.shader}.comp: {(done.stderr or done.stdout).strip()}"
            )
        _PREPROCESSED[variant] = done.stdout
    return _PREPROCESSED[variant]


def _bake(variant: Variant, kernel: Kernel) -> Variant:
    """The kernel's variant with its push-constant values compiled in: built-in shaders from their declared
    layout (tosa_vk/stages/lower/push.py; PUSH_BAKED replaces the block), users' GLSL from its own block."""
    if kernel.push_layout:
        try:
            const = baked(kernel.push_layout, kernel.push_constants)
        except ValueError as err:
            raise TosaUnsupportedError(f"cannot bake push constants for VGF: {err}", op=kernel.op) from None
        return Variant(variant.shader, (*variant.defines, ("PUSH_BAKED", const)), op=kernel.op, specs=variant.specs)
    try:
        text = bake_push_constants(_preprocess(variant), kernel.push_constants, f"{kernel.op} ({variant.shader})")
    except ValueError as err:
        raise TosaUnsupportedError(f"cannot bake push constants for VGF: {err}", op=kernel.op) from None
    return Variant(variant.shader, (), text=text, op=kernel.op)

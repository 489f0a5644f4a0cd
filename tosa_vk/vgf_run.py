"""VGF -> run on tosa_vk's Vulkan runtime: each COMPUTE segment becomes a Kernel whose SPIR-V comes from the file.

Supported: COMPUTE segments with SPIR-V or GLSL modules (any entry point, any descriptor sets / bindings), no
push-constant ranges (VGF carries no push-constant values); resources bound as STORAGE_BUFFER, TENSOR_ARM (bound as
a storage buffer: the shaders tosa_vk and Arm's model-converter embed for custom ops declare buffers), STORAGE_IMAGE
and COMBINED_IMAGE_SAMPLER (fp32 texels of an [H, W, C] / [1, H, W, C] resource, the sampler from the entry's
SamplerConfig; the runtime copies them between the arena and VkImages around the dispatch). Every MRT entry gets
its own range of one arena (alias groups share one range); CONSTANT entries bound by compute segments are filled
from the constant section, also when they are listed as model-sequence inputs (as tosa_vk's exporter did before
its files carried a constant graph), so callers feed only the real inputs.

Constant graphs: a GRAPH segment whose graph has no inputs and only sets graph constants (the constant section's
data, bound by SegmentInfo's constant bindings) as its outputs does no computing; tosa_vk's exporter writes one to
fill the tensors its compute segments read (tosa_vk/vgf_export.py), and model-converter writes one for a graph
whose outputs are constants. Its module format is defined here once: `constant_graph` writes it, and
`constant_graph_outputs` recognises it (any graph module of that shape, not only ours). Each output tensor's range
of the arena is filled with its constant once, at load; a compute segment writing into that memory (the tensor or
its alias group) is refused, since a file runner would restore the constant on every run and we would not. Other
GRAPH segments (TOSA graphs for VK_ARM_data_graph) are refused clearly. This runs the VGFs tosa_vk exports and
those Arm's model-converter writes for graphs of com.arm.VulkanCustomShader operators.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np

from vgf import VGF, VGFError, read_vgf
from vgf.scenario import FORMAT_SIZES, IMAGE_DESCRIPTORS, image_extent, resource_bytes
from vgf.vk_enums import DESCRIPTOR_NAMES, FORMAT_BY_VALUE, FORMAT_NAMES, FORMATS, SAMPLER_NAMES, STORAGE_BUFFER

from .errors import TosaError, TosaFormatError
from .ir.dtype import DType
from .program import Buffer, Image, Kernel, Program, Step
from .spirv import (
    BINDING,
    DESCRIPTOR_SET,
    OP_CONSTANT,
    OP_CONSTANT_COMPOSITE,
    OP_DECORATE,
    OP_TYPE_ARRAY,
    OP_TYPE_FLOAT,
    OP_TYPE_INT,
    OP_TYPE_POINTER,
    OP_TYPE_TENSOR_ARM,
    OP_VARIABLE,
    UNIFORM_CONSTANT,
    ReflectError,
    instructions,
)
from .vulkan import Device
from .vulkan.memory import align
from .vulkan.runtime import DEFAULT_TIMEOUT_S, Runtime
from .vulkan_backend import OnDevice

# numpy storage dtype -> the TOSA type it stores (INT8 over INT4, which shares its storage)
_TOSA_NAMES = {np.dtype(d.numpy): d.name for d in reversed(DType) if d not in (DType.UNKNOWN, DType.SHAPE, DType.INT4)}
# VkFormat value -> numpy dtype of the arena view (a component's storage type; ml_dtypes names for bf16 / fp8)
_DTYPES = {f.value: np.dtype(f.numpy) for f in FORMATS.values()}


# ---- constant graphs ---------------------------------------------------------------------------------------------
# SPIR-V opcodes and enumerants beyond tosa_vk/spirv.py's (SPIR-V spec 3.x; SPV_ARM_graph, SPV_ARM_tensors)
_OP_EXT_INST, _OP_EXTENSION, _OP_MEMORY_MODEL, _OP_CAPABILITY = 12, 10, 14, 17
_OP_GRAPH_CONSTANT, _OP_GRAPH_ENTRY_POINT, _OP_GRAPH, _OP_GRAPH_INPUT = 4181, 4182, 4183, 4184
_OP_GRAPH_SET_OUTPUT, _OP_GRAPH_END, _OP_TYPE_GRAPH = 4185, 4186, 4190
_SHADER, _FLOAT16, _INT16, _INT8, _TENSORS, _GRAPH, _VULKAN_MEMORY_MODEL = 1, 9, 22, 39, 4174, 4191, 5345
_LOGICAL, _VULKAN = 0, 3
_EXTENSIONS = ("SPV_ARM_tensors", "SPV_ARM_graph", "SPV_KHR_vulkan_memory_model")
# VkFormat value -> (element type opcode, width, capability): the formats a constant graph's tensors use as they
# are (TOSA's int8 / int16 / int32 / fp16 / fp32; integers signless, as model-converter writes them). Other
# element types travel as R8_SINT bytes (vgf_export.py).
GRAPH_ELEMENTS = {
    FORMATS["VK_FORMAT_R8_SINT"].value: (OP_TYPE_INT, 8, _INT8),
    FORMATS["VK_FORMAT_R16_SINT"].value: (OP_TYPE_INT, 16, _INT16),
    FORMATS["VK_FORMAT_R32_SINT"].value: (OP_TYPE_INT, 32, None),
    FORMATS["VK_FORMAT_R16_SFLOAT"].value: (OP_TYPE_FLOAT, 16, _FLOAT16),
    FORMATS["VK_FORMAT_R32_SFLOAT"].value: (OP_TYPE_FLOAT, 32, None),
}
GRAPH_MAX_RANK = 6  # TOSA's MAX_RANK: a tensor's shape as the graph declares it


def _string(text: str) -> list[int]:
    """A SPIR-V literal string operand: nul-terminated UTF-8, zero-padded to whole words."""
    data = text.encode() + b"\0"
    data += bytes(-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def constant_graph(name: str, tensors: list[tuple[int, tuple[int, ...]]]) -> bytes:
    """A SPIR-V graph module (entry point `name`) without inputs whose output k is graph constant k: a tensor of
    (VkFormat value from GRAPH_ELEMENTS, shape of rank 1..GRAPH_MAX_RANK) at set 0, binding k. The layout
    model-converter writes for a graph whose outputs are constants; each instruction as the specs define it."""
    counter = iter(range(1, 1 << 32))
    head: list[list[int]] = []  # types, constants, interface variables, graph constants: in dependency order
    decorations: list[list[int]] = []
    capabilities = {_SHADER, _TENSORS, _GRAPH, _VULKAN_MEMORY_MODEL}

    def add(into: list[list[int]], opcode: int, *operands: int) -> None:
        into.append([(len(operands) + 1) << 16 | opcode, *operands])

    uint = next(counter)
    add(head, OP_TYPE_INT, uint, 32, 0)
    uints: dict[int, int] = {}

    def u32(value: int) -> int:
        if value not in uints:
            uints[value] = next(counter)
            add(head, OP_CONSTANT, uint, uints[value], value)
        return uints[value]

    elements: dict[tuple[int, int], int] = {(OP_TYPE_INT, 32): uint}
    arrays: dict[int, int] = {}
    # one OpTypeTensorARM (and pointer type) per element type and shape: SPIR-V forbids declaring a non-aggregate
    # type twice
    types: dict[tuple[int, tuple[int, ...]], tuple[int, int]] = {}
    tensor_types, variables = [], []
    for k, (fmt, shape) in enumerate(tensors):
        opcode, width, capability = GRAPH_ELEMENTS[fmt]
        assert 1 <= len(shape) <= GRAPH_MAX_RANK and min(shape) >= 1, f"tensor shape {shape}"
        if capability is not None:
            capabilities.add(capability)
        if (opcode, width) not in elements:
            elements[opcode, width] = next(counter)
            add(head, opcode, elements[opcode, width], width, *([0] if opcode == OP_TYPE_INT else []))
        element, shape = elements[opcode, width], tuple(int(d) for d in shape)
        if (element, shape) not in types:
            rank = u32(len(shape))
            if len(shape) not in arrays:
                arrays[len(shape)] = next(counter)
                add(head, OP_TYPE_ARRAY, arrays[len(shape)], uint, rank)
            dims = [u32(d) for d in shape]
            dims_id, tensor, pointer = (next(counter) for _ in range(3))
            add(head, OP_CONSTANT_COMPOSITE, arrays[len(shape)], dims_id, *dims)
            add(head, OP_TYPE_TENSOR_ARM, tensor, element, rank, dims_id)
            add(head, OP_TYPE_POINTER, pointer, UNIFORM_CONSTANT, tensor)
            types[element, shape] = tensor, pointer
        tensor, pointer = types[element, shape]
        variable = next(counter)
        add(head, OP_VARIABLE, pointer, variable, UNIFORM_CONSTANT)
        add(decorations, OP_DECORATE, variable, DESCRIPTOR_SET, 0)
        add(decorations, OP_DECORATE, variable, BINDING, k)
        tensor_types.append(tensor)
        variables.append(variable)
    graph_type = next(counter)
    add(head, _OP_TYPE_GRAPH, graph_type, 0, *tensor_types)
    values = []
    for k, tensor in enumerate(tensor_types):
        values.append(next(counter))
        add(head, _OP_GRAPH_CONSTANT, tensor, values[-1], k)
    indices = [u32(k) for k in range(len(tensors))]
    graph = next(counter)
    body: list[list[int]] = []
    add(body, _OP_GRAPH_ENTRY_POINT, graph, *_string(name), *variables)
    add(body, _OP_GRAPH, graph_type, graph)
    for value, index in zip(values, indices):
        add(body, _OP_GRAPH_SET_OUTPUT, value, index)
    add(body, _OP_GRAPH_END)
    preamble: list[list[int]] = []
    for capability in sorted(capabilities):
        add(preamble, _OP_CAPABILITY, capability)
    for extension in _EXTENSIONS:
        add(preamble, _OP_EXTENSION, *_string(extension))
    add(preamble, _OP_MEMORY_MODEL, _LOGICAL, _VULKAN)
    words = [0x07230203, 0x00010500, 0, next(counter), 0]  # SPIR-V 1.5, generator 0, id bound, schema
    for instruction in (*preamble, *decorations, *head, *body):
        words += instruction
    return struct.pack(f"<{len(words)}I", *words)


def constant_graph_outputs(code: bytes | str | None) -> list[tuple[int, int, int]] | None:
    """(set, binding, graph constant id) of each output of a graph module without inputs whose outputs are all
    graph constants (no operation in the graph); None for any other module."""
    if not isinstance(code, bytes):
        return None
    decorations: dict[int, dict[int, int]] = {}
    uints: dict[int, int] = {}
    graph_constants: dict[int, int] = {}
    interface: list[int] | None = None
    outputs: dict[int, int] = {}  # output index -> value id
    graphs, inside = 0, False
    try:
        for opcode, ops in instructions(code):
            if inside:  # the graph's body: output assignments of graph constants only
                if opcode == _OP_GRAPH_END:
                    inside = False
                elif opcode != _OP_GRAPH_SET_OUTPUT or len(ops) != 2 or ops[0] not in graph_constants:
                    return None
                elif uints.get(ops[1]) in outputs or ops[1] not in uints:
                    return None
                else:
                    outputs[uints[ops[1]]] = ops[0]
            elif opcode == _OP_GRAPH:
                graphs, inside = graphs + 1, True
            elif opcode in (_OP_EXT_INST, _OP_GRAPH_INPUT) or (opcode == _OP_TYPE_GRAPH and (len(ops) < 2 or ops[1])):
                return None  # an operation, or a graph with inputs
            elif opcode == _OP_GRAPH_ENTRY_POINT and len(ops) >= 2:
                if interface is not None:
                    return None
                end = next((i for i in range(1, len(ops)) if b"\0" in struct.pack("<I", ops[i])), len(ops))
                interface = list(ops[end + 1 :])
            elif opcode == OP_DECORATE and len(ops) >= 3:
                decorations.setdefault(ops[0], {})[ops[1]] = ops[2]
            elif opcode == OP_CONSTANT and len(ops) >= 3:
                uints[ops[1]] = ops[2]
            elif opcode == _OP_GRAPH_CONSTANT and len(ops) >= 3:
                graph_constants[ops[1]] = ops[2]
    except ReflectError:
        return None
    if graphs != 1 or inside or interface is None or sorted(outputs) != list(range(len(interface))):
        return None
    found = []
    for k, variable in enumerate(interface):
        where = decorations.get(variable, {})
        if BINDING not in where:
            return None
        found.append((where.get(DESCRIPTOR_SET, 0), where[BINDING], graph_constants[outputs[k]]))
    return found


def runs_as_is(vgf: VGF) -> bool:
    """True when tosa_vk runs the file's segments as they are (vgf_program): every GRAPH segment only outputs
    constants. A file with other GRAPH segments holds a TOSA graph (tosa_vk/vgf_graph.py decodes those)."""
    return all(
        s.type == "COMPUTE"
        or (s.module_index < len(vgf.modules) and constant_graph_outputs(vgf.modules[s.module_index].code) is not None)
        for s in vgf.segments
    )


def vgf_program(vgf: VGF, file: str | None = None, alignment: int = 256) -> Program:
    """A Program running the VGF's segments in order (kernels carry the modules' SPIR-V)."""

    def fail(rule: str, op: str | None = None) -> TosaError:
        return TosaError(rule, op=op, file=file)

    filled = _constant_graphs(vgf, fail)  # MRT index -> its constant's data, set by a constant graph
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
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
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
        buffers[name] = Buffer(name, offset, nbytes, shape, np.dtype(dtype), kind)
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
    steps: list[Step] = []
    held = {vgf.resources[m].alias_group for m in filled} - {None}  # memory a constant graph fills once
    for s in vgf.segments:
        if s.type == "GRAPH":  # a constant graph (_constant_graphs refused any other): its outputs are filled at load
            continue
        module = vgf.modules[s.module_index]
        if module.language not in ("SPIR-V", "GLSL") or not module.code:
            raise fail(
                f"module {s.module_index} '{module.name}' holds {module.language or 'no'} code; only SPIR-V "
                f"and GLSL modules run here",
                op=s.name,
            )
        if s.push_constant_ranges:
            raise fail(
                "the segment declares push-constant ranges, but a VGF carries no push-constant values", op=s.name
            )
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
        reads = tuple(names[b.mrt_index] for b in s.inputs) if s.inputs or s.outputs else bound
        writes = tuple(names[b.mrt_index] for b in s.outputs) if s.inputs or s.outputs else bound
        declared = bool(s.inputs or s.outputs)  # else it may write whatever it binds
        for m in [b.mrt_index for b in s.outputs] if declared else [m for _, _, m in where]:
            if m in filled or (vgf.resources[m].alias_group in held):
                raise fail(
                    f"the segment {'writes' if declared else 'lists no inputs or outputs and binds'} resource {m} "
                    f"'{names[m]}', memory a constant graph fills (tosa_vk fills it once, at load; a runner running "
                    f"the graph every time would restore it)",
                    op=s.name,
                )
        descriptors: list[str] = []
        images: list[Image | None] = []
        for _, _, m in where:
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
            descriptors, images = [], []
        spirv = module.code if isinstance(module.code, bytes) and module.language == "SPIR-V" else b""
        source = str(module.code) if not spirv else ""
        x, y, z = s.dispatch_shape
        steps.append(
            Kernel(
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
                descriptors=tuple(descriptors),
                images=tuple(images),
                source=source,
                spirv=spirv,
            )
        )
    inputs = [names[b.mrt_index] for b in vgf.inputs if vgf.resources[b.mrt_index].category != "CONSTANT"]
    outputs = [names[b.mrt_index] for b in vgf.outputs]
    if not outputs:
        raise fail("the model sequence has no outputs: nothing to run")
    written = {n for k in steps if isinstance(k, Kernel) for n in k.writes} | {names[m] for m in filled}
    unwritten = [n for n in outputs if n not in written]
    if unwritten:  # its bytes would be whatever the arena held: no result to report
        raise fail(f"model output '{unwritten[0]}' is written by no segment ({len(steps)} segment(s))")
    return Program(steps, buffers, max(arena, 16), inputs, outputs, constants)


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
        ids = dict(s.constant_bindings) if s.constant_bindings else dict(enumerate(s.constants))
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
    A constant shares memory with no other category (writes to the others would change it between runs)."""
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


class VGFModel(OnDevice):
    """A .vgf loaded onto a Vulkan device: run(feeds by input name) -> outputs by name."""

    backend = "vulkan"

    def __init__(
        self,
        source: str | Path | VGF,
        device: Device | None = None,
        file: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ):
        if isinstance(source, VGF):
            self.vgf, self.file = source, file
        else:
            self.file = file or str(source)
            try:
                self.vgf = read_vgf(source, file=self.file)
            except VGFError as err:
                raise TosaFormatError(err.rule, file=err.file) from None
        self.program = vgf_program(self.vgf, self.file)
        dev = self.attach(device)
        try:
            self.runtime = Runtime(self.program, dev, timeout_s=timeout_s)
        except BaseException:
            self.close()
            raise

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {n: self._signature(n) for n in self.program.inputs}

    @property
    def outputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {n: self._signature(n) for n in self.program.outputs}

    def _signature(self, name: str) -> tuple[tuple[int, ...], str]:
        """(shape, TOSA dtype name) of a resource, the type read from its storage format (as the other backends
        name their inputs; a format no TOSA type stores keeps the numpy name)."""
        buf = self.program.buffer(name)
        return buf.shape, _TOSA_NAMES.get(np.dtype(buf.dtype), np.dtype(buf.dtype).name)

    def run(self, feeds: dict[str, np.ndarray] | None = None, **named) -> dict[str, np.ndarray]:
        feeds = {**(feeds or {}), **named}
        self.check_feeds(self.program.inputs, feeds, "VGF")
        cast = {}
        for name in self.program.inputs:
            buf = self.program.buffer(name)
            value = np.asarray(feeds[name])
            if value.size != int(np.prod(buf.shape, dtype=np.int64)):
                raise TosaError(
                    f"input '{name}' has shape {list(value.shape)}, the VGF expects {list(buf.shape)}", file=self.file
                )
            cast[name] = value.astype(buf.dtype, copy=False).reshape(buf.shape)
        with self.using() as runtime:
            return runtime.run(cast)

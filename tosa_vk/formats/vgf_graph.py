"""TOSA graphs <-> VGF files with GRAPH segments, laid out the way Arm's model-converter writes them.

Export (`export`, `tosa-vk export --segments graph`, the default): the main block's operators in order, cut at each
com.arm.VulkanCustomShader CUSTOM node. Each run of TOSA operators is a GRAPH segment whose module is a SPIR-V graph
(tosa_vk/formats/spirv_graph: SPV_ARM_graph, SPV_ARM_tensors, TOSA.001000.1) with its large constants in the VGF
constant section; each custom node is a COMPUTE segment running its payload's shader with dispatch_shape =
workgroup_sizes. Conventions copied from model-converter's output, because Arm's runtimes expect them:
- every tensor crossing a segment boundary (or a model input / output) has one binding number for the whole file,
  in order of first use; graph modules decorate their interface tensors with it and the model sequence lists it
  (scenario-runner binds a dispatch_graph's resources by these numbers);
- graph segments bind TENSOR_ARM resources (scalar formats); a compute segment binds the descriptor its payload
  names (a TENSOR_ARM binding as STORAGE_BUFFER: the shaders declare buffers). A tensor bound both ways has one
  resource per descriptor type, all in one alias group (one memory);
- graph constant id i of a segment is bound to a constant-section index by SegmentInfo's constant bindings;
- SPV_ARM_tensors has no rank-0 tensors: they are shape [1], in the modules and in the resource table (so a graph
  with rank-0 inputs or outputs comes back with [1] ones).
What a graph module cannot express (COND_IF / WHILE_LOOP, VARIABLE operators, custom nodes of other domains,
push constants or images of custom shaders) is a TosaError that points to `--segments compute`.

Import (`to_graph`): the inverse for any VGF with GRAPH segments (ours, model-converter's, ExecuTorch's): resources
of one alias group are one tensor, named after the model sequence's input / output names where they are model I/O;
each GRAPH segment's module is decoded into operators; each COMPUTE segment becomes a VulkanCustomShader CUSTOM node
with the module's code; constants bound to compute segments become CONST operators. The result is a validated
Graph that any backend compiles like a .tosa file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from vgf import VGF, Binding, Constant, DescriptorSet, Module, Resource, Segment, write_vgf
from vgf.scenario import FORMAT_SIZES, resource_bytes
from vgf.vk_enums import DESCRIPTOR_NAMES, DESCRIPTOR_TYPES, FORMAT_NAMES, FORMATS, STORAGE_BUFFER, TENSOR_ARM

from ..abi import custom_payload
from ..abi.spirv import instructions
from ..custom import attrs_bytes
from ..errors import TosaError, TosaUnsupportedError
from ..ir.dtype import DType
from ..ir.graph import Block, Graph, Operator, Region, Tensor
from ..ir.validate import validate
from ..stages.plan.resources import SCALAR_FORMATS
from ..store.files import write_atomic
from .spirv_graph.decode import decode
from .spirv_graph.encode import encode
from .spirv_graph.instructions import tensor_array, tensor_bytes

CONSTANT_PRODUCERS = ("CONST", "CONST_SHAPE")
CONTROL_FLOW = ("COND_IF", "WHILE_LOOP")
NOT_IN_A_GRAPH = (*CONTROL_FLOW, "VARIABLE", "VARIABLE_READ", "VARIABLE_WRITE")
# a VGF is a fixed sequence of segments: no export form holds control flow (not --segments compute either)
NO_CONTROL_FLOW = (
    "the graph has control flow (COND_IF / WHILE_LOOP regions), and a VGF is a fixed sequence of segments: neither "
    "GRAPH nor COMPUTE segments can hold it; run the .tosa itself (tosa_vk runs control flow on the device)"
)
# VkFormat value -> the TOSA type a graph tensor of that format has (INT48 over SHAPE and INT64, INT8 over INT4);
# unsigned formats are what model-converter writes for RESCALE's unsigned operands: the signed type of that width
_DTYPES = {
    FORMATS[f].value: d for d, f in SCALAR_FORMATS.items() if d not in (DType.SHAPE, DType.INT4, DType.INT64)
} | {FORMATS[f"VK_FORMAT_R{bits}_UINT"].value: DType[f"INT{bits}"] for bits in (8, 16)}
_OP_DECORATE, _BINDING = 71, 33  # SPIR-V OpDecorate, decoration Binding
_BUFFER_TYPES = {STORAGE_BUFFER: "Buffer", TENSOR_ARM: "Tensor"}


def _compute_only(rule: str, **site) -> TosaError:
    return TosaUnsupportedError(f"{rule}; export with --segments compute (tosa_vk's own kernels) instead", **site)


# ---- export ------------------------------------------------------------------------------------------------------


@dataclass
class _Part:
    """One segment to be: a run of TOSA operators (graph) or one custom node (compute)."""

    kind: str  # "GRAPH" | "COMPUTE"
    ops: list[int] = field(default_factory=list)  # operator indices in the main block
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def export(graph: Graph, path: str | Path | None = None, file: str | None = None) -> VGF:
    """The graph as a VGF of GRAPH (and, for custom shaders, COMPUTE) segments; written to `path` if given."""
    vgf = _GraphExporter(graph, file).vgf
    if path is not None:
        write_atomic(path, write_vgf(vgf), overwrite=True, what="the VGF")  # no link written through
    return vgf


class _GraphExporter:
    def __init__(self, graph: Graph, file: str | None):
        self.file = file
        self.block = block = graph.main
        self._check(graph)
        self.vgf = VGF()
        self.numbers: dict[str, int] = {}  # tensor -> binding number
        self.entries: dict[tuple[str, str], int] = {}  # (tensor, descriptor name) -> MRT index
        self.groups: dict[str, int] = {}  # tensor -> alias group (tensors bound by several descriptor types)
        self.constants: dict[str, int] = {}  # constant tensor -> constant-section index
        parts = self._partition()
        self._plan_descriptors(parts)
        for t in block.inputs:
            self._number(t)
        for part in parts:
            for t in part.inputs + part.outputs:
                self._number(t)
        for k, part in enumerate(parts):
            if part.kind == "GRAPH":
                self._graph_segment(part, sum(p.kind == "GRAPH" for p in parts[:k]))
            else:
                self._compute_segment(part, sum(p.kind == "COMPUTE" for p in parts[:k]))
        self.vgf.inputs = [Binding(self.numbers[t], self._primary(t)) for t in block.inputs]
        self.vgf.outputs = [Binding(self.numbers[t], self._primary(t)) for t in block.outputs]
        self.vgf.input_names, self.vgf.output_names = list(block.inputs), list(block.outputs)

    def fail(self, rule: str, index: int | None = None) -> TosaError:
        op = self.block.operators[index] if index is not None else None
        return _compute_only(rule, op=op.op if op else None, index=index, file=self.file)

    def _check(self, graph: Graph) -> None:
        for i, op in enumerate(self.block.operators):
            if op.op in CONTROL_FLOW:
                raise TosaUnsupportedError(NO_CONTROL_FLOW, op=op.op, index=i, file=self.file)
            if op.op in NOT_IN_A_GRAPH:
                raise self.fail(f"a GRAPH segment cannot hold {op.op} (TOSA.001000.1 has no such instruction)", i)
            if op.op == "CUSTOM" and op.attrs.get("domain_name") != custom_payload.DOMAIN:
                raise self.fail(
                    f"custom operator domain {op.attrs.get('domain_name')!r}: only {custom_payload.DOMAIN} nodes "
                    "become COMPUTE segments here (a registered tosa_vk.custom_op exports with --segments compute, "
                    "the CLI with TOSA_VK_CUSTOM_OPS=my_ops.py naming the file that registers it)",
                    i,
                )
        if len(graph.regions) > 1 or len(graph.regions[0].blocks) > 1:
            raise TosaUnsupportedError(NO_CONTROL_FLOW, file=self.file)
        unranked = [t.name for t in self.block.tensors.values() if t.unranked]
        if unranked:
            raise _compute_only(f"tensor '{unranked[0]}' is unranked; a graph module needs every shape", file=self.file)
        produced = {n for op in self.block.operators for n in op.outputs}
        for name in self.block.outputs:
            if name not in produced:
                raise TosaError(f"model output '{name}' is a model input: no segment computes it", file=self.file)

    def _partition(self) -> list[_Part]:
        """Runs of TOSA operators and single custom nodes, in order; each part's inputs are the non-constant
        tensors it reads from outside, its outputs the tensors it makes that later parts or the model read."""
        ops = self.block.operators
        parts: list[_Part] = []
        for i, op in enumerate(ops):
            if op.op in CONSTANT_PRODUCERS and not set(op.outputs) & set(self.block.outputs):
                continue  # placed in each graph segment that reads it
            kind = "COMPUTE" if op.op == "CUSTOM" else "GRAPH"
            if kind == "COMPUTE" or not parts or parts[-1].kind != kind:
                parts.append(_Part(kind))
            parts[-1].ops.append(i)
        constant = {n for op in ops if op.op in CONSTANT_PRODUCERS for n in op.outputs}  # never a segment input
        made = [[n for i in part.ops for n in ops[i].outputs] for part in parts]
        for part, own in zip(parts, made):
            for i in part.ops:
                for n in ops[i].inputs:
                    if n and n not in own and n not in constant and n not in part.inputs:
                        part.inputs.append(n)
        for k, (part, own) in enumerate(zip(parts, made)):
            later = {n for p in parts[k + 1 :] for n in p.inputs} | set(self.block.outputs)
            part.outputs = [n for n in own if n in later]
        return parts

    def _plan_descriptors(self, parts: list[_Part]) -> None:
        """The descriptor types each tensor is bound with, in order of first use; one resource per type."""
        self.kinds: dict[str, list[str]] = {}
        for part in parts:
            if part.kind == "GRAPH":
                bound = [(t, TENSOR_ARM) for t in part.inputs + part.outputs]
            else:
                payload = self._payload(part.ops[0])
                op = self.block.operators[part.ops[0]]
                bound = [(t, r.descriptor) for t, r in zip(op.inputs, payload.inputs)]
                bound += [(t, r.descriptor) for t, r in zip(op.outputs, payload.outputs)]
            for t, kind in bound:
                kind = STORAGE_BUFFER if kind == TENSOR_ARM and part.kind == "COMPUTE" else kind
                if kind not in self.kinds.setdefault(t, []):
                    self.kinds[t].append(kind)
        for name in self.kinds:
            if len(self.kinds[name]) > 1:
                self.groups[name] = len(self.groups)

    def _number(self, tensor: str) -> int:
        return self.numbers.setdefault(tensor, len(self.numbers))

    def _primary(self, tensor: str) -> int:
        return self._entry(tensor, self.kinds[tensor][0])

    def _entry(self, tensor: str, kind: str) -> int:
        """The MRT index of `tensor` bound as `kind` (made on first use); the first type's entry carries the
        tensor's category, the others are INTERMEDIATE views of the same memory."""
        key = (tensor, kind)
        if key not in self.entries:
            t = self.block.tensors[tensor]
            first = kind == self.kinds[tensor][0]
            category = "INTERMEDIATE"
            if first and tensor in self.block.inputs:
                category = "INPUT"
            elif first and tensor in self.block.outputs:
                category = "OUTPUT"
            fmt = FORMATS[SCALAR_FORMATS[t.dtype]].value
            self.entries[key] = len(self.vgf.resources)
            self.vgf.resources.append(
                Resource(category, DESCRIPTOR_TYPES[kind], fmt, t.shape or (1,), alias_group=self.groups.get(tensor))
            )
        return self.entries[key]

    def _constant(self, tensor: str) -> int:
        """The constant-section index of a constant tensor (one entry per tensor, shared by segments)."""
        if tensor not in self.constants:
            t = self.block.tensors[tensor]
            assert t.data is not None, f"constant {tensor} has data"
            mrt = len(self.vgf.resources)
            fmt = FORMATS[SCALAR_FORMATS[t.dtype]].value
            self.vgf.resources.append(Resource("CONSTANT", None, fmt, t.shape or (1,)))
            self.constants[tensor] = len(self.vgf.constants)
            self.vgf.constants.append(Constant(mrt, tensor_bytes(t.dtype, t.data)))
        return self.constants[tensor]

    def _graph_segment(self, part: _Part, k: int) -> None:
        ops = self.block.operators
        used = {n for i in part.ops for n in ops[i].inputs if n}
        makers = [i for i, op in enumerate(ops) if op.op in CONSTANT_PRODUCERS and set(op.outputs) & used]
        chosen = sorted(set(makers) - set(part.ops)) + part.ops
        names = {n for i in chosen for n in (*ops[i].inputs, *ops[i].outputs) if n} | set(part.inputs)
        sub = Block(
            f"graph_partition_{k}",
            [ops[i] for i in chosen],
            {n: self.block.tensors[n] for n in sorted(names)},
            list(part.inputs),
            list(part.outputs),
        )
        try:
            spirv, constant_names = encode(sub, sub.name)
        except TosaError as err:
            raise _compute_only(err.rule, op=err.op, index=err.index, output=err.output, file=self.file) from None
        spirv = _rebind(spirv, [self.numbers[t] for t in part.inputs + part.outputs])
        self.vgf.modules.append(Module(sub.name, "GRAPH", sub.name, spirv, "SPIR-V"))
        slots = {t: Binding(self.numbers[t], self._entry(t, TENSOR_ARM)) for t in part.inputs + part.outputs}
        constants = [self._constant(n) for n in constant_names]
        self.vgf.segments.append(
            Segment(
                f"graph_segment_{k}",
                len(self.vgf.modules) - 1,
                "GRAPH",
                [DescriptorSet(list(slots.values()), 0)],
                [slots[t] for t in part.inputs],
                [slots[t] for t in part.outputs],
                constants,
                (0, 0, 0),
                constant_bindings=list(enumerate(constants)),
            )
        )

    def _payload(self, index: int) -> custom_payload.Payload:
        op = self.block.operators[index]
        where = op.label(index)
        payload = custom_payload.parse(
            attrs_bytes(op.attrs.get("implementation_attrs")), len(op.inputs), len(op.outputs), where
        )
        if payload.push_size:
            raise self.fail(f"{where}: its shader takes push constants, and a VGF carries no values for them", index)
        images = [r for r in payload.inputs + payload.outputs if r.descriptor not in _BUFFER_TYPES]
        if images:
            raise self.fail(
                f"{where}: binds {images[0].descriptor} resources, which a graph export does not lay out", index
            )
        return payload

    def _compute_segment(self, part: _Part, k: int) -> None:
        index = part.ops[0]
        op = self.block.operators[index]
        payload = self._payload(index)
        code: bytes | str = payload.spirv if payload.spirv else payload.glsl
        language = "SPIR-V" if payload.spirv else "GLSL"
        self.vgf.modules.append(Module(f"compute_partition_{k}", "COMPUTE", payload.entry_point, code, language))
        sets: dict[int, list[Binding]] = {}
        slots: dict[str, Binding] = {}
        constants = []
        for t, r in zip((*op.inputs, *op.outputs), (*payload.inputs, *payload.outputs)):
            if self.block.tensors[t].data is not None:  # a constant read by the shader: bound from the section
                mrt = self.vgf.constants[self._constant(t)].mrt_index
                constants.append(self.constants[t])
            else:
                mrt = self._entry(t, STORAGE_BUFFER)
                slots[t] = Binding(self.numbers[t], mrt)
            sets.setdefault(r.set, []).append(Binding(r.binding, mrt))
        self.vgf.segments.append(
            Segment(
                f"compute_segment_{k}",
                len(self.vgf.modules) - 1,
                "COMPUTE",
                [DescriptorSet(b, s) for s, b in sorted(sets.items())],
                [slots[t] for t in op.inputs if t in slots],
                [slots[t] for t in op.outputs],
                constants,
                payload.workgroup_sizes,
            )
        )


def _rebind(spirv: bytes, numbers: list[int]) -> bytes:
    """The module with its interface bindings 0..n-1 (encode's numbering) renumbered to the file's numbers."""
    words = bytearray(spirv)
    for opcode, operands in instructions(words):
        if opcode == _OP_DECORATE and len(operands) >= 3 and operands[1] == _BINDING:
            operands[2] = numbers[operands[2]]
    return bytes(words)


# ---- import ------------------------------------------------------------------------------------------------------


def io_alias_problem(vgf: VGF) -> str | None:
    """What is wrong with an alias group that holds a model input or output, or None. Such a group may only hold
    other views of that one tensor: the same shape and format under another descriptor type (what model-converter
    and our export write for a tensor a GRAPH and a COMPUTE segment both bind). Anything else shares the input's or
    output's memory with another tensor, which a segment then overwrites (or reads the model's feed as its own)."""
    io: dict[int, str] = {}
    for kind, slots, labels in (("input", vgf.inputs, vgf.input_names), ("output", vgf.outputs, vgf.output_names)):
        for i, b in enumerate(slots):
            io.setdefault(b.mrt_index, f"model {kind} '{labels[i] if i < len(labels) and labels[i] else i}'")
    groups: dict[int, list[int]] = {}
    for index, r in enumerate(vgf.resources):
        if r.alias_group is not None:
            groups.setdefault(r.alias_group, []).append(index)
    for group, members in sorted(groups.items()):
        held = [m for m in members if m in io]
        if not held:
            continue
        if len(held) > 1:
            return f"alias group {group} holds {io[held[0]]} and {io[held[1]]} (resources {held[0]} and {held[1]})"
        first = vgf.resources[held[0]]
        views: dict[int | None, int] = {}
        for m in members:
            r = vgf.resources[m]
            other = views.setdefault(r.descriptor_type, m)
            if (tuple(r.shape), r.format) != (tuple(first.shape), first.format) or other != m:
                return (
                    f"alias group {group} holds {io[held[0]]} (resource {held[0]}) and resource {m} ({r.category}, "
                    f"{list(r.shape)}), which is not another view of it: a group with a model input or output may "
                    "only hold that tensor under other descriptor types (same shape and format)"
                )
    return None


def to_graph(vgf: VGF, file: str | None = None) -> Graph:
    """The VGF's segments as one TOSA graph (see the module docstring); TosaError names the segment and rule."""
    return _GraphImporter(vgf, file).graph


class _GraphImporter:
    def __init__(self, vgf: VGF, file: str | None):
        self.vgf, self.file = vgf, file
        problem = io_alias_problem(vgf)
        if problem is not None:
            raise self.fail(problem)
        self.block = Block("main")
        self.names = self._names()
        computed = {m for s in vgf.segments if s.type == "COMPUTE" for m in self._bound(s)}
        for index, r in enumerate(vgf.resources):  # graph modules bring their own constants
            name = self.names[index]
            if r.category == "CONSTANT" and index not in computed:
                continue
            if name not in self.block.tensors:
                self.block.add_tensor(Tensor(name, r.shape, self._dtype(index)))
            if r.category == "CONSTANT":
                self._const(index)
        for s in vgf.segments:
            if s.type == "GRAPH":
                self._graph_segment(s)
            elif s.type == "COMPUTE":
                self._compute_segment(s)
            else:
                raise self.fail(f"segment type {s.type!r} is neither GRAPH nor COMPUTE", s.name)
        self.block.inputs = [self.names[b.mrt_index] for b in vgf.inputs]
        self.block.outputs = [self.names[b.mrt_index] for b in vgf.outputs]
        self._check_views()
        if not self.block.outputs:
            raise self.fail("the model sequence has no outputs")
        self.graph = Graph([Region("main", [self.block])])
        validate(self.graph, file=file)

    def fail(self, rule: str, segment: str | None = None) -> TosaError:
        return TosaError(f"segment '{segment}': {rule}" if segment else rule, file=self.file)

    def _names(self) -> dict[int, str]:
        """MRT index -> tensor name: one tensor per alias group; model I/O by the sequence's names."""
        vgf = self.vgf
        by_group: dict[tuple[str, int], list[int]] = {}
        names: dict[int, str] = {}
        labelled: dict[int, str] = {}
        for slots, labels, prefix in (
            (vgf.inputs, vgf.input_names, "input"),
            (vgf.outputs, vgf.output_names, "output"),
        ):
            for i, b in enumerate(slots):
                if not 0 <= b.mrt_index < len(vgf.resources):
                    raise self.fail(f"model {prefix} {i} names resource {b.mrt_index}, beyond the resource table")
                labelled[b.mrt_index] = labels[i] if i < len(labels) and labels[i] else f"{prefix}_{i}"
        for index, r in enumerate(vgf.resources):
            key = ("group", r.alias_group) if r.alias_group is not None else ("mrt", index)
            by_group.setdefault(key, []).append(index)
        for members in by_group.values():
            label = next((labelled[m] for m in members if m in labelled), f"mrt_{members[0]}")
            for m in members:
                names[m] = label
        return names

    def _check_views(self) -> None:
        """Every resource of an alias group (one tensor here) holds the whole tensor: a member declared smaller than
        what the segment writing the tensor produces would, in a runner that sizes memory by it, lose the rest."""
        writers = {b.mrt_index: s.name for s in self.vgf.segments for b in s.outputs}
        for index, r in enumerate(self.vgf.resources):
            t = self.block.tensors.get(self.names[index])
            if r.alias_group is None or t is None or r.format not in _DTYPES:
                continue
            if tuple(r.shape or (1,)) != tuple(t.shape or (1,)):
                have = resource_bytes(self.vgf, index)
                want = math.prod(t.shape or (1,)) * FORMAT_SIZES[r.format]
                group = [m for m, o in enumerate(self.vgf.resources) if o.alias_group == r.alias_group]
                producer = next((writers[m] for m in group if m in writers), None)
                raise self.fail(
                    f"resource {index} (alias group {r.alias_group}) declares {list(r.shape)} {t.dtype.name} "
                    f"({have} bytes), but the tensor its group holds is {list(t.shape)} ({want} bytes"
                    + (f", written by segment '{producer}')" if producer else ")")
                )

    def _dtype(self, index: int) -> DType:
        fmt = self.vgf.resources[index].format
        if fmt not in _DTYPES:
            name = FORMAT_NAMES.get(fmt, fmt)
            raise self.fail(f"resource {index}: VkFormat {name} is not the format of a TOSA tensor type")
        return _DTYPES[fmt]

    def _mrt(self, index: int, segment: str) -> int:
        if not 0 <= index < len(self.vgf.resources):
            raise self.fail(f"binds resource {index}, beyond the resource table", segment)
        return index

    def _bound(self, s: Segment) -> list[int]:
        return [self._mrt(b.mrt_index, s.name) for d in s.set_infos for b in d.bindings]

    def _const(self, index: int) -> None:
        c = self.vgf.constant_for(index)
        name = self.names[index]
        if c is None:
            raise self.fail(f"constant resource {index} '{name}' has no data in the constant section")
        t = self.block.tensors[name]
        try:
            t.data = tensor_array(t.dtype, t.shape, c.data)
        except ValueError as err:
            raise self.fail(f"constant resource {index} '{name}': {err}") from None
        self.block.operators.append(Operator("CONST", [], [name]))

    def _graph_segment(self, s: Segment) -> None:
        module = self._module(s)
        if not isinstance(module.code, bytes) or module.language != "SPIR-V":
            raise self.fail(f"module '{module.name}' of a GRAPH segment holds no SPIR-V", s.name)
        pairs = s.graph_constants()
        data = {}
        for graph_id, index in pairs:
            if not 0 <= index < len(self.vgf.constants):
                raise self.fail(f"graph constant {graph_id} is bound to constant {index}, beyond the section", s.name)
            data[graph_id] = self.vgf.constants[index].data
        inputs = [self.names[self._mrt(b.mrt_index, s.name)] for b in s.inputs]
        outputs = [self.names[self._mrt(b.mrt_index, s.name)] for b in s.outputs]
        where = f"{self.file or 'VGF'} segment '{s.name}'"
        sub = decode(module.code, data, inputs, outputs, file=where)
        io = set(inputs) | set(outputs)
        rename = {n: n if n in io else f"{s.name}/{n}" for n in sub.tensors}
        for name, t in sub.tensors.items():
            if name in io:
                have = self.block.tensors[name]
                if have.shape == () and t.shape == (1,):  # a rank-0 resource: rank 1 in the module (no rank 0)
                    have.shape = (1,)
                if (have.shape, have.dtype) != (t.shape, t.dtype):
                    raise self.fail(
                        f"tensor '{name}' is {list(t.shape)} {t.dtype.name} in the module, {list(have.shape)} "
                        f"{have.dtype.name} in the resource table",
                        s.name,
                    )
                have.data = t.data  # an output the module sets from a constant
                continue
            t.name = rename[name]
            self.block.add_tensor(t)
        for op in sub.operators:
            op.inputs = [rename.get(n, n) for n in op.inputs]
            op.outputs = [rename.get(n, n) for n in op.outputs]
            op.location = op.location or s.name
            self.block.operators.append(op)

    def _compute_segment(self, s: Segment) -> None:
        module = self._module(s)
        if module.language not in ("SPIR-V", "GLSL") or not module.code:
            raise self.fail(f"module '{module.name}' holds {module.language or 'no'} code", s.name)
        if s.push_constant_ranges:
            raise self.fail("the segment declares push-constant ranges, but a VGF carries no values", s.name)
        if len(s.dispatch_shape) != 3:
            raise self.fail("a COMPUTE segment needs a 3-value dispatch shape", s.name)
        where = {self._mrt(b.mrt_index, s.name): (s.set_index(i), b.binding) for i, d in enumerate(s.set_infos)
                 for b in d.bindings}  # fmt: skip
        outputs = [b.mrt_index for b in s.outputs]
        inputs = [b.mrt_index for b in s.inputs] or [m for m in where if m not in outputs]
        for m in inputs + outputs:
            if m not in where:
                raise self.fail(f"reads or writes resource {m}, which none of its descriptors binds", s.name)

        def described(m: int) -> dict:
            r = self.vgf.resources[m]
            kind = DESCRIPTOR_NAMES.get(r.descriptor_type or 0, STORAGE_BUFFER)
            fmt = FORMAT_NAMES.get(r.format, "")
            (set_index, binding) = where[m]
            return {"type": _BUFFER_TYPES.get(kind, "Image"), "vkdescriptortype": kind, "vkformat": fmt,
                    "binding": binding, "descriptorset": set_index}  # fmt: skip

        code = module.code
        payload = custom_payload.make(
            entry_point=module.entry_point or "main",
            workgroup_sizes=s.dispatch_shape,
            spirv=code if isinstance(code, bytes) else None,
            glsl=code if isinstance(code, str) else None,
            inputs=[described(m) for m in inputs],
            outputs=[described(m) for m in outputs],
        )
        self.block.operators.append(
            Operator(
                "CUSTOM",
                [self.names[m] for m in inputs],
                [self.names[m] for m in outputs],
                {
                    "operator_name": module.name or s.name,
                    "domain_name": custom_payload.DOMAIN,
                    "implementation_attrs": payload,
                },
                location=s.name,
            )
        )

    def _module(self, s: Segment) -> Module:
        if not 0 <= s.module_index < len(self.vgf.modules):
            raise self.fail(f"module {s.module_index} is beyond the module table", s.name)
        return self.vgf.modules[s.module_index]

"""Block -> SPIR-V graph module (SPV_ARM_graph + SPV_ARM_tensors + TOSA.001000.1), laid out as model-converter does.

The module declares one UniformConstant tensor OpVariable per graph input, then per graph output (DescriptorSet 0,
Binding = position), one OpGraphARM named by its OpGraphEntryPointARM, an OpGraphInputARM per input and an
OpGraphSetOutputARM per output in the block's order, and one OpExtInst per operator: its attributes as constants,
then its inputs. IDENTITY has no instruction and forwards its input; FFT2D / RFFT2D return an OpTypeStruct of their
two tensors, taken apart with OpCompositeExtract.

Constants: a CONST tensor of more than INLINE_ELEMENTS elements becomes an OpGraphConstantARM whose id indexes the
returned list of names (the caller stores their `tensor_bytes` in the VGF constant section in that order); smaller ones
are inlined as OpConstantComposite, or OpConstantNull when all their bits are zero. 16 is model-converter's threshold
(measured: 16 elements inline, 17 become graph constants, for every element type); matching it keeps our modules and
model-converter's alike, keeps every attribute tensor (at most 12 values) and zero point inline, and keeps the weights
out of the SPIR-V. encode's `inline` changes the threshold (0: every CONST a graph constant, as constants.py's
constant graphs need). Splats are not written as OpConstantCompositeReplicateEXT, so the module needs no
VK_EXT_shader_replicated_composites.

SPV_ARM_tensors has no rank-0 tensor type (its Rank must be > 0): rank-0 tensors become shape [1], as
model-converter writes them, and a RESHAPE to rank 0 reshapes to [1].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import TosaError
from ...ir import dtype as dtypes
from ...ir.dtype import DType
from ...ir.graph import Block, NanPropagationMode, Operator, Tensor
from ...ir.ops import Operand
from . import instructions as si
from .instructions import ELEMENT_TYPES, INSTRUCTIONS, AttrKind

INLINE_ELEMENTS = 16
_PASS_THROUGH = {"CONST", "CONST_SHAPE", "IDENTITY"}
# Attributes a producer may leave out: local_bound is optional (false), nan_mode defaults to PROPAGATE.
_DEFAULTS = {"local_bound": False, "nan_mode": NanPropagationMode.PROPAGATE}
_BASE_CAPABILITIES = (si.CAP_SHADER, si.CAP_TENSORS_ARM, si.CAP_GRAPH_ARM, si.CAP_VULKAN_MEMORY_MODEL)
_BASE_EXTENSIONS = ("SPV_ARM_tensors", "SPV_ARM_graph", "SPV_KHR_vulkan_memory_model")


def _string(text: str) -> list[int]:
    """A literal string operand: UTF-8, nul-terminated, padded to whole words."""
    raw = text.encode("utf-8") + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(np.frombuffer(raw, dtype="<u4").tolist())


def _spirv_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if shape else (1,)


class _Writer:
    def __init__(self, block: Block, name: str, inline: int = INLINE_ELEMENTS):
        self.block = block
        self.name = name
        self.inline_elements = inline
        self.next_id = 1
        self.capabilities: set[int] = set(_BASE_CAPABILITIES)
        self.extensions: set[str] = set(_BASE_EXTENSIONS)
        self.names: list[int] = []  # OpName instructions
        self.decorations: list[int] = []
        self.globals: list[int] = []  # types, constants, variables
        self.body: list[int] = []  # the graph's instructions
        self.cache: dict[tuple, int] = {}
        self.values: dict[str, int] = {}  # tensor name -> id of its value in the graph
        self.graph_constants: list[str] = []
        self.ext_set = 0
        self.op: tuple[Operator, int] | None = None  # the operator being written, for errors
        self.producers = {n: op for op in block.operators for n in op.outputs}

    # ---- plumbing -------------------------------------------------------------------------------------------

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    @staticmethod
    def emit(section: list[int], opcode: int, *operands: int) -> None:
        section.append(((len(operands) + 1) << 16) | opcode)
        section.extend(operands)

    def fail(self, rule: str) -> TosaError:
        if self.op is None:
            return TosaError(rule)
        op, index = self.op
        return TosaError(rule, op=op.op, index=index, output=op.outputs[0] if op.outputs else None)

    def cached(self, key: tuple, make: Callable[[], int]) -> int:
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def label(self, ident: int, text: str) -> None:
        self.emit(self.names, si.OP_NAME, ident, *_string(text))

    # ---- types ----------------------------------------------------------------------------------------------

    def scalar_type(self, dtype: DType) -> int:
        et = ELEMENT_TYPES[dtype]

        def make() -> int:
            if et.capability is not None:
                self.capabilities.add(et.capability)
            if et.extension is not None:
                self.extensions.add(et.extension)
            ident = self.new_id()
            self.emit(self.globals, et.opcode, ident, *et.operands)
            return ident

        return self.cached(("type", et.opcode, *et.operands), make)

    def uint(self, value: int) -> int:
        """An OpConstant of the 32-bit integer type (shape entries, indices, scalar attributes)."""
        word = int(value) & 0xFFFFFFFF
        type_id = self.scalar_type(DType.INT32)
        return self.cached(("scalar", type_id, word), lambda: self.constant_words(type_id, [word]))

    def constant_words(self, type_id: int, words: list[int]) -> int:
        ident = self.new_id()
        self.emit(self.globals, si.OP_CONSTANT, type_id, ident, *words)
        return ident

    def tensor_type(self, dtype: DType, shape: tuple[int, ...]) -> int:
        shape = _spirv_shape(shape)
        element = self.scalar_type(dtype)

        def make() -> int:
            u32 = self.scalar_type(DType.INT32)
            rank = self.uint(len(shape))
            array = self.cached(("array", len(shape)), lambda: self.array_type(u32, rank))
            dims = self.cached(("dims", shape), lambda: self.composite(array, [self.uint(d) for d in shape]))
            ident = self.new_id()
            self.emit(self.globals, si.OP_TYPE_TENSOR_ARM, ident, element, rank, dims)
            return ident

        return self.cached(("tensor", element, shape), make)

    def array_type(self, element: int, length: int) -> int:
        ident = self.new_id()
        self.emit(self.globals, si.OP_TYPE_ARRAY, ident, element, length)
        return ident

    def composite(self, type_id: int, parts: list[int]) -> int:
        ident = self.new_id()
        self.emit(self.globals, si.OP_CONSTANT_COMPOSITE, type_id, ident, *parts)
        return ident

    def tensor_of(self, name: str) -> Tensor:
        t = self.block.tensors.get(name)
        if t is None:
            raise self.fail(f"tensor '{name}' is not a tensor of block '{self.block.name}'")
        if t.unranked:
            raise self.fail(f"tensor '{name}' is unranked: a graph module needs static shapes (use --segments compute)")
        if t.dtype not in ELEMENT_TYPES:
            raise self.fail(f"tensor '{name}' has element type {t.dtype.name}, which SPIR-V graphs cannot hold")
        if any(d <= 0 or d > 0xFFFFFFFF for d in t.shape):
            raise self.fail(f"tensor '{name}' has shape {list(t.shape)}: SPIR-V tensor dimensions are 1 to 2^32-1")
        return t

    def type_of(self, name: str) -> int:
        t = self.tensor_of(name)
        return self.tensor_type(t.dtype, t.shape)

    # ---- constants ------------------------------------------------------------------------------------------

    def scalar(self, dtype: DType, value: object) -> int:
        """An OpConstant (or OpConstantTrue / False) of `dtype` holding `value` in the IR's storage."""
        type_id = self.scalar_type(dtype)
        if dtype == DType.BOOL:
            truth = bool(value)
            return self.cached(
                ("bool", truth), lambda: self.constant_op(si.OP_CONSTANT_TRUE if truth else si.OP_CONSTANT_FALSE)
            )
        storage = si.spirv_storage(dtype)
        try:
            raw = np.asarray(value, dtype=dtype.numpy).astype(storage).reshape(()).tobytes()
        except (ValueError, TypeError, OverflowError) as err:
            raise self.fail(f"value {value!r} is not a {dtype.name}: {err}") from None
        bits = int.from_bytes(raw, "little")
        words = [bits & 0xFFFFFFFF, bits >> 32] if len(raw) == 8 else [bits]
        return self.cached(("scalar", type_id, *words), lambda: self.constant_words(type_id, words))

    def constant_op(self, opcode: int) -> int:
        ident = self.new_id()
        self.emit(self.globals, opcode, self.scalar_type(DType.BOOL), ident)
        return ident

    def inline(self, dtype: DType, shape: tuple[int, ...], data: np.ndarray) -> int:
        """An inline tensor constant: OpConstantNull when every bit is zero, else nested OpConstantComposite
        (a rank-R tensor's constituents are rank R-1 tensors, a rank-1 tensor's are scalars)."""
        shape = _spirv_shape(shape)
        values = np.ascontiguousarray(data, dtype=dtype.numpy).reshape(shape)
        type_id = self.tensor_type(dtype, shape)
        raw = si.tensor_bytes(dtype, values)

        def make() -> int:
            if not any(raw):
                ident = self.new_id()
                self.emit(self.globals, si.OP_CONSTANT_NULL, type_id, ident)
                return ident
            if len(shape) == 1:
                parts = [self.scalar(dtype, v) for v in values]
            else:
                parts = [self.inline(dtype, shape[1:], v) for v in values]
            return self.composite(type_id, parts)

        return self.cached(("inline", type_id, raw), make)

    def constant_tensor(self, name: str, shape_input: bool) -> int:
        t = self.block.tensors.get(name) if shape_input else self.tensor_of(name)
        if t is None:
            raise self.fail(f"tensor '{name}' is not a tensor of block '{self.block.name}'")
        if t.data is None:
            raise self.fail(f"constant '{name}' has no data")
        if shape_input:  # shape_t values: a rank-1 tensor of 32-bit integers
            values = np.asarray(t.data).reshape(-1)
            if values.size == 0:  # the shape of a rank-0 tensor, which SPIR-V holds as [1]
                values = np.ones(1, dtype=np.int64)
            if values.dtype.kind not in "iub" or any(not -(2**31) <= int(v) < 2**31 for v in values):
                raise self.fail(f"shape value '{name}' {values.tolist()} does not fit 32-bit integers")
            return self.inline(DType.SHAPE, (values.size,), values)
        if t.size > self.inline_elements:
            key = ("graph constant", name)
            if key not in self.cache:
                ident = self.new_id()
                self.emit(self.globals, si.OP_GRAPH_CONSTANT_ARM, self.type_of(name), ident, len(self.graph_constants))
                self.graph_constants.append(name)
                self.label(ident, name)
                self.cache[key] = ident
            return self.cache[key]
        return self.inline(t.dtype, t.shape, t.data)

    # ---- operands -------------------------------------------------------------------------------------------

    def value(self, name: str, operand: Operand | None = None) -> int:
        """The id of tensor `name` as an input operand (a shape_t operand needs a constant)."""
        shape_input = operand is not None and operand.type == "shape_t"
        if name in self.values and not shape_input:
            return self.values[name]
        producer = self.producers.get(name)
        if producer is not None and producer.op in ("CONST", "CONST_SHAPE"):
            return self.constant_tensor(name, shape_input)
        t = self.block.tensors.get(name)
        if t is not None and t.data is not None and name not in self.values:
            return self.constant_tensor(name, shape_input)  # constant data without a CONST operator
        if operand is not None and shape_input:
            raise self.fail(f"shape input {operand.name} '{name}' is not a constant (CONST_SHAPE)")
        raise self.fail(f"input '{name}' is used before it is defined")

    def attribute(self, o: Operand, op: Operator) -> int:
        value = op.attrs.get(o.name, _DEFAULTS.get(o.name))
        if value is None:
            raise self.fail(f"missing attribute '{o.name}'")
        kind = si.attribute_kind(o)
        if kind == AttrKind.BOOL:
            return self.scalar(DType.BOOL, bool(value))
        if kind == AttrKind.INT:
            return self.uint(self.int32(o.name, value))
        if kind == AttrKind.ENUM:
            if o.type == "nan_propagation_mode_t" and int(value) == NanPropagationMode.UNKNOWN:
                value = _DEFAULTS["nan_mode"]  # left out by the producer: the spec's default
            try:
                return self.uint(si.enum_value(o.type, value))
            except ValueError as err:
                raise self.fail(f"attribute {o.name}: {err}") from None
        if kind == AttrKind.INTS:
            try:
                ints = [self.int32(o.name, v) for v in value]
            except TypeError:
                raise self.fail(f"attribute {o.name} must be a list of integers, got {value!r}") from None
            if not ints:
                raise self.fail(f"attribute {o.name} is empty: SPIR-V has no empty tensor")
            return self.inline(DType.INT32, (len(ints),), np.asarray(ints, dtype=np.int32))
        # AttrKind.ELEMENT: a scalar of the first input's element type (CLAMP min_val / max_val)
        dtype = self.tensor_of(op.inputs[0]).dtype if op.inputs else DType.UNKNOWN
        if dtype not in ELEMENT_TYPES:
            raise self.fail(f"attribute {o.name}: the input's element type is unknown")
        if isinstance(value, bytes | bytearray):  # CLAMP bounds as a .tosa stores them
            try:
                value = dtypes.decode(dtype, bytes(value), ())[()]
            except ValueError as err:
                raise self.fail(f"attribute {o.name}: {err}") from None
        return self.scalar(dtype, value)

    def int32(self, what: str, value: Any) -> int:
        try:
            v = int(value)
        except (TypeError, ValueError):
            raise self.fail(f"attribute {what} must be an integer, got {value!r}") from None
        if not -(2**31) <= v < 2**31:
            raise self.fail(f"attribute {what} value {v} does not fit a 32-bit integer")
        return v

    # ---- the module -----------------------------------------------------------------------------------------

    def operator(self, op: Operator, index: int) -> None:
        self.op = (op, index)
        if op.op in ("CONST", "CONST_SHAPE"):
            return  # written where an operator or an output uses it
        if op.op == "IDENTITY":
            if len(op.inputs) != 1 or len(op.outputs) != 1:
                raise self.fail("IDENTITY takes one input and one output")
            self.values[op.outputs[0]] = self.value(op.inputs[0])
            return
        inst = INSTRUCTIONS[op.op]  # module() refused the rest
        n = len(inst.inputs)
        if len(op.inputs) < n if inst.variadic else len(op.inputs) != n:
            at_least = "at least " if inst.variadic else ""
            raise self.fail(f"{op.op} takes {at_least}{n} inputs, the operator has {len(op.inputs)}")
        if len(op.outputs) != len(inst.outputs):
            raise self.fail(f"{op.op} has {len(inst.outputs)} outputs, the operator has {len(op.outputs)}")
        operands = [self.attribute(o, op) for o in inst.attributes]
        for i, name in enumerate(op.inputs):
            operands.append(self.value(name, inst.inputs[min(i, len(inst.inputs) - 1)]))
        out_types = [self.type_of(n) for n in op.outputs]
        if len(out_types) == 1:
            result_type = out_types[0]
        else:
            result_type = self.cached(("struct", *out_types), lambda: self.struct_type(out_types))
        result = self.new_id()
        self.emit(self.body, si.OP_EXT_INST, result_type, result, self.ext_set, inst.opcode, *operands)
        if len(out_types) == 1:
            self.values[op.outputs[0]] = result
            self.label(result, op.outputs[0])
            return
        for k, (name, type_id) in enumerate(zip(op.outputs, out_types)):
            part = self.new_id()
            self.emit(self.body, si.OP_COMPOSITE_EXTRACT, type_id, part, result, k)
            self.values[name] = part
            self.label(part, name)

    def struct_type(self, members: list[int]) -> int:
        ident = self.new_id()
        self.emit(self.globals, si.OP_TYPE_STRUCT, ident, *members)
        return ident

    def module(self) -> bytes:
        block = self.block
        for index, op in enumerate(block.operators):  # refuse what cannot be a graph before writing anything
            self.op = (op, index)
            if op.op not in INSTRUCTIONS and op.op not in _PASS_THROUGH:
                raise self.fail(
                    f"{op.op} has no TOSA.001000.1 instruction, so it cannot be part of a SPIR-V graph module "
                    "(use --segments compute)"
                )
            if op.op != "CONST_SHAPE":
                for name in op.outputs:
                    self.tensor_of(name)
        self.op = None
        self.ext_set = self.new_id()
        in_types = [self.type_of(n) for n in block.inputs]
        out_types = [self.type_of(n) for n in block.outputs]
        variables = []
        for i, (name, type_id) in enumerate(zip(block.inputs + block.outputs, in_types + out_types)):
            pointer = self.pointer_type(type_id)
            var = self.new_id()
            self.emit(self.globals, si.OP_VARIABLE, pointer, var, si.UNIFORM_CONSTANT)
            self.label(var, name)
            self.emit(self.decorations, si.OP_DECORATE, var, si.BINDING, i)
            self.emit(self.decorations, si.OP_DECORATE, var, si.DESCRIPTOR_SET, 0)
            variables.append(var)
        graph_type = self.new_id()
        self.emit(self.globals, si.OP_TYPE_GRAPH_ARM, graph_type, len(in_types), *in_types, *out_types)
        graph = self.new_id()
        for i, (name, type_id) in enumerate(zip(block.inputs, in_types)):
            ident = self.new_id()
            self.emit(self.body, si.OP_GRAPH_INPUT_ARM, type_id, ident, self.uint(i))
            self.values[name] = ident
            self.label(ident, name)
        for index, op in enumerate(block.operators):
            self.operator(op, index)
        self.op = None
        for i, name in enumerate(block.outputs):
            self.emit(self.body, si.OP_GRAPH_SET_OUTPUT_ARM, self.value(name), self.uint(i))
        self.emit(self.body, si.OP_GRAPH_END_ARM)

        words: list[int] = []
        for cap in sorted(self.capabilities):
            self.emit(words, si.OP_CAPABILITY, cap)
        for ext in sorted(self.extensions):
            self.emit(words, si.OP_EXTENSION, *_string(ext))
        self.emit(words, si.OP_EXT_INST_IMPORT, self.ext_set, *_string(si.EXT_SET))
        self.emit(words, si.OP_MEMORY_MODEL, si.ADDRESSING_LOGICAL, si.MEMORY_MODEL_VULKAN)
        words += self.names + self.decorations + self.globals
        self.emit(words, si.OP_GRAPH_ENTRY_POINT_ARM, graph, *_string(self.name), *variables)
        self.emit(words, si.OP_GRAPH_ARM, graph_type, graph)
        words += self.body
        header = [si.MAGIC, si.VERSION_1_5, 0, self.next_id, 0]
        return np.asarray(header + words, dtype="<u4").tobytes()

    def pointer_type(self, pointee: int) -> int:
        def make() -> int:
            ident = self.new_id()
            self.emit(self.globals, si.OP_TYPE_POINTER, ident, si.UNIFORM_CONSTANT, pointee)
            return ident

        return self.cached(("pointer", pointee), make)


def encode(block: Block, name: str, inline: int = INLINE_ELEMENTS) -> tuple[bytes, list[str]]:
    """One SPIR-V 1.5 graph module for `block` (entry point `name`) and the names of its graph constants: constant
    id i is block.tensors[names[i]], whose `tensor_bytes` go into the VGF constant section. A CONST tensor of more
    than `inline` elements is a graph constant (inline=0: every one, as a constant graph needs; a graph constant's
    data is not read, so it may be a broadcast view).

    Raises TosaError naming the operator for what a graph module cannot hold (COND_IF, WHILE_LOOP, VARIABLE*,
    CUSTOM, unranked or empty tensors)."""
    writer = _Writer(block, name, inline)
    return writer.module(), writer.graph_constants

"""SPIR-V graph module -> Block: the inverse of encode, for model-converter's modules and ours.

Each TOSA.001000.1 OpExtInst becomes one operator. Its constant operands become what a .tosa file holds, so that a
decoded graph compares equal to the loaded .tosa (tosa_vk/ir/flatbuffer.py): attributes in the IR's form (tuples of
ints, bools, enums, CLAMP bounds as numpy scalars of the input type), tensor inputs as CONST operators and shape_t
inputs as CONST_SHAPE operators, inserted before their first user. OpGraphConstantARM data comes from `constants`
(graph constant id -> dense bytes in the tensor type's element layout, instructions.tensor_bytes). Integers are
signless in SPIR-V and read back as TOSA's signed types (an 8-bit 186 is INT8 -70, 64-bit ints are INT48); 8-bit
tensors read as INT8, since model-converter stores INT4 in 8 bits too.

SPIR-V has no rank-0 tensor (model-converter writes [1]); where shape inference says an operator's output is rank 0
(ARGMAX of a rank-1 tensor), the tensor becomes rank 0 again, and a graph output keeps the module's [1] through a
RESHAPE, so graph inputs and outputs always have the shapes of the module's interface.

The module is untrusted: every id, count and type is checked in one pass over the words (definitions precede uses,
so there are no cycles), inline constants may expand to at most MAX_ELEMENTS elements, and any defect raises one
TosaError naming the file, the instruction (its position among the module's instructions) and the rule.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...abi.spirv import ReflectError, instructions
from ...errors import TosaError
from ...ir.dtype import DType
from ...ir.graph import Block, Operator, Tensor
from ...ir.ops import Operand
from ...ir.shapes import infer
from . import instructions as si
from .instructions import BY_OPCODE, DTYPE_OF, OPNAMES, AttrKind, Instruction

MAX_ELEMENTS = 1 << 24  # elements an OpConstantNull / replicated / composite tensor constant may expand to
MAX_RANK = 64  # far above TOSA's levels (the validator checks those); bounds shape arrays


@dataclass(frozen=True)
class _Scalar:
    key: tuple[int, int, int | None]  # (type opcode, width, encoding or signedness-free None)
    text: str

    @property
    def dtype(self) -> DType | None:
        return DTYPE_OF.get(self.key)


@dataclass(frozen=True)
class _Array:
    element: int
    length: int


@dataclass(frozen=True)
class _Tensor:
    element: _Scalar
    shape: tuple[int, ...]

    @property
    def dtype(self) -> DType:
        dtype = self.element.dtype
        assert dtype is not None  # checked when the type was declared
        return dtype

    def __str__(self) -> str:
        return f"tensor<{'x'.join(map(str, self.shape))}x{self.dtype.name}>"


@dataclass(frozen=True)
class _Struct:
    members: tuple[int, ...]


@dataclass(frozen=True)
class _Pointer:
    storage: int
    pointee: int


@dataclass(frozen=True)
class _GraphType:
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


_Type = _Scalar | _Array | _Tensor | _Struct | _Pointer | _GraphType


@dataclass(frozen=True)
class _Const:
    type: int
    kind: str  # "scalar" | "bool" | "composite" | "replicate" | "null" | "graph"
    value: Any = None  # bits | bool | constituent ids | constituent id | None | graph constant id


class _Decoder:
    def __init__(
        self,
        spirv: bytes,
        constants: Mapping[int, bytes] | None,
        input_names: Sequence[str],
        output_names: Sequence[str] | None,
    ):
        self.spirv = spirv
        self.graph_data = constants
        self.input_names = [str(n) for n in input_names]
        self.output_names = [str(n) for n in output_names or ()]
        self.name_outputs = output_names is None  # output_0, output_1, ... as many as the graph has
        self.at: int | None = None  # position of the instruction being read
        self.opcode = 0
        self.inst: Instruction | None = None
        self.bound = 0
        self.insts: list[tuple[int, tuple[int, ...]]] = []
        self.defined: set[int] = set()
        self.names: dict[int, str] = {}  # OpName
        self.sets: dict[int, bool] = {}  # OpExtInstImport id -> True for TOSA.001000.1, False for NonSemantic.*
        self.types: dict[int, _Type] = {}
        self.consts: dict[int, _Const] = {}
        self.arrays: dict[int, np.ndarray] = {}  # tensor constant id -> its data
        self.pointers: dict[int, int] = {}  # OpVariable id -> pointer type
        self.slots: dict[int, dict[int, int]] = {}  # id -> {DescriptorSet / Binding decoration: its value}
        self.graph_ids: dict[str, int] = {}  # CONST tensor name -> the graph constant id it holds
        self.entry: tuple[int, str, tuple[int, ...]] | None = None
        self.graph: tuple[int, _GraphType] | None = None  # (id, type) once OpGraphARM is read
        self.ended = False
        self.values: dict[int, str] = {}  # graph-scope id -> tensor name
        self.structs: dict[int, list[str]] = {}  # two-result OpExtInst id -> its tensors
        self.const_names: dict[tuple[int, bool], str] = {}  # (constant id, as shape) -> tensor name
        self.output_of: dict[int, int] = {}  # value id -> first output index it is set to
        self.extract_of: dict[tuple[int, int], int] = {}  # (struct id, member) -> first OpCompositeExtract id
        self.set_outputs: set[int] = set()
        self.used: set[str] = set()
        self.suffix: dict[str, int] = {}
        self.block = Block("main")

    # ---- errors and ids -------------------------------------------------------------------------------------

    def fail(self, rule: str) -> TosaError:
        """The error at the instruction being read (its position among the module's instructions)."""
        if self.at is None:
            return TosaError(rule)
        op = OPNAMES.get(self.opcode, f"opcode {self.opcode}")
        if self.inst is not None:
            op += f" {self.inst.name}"
        return TosaError(rule, op=op, index=self.at)

    def define(self, ident: int) -> int:
        if not 0 < ident < self.bound:
            raise self.fail(f"result id %{ident} is outside the module's id bound {self.bound}")
        if ident in self.defined:
            raise self.fail(f"result id %{ident} is defined twice")
        self.defined.add(ident)
        return ident

    def need(self, ops: tuple[int, ...], count: int, exact: bool = False) -> None:
        if len(ops) < count or (exact and len(ops) != count):
            raise self.fail(f"has {len(ops)} operand words, needs {'exactly ' if exact else ''}{count}")

    def type(self, ident: int, what: str) -> _Type:
        t = self.types.get(ident)
        if t is None:
            raise self.fail(f"{what} %{ident} is not a type defined before this instruction")
        return t

    def tensor_type(self, ident: int, what: str) -> _Tensor:
        t = self.type(ident, what)
        if not isinstance(t, _Tensor):
            raise self.fail(f"{what} %{ident} is not a tensor type")
        return t

    def const(self, ident: int, what: str) -> _Const:
        c = self.consts.get(ident)
        if c is None:
            raise self.fail(f"{what} %{ident} is not a constant defined before this instruction")
        return c

    def string(self, words: tuple[int, ...]) -> tuple[str, int]:
        """A literal string operand -> (text, words it takes)."""
        raw = struct.pack(f"<{len(words)}I", *words)
        end = raw.find(b"\0")
        if end < 0:
            raise self.fail("a literal string has no terminating nul")
        return raw[:end].decode("utf-8", "replace"), end // 4 + 1

    def fresh(self, ident: int | None, hint: str | None = None) -> str:
        base = hint or (self.names.get(ident) if ident is not None else None) or f"t{ident}"
        name = base
        while name in self.used:
            self.suffix[base] = self.suffix.get(base, 0) + 1
            name = f"{base}_{self.suffix[base]}"
        self.used.add(name)
        return name

    # ---- the pass -------------------------------------------------------------------------------------------

    def run(self) -> Block:
        self.header()
        handlers = {
            si.OP_CAPABILITY: None,
            si.OP_EXTENSION: None,
            si.OP_MEMORY_MODEL: None,
            si.OP_DECORATE: self.op_decorate,
            si.OP_NAME: self.op_name,
            si.OP_STRING: self.op_string,
            si.OP_EXT_INST_IMPORT: self.op_import,
            si.OP_TYPE_VOID: self.op_type_scalar,  # the result type of non-semantic instructions
            si.OP_TYPE_BOOL: self.op_type_scalar,
            si.OP_TYPE_INT: self.op_type_scalar,
            si.OP_TYPE_FLOAT: self.op_type_scalar,
            si.OP_TYPE_ARRAY: self.op_type_array,
            si.OP_TYPE_STRUCT: self.op_type_struct,
            si.OP_TYPE_POINTER: self.op_type_pointer,
            si.OP_TYPE_TENSOR_ARM: self.op_type_tensor,
            si.OP_TYPE_GRAPH_ARM: self.op_type_graph,
            si.OP_CONSTANT_TRUE: self.op_constant_bool,
            si.OP_CONSTANT_FALSE: self.op_constant_bool,
            si.OP_CONSTANT: self.op_constant,
            si.OP_CONSTANT_COMPOSITE: self.op_constant_composite,
            si.OP_CONSTANT_COMPOSITE_REPLICATE_EXT: self.op_constant_replicate,
            si.OP_CONSTANT_NULL: self.op_constant_null,
            si.OP_GRAPH_CONSTANT_ARM: self.op_graph_constant,
            si.OP_VARIABLE: self.op_variable,
            si.OP_GRAPH_ENTRY_POINT_ARM: self.op_entry_point,
            si.OP_GRAPH_ARM: self.op_graph,
            si.OP_GRAPH_INPUT_ARM: self.op_graph_input,
            si.OP_EXT_INST: self.op_ext_inst,
            si.OP_COMPOSITE_EXTRACT: self.op_composite_extract,
            si.OP_GRAPH_SET_OUTPUT_ARM: self.op_set_output,
            si.OP_GRAPH_END_ARM: self.op_graph_end,
        }
        for at, (opcode, ops) in enumerate(self.insts):
            self.at, self.opcode, self.inst = at, opcode, None
            if self.ended and self.opcode != si.OP_EXT_INST:
                raise self.fail("only non-semantic instructions may follow OpGraphEndARM")
            if self.opcode in handlers:
                handler = handlers[self.opcode]
                if handler is not None:
                    handler(ops)
            elif self.opcode not in si.SKIPPED_OPCODES:
                raise self.fail(f"opcode {self.opcode} is not an instruction of a TOSA graph module")
        self.at, self.inst = None, None
        self.finish()
        return self.block

    def header(self) -> None:
        raw = bytes(self.spirv)
        if len(raw) < 20 or len(raw) % 4:
            raise self.fail(f"truncated: {len(raw)} bytes is not a SPIR-V module (a 5-word header, then whole words)")
        magic = int.from_bytes(raw[:4], "little")
        if magic == int.from_bytes(si.MAGIC.to_bytes(4, "little"), "big"):  # written big-endian
            raw = np.frombuffer(raw, dtype=">u4").astype("<u4").tobytes()
        elif magic != si.MAGIC:
            raise self.fail(f"not a SPIR-V module (magic number {magic:#010x}, expected {si.MAGIC:#010x})")
        version, _, self.bound = struct.unpack_from("<3I", raw, 4)
        if version >> 16 != 1:
            raise self.fail(f"SPIR-V version word {version:#x} is not version 1.x")
        try:
            self.insts = [(opcode, tuple(ops)) for opcode, ops in instructions(raw)]
        except ReflectError as err:
            raise self.fail(f"truncated or corrupt: {err}") from None
        if not self.insts:
            raise self.fail("the module has no instructions")

    def op_decorate(self, ops: tuple[int, ...]) -> None:
        if len(ops) >= 3 and ops[1] in (si.DESCRIPTOR_SET, si.BINDING):
            self.slots.setdefault(ops[0], {})[ops[1]] = ops[2]

    def op_name(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2)
        if not 0 < ops[0] < self.bound:
            raise self.fail(f"names id %{ops[0]}, outside the module's id bound {self.bound}")
        text, _ = self.string(ops[1:])
        if text:
            self.names.setdefault(ops[0], text)

    def op_string(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2)
        self.define(ops[0])

    def op_import(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2)
        text, _ = self.string(ops[1:])
        if text == si.EXT_SET:
            self.sets[self.define(ops[0])] = True
        elif text.startswith("NonSemantic."):
            self.sets[self.define(ops[0])] = False
        else:
            raise self.fail(f"extended instruction set '{text}' is not {si.EXT_SET}: not a TOSA graph module")

    # ---- types ----------------------------------------------------------------------------------------------

    def op_type_scalar(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 1)
        if self.opcode in (si.OP_TYPE_BOOL, si.OP_TYPE_VOID):
            self.need(ops, 1, exact=True)
            key: tuple[int, int, int | None] = (self.opcode, 0, None)
            text = OPNAMES[self.opcode]
        elif self.opcode == si.OP_TYPE_INT:
            self.need(ops, 3, exact=True)
            key, text = (si.OP_TYPE_INT, ops[1], None), f"OpTypeInt {ops[1]} {ops[2]}"
        else:
            self.need(ops, 2)
            if len(ops) > 3:
                raise self.fail(f"has {len(ops)} operand words, at most 3")
            encoding = ops[2] if len(ops) == 3 else None
            key, text = (
                (si.OP_TYPE_FLOAT, ops[1], encoding),
                f"OpTypeFloat {ops[1]}" + (f" encoding {encoding}" if encoding is not None else ""),
            )
        self.types[self.define(ops[0])] = _Scalar(key, text)

    def op_type_array(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 3, exact=True)
        self.type(ops[1], "element type")
        length = self.uint(ops[2], "array length")
        self.types[self.define(ops[0])] = _Array(ops[1], length)

    def op_type_struct(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 1)
        for m in ops[1:]:
            self.type(m, "member type")
        self.types[self.define(ops[0])] = _Struct(tuple(ops[1:]))

    def op_type_pointer(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 3, exact=True)
        self.type(ops[2], "pointee type")
        self.types[self.define(ops[0])] = _Pointer(ops[1], ops[2])

    def op_type_tensor(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2)
        element = self.type(ops[1], "element type")
        if not isinstance(element, _Scalar) or element.dtype is None:
            raise self.fail(f"tensor element type %{ops[1]} is not a TOSA element type (bool, int 8/16/32/64, float)")
        if len(ops) < 4:
            what = "unranked" if len(ops) == 2 else "shapeless"
            raise self.fail(f"{what} tensor types are not supported: a TOSA graph module needs static shapes")
        self.need(ops, 4, exact=True)
        rank = self.uint(ops[2], "tensor rank")
        if not 0 < rank <= MAX_RANK:
            raise self.fail(f"tensor rank {rank} is not 1 to {MAX_RANK}")
        shape = tuple(self.ints(ops[3], "tensor shape", signed=False))
        if len(shape) != rank:
            raise self.fail(f"tensor shape has {len(shape)} dimensions for rank {rank}")
        if min(shape) <= 0:
            raise self.fail(f"tensor shape {list(shape)} has a dimension that is not positive")
        self.types[self.define(ops[0])] = _Tensor(element, shape)

    def op_type_graph(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2)
        count = ops[1]
        if count > len(ops) - 2:
            raise self.fail(f"declares {count} inputs but lists {len(ops) - 2} types")
        for t in ops[2:]:
            self.tensor_type(t, "graph input / output type")
        self.types[self.define(ops[0])] = _GraphType(tuple(ops[2 : 2 + count]), tuple(ops[2 + count :]))

    # ---- constants ------------------------------------------------------------------------------------------

    def op_constant_bool(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2, exact=True)
        t = self.type(ops[0], "result type")
        if not (isinstance(t, _Scalar) and t.key[0] == si.OP_TYPE_BOOL):
            raise self.fail(f"result type %{ops[0]} is not OpTypeBool")
        self.consts[self.define(ops[1])] = _Const(ops[0], "bool", self.opcode == si.OP_CONSTANT_TRUE)

    def op_constant(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 3)
        t = self.type(ops[0], "result type")
        if not isinstance(t, _Scalar) or t.key[0] not in (si.OP_TYPE_INT, si.OP_TYPE_FLOAT):
            raise self.fail(f"result type %{ops[0]} is not an integer or float type")
        width = t.key[1]
        words = (width + 31) // 32
        self.need(ops, 2 + max(words, 1), exact=True)
        bits = sum(w << (32 * i) for i, w in enumerate(ops[2:]))
        if 0 < width < 64:
            bits &= (1 << width) - 1
        self.consts[self.define(ops[1])] = _Const(ops[0], "scalar", bits)

    def op_constant_composite(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2)
        t = self.type(ops[0], "result type")
        parts = ops[2:]
        for p in parts:
            self.const(p, "constituent")
        if isinstance(t, _Array) and len(parts) != t.length:
            raise self.fail(f"an array of {t.length} has {len(parts)} constituents")
        if isinstance(t, _Tensor) and len(parts) != t.shape[0]:
            raise self.fail(f"{t} has {t.shape[0]} rows, the composite {len(parts)} constituents")
        self.consts[self.define(ops[1])] = _Const(ops[0], "composite", tuple(parts))

    def op_constant_replicate(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 3, exact=True)
        self.type(ops[0], "result type")
        self.const(ops[2], "replicated value")
        self.consts[self.define(ops[1])] = _Const(ops[0], "replicate", ops[2])

    def op_constant_null(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2, exact=True)
        self.type(ops[0], "result type")
        self.consts[self.define(ops[1])] = _Const(ops[0], "null")

    def op_graph_constant(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 3, exact=True)
        self.tensor_type(ops[0], "result type")
        self.consts[self.define(ops[1])] = _Const(ops[0], "graph", ops[2])

    def uint(self, ident: int, what: str) -> int:
        """An integer scalar constant (unsigned)."""
        c = self.const(ident, what)
        t = self.types[c.type]
        if c.kind != "scalar" or not isinstance(t, _Scalar) or t.key[0] != si.OP_TYPE_INT:
            if c.kind == "null" and isinstance(t, _Scalar) and t.key[0] == si.OP_TYPE_INT:
                return 0
            raise self.fail(f"{what} %{ident} is not an integer constant")
        return int(c.value)

    def ints(self, ident: int, what: str, signed: bool = True) -> list[int]:
        """An array or rank-1 tensor constant of integers."""
        c = self.const(ident, what)
        t = self.types[c.type]
        if isinstance(t, _Array):
            count = t.length
            element = self.types.get(t.element)
            if not isinstance(element, _Scalar) or element.key[0] != si.OP_TYPE_INT:
                raise self.fail(f"{what} %{ident} is not an array of integers")
            if count > MAX_RANK:  # arrays only give tensor shapes
                raise self.fail(f"{what} %{ident} is an array of {count}, longer than a tensor shape ({MAX_RANK})")
            if c.kind == "null":
                return [0] * count
            if c.kind == "replicate":
                return [self.int_value(c.value, what, signed)] * count
            if c.kind != "composite":
                raise self.fail(f"{what} %{ident} is not a composite constant")
            return [self.int_value(p, what, signed) for p in c.value]
        if isinstance(t, _Tensor) and len(t.shape) == 1 and t.element.key[0] == si.OP_TYPE_INT:
            values = [int(v) for v in self.tensor_data(ident, t).reshape(-1)]
            if not signed:
                values = [v % (1 << t.element.key[1]) for v in values]
            return values
        raise self.fail(f"{what} %{ident} is not an array or rank-1 tensor of integers")

    def int_value(self, ident: int, what: str, signed: bool) -> int:
        bits = self.uint(ident, what)
        t = self.types[self.consts[ident].type]
        assert isinstance(t, _Scalar)  # uint() checked it
        width = t.key[1]
        if signed and width and bits >= 1 << (width - 1):
            bits -= 1 << width
        return bits

    def bits(self, ident: int, expected: _Scalar, what: str) -> int:
        """The bits of a scalar constant of `expected`'s type (bool 0 / 1, OpConstantNull 0)."""
        c = self.const(ident, what)
        t = self.types[c.type]
        if not isinstance(t, _Scalar) or t.key != expected.key:
            raise self.fail(f"{what} %{ident} has type {self.describe(c.type)}, expected {expected.text}")
        if c.kind == "null":
            return 0
        if c.kind not in ("scalar", "bool"):
            raise self.fail(f"{what} %{ident} is not a scalar constant")
        return int(c.value)

    def describe(self, type_id: int) -> str:
        t = self.types.get(type_id)
        if isinstance(t, _Scalar):
            return t.text
        if isinstance(t, _Tensor):
            return str(t)
        return type(t).__name__.strip("_") if t is not None else "undefined"

    def tensor_data(self, ident: int, t: _Tensor) -> np.ndarray:
        """A tensor constant of type `t` -> its data in the IR storage of t's DType."""
        c = self.const(ident, "tensor constant")
        if self.types.get(c.type) != t:
            raise self.fail(f"constant %{ident} has type {self.describe(c.type)}, expected {t}")
        if ident in self.arrays:
            return self.arrays[ident]
        count = 1
        for d in t.shape:
            count *= d
        if c.kind == "graph":
            raw = None if self.graph_data is None else self.graph_data.get(c.value)
            if raw is None:
                raise self.fail(f"graph constant {c.value} (%{ident}) has no data in the constants given")
            try:
                data = si.tensor_array(t.dtype, t.shape, bytes(raw))
            except ValueError as err:
                raise self.fail(f"graph constant {c.value} (%{ident}): {err}") from None
        elif count > MAX_ELEMENTS:
            raise self.fail(f"inline constant %{ident} {t} has {count} elements, more than {MAX_ELEMENTS}")
        elif c.kind == "null":
            data = np.zeros(t.shape, dtype=t.dtype.numpy)
        elif c.kind not in ("composite", "replicate"):
            raise self.fail(f"constant %{ident} is not a tensor constant")
        elif len(t.shape) == 1:  # constituents are scalars
            parts = c.value if c.kind == "composite" else (c.value,)
            data = _values([self.bits(p, t.element, "tensor element") for p in parts], t.dtype)
            data = np.broadcast_to(data, t.shape).copy()
        else:  # constituents are tensors of the shape without its first dimension
            row = _Tensor(t.element, t.shape[1:])
            if c.kind == "composite":
                data = np.stack([self.tensor_data(p, row) for p in c.value])
            else:
                data = np.broadcast_to(self.tensor_data(c.value, row), t.shape).copy()
        self.arrays[ident] = data
        return data

    # ---- the graph ------------------------------------------------------------------------------------------

    def op_variable(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 3)
        t = self.type(ops[0], "result type")
        if not isinstance(t, _Pointer):
            raise self.fail(f"result type %{ops[0]} is not a pointer type")
        self.pointers[self.define(ops[1])] = ops[0]

    def op_entry_point(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2)
        if self.entry is not None:
            raise self.fail("a second OpGraphEntryPointARM: decode takes a module with one graph")
        name, taken = self.string(ops[1:])
        interface = ops[1 + taken :]
        for v in interface:
            if v not in self.pointers:
                raise self.fail(f"interface %{v} is not an OpVariable defined before this instruction")
        self.entry = (ops[0], name, interface)

    def op_graph(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 2, exact=True)
        if self.graph is not None:
            raise self.fail("a second OpGraphARM: decode takes a module with one graph")
        t = self.type(ops[0], "result type")
        if not isinstance(t, _GraphType):
            raise self.fail(f"result type %{ops[0]} is not an OpTypeGraphARM")
        self.graph = (self.define(ops[1]), t)
        n_in, n_out = len(t.inputs), len(t.outputs)
        if self.name_outputs:
            self.output_names = [f"output_{i}" for i in range(n_out)]
        if (len(self.input_names), len(self.output_names)) != (n_in, n_out):
            raise self.fail(
                f"the graph has {n_in} inputs and {n_out} outputs; {len(self.input_names)} input and "
                f"{len(self.output_names)} output names were given"
            )
        if len(set(self.input_names)) != n_in:
            raise self.fail(f"the input names given are not unique: {self.input_names}")
        self.used.update(self.input_names + self.output_names)
        for name, type_id in zip(self.input_names, t.inputs):
            tt = self.types[type_id]
            assert isinstance(tt, _Tensor)
            self.block.add_tensor(Tensor(name, tt.shape, tt.dtype))
        self.block.inputs = list(self.input_names)
        self.block.outputs = list(self.output_names)
        # which values the graph's outputs name, and which extracts name FFT results (looked up ahead)
        for opcode, later in self.insts[(self.at or 0) + 1 :]:
            if opcode == si.OP_GRAPH_SET_OUTPUT_ARM and len(later) >= 2 and later[1] in self.consts:
                c = self.consts[later[1]]
                if c.kind == "scalar" and c.value < n_out:
                    self.output_of.setdefault(later[0], int(c.value))
            elif opcode == si.OP_COMPOSITE_EXTRACT and len(later) == 4:
                self.extract_of.setdefault((later[2], later[3]), later[1])

    def check_interface(self, entry: tuple[int, str, tuple[int, ...]], graph: tuple[int, _GraphType]) -> None:
        (graph_id, _, interface), (ident, t) = entry, graph
        if graph_id != ident:
            raise self.fail(f"the entry point names graph %{graph_id}, the module's graph is %{ident}")
        wanted = t.inputs + t.outputs
        if len(interface) != len(wanted):
            raise self.fail(
                f"the entry point lists {len(interface)} interface variables for {len(wanted)} inputs + outputs"
            )
        for i, (var, type_id) in enumerate(zip(interface, wanted)):
            pointer = self.types[self.pointers[var]]
            assert isinstance(pointer, _Pointer)
            if self.types.get(pointer.pointee) != self.types[type_id]:
                raise self.fail(
                    f"interface variable {i} (%{var}) holds {self.describe(pointer.pointee)}, the graph's "
                    f"{'input' if i < len(t.inputs) else 'output'} is {self.describe(type_id)}"
                )

    def in_graph(self) -> _GraphType:
        if self.graph is None or self.ended:
            raise self.fail("appears outside OpGraphARM ... OpGraphEndARM")
        return self.graph[1]

    def op_graph_input(self, ops: tuple[int, ...]) -> None:
        g = self.in_graph()
        self.need(ops, 3)
        if len(ops) > 3:
            raise self.fail("ElementIndex operands (arrays of tensors) are not supported")
        index = self.uint(ops[2], "InputIndex")
        if index >= len(g.inputs):
            raise self.fail(f"InputIndex {index}: the graph has {len(g.inputs)} inputs")
        t = self.tensor_type(ops[0], "result type")
        if t != self.types[g.inputs[index]]:
            raise self.fail(f"input {index} is {self.describe(g.inputs[index])}, the instruction says {t}")
        self.values[self.define(ops[1])] = self.input_names[index]

    def op_ext_inst(self, ops: tuple[int, ...]) -> None:
        self.need(ops, 4)
        if ops[2] not in self.sets:
            raise self.fail(f"%{ops[2]} is not an OpExtInstImport defined before this instruction")
        if not self.sets[ops[2]]:
            self.define(ops[1])
            return  # non-semantic (debug information)
        self.in_graph()
        self.inst = BY_OPCODE.get(ops[3])
        if self.inst is None:
            raise self.fail(f"{si.EXT_SET} has no instruction {ops[3]} (it has 0..{len(BY_OPCODE) - 1})")
        inst = self.inst
        args = ops[4:]
        n = len(inst.attributes) + len(inst.inputs)
        if len(args) < n or (not inst.variadic and len(args) != n):
            raise self.fail(
                f"takes {'at least ' if inst.variadic else ''}{n} operands, the instruction has {len(args)}"
            )
        inputs = [
            self.input(inst.inputs[min(i, len(inst.inputs) - 1)], ident)
            for i, ident in enumerate(args[len(inst.attributes) :])
        ]
        first = self.block.tensors[inputs[0]] if inputs else None
        attrs = {o.name: self.attribute(o, ident, first) for o, ident in zip(inst.attributes, args)}
        result = self.define(ops[1])
        t = self.type(ops[0], "result type")
        if len(inst.outputs) == 1:
            if not isinstance(t, _Tensor):
                raise self.fail(f"result type %{ops[0]} is not a tensor type")
            outputs = [self.new_tensor(result, t)]
            self.values[result] = outputs[0]
        else:
            members = [self.types.get(m) for m in t.members] if isinstance(t, _Struct) else []
            if len(members) != len(inst.outputs) or not all(isinstance(m, _Tensor) for m in members):
                raise self.fail(f"result type %{ops[0]} is not a struct of {len(inst.outputs)} tensor types")
            outputs = []
            for k, m in enumerate(members):
                assert isinstance(m, _Tensor)
                extract = self.extract_of.get((result, k))
                outputs.append(self.new_tensor(extract, m, hint=None if extract else f"t{result}_{k}"))
            self.structs[result] = outputs
        self.block.operators.append(Operator(inst.name, inputs, outputs, attrs))

    def new_tensor(self, ident: int | None, t: _Tensor, hint: str | None = None) -> str:
        index = self.output_of.get(ident) if ident is not None else None
        if index is not None and self.output_names[index] not in self.block.tensors:
            name = self.output_names[index]
        else:
            name = self.fresh(ident, hint)
        self.block.add_tensor(Tensor(name, t.shape, t.dtype))
        return name

    def input(self, o: Operand, ident: int) -> str:
        shape_input = o.type == "shape_t"
        if ident in self.values:
            if shape_input:
                raise self.fail(f"shape input {o.name} (%{ident}) must be a constant")
            return self.values[ident]
        if ident in self.structs:
            raise self.fail(
                f"input {o.name} (%{ident}) is a struct of results: take its members with OpCompositeExtract"
            )
        if ident not in self.consts:
            raise self.fail(f"input {o.name} (%{ident}) is not defined before this instruction")
        return self.constant_tensor(ident, shape_input, o.name)

    def constant_tensor(self, ident: int, shape_input: bool, what: str, name: str | None = None) -> str:
        key = (ident, shape_input)
        if key in self.const_names and name is None:
            return self.const_names[key]
        t = self.types[self.consts[ident].type]
        if not isinstance(t, _Tensor):
            raise self.fail(f"{what} (%{ident}) is a {self.describe(self.consts[ident].type)} constant, not a tensor")
        graph_id = self.consts[ident].value if self.consts[ident].kind == "graph" else None
        if shape_input:
            if len(t.shape) != 1 or t.element.key[0] != si.OP_TYPE_INT:
                raise self.fail(f"shape input {what} (%{ident}) is {t}, not a rank-1 tensor of integers")
            data = self.tensor_data(ident, t).astype(np.int64)
            tensor = Tensor(name or self.fresh(ident), t.shape, DType.SHAPE, data)
        elif graph_id is not None and self.graph_data is None:  # structure only: the data is not given
            tensor = Tensor(name or self.fresh(ident), t.shape, t.dtype)
        else:
            tensor = Tensor(name or self.fresh(ident), t.shape, t.dtype, self.tensor_data(ident, t).copy())
        if graph_id is not None:
            self.graph_ids[tensor.name] = graph_id
        self.block.add_tensor(tensor)
        self.block.operators.append(Operator("CONST_SHAPE" if shape_input else "CONST", [], [tensor.name]))
        if name is None:
            self.const_names[key] = tensor.name
        return tensor.name

    def attribute(self, o: Operand, ident: int, first: Tensor | None) -> Any:
        kind = si.attribute_kind(o)
        c = self.const(ident, f"attribute {o.name}")
        t = self.types[c.type]
        what = f"attribute {o.name}"
        if kind == AttrKind.BOOL:
            if not (isinstance(t, _Scalar) and t.key[0] == si.OP_TYPE_BOOL) or c.kind not in ("bool", "null"):
                raise self.fail(f"{what} (%{ident}) is not a bool constant")
            return bool(c.value)
        if kind in (AttrKind.INT, AttrKind.ENUM):
            if not (isinstance(t, _Scalar) and t.key[:2] == (si.OP_TYPE_INT, 32)):
                raise self.fail(f"{what} (%{ident}) is not a 32-bit integer constant")
            if kind == AttrKind.INT:
                return self.int_value(ident, what, signed=True)
            try:
                return si.enum_member(o.type, self.uint(ident, what))
            except ValueError as err:
                raise self.fail(f"{what}: {err}") from None
        if kind == AttrKind.INTS:
            if not (isinstance(t, _Tensor) and len(t.shape) == 1 and t.element.key[0] == si.OP_TYPE_INT):
                raise self.fail(f"{what} (%{ident}) is not a rank-1 tensor of integers")
            return tuple(self.ints(ident, what))
        # AttrKind.ELEMENT: a scalar of the input's element type (CLAMP min_val / max_val)
        if first is None:
            raise self.fail(f"{what} needs an input tensor to type it")
        et = si.ELEMENT_TYPES[first.dtype]
        expected = _Scalar((et.opcode, et.width, et.encoding), f"the input's {first.dtype.name}")
        return _values([self.bits(ident, expected, what)], first.dtype)[0]

    def op_composite_extract(self, ops: tuple[int, ...]) -> None:
        self.in_graph()
        self.need(ops, 4)
        if len(ops) != 4:
            raise self.fail("takes one index (a member of a two-result struct)")
        members = self.structs.get(ops[2])
        if members is None:
            raise self.fail(f"%{ops[2]} is not a two-result TOSA instruction defined before this instruction")
        if ops[3] >= len(members):
            raise self.fail(f"index {ops[3]}: the struct has {len(members)} members")
        name = members[ops[3]]
        t = self.tensor_type(ops[0], "result type")
        have = self.block.tensors[name]
        if (t.shape, t.dtype) != (have.shape, have.dtype):
            raise self.fail(f"result type {t} differs from member {ops[3]}, {list(have.shape)} {have.dtype.name}")
        self.values[self.define(ops[1])] = name

    def op_set_output(self, ops: tuple[int, ...]) -> None:
        g = self.in_graph()
        self.need(ops, 2)
        if len(ops) > 2:
            raise self.fail("ElementIndex operands (arrays of tensors) are not supported")
        index = self.uint(ops[1], "OutputIndex")
        if index >= len(g.outputs):
            raise self.fail(f"OutputIndex {index}: the graph has {len(g.outputs)} outputs")
        if index in self.set_outputs:
            raise self.fail(f"output {index} is set twice")
        self.set_outputs.add(index)
        want = self.types[g.outputs[index]]
        assert isinstance(want, _Tensor)  # checked by OpTypeGraphARM
        name, value = self.output_names[index], ops[0]
        if value in self.values:
            have = self.block.tensors[self.values[value]]
            if (have.shape, have.dtype) != (want.shape, want.dtype):
                raise self.fail(
                    f"output {index} is {want}, the value %{value} '{have.name}' is "
                    f"{list(have.shape)} {have.dtype.name}"
                )
            if have.name != name:  # a graph input, or a value that an earlier output took: copy it
                if name in self.block.tensors:
                    raise self.fail(f"output {index} '{name}' names another tensor of the graph")
                self.block.add_tensor(Tensor(name, want.shape, want.dtype))
                self.block.operators.append(Operator("IDENTITY", [have.name], [name]))
        elif value in self.consts:
            c = self.consts[value]
            if self.types.get(c.type) != want:
                raise self.fail(f"output {index} is {want}, the constant %{value} is {self.describe(c.type)}")
            if name in self.block.tensors:
                raise self.fail(f"output {index} '{name}' names another tensor of the graph")
            self.constant_tensor(value, False, f"output {index}", name=name)
        elif value in self.structs:
            raise self.fail(f"output {index}: %{value} is a struct of results: set its members (OpCompositeExtract)")
        else:
            raise self.fail(f"output {index}: %{value} is not defined before this instruction")

    def op_graph_end(self, ops: tuple[int, ...]) -> None:
        g = self.in_graph()
        self.need(ops, 0, exact=True)
        missing = [i for i in range(len(g.outputs)) if i not in self.set_outputs]
        if missing:
            raise self.fail(f"graph output {missing[0]} is never set (OpGraphSetOutputARM)")
        self.ended = True

    def finish(self) -> None:
        if self.graph is None:
            raise self.fail("the module has no OpGraphARM")
        if not self.ended:
            raise self.fail("the graph has no OpGraphEndARM")
        if self.entry is None:
            raise self.fail("the module has no OpGraphEntryPointARM")
        self.check_interface(self.entry, self.graph)
        self.block.name = self.entry[1] or "main"
        _restore_rank0(self.block, self.fresh)


def _values(bits: list[int], dtype: DType) -> np.ndarray:
    """Scalar constants' bits -> a 1-d array in the IR storage of `dtype` (signless integers become signed)."""
    storage = si.spirv_storage(dtype)
    words = np.asarray(bits, dtype=np.uint64).astype(f"<u{storage.itemsize}")
    return words.view(storage).astype(dtype.numpy)


def _restore_rank0(block: Block, fresh: Callable[[int | None, str | None], str]) -> None:
    """Tensors that shape inference makes rank 0 but SPIR-V declared [1] become rank 0; a graph output keeps [1]
    through a RESHAPE."""
    outputs = set(block.outputs)
    operators: list[Operator] = []
    for op in block.operators:
        operators.append(op)
        if op.op in ("CONST", "CONST_SHAPE", "IDENTITY"):
            continue
        try:
            inferred = infer(op, block)
        except TosaError:
            continue  # validation reports it
        for k, (shape, _) in enumerate(inferred):
            t = block.tensors[op.outputs[k]]
            if shape != () or t.shape != (1,):
                continue
            if t.name not in outputs:
                t.shape = ()
                continue
            inner, dims = fresh(None, f"{t.name}_rank0"), fresh(None, f"{t.name}_shape")
            block.add_tensor(Tensor(inner, (), t.dtype))
            block.add_tensor(Tensor(dims, (1,), DType.SHAPE, np.ones(1, dtype=np.int64)))
            op.outputs[k] = inner
            operators += [Operator("CONST_SHAPE", [], [dims]), Operator("RESHAPE", [inner, dims], [t.name])]
    block.operators = operators


@dataclass(frozen=True)
class Decoded:
    """What decode_module reads: the Block, the (DescriptorSet, Binding) of each interface variable of the entry
    point (the graph's inputs, then its outputs; None where it has no Binding decoration; set 0 where it has no
    DescriptorSet), and the graph constant id each CONST tensor read from an OpGraphConstantARM holds."""

    block: Block
    bindings: list[tuple[int, int] | None]
    graph_constants: dict[str, int]


def decode_module(
    spirv: bytes,
    constants: Mapping[int, bytes] | None,
    input_names: Sequence[str],
    output_names: Sequence[str] | None,
    file: str | None = None,
) -> Decoded:
    """decode, with the module's interface bindings and graph constant ids. `constants` None reads the structure
    only: a CONST tensor of a graph constant then has no data (a graph constant whose values an operator needs is
    an error). `output_names` None names the outputs output_0, output_1, ... as many as the graph has."""
    where = file or "<SPIR-V graph module>"
    decoder = _Decoder(spirv, constants, input_names, output_names)
    try:
        block = decoder.run()
    except TosaError as err:
        raise err.located(file=where) from None
    except (IndexError, KeyError, ValueError, TypeError, OverflowError, struct.error, MemoryError) as err:
        located = decoder.fail(f"malformed module ({type(err).__name__}: {err})")
        raise located.located(file=where) from None
    assert decoder.entry is not None  # finish() checked it
    bindings: list[tuple[int, int] | None] = []
    for var in decoder.entry[2]:
        slot = decoder.slots.get(var, {})
        bindings.append((slot.get(si.DESCRIPTOR_SET, 0), slot[si.BINDING]) if si.BINDING in slot else None)
    return Decoded(block, bindings, dict(decoder.graph_ids))


def decode(
    spirv: bytes,
    constants: Mapping[int, bytes],
    input_names: Sequence[str],
    output_names: Sequence[str],
    file: str | None = None,
) -> Block:
    """A SPIR-V graph module -> a Block of TOSA operators. `constants` maps graph constant ids to their data;
    `input_names` / `output_names` name the graph's inputs and outputs in order. Any defect raises TosaError."""
    return decode_module(spirv, constants, input_names, output_names, file).block

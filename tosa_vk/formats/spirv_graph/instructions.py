"""The TOSA.001000.1 extended instruction set as data, and the SPIR-V numbers a graph module needs.

A SPIR-V graph module (SPV_ARM_graph, SPV_ARM_tensors) runs a TOSA graph as `OpExtInst` instructions of the
TOSA.001000.1 set; Arm's model-converter writes them into the GRAPH segments of a VGF. The opcode of each
instruction comes from KhronosGroup/SPIRV-Headers include/spirv/unified1/extinst.tosa.001000.1.grammar.json. Its
operand lists are not restated here: the grammar lists an operator's attributes in spec order, then its inputs in
spec order, which is what tosa_vk's catalogue (tosa_vk/ir/ops.py) already holds; the checks at the end of this
module tie the two together. Enumerants in operands take the TOSA spec's values (section 3 "Enumerations"), which
tosa_vk's IR enums already use; only acc_type, a DType in the IR, needs a map.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ...abi.spirv import (  # noqa: F401  (re-exported: the codec's one place for SPIR-V numbers)
    BINDING,
    DESCRIPTOR_SET,
    OP_CONSTANT,
    OP_CONSTANT_COMPOSITE,
    OP_DECORATE,
    OP_TYPE_ARRAY,
    OP_TYPE_BOOL,
    OP_TYPE_FLOAT,
    OP_TYPE_INT,
    OP_TYPE_POINTER,
    OP_TYPE_STRUCT,
    OP_TYPE_TENSOR_ARM,
    OP_VARIABLE,
    UNIFORM_CONSTANT,
)
from ...ir.dtype import DType
from ...ir.graph import NanPropagationMode, ResizeMode, RoundingMode
from ...ir.ops import OPS, Operand

EXT_SET = "TOSA.001000.1"

# Instruction names by opcode (the grammar's order, which is also the spec's chapter order).
_NAMES = (
    "ARGMAX", "AVG_POOL2D", "CONV2D", "CONV3D", "DEPTHWISE_CONV2D", "FFT2D", "MATMUL", "MAX_POOL2D", "RFFT2D",
    "TRANSPOSE_CONV2D", "CLAMP", "ERF", "SIGMOID", "TANH", "ADD", "ARITHMETIC_RIGHT_SHIFT", "BITWISE_AND",
    "BITWISE_OR", "BITWISE_XOR", "INTDIV", "LOGICAL_AND", "LOGICAL_LEFT_SHIFT", "LOGICAL_RIGHT_SHIFT", "LOGICAL_OR",
    "LOGICAL_XOR", "MAXIMUM", "MINIMUM", "MUL", "POW", "SUB", "TABLE", "ABS", "BITWISE_NOT", "CEIL", "CLZ", "COS",
    "EXP", "FLOOR", "LOG", "LOGICAL_NOT", "NEGATE", "RECIPROCAL", "RSQRT", "SIN", "SELECT", "EQUAL", "GREATER",
    "GREATER_EQUAL", "REDUCE_ALL", "REDUCE_ANY", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PRODUCT", "REDUCE_SUM", "CONCAT",
    "PAD", "RESHAPE", "REVERSE", "SLICE", "TILE", "TRANSPOSE", "GATHER", "SCATTER", "RESIZE", "CAST", "RESCALE",
)  # fmt: skip


class AttrKind(enum.Enum):
    """How an attribute travels as an operand: the SPIR-V constant that carries it."""

    INT = "32-bit integer OpConstant"  # i32_t: axis
    BOOL = "OpConstantTrue / OpConstantFalse"  # bool_t
    ENUM = "32-bit integer OpConstant holding the spec's enumerant"  # acc_type_t, nan_propagation_mode_t, ...
    INTS = "tensor constant of 32-bit integers"  # T<i32_t>: pad, stride, kernel, dilation, out_pad, perms
    ELEMENT = "OpConstant of the input's element type"  # in_out_t: CLAMP min_val / max_val


# Enumerated attribute types -> the IR value's type. The IR enums number their members as the spec does.
ENUMS: MappingProxyType[str, type[enum.IntEnum]] = MappingProxyType(
    {
        "acc_type_t": DType,
        "nan_propagation_mode_t": NanPropagationMode,
        "resize_mode_t": ResizeMode,
        "rounding_mode_t": RoundingMode,
    }
)
ACC_TYPES: MappingProxyType[DType, int] = MappingProxyType(
    {DType.INT32: 1, DType.FP16: 2, DType.FP32: 3, DType.INT48: 4}  # spec 3.2 acc_type_t
)


def attribute_kind(o: Operand) -> AttrKind:
    if o.type in ENUMS:
        return AttrKind.ENUM
    if o.type == "bool_t":
        return AttrKind.BOOL
    if o.type == "i32_t":
        return AttrKind.INTS if o.tensor else AttrKind.INT
    if o.type == "in_out_t" and not o.tensor:
        return AttrKind.ELEMENT
    raise TypeError(f"attribute {o.name} of type {o.type} has no SPIR-V operand form")


def enum_value(type_name: str, value: Any) -> int:
    """An IR enum attribute -> its SPIR-V operand value (ValueError when it has none)."""
    if type_name == "acc_type_t":
        dtype = DType.of(value)
        if dtype not in ACC_TYPES:
            raise ValueError(f"{dtype.name} is not an accumulator type (INT32, FP16, FP32 or INT48)")
        return ACC_TYPES[dtype]
    member = ENUMS[type_name](int(value))
    if member == 0:
        raise ValueError(f"{member!r} has no spec value")
    return int(member)


def enum_member(type_name: str, value: int) -> enum.IntEnum:
    """A SPIR-V operand value -> the IR enum member (ValueError when it is no enumerant)."""
    if type_name == "acc_type_t":
        for dtype, v in ACC_TYPES.items():
            if v == value:
                return dtype
        raise ValueError(f"{value} is not an acc_type_t enumerant (1..{len(ACC_TYPES)})")
    member = ENUMS[type_name](value)
    if member == 0:
        raise ValueError(f"{value} is not a {type_name} enumerant")
    return member


@dataclass(frozen=True)
class Instruction:
    """One TOSA.001000.1 instruction. Its operands are `attributes` then `inputs` (catalogue Operands); a list input
    (CONCAT's input1) is the last and takes the remaining operands. Two outputs come back as an OpTypeStruct."""

    name: str
    opcode: int
    attributes: tuple[Operand, ...]
    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...]

    @property
    def operands(self) -> tuple[Operand, ...]:
        return self.attributes + self.inputs

    @property
    def variadic(self) -> bool:
        return bool(self.inputs) and self.inputs[-1].is_list


INSTRUCTIONS: MappingProxyType[str, Instruction] = MappingProxyType(
    {
        name: Instruction(name, code, OPS[name].attributes, OPS[name].inputs, OPS[name].outputs)
        for code, name in enumerate(_NAMES)
    }
)
BY_OPCODE: MappingProxyType[int, Instruction] = MappingProxyType({i.opcode: i for i in INSTRUCTIONS.values()})


# ---- SPIR-V numbers (SPIRV-Headers include/spirv/unified1/spirv.core.grammar.json) -------------------------------

MAGIC = 0x07230203
VERSION_1_5 = 0x00010500

OP_NAME, OP_STRING, OP_EXTENSION, OP_EXT_INST_IMPORT, OP_EXT_INST, OP_MEMORY_MODEL = 5, 7, 10, 11, 12, 14
OP_CAPABILITY, OP_TYPE_VOID = 17, 19
OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_CONSTANT_NULL, OP_COMPOSITE_EXTRACT = 41, 42, 46, 81
OP_GRAPH_CONSTANT_ARM, OP_GRAPH_ENTRY_POINT_ARM, OP_GRAPH_ARM, OP_GRAPH_INPUT_ARM = 4181, 4182, 4183, 4184
OP_GRAPH_SET_OUTPUT_ARM, OP_GRAPH_END_ARM, OP_TYPE_GRAPH_ARM = 4185, 4186, 4190
OP_CONSTANT_COMPOSITE_REPLICATE_EXT = 4461
# debug instructions a reader may skip: OpSource, OpSourceExtension, OpMemberName, OpLine, OpNoLine,
# OpModuleProcessed, OpSourceContinued
SKIPPED_OPCODES = frozenset({3, 4, 6, 8, 317, 330, 2})

CAP_MATRIX, CAP_SHADER, CAP_FLOAT16, CAP_INT64, CAP_INT16, CAP_INT8 = 0, 1, 9, 11, 22, 39
CAP_TENSORS_ARM, CAP_GRAPH_ARM, CAP_FLOAT8_EXT, CAP_BFLOAT16_TYPE_KHR = 4174, 4191, 4212, 5116
CAP_VULKAN_MEMORY_MODEL, CAP_REPLICATED_COMPOSITES_EXT = 5345, 6024
ADDRESSING_LOGICAL, MEMORY_MODEL_VULKAN = 0, 3
FP_BFLOAT16_KHR, FP_FLOAT8_E4M3_EXT, FP_FLOAT8_E5M2_EXT = 0, 4214, 4215

OPNAMES: MappingProxyType[int, str] = MappingProxyType(
    {
        OP_NAME: "OpName",
        OP_STRING: "OpString",
        OP_EXTENSION: "OpExtension",
        OP_EXT_INST_IMPORT: "OpExtInstImport",
        OP_EXT_INST: "OpExtInst",
        OP_MEMORY_MODEL: "OpMemoryModel",
        OP_CAPABILITY: "OpCapability",
        OP_TYPE_VOID: "OpTypeVoid",
        OP_TYPE_BOOL: "OpTypeBool",
        OP_TYPE_INT: "OpTypeInt",
        OP_TYPE_FLOAT: "OpTypeFloat",
        OP_TYPE_ARRAY: "OpTypeArray",
        OP_TYPE_STRUCT: "OpTypeStruct",
        OP_TYPE_POINTER: "OpTypePointer",
        OP_CONSTANT_TRUE: "OpConstantTrue",
        OP_CONSTANT_FALSE: "OpConstantFalse",
        OP_CONSTANT: "OpConstant",
        OP_CONSTANT_COMPOSITE: "OpConstantComposite",
        OP_CONSTANT_NULL: "OpConstantNull",
        OP_VARIABLE: "OpVariable",
        OP_DECORATE: "OpDecorate",
        OP_COMPOSITE_EXTRACT: "OpCompositeExtract",
        OP_TYPE_TENSOR_ARM: "OpTypeTensorARM",
        OP_GRAPH_CONSTANT_ARM: "OpGraphConstantARM",
        OP_GRAPH_ENTRY_POINT_ARM: "OpGraphEntryPointARM",
        OP_GRAPH_ARM: "OpGraphARM",
        OP_GRAPH_INPUT_ARM: "OpGraphInputARM",
        OP_GRAPH_SET_OUTPUT_ARM: "OpGraphSetOutputARM",
        OP_GRAPH_END_ARM: "OpGraphEndARM",
        OP_TYPE_GRAPH_ARM: "OpTypeGraphARM",
        OP_CONSTANT_COMPOSITE_REPLICATE_EXT: "OpConstantCompositeReplicateEXT",
    }
)


# ---- element types ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ElementType:
    """The SPIR-V scalar type of a TOSA element type, and what declaring it takes."""

    opcode: int  # OP_TYPE_BOOL / OP_TYPE_INT / OP_TYPE_FLOAT
    width: int  # bits (0 for bool)
    encoding: int | None  # OpTypeFloat's FP encoding; None for IEEE floats, integers and bool
    capability: int | None
    extension: str | None

    @property
    def operands(self) -> tuple[int, ...]:
        """The type instruction's operands after its result id (integers are signless: signedness 0)."""
        if self.opcode == OP_TYPE_BOOL:
            return ()
        if self.opcode == OP_TYPE_INT:
            return (self.width, 0)
        return (self.width,) if self.encoding is None else (self.width, self.encoding)


# As model-converter writes them: integers signless (an int8 -70 is the word 186), INT4 in 8 bits, INT48 in 64 bits,
# shape values in 32 bits. Rows that share a SPIR-V type read back as the first DType listed with it.
ELEMENT_TYPES: MappingProxyType[DType, ElementType] = MappingProxyType(
    {
        DType.BOOL: ElementType(OP_TYPE_BOOL, 0, None, None, None),
        DType.INT8: ElementType(OP_TYPE_INT, 8, None, CAP_INT8, None),
        DType.INT4: ElementType(OP_TYPE_INT, 8, None, CAP_INT8, None),
        DType.INT16: ElementType(OP_TYPE_INT, 16, None, CAP_INT16, None),
        DType.INT32: ElementType(OP_TYPE_INT, 32, None, None, None),
        DType.SHAPE: ElementType(OP_TYPE_INT, 32, None, None, None),
        DType.INT48: ElementType(OP_TYPE_INT, 64, None, CAP_INT64, None),
        DType.FP32: ElementType(OP_TYPE_FLOAT, 32, None, None, None),
        DType.FP16: ElementType(OP_TYPE_FLOAT, 16, None, CAP_FLOAT16, None),
        DType.BF16: ElementType(OP_TYPE_FLOAT, 16, FP_BFLOAT16_KHR, CAP_BFLOAT16_TYPE_KHR, "SPV_KHR_bfloat16"),
        DType.FP8E4M3: ElementType(OP_TYPE_FLOAT, 8, FP_FLOAT8_E4M3_EXT, CAP_FLOAT8_EXT, "SPV_EXT_float8"),
        DType.FP8E5M2: ElementType(OP_TYPE_FLOAT, 8, FP_FLOAT8_E5M2_EXT, CAP_FLOAT8_EXT, "SPV_EXT_float8"),
    }
)
DTYPE_OF: MappingProxyType[tuple[int, int, int | None], DType] = MappingProxyType(
    {
        (e.opcode, e.width, e.encoding): d
        for d, e in reversed(list(ELEMENT_TYPES.items()))  # reversed: the first row of a shared type wins
    }
)


def spirv_storage(dtype: DType) -> np.dtype:
    """numpy dtype of one element in SPIR-V's layout (graph constant data, scalar constants): the IR's storage,
    except shape values, which SPIR-V holds in 32 bits."""
    return np.dtype("<i4") if dtype == DType.SHAPE else dtype.numpy.newbyteorder("<")


def tensor_bytes(dtype: DType, data: np.ndarray) -> bytes:
    """A constant tensor's data as an OpGraphConstantARM expects it: dense, row-major, one element in
    `spirv_storage(dtype)` each (INT4 one byte, INT48 eight bytes); a bool is one byte, true written as 0xFF as
    model-converter writes it (VK_FORMAT_R8_BOOL_ARM)."""
    if dtype == DType.BOOL:
        return (np.ascontiguousarray(data, dtype=np.bool_).view(np.uint8) * np.uint8(0xFF)).tobytes()
    return np.ascontiguousarray(data, dtype=spirv_storage(dtype)).tobytes()


def tensor_array(dtype: DType, shape: tuple[int, ...], raw: bytes) -> np.ndarray:
    """The inverse of tensor_bytes, in the IR's storage dtype (ValueError when the byte count does not fit)."""
    storage = spirv_storage(dtype)
    count = int(np.prod(shape, dtype=object)) if shape else 1
    need = count * storage.itemsize
    if len(raw) != need:
        raise ValueError(f"{dtype.name} tensor of shape {list(shape)} takes {need} bytes, the data has {len(raw)}")
    if dtype == DType.BOOL:  # any non-zero byte is true
        return np.frombuffer(raw, dtype=np.uint8).reshape(shape) != 0
    return np.frombuffer(raw, dtype=storage).reshape(shape).astype(dtype.numpy, copy=True)


# ---- checks tying the table to the catalogue -------------------------------------------------------------------

assert len(_NAMES) == 66 and len(set(_NAMES)) == 66
# Opcodes follow the catalogue's (the spec's) operator order.
assert list(_NAMES) == [n for n in OPS if n in INSTRUCTIONS], "TOSA.001000.1 opcodes out of the catalogue's order"
for _i in INSTRUCTIONS.values():
    assert OPS[_i.name].types, f"{_i.name}: an instruction needs a type table"
    assert all(not o.is_list for o in _i.inputs[:-1]), f"{_i.name}: only the last input may be a list"
    assert not any(o.is_list for o in _i.attributes), f"{_i.name}: a list attribute"
    assert 1 <= len(_i.outputs) <= 2, f"{_i.name}: {len(_i.outputs)} outputs"
    for _o in _i.attributes:
        attribute_kind(_o)  # every attribute has an operand form
    for _o in _i.inputs:
        assert _o.tensor or _o.type == "shape_t", f"{_i.name}.{_o.name}: an input is a tensor or a shape"
# The IR enums carry the spec's enumerant values (spec section 3).
assert (NanPropagationMode.PROPAGATE, NanPropagationMode.IGNORE) == (1, 2)
assert (ResizeMode.NEAREST, ResizeMode.BILINEAR) == (1, 2)
assert (RoundingMode.SINGLE_ROUND, RoundingMode.INEXACT_ROUND, RoundingMode.DOUBLE_ROUND) == (1, 2, 3)

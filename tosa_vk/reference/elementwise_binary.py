"""Elementwise binary operators (spec 2.5).

Integers are computed in int64 and checked / wrapped to the result type as the pseudocode says; floating point is
computed in float64 and rounded once to the output type (numeric.round_to), which meets the 0.5 ULP bounds.
Broadcasting follows spec 4.4.6 (broadcast_shape / apply_broadcast): equal ranks, each dimension equal or 1.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from .numeric import add_s, require_range, round_to, sub_s, to_float64, wrap
from .registry import Call, reference

# ---- helpers shared by the elementwise chapters (binary, ternary, comparison) ---------------------------------


def broadcast_inputs(call: Call, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """ERROR_IF(shape != broadcast_shape(shape1, shape2, ...)); returns the inputs broadcast to the output shape."""
    shape = tuple(np.shape(arrays[0]))
    for a in arrays[1:]:
        other = tuple(np.shape(a))
        call.error_if(len(other) != len(shape), "rank(shape1) != rank(shape2)")
        merged = []
        for d1, d2 in zip(shape, other):
            if d1 == 1:
                merged.append(d2)
            else:
                call.error_if(d2 != 1 and d2 != d1, "shape2[i] != 1 && shape2[i] != shape[i]")
                merged.append(d1)
        shape = tuple(merged)
    out_shape = tuple(call.out_shapes[0])
    call.error_if(out_shape != shape, "shape != broadcast_shape(shape1, shape2)")
    return [np.broadcast_to(a, shape) for a in arrays]


def nan_mode(call: Call) -> NanPropagationMode:
    mode = call.attr("nan_mode", NanPropagationMode.PROPAGATE)
    return NanPropagationMode.PROPAGATE if mode == NanPropagationMode.UNKNOWN else NanPropagationMode(mode)


def float_max(a: np.ndarray | float, b: np.ndarray | float, mode: NanPropagationMode) -> np.ndarray:
    """apply_max_s on float64 arrays: NaN propagates, or is ignored (compare_nan) in IGNORE mode."""
    if mode == NanPropagationMode.IGNORE:
        return np.fmax(a, b)
    return np.maximum(a, b)


def float_min(a: np.ndarray | float, b: np.ndarray | float, mode: NanPropagationMode) -> np.ndarray:
    if mode == NanPropagationMode.IGNORE:
        return np.fmin(a, b)
    return np.minimum(a, b)


def _int_args(call: Call):
    a, b = broadcast_inputs(call, call.inputs[:2])
    return a.astype(np.int64), b.astype(np.int64), call.out_types[0]


def _float_args(call: Call):
    a, b = broadcast_inputs(call, call.inputs[:2])
    return to_float64(a), to_float64(b), call.out_types[0]


def _float_op(call: Call, fn) -> np.ndarray:
    """fn(input1, input2) in float64 (inf - inf etc. give NaN quietly), rounded once to the output type."""
    a, b, t = _float_args(call)
    with np.errstate(all="ignore"):
        return round_to(fn(a, b), t)


def _shift_range(call: Call, shift: np.ndarray, dtype: DType) -> None:
    """REQUIRE(0 <= value2 && value2 <= bits - 1) of the shift operators."""
    call.require((shift >= 0) & (shift <= dtype.bits - 1), f"0 <= value2 && value2 <= {dtype.bits - 1}")


# ---- operators -------------------------------------------------------------------------------------------------


@reference("ADD")
def ADD(call: Call):
    if call.out_types[0].is_float:
        return _float_op(call, np.add)
    a, b, t = _int_args(call)
    c = add_s(a, b, t, "c >= minimum_s<in_t>() && c <= maximum_s<in_t>()")  # apply_add_s
    return c.astype(t.numpy)


@reference("SUB")
def SUB(call: Call):
    if call.out_types[0].is_float:
        return _float_op(call, np.subtract)
    a, b, t = _int_args(call)
    c = sub_s(a, b, t, "c >= minimum_s<in_t>() && c <= maximum_s<in_t>()")  # apply_sub_s
    return c.astype(t.numpy)


@reference("MUL")
def MUL(call: Call):
    in_t, out_t = call.in_types[0], call.out_types[0]
    shift = int(np.reshape(call.inputs[2], -1)[0])
    call.require(0 <= shift <= 63, "0 <= shift && shift <= 63")
    call.require(in_t == DType.INT32 or shift == 0, "is_same<in_t,int32_t>() || shift == 0")
    if out_t.is_float:
        return _float_op(call, np.multiply)
    a, b, t = _int_args(call)
    with np.errstate(over="ignore"):
        product = a * b  # int32 x int32 fits int64; i64_t keeps the low 64 bits (apply_mul_s)
    if in_t == DType.INT32 and shift > 0:
        product = (product + (1 << (shift - 1))) >> shift
        require_range(product, DType.INT32, "product >= minimum_s<i32_t>() && product <= maximum_s<i32_t>()")
        return product.astype(out_t.numpy)
    return wrap(product, out_t)  # apply_mul_s: low 32 bits for i32_t, low 64 for i64_t


@reference("INTDIV")
def INTDIV(call: Call):
    a, b, t = _int_args(call)
    call.require(b != 0, "value2 != 0")
    call.require(~((a == np.iinfo(np.int64).min) & (b == -1)), "!(a_i64 == minimum<int64_t> && b_i64 == -1)")
    safe = np.where(b == 0, 1, b)
    q = a // safe  # floor division, then toward zero where the remainder is not 0 and the signs differ
    q = q + (((a - q * safe) != 0) & ((a < 0) != (safe < 0)))
    require_range(q, t, "c >= minimum_s<in_t>() && c <= maximum_s<in_t>()")  # apply_intdiv_s
    return q.astype(t.numpy)


@reference("POW")
def POW(call: Call):
    a, b, t = _float_args(call)
    call.require(~(a < 0), "value1 >= 0")
    call.require((a > 0) | (b > 0) | np.isnan(a) | np.isnan(b), "value1 > 0 || value2 > 0")
    call.require(~np.isnan(a) & ~np.isnan(b), "!isnan(value1) && !isnan(value2)")
    call.require(np.isfinite(a) & np.isfinite(b), "is_finite(value1) && is_finite(value2)")
    with np.errstate(all="ignore"):
        return round_to(np.power(a, b), t)


@reference("MAXIMUM")
def MAXIMUM(call: Call):
    if call.out_types[0].is_float:
        a, b, t = _float_args(call)
        return round_to(float_max(a, b, nan_mode(call)), t)
    a, b, t = _int_args(call)
    return np.maximum(a, b).astype(t.numpy)


@reference("MINIMUM")
def MINIMUM(call: Call):
    if call.out_types[0].is_float:
        a, b, t = _float_args(call)
        return round_to(float_min(a, b, nan_mode(call)), t)
    a, b, t = _int_args(call)
    return np.minimum(a, b).astype(t.numpy)


# Bit-wise and logical operators: the same broadcast, then numpy's function. (The 1.0.1 pseudocode of BITWISE_AND
# prints `|`, a typo: the operator is AND.)
_BITWISE_LOGICAL = {
    "BITWISE_AND": np.bitwise_and,
    "BITWISE_OR": np.bitwise_or,
    "BITWISE_XOR": np.bitwise_xor,
    "LOGICAL_AND": np.logical_and,
    "LOGICAL_OR": np.logical_or,
    "LOGICAL_XOR": np.logical_xor,
}


@reference(*_BITWISE_LOGICAL)
def BITWISE_LOGICAL(call: Call):
    a, b = broadcast_inputs(call, call.inputs)
    return _BITWISE_LOGICAL[call.name](a, b)


@reference("ARITHMETIC_RIGHT_SHIFT")
def ARITHMETIC_RIGHT_SHIFT(call: Call):
    a, b, t = _int_args(call)
    _shift_range(call, b, t)
    result = a >> b
    if call.attr("round", False):
        # round: add the last bit shifted out, (value1 >> (value2 - 1)) & 1, when value2 > 0
        result = result + np.where(b > 0, (a >> np.maximum(b - 1, 0)) & 1, 0)
    return result.astype(t.numpy)  # value2 > 0 halves the range first, so + 1 cannot overflow


@reference("LOGICAL_LEFT_SHIFT")
def LOGICAL_LEFT_SHIFT(call: Call):
    a, b, t = _int_args(call)
    _shift_range(call, b, t)
    return wrap(a << b, t)


@reference("LOGICAL_RIGHT_SHIFT")
def LOGICAL_RIGHT_SHIFT(call: Call):
    a, b, t = _int_args(call)
    _shift_range(call, b, t)
    if t.bits == 64:  # i64_t: the bits as uint64
        return (a.view(np.uint64) >> b.astype(np.uint64)).view(np.int64)
    unsigned = a & ((1 << t.bits) - 1)  # zero_extend: the value's own width, read as unsigned
    return wrap(unsigned >> b, t)


@reference("TABLE")
def TABLE(call: Call):
    values, table = call.inputs
    in_t = call.in_types[0]
    size = 256 if in_t == DType.INT8 else 513
    call.require(table.size == size, f"length(table) == {size}")
    table = np.reshape(table, -1).astype(np.int64)
    v = values.astype(np.int64)
    if in_t == DType.INT8:
        return table[v + 128].astype(call.out_types[0].numpy)
    # apply_lookup_s (spec 1.12.5): int16 as 9.7 fixed point, interpolated 16.7 result
    index = (v + 32768) >> 7
    fraction = v & 0x7F
    base = table[index]
    slope = table[index + 1] - base
    call.require((slope >= -32768) & (slope <= 32767), "slope >= minimum<int16_t> && slope <= maximum<int16_t>")
    return ((base << 7) + slope * fraction).astype(call.out_types[0].numpy)

"""Elementwise unary operators (spec 2.6).

Floating point is computed in float64 (numpy's libm-quality functions, far inside the spec's ULP / absolute error
bounds) and rounded once to the output type; integer results are exact, with the pseudocode's REQUIREs.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtype import DType
from .numeric import count_leading_zeros, require_range, round_to, to_float64
from .registry import Call, reference


def _float(call: Call, fn) -> np.ndarray:
    """fn over the input in float64, rounded once to the output type."""
    with np.errstate(all="ignore"):
        return round_to(fn(to_float64(call.inputs[0])), call.out_types[0])


@reference("ABS")
def ABS(call: Call):
    t = call.out_types[0]
    if t.is_float:
        return _float(call, np.abs)  # -0 -> +0, NaN stays NaN
    v = call.inputs[0].astype(np.int64)
    call.require(v != t.int_range[0], "c >= minimum_s<in_t>() && c <= maximum_s<in_t>()")  # apply_sub_s(0, minimum)
    return np.abs(v).astype(t.numpy)


@reference("BITWISE_NOT")
def BITWISE_NOT(call: Call):
    return np.invert(call.inputs[0])


@reference("LOGICAL_NOT")
def LOGICAL_NOT(call: Call):
    return np.logical_not(call.inputs[0])


@reference("CLZ")
def CLZ(call: Call):
    t = call.out_types[0]
    return count_leading_zeros(call.inputs[0], 64 if t == DType.INT64 else 32).astype(t.numpy)


# Floating-point unary functions, computed in float64 and rounded once (LOG: log(0) = -inf, log(x < 0) = NaN, as
# apply_log says).
_FLOAT_UNARY = {
    "CEIL": np.ceil,
    "FLOOR": np.floor,
    "EXP": np.exp,
    "LOG": np.log,
    "SIN": np.sin,
    "COS": np.cos,
    "RECIPROCAL": lambda x: 1.0 / x,
}


@reference(*_FLOAT_UNARY)
def FLOAT_UNARY(call: Call):
    return _float(call, _FLOAT_UNARY[call.name])


@reference("RSQRT")
def RSQRT(call: Call):
    # x < 0 (also -inf) -> NaN; -0 -> -inf as 1 / sqrt(-0.0) in IEEE arithmetic
    return _float(call, lambda x: np.where(x < 0, np.nan, 1.0 / np.sqrt(x)))


@reference("NEGATE")
def NEGATE(call: Call):
    value, input1_zp, output_zp = call.inputs
    t = call.out_types[0]
    in_zp = np.reshape(input1_zp, -1)[0]
    out_zp = np.reshape(output_zp, -1)[0]
    call.error_if(t != DType.INT8 and in_zp != 0, "!is_same<in_out_t,i8_t>() && input1_zp != 0")
    call.error_if(t != DType.INT8 and out_zp != 0, "!is_same<in_out_t,i8_t>() && output_zp != 0")
    if t.is_float:
        return _float(call, np.negative)
    if t == DType.INT64:  # acc_t i64_t, zero points 0: apply_sub_s<i64_t>(0, value) REQUIREs value != minimum
        v = value.astype(np.int64)
        call.require(v != t.int_range[0], "0 - value within int64")
        return -v
    # acc_t is int32 for the other integer types: apply_sub_s / apply_add_s REQUIRE no int32 overflow
    v = value.astype(np.int64) - int(in_zp)
    require_range(v, DType.INT32, "value1 - input1_zp within int32")
    v = -v
    require_range(v, DType.INT32, "0 - value within int32")
    v = v + int(out_zp)
    require_range(v, DType.INT32, "value + output_zp within int32")
    lo, hi = t.int_range
    return np.clip(v, lo, hi).astype(t.numpy)

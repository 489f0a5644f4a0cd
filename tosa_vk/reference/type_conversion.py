"""Type conversion (spec 2.13): CAST and RESCALE."""

from __future__ import annotations

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import RoundingMode
from .numeric import (
    apply_scale_16,
    apply_scale_32,
    block_scale_exponents,
    blocks,
    mx_decode,
    mx_round,
    require_range,
    round_to,
    scale_values,
    to_float64,
    wrap,
)
from .registry import Call, ScaledArray, reference

_FLOATS = (DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2)


@reference("CAST")
def CAST(call: Call):
    x = call.inputs[0]
    in_t, out_t = call.in_types[0], call.out_types[0]
    scale = call.scales[0] if call.scales else None
    if scale is not None:  # TOSA 1.1: a block-scaled input (to a plain float type)
        return from_block_scaled(x, in_t, scale, x.shape[-1] // scale.shape[-1], out_t)
    if call.out_block_size():  # TOSA 1.1: to a block-scaled type
        return to_block_scaled(x, call.out_block_size(), out_t)
    if out_t == DType.BOOL:
        return np.asarray(x != 0)
    if out_t in _FLOATS:
        # Integers and narrower floats are exact in float64, so round_to is the one RNE rounding the spec asks for.
        # fp8 outputs use OCP-OFP8's non-saturating mode: overflow gives NaN (e4m3, no Inf) or Inf (e5m2).
        return round_to(to_float64(x), out_t)
    if in_t == DType.BOOL:
        return x.astype(out_t.numpy)
    if in_t in _FLOATS:
        # round_to_nearest_int (ties to even), then saturate to out_t; NaN gives an unpredictable result (0 here).
        with np.errstate(invalid="ignore"):
            v = np.rint(to_float64(x))
            lo, hi = out_t.int_range
            v = np.clip(np.nan_to_num(v, nan=0.0), lo, hi)
        return v.astype(out_t.numpy)
    # integer -> integer: sign_extend when widening, truncate (two's complement wrap) when narrowing
    return wrap(x.astype(np.int64), out_t)


def _extend(values, dtype: DType, unsigned: bool) -> np.ndarray:
    """zero_extend / sign_extend of `dtype` storage values to int64."""
    v = np.asarray(values).astype(np.int64)
    if unsigned:
        v = v & ((1 << dtype.bits) - 1)
    return v


@reference("RESCALE")
def RESCALE(call: Call):
    x, multiplier, shift, input_zp, output_zp = call.inputs
    in_t, out_t = call.in_types[0], call.out_types[0]
    scale32 = bool(call.attr("scale32", False))
    rounding_mode = RoundingMode(call.attr("rounding_mode", RoundingMode.SINGLE_ROUND))
    per_channel = bool(call.attr("per_channel", False))
    in_unsigned = bool(call.attr("input_unsigned", False))
    out_unsigned = bool(call.attr("output_unsigned", False))

    in_zp = _extend(input_zp, in_t, in_unsigned).reshape(-1)[0]
    out_zp = _extend(output_zp, out_t, out_unsigned).reshape(-1)[0]
    # uint16 zero points may be 0 or 32768; int8/uint8 any value in range; every other type must use 0.
    call.error_if(
        in_t != DType.INT8 and (in_t != DType.INT16 or not in_unsigned) and in_zp != 0,
        "!is_same<in_t,i8_t>() && (!is_same<in_t,i16_t>() || input_unsigned == false) && input_zp != 0",
    )
    call.error_if(
        out_t != DType.INT8 and (out_t != DType.INT16 or not out_unsigned) and out_zp != 0,
        "!is_same<out_t,i8_t>() && (!is_same<out_t,i16_t>() || output_unsigned == false) && output_zp != 0",
    )
    call.error_if(
        in_t == DType.INT16 and in_unsigned and in_zp not in (0, 32768),
        "is_same<in_t,i16_t>() && input_unsigned == true && input_zp != 0 && input_zp != 32768",
    )
    call.error_if(
        out_t == DType.INT16 and out_unsigned and out_zp not in (0, 32768),
        "is_same<out_t,i16_t>() && output_unsigned == true && output_zp != 0 && output_zp != 32768",
    )
    # Attribute / type rules (static, also checked here so a graph never runs with them broken).
    call.error_if(scale32 and in_t == DType.INT48, "scale32 && is_same<in_t,i48_t>()")
    call.error_if(
        not scale32 and rounding_mode == RoundingMode.DOUBLE_ROUND, "!scale32 && (rounding_mode == DOUBLE_ROUND)"
    )
    call.error_if(in_unsigned and out_unsigned, "input_unsigned && output_unsigned")
    call.error_if(out_t == DType.INT32 and in_unsigned, "is_same<out_t,i32_t>() && input_unsigned")
    call.error_if(in_t == DType.INT32 and out_unsigned, "is_same<in_t,i32_t>() && output_unsigned")
    call.error_if(in_t == DType.INT48 and out_unsigned, "is_same<in_t,i48_t>() && output_unsigned")
    call.error_if(in_t == DType.INT48 and in_unsigned, "is_same<in_t, i48_t> && input_unsigned")
    call.error_if(in_t == DType.INT32 and in_unsigned, "is_same<in_t, i32_t> && input_unsigned")
    call.error_if(out_t == DType.INT32 and out_unsigned, "is_same<out_t, i32_t> && output_unsigned")
    call.error_if(per_channel and x.ndim < 1, "per_channel && rank(input) < 1")

    value = _extend(x, in_t, in_unsigned) - in_zp
    multiplier = multiplier.astype(np.int64).reshape(-1)
    shift = shift.astype(np.int64).reshape(-1)
    if not per_channel:
        multiplier, shift = multiplier[:1], shift[:1]  # broadcast c = 0 over every element
    # INEXACT_ROUND allows any result within the RESCALE_INEXACT bound; SINGLE_ROUND's exact result is within it.
    if scale32:
        result = apply_scale_32(value, multiplier, shift, rounding_mode == RoundingMode.DOUBLE_ROUND)
    else:
        result = apply_scale_16(value, multiplier, shift)
    result = result + out_zp
    require_range(result, DType.INT32, "apply_add_s<int32_t>(result, extended_out_zp)")
    if out_unsigned:
        result = np.clip(result, 0, (1 << out_t.bits) - 1)
    else:
        lo, hi = out_t.int_range
        result = np.clip(result, lo, hi)
    return wrap(result, out_t)  # static_cast<out_t>: uint8/uint16 results keep their bits in int8/int16 storage


# ---- TOSA 1.1 block-scaled (MX) casts ------------------------------------------------------------------------------


def _block_size(call: Call) -> int:
    return int(call.attr("block_size", 0))


def from_block_scaled(data: np.ndarray, in_t: DType, scale: np.ndarray, block: int, out_t: DType) -> np.ndarray:
    """Block-scaled data -> a plain float type (CAST_FROM_BLOCK_SCALED, CAST of a block-scaled input): value x scale
    is exact in float64 (and in fp32 unless it overflows); rounded to fp32 first, as Arm's reference model does."""
    acc = mx_decode(data, in_t, scale, block)
    if out_t == DType.FP32:  # Arm's reference model: a NaN scale's (positive) NaN wins over a NaN element's here
        acc = np.where(np.repeat(np.isnan(scale_values(scale)), block, axis=-1), np.nan, acc)
    return round_to(round_to(acc, DType.FP32).astype(np.float64), out_t)


def to_block_scaled(x: np.ndarray, block: int, out_t: DType) -> ScaledArray:
    """A plain float tensor -> block-scaled out_t (CAST_TO_BLOCK_SCALED, CAST to a block-scaled output): the spec's
    calc_block_scale per block of the last dimension, then each value / scale rounded to out_t."""
    v = blocks(to_float64(x), block)
    with np.errstate(invalid="ignore"):
        exponent = block_scale_exponents(np.abs(v).max(axis=-1), out_t)  # NaN where a block has a NaN or an Inf
        scale = np.exp2(exponent)
        data = mx_round((v / scale[..., None]).reshape(x.shape), out_t)
    return ScaledArray(data, scale.astype(np.float32).astype(DType.FP8UE8M0.numpy))


@reference("CAST_FROM_BLOCK_SCALED")
def CAST_FROM_BLOCK_SCALED(call: Call):
    data, scale = call.inputs
    return from_block_scaled(data, call.in_types[0], scale, _block_size(call), call.out_types[0])


@reference("CAST_TO_BLOCK_SCALED")
def CAST_TO_BLOCK_SCALED(call: Call):
    out = to_block_scaled(call.inputs[0], _block_size(call), call.out_types[0])
    return out.data, out.scale

"""Numeric helpers of the spec's pseudocode (section 4.5), vectorised over numpy arrays.

Integer helpers take and return int64 arrays; callers cast to the storage dtype at the end. Floating-point values
are computed in float64 and rounded once to the target type with `round_to` (correct round-to-nearest-even, also for
bf16 / fp8 where converting float64 through float32 would round twice).
"""

from __future__ import annotations

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType, real_values
from ..ir.mx import SCALE_MAX_EXP, SCALE_MIN_EXP, largest_rounding_to_normal_max


def int_min(dtype: DType) -> int:
    return dtype.int_range[0]


def int_max(dtype: DType) -> int:
    return dtype.int_range[1]


def saturate(values, dtype: DType) -> np.ndarray:
    """Clamps integers to the signed range of `dtype`, in its storage type."""
    lo, hi = dtype.int_range
    return np.clip(np.asarray(values, dtype=np.int64), lo, hi).astype(dtype.numpy)


def wrap(values, dtype: DType) -> np.ndarray:
    """Truncates integers to `dtype`'s width, two's complement (the spec's static_cast to a narrower type)."""
    bits = dtype.bits
    v = np.asarray(values, dtype=np.int64)
    if bits < 64:
        v = (v << (64 - bits)) >> (64 - bits)
    return v.astype(dtype.numpy)


def require_range(values, dtype: DType, rule: str) -> None:
    """REQUIRE(c >= minimum_s<t>() && c <= maximum_s<t>()), as in apply_add_s / apply_sub_s / apply_intdiv_s."""
    lo, hi = dtype.int_range
    v = np.asarray(values)
    if v.size and (v.min() < lo or v.max() > hi):
        raise TosaError(f"REQUIRE({rule}) does not hold: result outside the {dtype} range")


def add_s(a, b, dtype: DType, rule: str) -> np.ndarray:
    """apply_add_s on int64 arrays: REQUIRE the sum within `dtype` (for i64_t: that the int64 sum did not wrap)."""
    with np.errstate(over="ignore"):
        c = np.add(a, b, dtype=np.int64)
    if dtype == DType.INT64:
        _require_no_wrap((np.bitwise_xor(a, c) & np.bitwise_xor(b, c)) < 0, rule)
    else:
        require_range(c, dtype, rule)
    return c


def sub_s(a, b, dtype: DType, rule: str) -> np.ndarray:
    """apply_sub_s on int64 arrays, as add_s."""
    with np.errstate(over="ignore"):
        c = np.subtract(a, b, dtype=np.int64)
    if dtype == DType.INT64:
        _require_no_wrap((np.bitwise_xor(a, b) & np.bitwise_xor(a, c)) < 0, rule)
    else:
        require_range(c, dtype, rule)
    return c


def _require_no_wrap(wrapped, rule: str) -> None:
    if np.any(wrapped):
        raise TosaError(f"REQUIRE({rule}) does not hold: result outside the INT64 range")


def as_int64(values) -> np.ndarray:
    return np.asarray(values).astype(np.int64)


def apply_scale_32(value, multiplier, shift, double_round: bool = False) -> np.ndarray:
    """The spec's apply_scale_32 on int64 arrays (broadcasting multiplier / shift)."""
    value, multiplier, shift = as_int64(value), as_int64(multiplier), as_int64(shift)
    if np.any(multiplier < 0):
        raise TosaError("REQUIRE(multiplier >= 0) does not hold")
    if np.any((shift < 2) | (shift > 62)):
        raise TosaError("REQUIRE(2 <= shift && shift <= 62) does not hold")
    half = np.left_shift(np.int64(1), shift - 1)
    if np.any((value < -half) | (value >= half)):
        raise TosaError("REQUIRE(value >= (-1 << (shift - 1)) && value < (1 << (shift - 1))) does not hold")
    round_ = half
    if double_round:
        round_ = np.where((shift > 31) & (value >= 0), round_ + (1 << 30), round_)
        round_ = np.where((shift > 31) & (value < 0), round_ - (1 << 30), round_)
    return ((value * multiplier + round_) >> shift).astype(np.int64)


def apply_scale_16(value, multiplier, shift) -> np.ndarray:
    """The spec's apply_scale_16: an int48 value scaled by an int16 multiplier."""
    value, multiplier, shift = as_int64(value), as_int64(multiplier), as_int64(shift)
    if np.any(multiplier < 0):
        raise TosaError("REQUIRE(multiplier >= 0) does not hold")
    if np.any((shift < 2) | (shift > 62)):
        raise TosaError("REQUIRE(2 <= shift && shift <= 62) does not hold")
    result = (value * multiplier + np.left_shift(np.int64(1), shift - 1)) >> shift
    require_range(result, DType.INT32, "result >= minimum<int32_t> && result <= maximum<int32_t>")
    return result.astype(np.int64)


def count_leading_zeros(values, bits: int = 32) -> np.ndarray:
    """count_leading_zeros over int32 (or, bits=64, int64) values: `bits` for zero. Exact integer steps (a float
    log2 rounds near powers of two past 2**53)."""
    v = np.asarray(values).astype(np.int64).astype(np.uint64)
    if bits == 32:
        v = v & np.uint64(0xFFFFFFFF)
    out = np.zeros(v.shape, dtype=np.int64)
    step = bits // 2
    while step:  # binary search for the highest set bit
        high = (v >> np.uint64(bits - step)) == 0  # the top `step` bits of the remaining window are clear
        out += np.where(high, step, 0)
        v = np.where(high, v << np.uint64(step), v)
        step //= 2
    return np.where(np.asarray(values) == 0, bits, out)


def reciprocal_scale(value: int) -> tuple[int, int]:
    """The spec's reciprocal_scale: (multiplier, shift) approximating 1 / value."""
    if value <= 0:
        raise TosaError("REQUIRE(value > 0) does not hold")
    k = 32 - int(count_leading_zeros(value - 1))
    numerator = ((1 << 30) + 1) << k
    return numerator // value, 30 + k


def to_float64(values: np.ndarray) -> np.ndarray:
    """Any float storage type (fp32, fp16, bf16, fp8) -> float64."""
    return np.asarray(values).astype(np.float64)


def round_to(values, dtype: DType) -> np.ndarray:
    """float64 -> `dtype` with one round-to-nearest-even.

    numpy rounds float64 -> fp32 / fp16 correctly. For bf16 and fp8 (ml_dtypes goes through float32, rounding
    twice) the float32 step rounds to odd, which keeps the final rounding exact.
    """
    x = np.asarray(values, dtype=np.float64)
    if dtype in (DType.FP32, DType.FP16):
        with np.errstate(over="ignore"):
            return x.astype(dtype.numpy)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
        inexact = (back != x) & np.isfinite(x) & np.isfinite(f)
        toward_zero = np.where(np.abs(back) > np.abs(x), np.nextafter(f, np.float32(0)), f)
        bits = toward_zero.view(np.uint32) | np.uint32(1)
        f = np.where(inexact, bits.view(np.float32), f)
    return f.astype(dtype.numpy)


# ---- TOSA 1.1 block-scaled (MX) values ------------------------------------------------------------------------------


def blocks(x: np.ndarray, block: int) -> np.ndarray:
    """[..., C] -> [..., C / block, block]: each block of the last dimension on its own axis."""
    return x.reshape(*x.shape[:-1], x.shape[-1] // block, block)


def scale_values(scales: np.ndarray) -> np.ndarray:
    """fp8ue8m0 storage -> float64 2^(bits - 127) (NaN for 0xFF)."""
    return np.asarray(scales).astype(np.float64)


def mx_decode(values: np.ndarray, dtype: DType, scales: np.ndarray, block: int) -> np.ndarray:
    """Block-scaled data -> float64 value x scale, each element with the scale of its block of the last dimension.

    Exact: an element has at most 8 significant bits and a scale is a power of two inside float64's range. A NaN
    element stays itself (its sign too, as x86 keeps the first NaN operand of value x scale); a NaN scale (0xFF)
    otherwise gives a positive NaN.
    """
    v = blocks(real_values(values, dtype), block)
    with np.errstate(invalid="ignore"):
        product = v * scale_values(scales)[..., None]
    return np.where(np.isnan(v), v, product).reshape(values.shape)


def block_scale_exponents(max_abs: np.ndarray, out_t: DType) -> np.ndarray:
    """The spec's calc_block_scale as float64 exponents (NaN where the block holds a NaN or an infinity): 2^e is the
    smallest scale (fp8e4m3: ceil; other types: floor + 1) bringing max_abs within what rounds to normal_max, clipped
    to fp8ue8m0's normal range; an all-zero block gets normal_min."""
    m = np.asarray(max_abs, dtype=np.float64)
    out_max = largest_rounding_to_normal_max(out_t)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log2(m / out_max)
        e = np.ceil(ratio) if out_t == DType.FP8E4M3 else np.floor(ratio) + 1
    e = np.clip(np.where(m == 0, SCALE_MIN_EXP, e), SCALE_MIN_EXP, SCALE_MAX_EXP)
    return np.where(np.isfinite(m), e, np.nan)


# The code Arm's reference model writes for a NaN (a block with a NaN or an infinity, whose scale is NaN) in the MX
# types that have no NaN: exponent all ones, mantissa zero (fp4 / fp6), 127 (MXINT8). The spec leaves it open.
_MX_NAN_CODE = {DType.FP4E2M1: 0x6, DType.FP6E2M3: 0x18, DType.FP6E3M2: 0x1C, DType.MXINT8: 0x7F}


def mx_round(values: np.ndarray, out_t: DType) -> np.ndarray:
    """float64 -> an MX element type, round to nearest even, saturating (MXINT8: its code, the nearest multiple of
    1/64); NaN as Arm's reference model writes it."""
    nan = np.isnan(values)
    with np.errstate(invalid="ignore"):
        if out_t == DType.MXINT8:
            out = np.clip(np.nan_to_num(np.rint(values * 64.0)), -128, 127).astype(np.int8)
        else:
            out = round_to(values, out_t)
    if out_t in _MX_NAN_CODE and nan.any():
        out.view(np.uint8)[nan] = _MX_NAN_CODE[out_t]
    return out

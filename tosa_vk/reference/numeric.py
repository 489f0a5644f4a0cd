"""Numeric helpers of the spec's pseudocode (section 4.5), vectorised over numpy arrays.

Integer helpers take and return int64 arrays; callers cast to the storage dtype at the end. Floating-point values
are computed in float64 and rounded once to the target type with `round_to` (correct round-to-nearest-even, also for
bf16 / fp8 where converting float64 through float32 would round twice).
"""

from __future__ import annotations

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType


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

"""Edge cases of the elementwise chapters (spec 2.4 - 2.8) on the numpy reference backend."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.session import load


def run1(build, **feeds):
    """Builds a one-output graph: build(b, *inputs) -> Value; feeds are name -> array (shape / dtype taken from it)."""
    b = tosa_vk.Builder()
    dtypes = {
        np.dtype(np.bool_): "bool",
        np.dtype(np.int8): "int8",
        np.dtype(np.int16): "int16",
        np.dtype(np.int32): "int32",
        np.dtype(np.float32): "fp32",
        np.dtype(np.float16): "fp16",
        np.dtype(ml_dtypes.bfloat16): "bf16",
    }
    values = [b.input(name, np.shape(a), dtypes[np.asarray(a).dtype]) for name, a in feeds.items()]
    b.output(build(b, *values))
    (out,) = load(b.build(), backend="reference").run(feeds).values()
    return out


i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
f32 = lambda *v: np.array(v, np.float32)  # noqa: E731


# ---- elementwise binary -----------------------------------------------------------------------------------------


def test_add_broadcast_and_int32_overflow_is_a_require():
    out = run1(lambda b, x, y: b.add(x, y), x=np.array([[1], [2]], np.int32), y=np.array([[10, 20, 30]], np.int32))
    np.testing.assert_array_equal(out, [[11, 21, 31], [12, 22, 32]])
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b, x, y: b.add(x, y), x=i32(2**31 - 1), y=i32(1))


def test_add_bf16_rounds_once_to_nearest_even():
    one = ml_dtypes.bfloat16(1.0)
    half_ulp = np.float32(2.0**-8)  # exactly half a bf16 ULP at 1.0: a tie, rounds to even (1.0)
    x = np.array([one, one], ml_dtypes.bfloat16)
    y = np.array([half_ulp, half_ulp * 1.5], ml_dtypes.bfloat16)
    out = run1(lambda b, x, y: b.add(x, y), x=x, y=y)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float64), [1.0, 1.0 + 2.0**-7])


def test_add_infinities_of_different_sign_give_nan():
    out = run1(lambda b, x, y: b.add(x, y), x=f32(np.inf, np.nan), y=f32(-np.inf, 1.0))
    assert np.isnan(out).all()


def test_mul_int32_shift_rounds_half_up_and_shift0_wraps():
    out = run1(lambda b, x, y: b.mul(x, y, 1), x=i32(3, -3, 5, -5), y=i32(1, 1, 1, 1))
    np.testing.assert_array_equal(out, [2, -1, 3, -2])  # (p + 1) >> 1
    out = run1(lambda b, x, y: b.mul(x, y, 0), x=i32(65536, 65537), y=i32(-65536, 65537))
    np.testing.assert_array_equal(out, [0, 131073])  # low 32 bits of -2**32 and of 2**32 + 2**17 + 1
    with pytest.raises(TosaError, match="REQUIRE"):  # rounded product outside int32
        run1(lambda b, x, y: b.mul(x, y, 1), x=i32(2**31 - 1), y=i32(4))


def test_mul_int8_widens_to_int32():
    out = run1(lambda b, x, y: b.mul(x, y, 0), x=np.array([-128, 127], np.int8), y=np.array([-128, 127], np.int8))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [16384, 16129])


def test_intdiv_truncates_toward_zero_and_requires():
    out = run1(lambda b, x, y: b.intdiv(x, y), x=i32(7, -7, 7, -7), y=i32(2, 2, -2, -2))
    np.testing.assert_array_equal(out, [3, -3, -3, 3])
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b, x, y: b.intdiv(x, y), x=i32(1), y=i32(0))
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b, x, y: b.intdiv(x, y), x=i32(-(2**31)), y=i32(-1))


def test_shifts():
    x8 = np.array([-5, -1, 127, -128], np.int8)
    s8 = np.array([1, 1, 7, 7], np.int8)
    out = run1(lambda b, x, y: b.arithmetic_right_shift(x, y, round=True), x=x8, y=s8)
    np.testing.assert_array_equal(out, [-2, 0, 1, -1])  # -5 >> 1 = -3, + shifted-out bit 1
    out = run1(lambda b, x, y: b.arithmetic_right_shift(x, y), x=x8, y=s8)
    np.testing.assert_array_equal(out, [-3, -1, 0, -1])
    out = run1(lambda b, x, y: b.logical_right_shift(x, y), x=x8, y=s8)
    np.testing.assert_array_equal(out, [125, 127, 0, 1])  # zero-extended from 8 bits
    out = run1(lambda b, x, y: b.logical_left_shift(x, y), x=x8, y=s8)
    np.testing.assert_array_equal(out, [-10, -2, -128, 0])  # wraps to int8
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b, x, y: b.logical_left_shift(x, y), x=i32(1), y=i32(32))


def test_maximum_minimum_nan_modes():
    x, y = f32(np.nan, 1.0, np.nan), f32(2.0, np.nan, np.nan)
    out = run1(lambda b, x, y: b.maximum(x, y), x=x, y=y)
    assert np.isnan(out).all()
    out = run1(lambda b, x, y: b.maximum(x, y, nan_mode="IGNORE"), x=x, y=y)
    np.testing.assert_array_equal(out, [2.0, 1.0, np.nan])
    out = run1(lambda b, x, y: b.minimum(x, y, nan_mode="IGNORE"), x=x, y=y)
    np.testing.assert_array_equal(out, [2.0, 1.0, np.nan])


def test_pow_requires_positive_base():
    out = run1(lambda b, x, y: b.pow(x, y), x=f32(2.0, 0.0, 9.0), y=f32(10.0, 3.0, 0.5))
    np.testing.assert_array_equal(out, [1024.0, 0.0, 3.0])
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b, x, y: b.pow(x, y), x=f32(-2.0), y=f32(2.0))


def test_table_int8_and_int16_interpolation():
    table8 = np.arange(-128, 128, dtype=np.int8)[::-1].copy()
    out = run1(lambda b, x: b.table(x, table8), x=np.array([-128, 0, 127], np.int8))
    np.testing.assert_array_equal(out, [127, -1, -128])
    table16 = (np.arange(513) * 4).astype(np.int16)
    out = run1(lambda b, x: b.table(x, table16), x=np.array([-32768, 32767, 0, 64], np.int16))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, (2044 << 7) + 4 * 127, 1024 << 7, (1024 << 7) + 4 * 64])
    steep = np.zeros(513, np.int16)
    steep[1] = 32767
    steep[0] = -32768  # slope 65535 does not fit int16: REQUIRE
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b, x: b.table(x, steep), x=np.array([-32768], np.int16))


# ---- elementwise unary ------------------------------------------------------------------------------------------


def test_abs_and_negate_integer_limits():
    out = run1(lambda b, x: b.abs(x), x=i32(-5, 0, 2**31 - 1))
    np.testing.assert_array_equal(out, [5, 0, 2**31 - 1])
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b, x: b.abs(x), x=i32(-(2**31)))
    out = run1(lambda b, x: b.negate(x, 3, -2), x=np.array([-128, 127, 3, 0], np.int8))
    np.testing.assert_array_equal(out, [127, -126, -2, 1])  # -(x - 3) - 2, saturated to int8
    out = run1(lambda b, x: b.negate(x), x=np.array([-32768, 5], np.int16))
    np.testing.assert_array_equal(out, [32767, -5])  # int32 accumulator, then clipped


def test_negate_zero_point_only_for_int8():
    with pytest.raises(TosaError, match="ERROR_IF"):
        run1(lambda b, x: b.negate(x, 1, 0), x=i32(1))


def test_float_unary_special_values():
    x = f32(-np.inf, np.inf, -0.0, 0.0, -1.0)
    with np.errstate(all="ignore"):
        out = run1(lambda b, x: b.rsqrt(x), x=x)
    np.testing.assert_array_equal(out, [np.nan, 0.0, -np.inf, np.inf, np.nan])
    out = run1(lambda b, x: b.log(x), x=x)
    np.testing.assert_array_equal(out, [np.nan, np.inf, -np.inf, -np.inf, np.nan])
    out = run1(lambda b, x: b.reciprocal(x), x=x)
    np.testing.assert_array_equal(np.signbit(out), [True, False, True, False, True])
    out = run1(lambda b, x: b.ceil(x), x=f32(-0.5, 0.5, 2.0))
    np.testing.assert_array_equal(out, [-0.0, 1.0, 2.0])
    assert np.signbit(out[0])  # ceil(-0.5) = -0


def test_clz():
    out = run1(lambda b, x: b.clz(x), x=i32(0, 1, -1, 2**30, 0x7FFFFFFF))
    np.testing.assert_array_equal(out, [32, 31, 0, 1, 1])


def test_bitwise_and_logical_not():
    out = run1(lambda b, x: b.bitwise_not(x), x=np.array([0, -1, 85], np.int8))
    np.testing.assert_array_equal(out, [-1, 0, -86])
    out = run1(lambda b, x: b.logical_not(x), x=np.array([True, False]))
    np.testing.assert_array_equal(out, [False, True])


# ---- ternary and comparison ------------------------------------------------------------------------------------


def test_select_broadcasts_all_three_inputs():
    out = run1(
        lambda b, c, x, y: b.select(c, x, y),
        c=np.array([[True], [False]]),
        x=np.array([[1, 2, 3]], np.int8),
        y=np.array([[-1], [-2]], np.int8),
    )
    np.testing.assert_array_equal(out, [[1, 2, 3], [-2, -2, -2]])


def test_comparisons_nan_false_and_signed_zero_equal():
    x, y = f32(np.nan, -0.0, 1.0, np.inf), f32(np.nan, 0.0, np.nan, np.inf)
    np.testing.assert_array_equal(run1(lambda b, x, y: b.equal(x, y), x=x, y=y), [False, True, False, True])
    np.testing.assert_array_equal(run1(lambda b, x, y: b.greater(x, y), x=x, y=y), [False, False, False, False])
    np.testing.assert_array_equal(run1(lambda b, x, y: b.greater_equal(x, y), x=x, y=y), [False, True, False, True])


def test_broadcast_mismatch_is_rejected():
    with pytest.raises(TosaError):
        run1(lambda b, x, y: b.add(x, y), x=np.zeros((2, 3), np.int32), y=np.zeros((2, 4), np.int32))


# ---- activation -------------------------------------------------------------------------------------------------


def test_clamp_nan_modes_and_int():
    x = f32(np.nan, -1.0, 7.0, 3.0)
    out = run1(lambda b, x: b.clamp(x, min_val=0.0, max_val=6.0), x=x)
    np.testing.assert_array_equal(out, [np.nan, 0.0, 6.0, 3.0])
    out = run1(lambda b, x: b.clamp(x, min_val=0.0, max_val=6.0, nan_mode="IGNORE"), x=x)
    np.testing.assert_array_equal(out, [0.0, 0.0, 6.0, 3.0])  # a NaN input becomes min_val
    out = run1(lambda b, x: b.clamp(x, min_val=-3, max_val=100), x=np.array([-128, 0, 127], np.int8))
    np.testing.assert_array_equal(out, [-3, 0, 100])


def test_erf_sigmoid_tanh():
    xs = np.array([-7.0, -2.5, -0.3, -0.0, 1e-30, 0.7, 3.0, 10.0, np.inf, np.nan], np.float32)
    out = run1(lambda b, x: b.erf(x), x=xs)
    expect = np.array([math.erf(v) if not math.isnan(v) else math.nan for v in xs.astype(np.float64)], np.float32)
    np.testing.assert_array_equal(out, expect)
    assert np.signbit(out[3])
    out = run1(lambda b, x: b.sigmoid(x), x=f32(-np.inf, np.inf, 0.0, -1000.0))
    np.testing.assert_array_equal(out, [0.0, 1.0, 0.5, 0.0])
    out = run1(lambda b, x: b.tanh(x), x=f32(-np.inf, np.inf, -0.0, 0.5))
    np.testing.assert_array_equal(out, [-1.0, 1.0, -0.0, np.float32(math.tanh(0.5))])

"""Edge cases of the type-conversion chapter (spec 2.13: CAST, RESCALE) on the numpy reference backend."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.session import load

_NAMES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int48",
    np.dtype(np.float32): "fp32",
    np.dtype(np.float16): "fp16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
}


def run1(build, x, check=True):
    """One-input graph: build(b, x) -> Value, fed with `x` (int64 arrays are int48)."""
    b = tosa_vk.Builder()
    v = b.input("x", np.shape(x), _NAMES[np.asarray(x).dtype])
    b.output(build(b, v))
    (out,) = load(b.build(check=check), backend="reference").run({"x": x}).values()
    return out


def cast(x, out_dtype):
    return run1(lambda b, v: b.cast(v, out_dtype=out_dtype), x)


def rescale(x, out_dtype, multiplier, shift, input_zp=0, output_zp=0, check=True, **attrs):
    scale32 = attrs.get("scale32", True)
    mul = np.asarray(multiplier, np.int32 if scale32 else np.int16).reshape(-1)
    sh = np.asarray(shift, np.int8).reshape(-1)
    storage = {"int8": np.int8, "int16": np.int16, "int32": np.int32}
    # zero points in the storage type of in_t / out_t (uint8 / uint16 values keep their bits: 255 -> -1)
    input_zp = np.array([input_zp], np.int64).astype(np.asarray(x).dtype)
    output_zp = np.array([output_zp], np.int64).astype(storage[out_dtype])
    # output_zp as an explicit CONST: the Builder would type a bare array from its preferred row (out_t = int16)
    return run1(
        lambda b, v: b.rescale(
            v, mul, sh, input_zp=input_zp, output_zp=b.const(output_zp, out_dtype), out_dtype=out_dtype, **attrs
        ),
        x,
        check=check,
    )


# ---- CAST -------------------------------------------------------------------------------------------------------


def test_cast_float_to_int_rounds_ties_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, 1e10, -1e10, np.inf, -np.inf, -0.0], np.float32)
    out = cast(x, "int8")
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, [0, 2, 2, 0, -2, 126, 127, -128, 127, -128, 0])
    out = cast(np.array([2.0**31, -(2.0**31), 2.0**40, 65504], np.float32), "int32")
    np.testing.assert_array_equal(out, [2**31 - 1, -(2**31), 2**31 - 1, 65504])


def test_cast_int_narrowing_truncates_and_widening_sign_extends():
    np.testing.assert_array_equal(cast(np.array([300, -129, 128, -1], np.int32), "int8"), [44, 127, -128, -1])
    np.testing.assert_array_equal(cast(np.array([70000, -32769], np.int32), "int16"), [4464, 32767])
    np.testing.assert_array_equal(cast(np.array([-128, 127], np.int8), "int32"), [-128, 127])
    np.testing.assert_array_equal(cast(np.array([0, 256, -1], np.int16), "bool"), [False, True, True])
    np.testing.assert_array_equal(cast(np.array([True, False]), "int16"), [1, 0])
    out = cast(np.array(5, np.int32), "bool")  # rank 0 stays rank 0
    assert out.shape == () and out.dtype == np.bool_ and bool(out)


def test_cast_int_to_float_rounds_to_nearest_even():
    out = cast(np.array([2**24 + 1, 2**24 + 3, -(2**24 + 1)], np.int32), "fp32")
    np.testing.assert_array_equal(out, [2**24, 2**24 + 4, -(2**24)])
    # 65520 is halfway between fp16's max 65504 and 65536 (overflow): ties to even -> +inf
    out = cast(np.array([65504, 65519, 65520, -70000], np.int32), "fp16")
    np.testing.assert_array_equal(out, np.array([65504, 65504, np.inf, -np.inf], np.float16))
    out = cast(np.array([257, 259, 32767], np.int16), "bf16")
    np.testing.assert_array_equal(out.astype(np.float64), [256, 260, 32768])


def test_cast_fp32_to_bf16_rounds_once():
    # 1 + 2^-8 + 2^-30: just above the bf16 tie at 1 + 2^-8, so rounds up (a float32-then-bf16 path would too, but
    # 1 + 2^-8 itself ties to even 1.0)
    x = np.array([1 + 2.0**-8, 1 + 2.0**-8 + 2.0**-20, 3.4e38, np.nan], np.float32)
    out = cast(x, "bf16").astype(np.float64)
    assert out[0] == 1.0 and out[1] == 1 + 2.0**-7 and np.isinf(out[2]) and np.isnan(out[3])


def test_cast_to_fp8e4m3_is_non_saturating_without_infinity():
    x = np.array([448, 464, 460, 470, 1e6, np.inf, -np.inf, np.nan, -448, 2.0**-9, 2.0**-10, 2.0**-11], np.float32)
    out = cast(x, "fp8e4m3")
    assert out.dtype == ml_dtypes.float8_e4m3fn
    f = out.astype(np.float64)
    np.testing.assert_array_equal(f[:3], [448, 448, 448])  # 464 ties to even (448), 460 rounds down
    assert np.isnan(f[3:8]).all()  # 470 rounds to 480 > max: overflow -> NaN, as do +-inf (no Inf in e4m3)
    np.testing.assert_array_equal(f[8:], [-448, 2.0**-9, 0.0, 0.0])  # min subnormal 2^-9; 2^-10 ties to 0


def test_cast_to_fp8e5m2_overflows_to_infinity():
    x = np.array([57344, 61439, 61440, -1e6, np.nan, 2.0**-16, 2.0**-17], np.float32)
    out = cast(x, "fp8e5m2").astype(np.float64)
    np.testing.assert_array_equal(out[:4], [57344, 57344, np.inf, -np.inf])
    assert np.isnan(out[4])
    np.testing.assert_array_equal(out[5:], [2.0**-16, 0.0])


def test_cast_fp8_to_wider_is_exact():
    x = np.array([448, -0.0, 2.0**-9, np.nan], ml_dtypes.float8_e4m3fn)
    b = tosa_vk.Builder()
    v = b.input("x", x.shape, "fp8e4m3")
    b.output(b.cast(v, out_dtype="fp16"))
    (out,) = load(b.build(), backend="reference").run({"x": x}).values()
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out[:3], np.array([448, -0.0, 2.0**-9], np.float16))
    assert np.signbit(out[1]) and np.isnan(out[3])


# ---- RESCALE ----------------------------------------------------------------------------------------------------


def test_rescale_single_round_rounds_half_up_and_applies_zero_points():
    x = np.array([1, -1, 3, -3, 127, -128], np.int8)
    # scale 0.5 (multiplier 2^30, shift 31): round(x / 2) with ties toward +inf
    out = rescale(x, "int8", 1 << 30, 31)
    np.testing.assert_array_equal(out, [1, 0, 2, -1, 64, -64])
    out = rescale(x, "int8", 1 << 30, 31, input_zp=-3, output_zp=10)  # (x + 3) / 2 + 10
    np.testing.assert_array_equal(out, [12, 11, 13, 10, 75, -52])
    out = rescale(x, "int8", 1 << 30, 28)  # x * 4 saturates
    np.testing.assert_array_equal(out, [4, -4, 12, -12, 127, -128])


def test_rescale_double_round():
    # shift 33 (scale 2^-3 with multiplier 2^30): double rounding adds/subtracts 2^30 to the rounding term
    x = np.array([12, 11, -12, -11, 4, -4], np.int32)
    single = rescale(x, "int32", 1 << 30, 33)
    double = rescale(x, "int32", 1 << 30, 33, rounding_mode="DOUBLE_ROUND")
    np.testing.assert_array_equal(single, [2, 1, -1, -1, 1, 0])  # floor(x / 8 + 0.5)
    np.testing.assert_array_equal(double, [2, 2, -2, -1, 1, -1])  # round(round(x / 2) / 4)
    inexact = rescale(x, "int32", 1 << 30, 33, rounding_mode="INEXACT_ROUND")
    assert np.all(np.abs(inexact - x / 8) <= 1)


def test_rescale_unsigned_input_and_output():
    # uint8 input 255 (stored -1) with zp 128 -> int8 127
    out = rescale(np.array([-1, 0, -128], np.int8), "int8", 1 << 30, 30, input_zp=128, input_unsigned=True)
    np.testing.assert_array_equal(out, [127, -128, 0])
    # int16 -> uint16 with zp 32768: stored as int16 bits
    out = rescale(
        np.array([0, 100, -32768, 32767], np.int16), "int16", 1 << 30, 30, output_zp=32768, output_unsigned=True
    )
    np.testing.assert_array_equal(out.view(np.uint16), [32768, 32868, 0, 65535])
    # int8 -> uint8 clips to [0, 255]
    out = rescale(np.array([-5, 100, 127], np.int8), "int8", 1 << 30, 29, output_unsigned=True)
    np.testing.assert_array_equal(out.view(np.uint8), [0, 200, 254])


def test_rescale_int48_uses_apply_scale_16_and_per_channel():
    x = np.array([[1 << 40, 3], [-(1 << 40), -3]], np.int64)
    out = rescale(x, "int32", [1 << 14, 3 << 13], [26, 14], scale32=False, per_channel=True)
    # channel 0 (last axis): x * 2^-12 ; channel 1: x * 1.5, rounded half up
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [[1 << 28, 5], [-(1 << 28), -4]])


def test_rescale_int48_result_out_of_int32_is_a_require():
    with pytest.raises(TosaError, match="REQUIRE"):
        rescale(np.array([1 << 45], np.int64), "int32", 1 << 14, 14, scale32=False)


def test_rescale_apply_scale_32_value_range_is_a_require():
    with pytest.raises(TosaError, match="REQUIRE"):
        rescale(np.array([1 << 20], np.int32), "int32", 1 << 30, 20)  # value must be < 2^(shift-1)


def test_rescale_zero_point_rules():
    with pytest.raises(TosaError, match="ERROR_IF"):
        rescale(np.array([1], np.int16), "int8", 1 << 30, 30, input_zp=5, check=False)
    with pytest.raises(TosaError, match="ERROR_IF"):
        rescale(np.array([1], np.int16), "int16", 1 << 30, 30, output_zp=5, output_unsigned=True, check=False)
    with pytest.raises(TosaError, match="ERROR_IF"):
        rescale(np.array([1], np.int8), "int32", 1 << 30, 30, output_zp=1, check=False)
    with pytest.raises(TosaError, match="ERROR_IF"):
        rescale(np.array([1], np.int8), "int8", 1 << 30, 30, input_unsigned=True, output_unsigned=True, check=False)

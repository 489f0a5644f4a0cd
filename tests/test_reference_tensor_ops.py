"""Edge cases of the tensor operators (spec 2.3) on the numpy reference backend, checked against direct transcriptions
of the spec's pseudocode on small shapes."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.session import load

RNG = np.random.default_rng(1234)
_DT = {
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.float32): "fp32",
    np.dtype(np.float16): "fp16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
}


def run(build, *arrays, **kw):
    """Graph with one input per array; build(b, *values) -> Value or tuple of Values; returns the output arrays."""
    b = tosa_vk.Builder()
    values = [b.input(f"x{i}", a.shape, kw.get("dtypes", {}).get(i, _DT.get(a.dtype))) for i, a in enumerate(arrays)]
    out = build(b, *values)
    outs = out if isinstance(out, tuple) else (out,)
    b.output(*outs)
    result = list(load(b.build(), backend="reference").run({f"x{i}": a for i, a in enumerate(arrays)}).values())
    return result if isinstance(out, tuple) else result[0]


def ref_conv2d(x, w, bias, izp, wzp, pad, stride, dilation):
    """The spec's CONV2D loop (float64 / Python ints), padded multiplies skipped."""
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    oh = (ih - 1 + pad[0] + pad[1] - (kh - 1) * dilation[0]) // stride[0] + 1
    ow = (iw - 1 + pad[2] + pad[3] - (kw - 1) * dilation[1]) // stride[1] + 1
    xf, wf = x.astype(np.float64) - izp, w.astype(np.float64) - wzp
    out = np.zeros((n, oh, ow, oc))
    for b, oy, ox in itertools.product(range(n), range(oh), range(ow)):
        for ky, kx in itertools.product(range(kh), range(kw)):
            y, xx = oy * stride[0] - pad[0] + ky * dilation[0], ox * stride[1] - pad[2] + kx * dilation[1]
            if 0 <= y < ih and 0 <= xx < iw:
                out[b, oy, ox] += wf[:, ky, kx, :] @ xf[b, y, xx, :]
    return out + bias.astype(np.float64)


# ---- convolutions ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stride,dilation,pad",
    [
        ((1, 1), (1, 1), (1, 1, 1, 1)),
        ((2, 1), (1, 2), (1, 1, 2, 0)),
        ((1, 1), (2, 1), (0, 0, 0, 0)),
        ((3, 2), (1, 1), (1, 1, 0, 0)),
    ],
)
def test_conv2d_int8_zero_points_padding_stride_dilation_exact(stride, dilation, pad):
    x = RNG.integers(-128, 128, (2, 7, 8, 5), dtype=np.int8)
    w = RNG.integers(-128, 128, (4, 3, 2, 5), dtype=np.int8)
    bias = RNG.integers(-1000, 1000, 4).astype(np.int32)
    kh, kw = 3, 2
    if (7 - 1 + pad[0] + pad[1] - (kh - 1) * dilation[0]) % stride[0] or (
        8 - 1 + pad[2] + pad[3] - (kw - 1) * dilation[1]
    ) % stride[1]:
        pytest.skip("not an exact output size")
    out = run(lambda b, v: b.conv2d(v, w, bias, np.int8(-7), np.int8(3), pad=pad, stride=stride, dilation=dilation), x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref_conv2d(x, w, bias, -7, 3, pad, stride, dilation).astype(np.int64))


def test_conv2d_int16x8_int48_accumulator():
    x = np.full((1, 4, 4, 64), -32768, np.int16)
    w = np.full((2, 3, 3, 64), -128, np.int8)
    bias = np.array([2**40, -(2**40)], np.int64)
    b = tosa_vk.Builder()
    v = b.input("x", x.shape, "int16")
    b.output(b.conv2d(v, w, b.const(bias, "int48"), pad=(1, 1, 1, 1)))
    out = load(b.build(), backend="reference").run({"x": x})
    (out,) = out.values()
    expect = ref_conv2d(x, w, bias, 0, 0, (1, 1, 1, 1), (1, 1), (1, 1))
    assert out.dtype == np.int64 and out[0, 1, 1, 0] == 9 * 64 * 32768 * 128 + 2**40
    np.testing.assert_array_equal(out, expect.astype(np.int64))


def test_conv2d_int32_accumulator_overflow_is_a_require():
    x = np.full((1, 4, 4, 64), -128, np.int8)
    w = np.full((1, 3, 3, 64), -128, np.int8)
    bias = np.array([2**31 - 2**20], np.int32)  # 9 * 64 * 2**14 = 9437184 > 2**20: the bias add overflows
    with pytest.raises(TosaError, match="REQUIRE"):
        run(lambda b, v: b.conv2d(v, w, bias), x)


def test_conv2d_nonzero_zero_point_for_int16_is_an_error():
    x = np.zeros((1, 3, 3, 1), np.int16)
    w = np.zeros((1, 1, 1, 1), np.int8)
    with pytest.raises(TosaError):
        run(lambda b, v: b.conv2d(v, w, np.zeros(1, np.int64), np.int16(1), np.int8(0)), x, dtypes={0: "int16"})


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_conv2d_fp32_matches_fp64_dot_products(stride):
    x = RNG.standard_normal((2, 9, 9, 6)).astype(np.float32)
    w = RNG.standard_normal((5, 3, 3, 6)).astype(np.float32)
    bias = RNG.standard_normal(5).astype(np.float32)
    out = run(lambda b, v: b.conv2d(v, w, bias, pad=(1, 1, 1, 1), stride=stride), x)
    expect = ref_conv2d(x, w, bias, 0, 0, (1, 1, 1, 1), stride, (1, 1))
    bound = ref_conv2d(np.abs(x), np.abs(w), np.abs(bias), 0, 0, (1, 1, 1, 1), stride, (1, 1))
    assert out.dtype == np.float32
    assert np.all(np.abs(out - expect) <= 2 * 55 * 2.0**-24 * bound)  # 2 * KS ulp of the bound (spec 1.10.3)


def test_conv2d_padding_is_not_multiplied_by_infinite_weights():
    x = np.ones((1, 3, 3, 1), np.float32)
    w = np.array([np.inf, 1, 1, 1, 1, 1, 1, 1, 1], np.float32).reshape(1, 3, 3, 1)
    out = run(lambda b, v: b.conv2d(v, w, np.zeros(1, np.float32), pad=(1, 1, 1, 1)), x)
    assert np.isinf(out[0, 1:, 1:, 0]).all()  # tap (0, 0) reads the input there
    np.testing.assert_array_equal(out[0, 0, :, 0], [4, 6, 4])  # and padding elsewhere: skipped, no NaN
    np.testing.assert_array_equal(out[0, 1:, 0, 0], [6, 4])


def test_conv2d_fp16_accumulate_rounds_once():
    # 2048 + 1 + 1 in fp16 accumulation step by step would stay 2048; the result must round once (2050).
    x = np.array([2048, 1, 1], np.float16).reshape(1, 1, 1, 3)
    w = np.ones((1, 1, 1, 3), np.float16)
    out = run(lambda b, v: b.conv2d(v, w, np.zeros(1, np.float16), acc_type="fp16"), x)
    assert out.dtype == np.float16 and out.item() == 2050


def test_conv3d_int8_against_direct_sum():
    x = RNG.integers(-128, 128, (1, 4, 5, 5, 3), dtype=np.int8)
    w = RNG.integers(-128, 128, (2, 2, 3, 3, 3), dtype=np.int8)
    out = run(
        lambda b, v: b.conv3d(
            v, w, np.zeros(2, np.int32), np.int8(5), np.int8(-2), pad=(1, 0, 1, 1, 0, 0), stride=(1, 2, 1)
        ),
        x,
    )
    xp = np.pad(x.astype(np.int64) - 5, [(0, 0), (1, 0), (1, 1), (0, 0), (0, 0)])
    wv = w.astype(np.int64) + 2
    expect = np.zeros(out.shape, np.int64)
    for od, oy, ox in itertools.product(*(range(s) for s in out.shape[1:4])):
        win = xp[0, od : od + 2, oy * 2 : oy * 2 + 3, ox : ox + 3]
        expect[0, od, oy, ox] = np.tensordot(wv, win, axes=([1, 2, 3, 4], [0, 1, 2, 3]))
    np.testing.assert_array_equal(out, expect)


def test_depthwise_conv2d_int8_multiplier_against_direct_sum():
    x = RNG.integers(-128, 128, (1, 6, 5, 3), dtype=np.int8)
    w = RNG.integers(-128, 128, (3, 2, 3, 2), dtype=np.int8)
    bias = np.arange(6, dtype=np.int32)
    out = run(
        lambda b, v: b.depthwise_conv2d(v, w, bias, np.int8(1), np.int8(-1), pad=(1, 1, 0, 1), dilation=(2, 1)), x
    )
    xp = np.pad(x.astype(np.int64) - 1, [(0, 0), (1, 1), (0, 1), (0, 0)])
    wv = w.astype(np.int64) + 1
    expect = np.zeros(out.shape, np.int64)
    for oy, ox, c, m in itertools.product(range(out.shape[1]), range(out.shape[2]), range(3), range(2)):
        expect[0, oy, ox, c * 2 + m] = (
            sum(xp[0, oy + 2 * ky, ox + kx, c] * wv[ky, kx, c, m] for ky in range(3) for kx in range(2))
            + bias[c * 2 + m]
        )
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("out_pad,stride", [((0, 0, 0, 0), (1, 1)), ((1, -1, -2, 2), (2, 3)), ((-1, -1, 0, 0), (2, 2))])
def test_transpose_conv2d_int8_against_spec_loop(out_pad, stride):
    x = RNG.integers(-128, 128, (2, 3, 4, 3), dtype=np.int8)
    w = RNG.integers(-128, 128, (2, 3, 3, 3), dtype=np.int8)
    out = run(
        lambda b, v: b.transpose_conv2d(
            v, w, np.array([7], np.int32), np.int8(-3), np.int8(4), out_pad=out_pad, stride=stride
        ),
        x,
    )
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    expect = np.zeros(out.shape, np.int64)
    for b, oy, ox, o in itertools.product(*(range(s) for s in out.shape)):
        acc = 7
        for ky, kx in itertools.product(range(kh), range(kw)):
            y, xx = oy - out_pad[0] - ky, ox - out_pad[2] - kx
            if 0 <= y < ih * stride[0] and 0 <= xx < iw * stride[1] and y % stride[0] == 0 and xx % stride[1] == 0:
                acc += int(
                    (
                        (x[b, y // stride[0], xx // stride[1]].astype(np.int64) + 3)
                        * (w[o, ky, kx].astype(np.int64) - 4)
                    ).sum()
                )
        expect[b, oy, ox, o] = acc
    np.testing.assert_array_equal(out, expect)


# ---- MATMUL ---------------------------------------------------------------------------------------------------------


def test_matmul_int16_int48_exact_beyond_float64():
    # 2**15 * 2**15 * 2**14 terms: partial sums above 2**53 would be inexact in float64; int64 must be used.
    c = 1 << 14
    a = np.full((1, 2, c), -32768, np.int16)
    bm = np.full((1, c, 1), -32768, np.int16)
    bm[0, 0, 0] = 1
    out = run(lambda b, x, y: b.matmul(x, y), a, bm)
    assert out.dtype == np.int64
    assert out[0, 0, 0] == (c - 1) * 2**30 - 32768


def test_matmul_int8_zero_points():
    a = RNG.integers(-128, 128, (3, 4, 5), dtype=np.int8)
    bm = RNG.integers(-128, 128, (3, 5, 6), dtype=np.int8)
    out = run(lambda b, x, y: b.matmul(x, y, np.int8(-128), np.int8(127)), a, bm)
    np.testing.assert_array_equal(out, (a.astype(np.int64) + 128) @ (bm.astype(np.int64) - 127))


def test_matmul_bf16_to_fp32():
    a = RNG.standard_normal((1, 3, 40)).astype(ml_dtypes.bfloat16)
    bm = RNG.standard_normal((1, 40, 2)).astype(ml_dtypes.bfloat16)
    out = run(lambda b, x, y: b.matmul(x, y), a, bm)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a.astype(np.float64) @ bm.astype(np.float64), rtol=1e-5, atol=1e-5)


# ---- pooling --------------------------------------------------------------------------------------------------------


def test_avg_pool2d_int8_rounding_counts_only_valid_positions():
    x = RNG.integers(-128, 128, (1, 5, 6, 2), dtype=np.int8)
    out = run(lambda b, v: b.avg_pool2d(v, np.int8(-3), np.int8(4), kernel=(3, 3), stride=(2, 1), pad=(1, 1, 2, 1)), x)
    xp = np.pad(x.astype(np.int64) + 3, [(0, 0), (1, 1), (2, 1), (0, 0)])
    valid = np.pad(np.ones((5, 6)), [(1, 1), (2, 1)])
    expect = np.zeros(out.shape, np.int64)
    for oy, ox in itertools.product(range(out.shape[1]), range(out.shape[2])):
        acc = xp[0, oy * 2 : oy * 2 + 3, ox : ox + 3].sum(axis=(0, 1))
        count = int(valid[oy * 2 : oy * 2 + 3, ox : ox + 3].sum())
        k = 32 - (31 - int(np.floor(np.log2(count - 1))) if count > 1 else 32)  # 32 - clz(count - 1)
        mult, shift = (((1 << 30) + 1) << k) // count, 30 + k
        expect[0, oy, ox] = np.clip(((acc * mult + (1 << (shift - 1))) >> shift) + 4, -128, 127)
    np.testing.assert_array_equal(out, expect)


def test_avg_pool2d_fp_divides_by_valid_count():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    out = run(lambda b, v: b.avg_pool2d(v, kernel=(2, 2), stride=(2, 2), pad=(1, 1, 1, 1)), x)
    np.testing.assert_array_equal(out[0, :, :, 0], [[0, 1.5, 3], [6, 7.5, 9], [12, 13.5, 15]])


def test_max_pool2d_nan_modes():
    x = np.array([[np.nan, 1], [np.nan, np.nan]], np.float32).reshape(1, 2, 2, 1)
    # Windows: all four values, then the bottom row (NaN, NaN) with a padded row.
    for mode, expect in (("PROPAGATE", [np.nan, np.nan]), ("IGNORE", [1.0, np.nan])):
        out = run(lambda b, v: b.max_pool2d(v, kernel=(2, 2), pad=(0, 1, 0, 0), nan_mode=mode), x)
        np.testing.assert_array_equal(out[0, :, 0, 0], expect)
        out = run(lambda b, v: b.max_pool2d(v, kernel=(1, 1), nan_mode=mode), x)
        assert np.isnan(out[0, 1, 1, 0])


def test_max_pool2d_padding_never_wins():
    x = np.full((1, 2, 2, 1), -128, np.int8)
    assert (run(lambda b, v: b.max_pool2d(v, kernel=(2, 2), pad=(1, 1, 1, 1)), x) == -128).all()
    f = np.full((1, 2, 2, 1), -np.inf, ml_dtypes.bfloat16)
    out = run(lambda b, v: b.max_pool2d(v, kernel=(2, 2), pad=(1, 1, 1, 1), nan_mode="IGNORE"), f)
    assert out.dtype == ml_dtypes.bfloat16 and np.isneginf(out.astype(np.float32)).all()


# ---- ARGMAX ---------------------------------------------------------------------------------------------------------


def test_argmax_nan_modes_ties_and_signed_zero():
    x = np.array(
        [
            [-0.0, 0.0, -1.0],
            [1.0, np.nan, np.nan],
            [np.nan, -np.inf, -np.inf],
            [np.nan, np.nan, np.nan],
            [np.inf, 3.0, np.inf],
        ],
        np.float32,
    )
    prop = run(lambda b, v: b.argmax(v, axis=1), x)
    ign = run(lambda b, v: b.argmax(v, axis=1, nan_mode="IGNORE"), x)
    assert prop.dtype == np.int32
    np.testing.assert_array_equal(prop, [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(ign, [0, 0, 1, 0, 0])


def test_argmax_int8_first_maximum():
    x = np.array([[3, 7, 7], [-128, -128, -128]], np.int8)
    np.testing.assert_array_equal(run(lambda b, v: b.argmax(v, axis=1), x), [1, 0])
    np.testing.assert_array_equal(run(lambda b, v: b.argmax(v, axis=0), x), [0, 0, 0])


# ---- FFT ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("inverse", [False, True])
def test_fft2d_unnormalised_both_directions(inverse):
    re = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    im = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    out_re, out_im = run(lambda b, x, y: b.fft2d(x, y, inverse=inverse), re, im)
    z = re.astype(np.float64) + 1j * im
    h, w = np.meshgrid(np.arange(4), np.arange(8), indexing="ij")
    sign = 1 if inverse else -1
    expect = np.zeros_like(z)
    for oy, ox in itertools.product(range(4), range(8)):
        expect[:, oy, ox] = (z * np.exp(sign * 2j * np.pi * (h * oy / 4 + w * ox / 8))).sum(axis=(1, 2))
    np.testing.assert_allclose(out_re, expect.real, atol=1e-4)
    np.testing.assert_allclose(out_im, expect.imag, atol=1e-4)


def test_rfft2d_half_spectrum_and_zero_imaginary_points():
    x = RNG.standard_normal((1, 4, 8)).astype(np.float32)
    re, im = run(lambda b, v: b.rfft2d(v), x)
    assert re.shape == (1, 4, 5)
    np.testing.assert_allclose(re + 1j * im, np.fft.rfft2(x.astype(np.float64)), atol=1e-4)
    for y, xx in ((0, 0), (0, 4), (2, 0), (2, 4)):
        assert im[0, y, xx] == 0


def test_fft2d_non_power_of_two_is_an_error():
    x = np.zeros((1, 3, 4), np.float32)
    with pytest.raises(TosaError):
        run(lambda b, v: b.rfft2d(v), x)

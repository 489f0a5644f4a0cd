"""Vulkan kernels of the tensor operators MATMUL, AVG_POOL2D, MAX_POOL2D, FFT2D, RFFT2D (spec 2.3) against the
reference backend (bit-exact for integers, within the dot-product bound for floating point) and numpy's FFT:
both MATMUL kernels (the 8-element-load tiles and the generic one, with a C long enough to split into passes),
every dtype of the type tables, zero points, padding, NaN modes, and grids that spill into y."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, compare, run_both, ulp, with_specials

from tosa_vk.ir.dtype import DType
from tosa_vk.stages.lower import tensor_ops


def floats(rng, shape, dtype: DType, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype.numpy)


# ---- MATMUL --------------------------------------------------------------------------------------------------------

MATMUL_FLOAT = [
    (DType.FP32, DType.FP32),
    (DType.FP16, DType.FP16),
    (DType.FP16, DType.FP32),
    (DType.BF16, DType.FP32),
    (DType.FP8E4M3, DType.FP16),
    (DType.FP8E5M2, DType.FP16),
]
# (N, H, C, W): the fast kernel (C % 8 == 0, W % 8 == 0; the small-product tiles, partial row tiles) and the
# generic one (odd C / W)
MATMUL_SHAPES = [(2, 21, 24, 48), (1, 5, 16, 8), (3, 7, 9, 13), (1, 33, 40, 6), (2, 1, 4, 1)]


_NUMPY = {
    np.dtype(np.int8): DType.INT8,
    np.dtype(np.int16): DType.INT16,
    np.dtype(np.float32): DType.FP32,
    np.dtype(np.float16): DType.FP16,
    np.dtype(ml_dtypes.bfloat16): DType.BF16,
    np.dtype(ml_dtypes.float8_e4m3fn): DType.FP8E4M3,
    np.dtype(ml_dtypes.float8_e5m2): DType.FP8E5M2,
}


def _matmul(device, a, b, out_dtype=None, **zp):
    def build(bb):
        x = bb.input("a", a.shape, _NUMPY[a.dtype])
        y = bb.input("b", b.shape, _NUMPY[b.dtype])
        bb.output(bb.matmul(x, y, **zp) if out_dtype is None else bb.matmul(x, y, out_dtype=out_dtype, **zp))

    return run_both(device, build, {"a": a, "b": b})


@pytest.mark.parametrize("types", MATMUL_FLOAT, ids=lambda t: f"{t[0].name}-{t[1].name}")
@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_float(device, types, shape):
    in_t, out_t = types
    n, h, c, w = shape
    rng = np.random.default_rng(c * w)
    a, b = floats(rng, (n, h, c), in_t), floats(rng, (n, c, w), in_t)
    got, want = _matmul(device, a, b, out_dtype=out_t)
    assert got.dtype == out_t.numpy
    # the dot-product bound: KS rounding errors of the fp32 accumulator on sum |a| |b|, plus the output rounding
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert_same(got, want, atol=2 * c * 2.0**-24 * mag + ulp(out_t, want.astype(np.float64)))


@pytest.mark.parametrize("types", MATMUL_FLOAT[:4], ids=lambda t: f"{t[0].name}-{t[1].name}")
def test_matmul_large_tile(device, types):
    """A product big enough for the 16 x 16 register tile (tensor_ops.LARGE_TILE_MACS), with a partial row tile."""
    in_t, out_t = types
    n, h, c, w = 2, 37, 256, 512
    assert n * h * c * w >= tensor_ops.LARGE_TILE_MACS and tensor_ops._fast_tile(n * h * c * w, h, w) == (16, 2)
    rng = np.random.default_rng(11)
    a, b = floats(rng, (n, h, c), in_t), floats(rng, (n, c, w), in_t)
    got, want = _matmul(device, a, b, out_dtype=out_t)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert_same(got, want, atol=2 * c * 2.0**-24 * mag + ulp(out_t, want.astype(np.float64)))


@pytest.mark.parametrize("shape", [(1, 16, 32, 32), (2, 3, 5, 7)], ids=lambda s: "x".join(map(str, s)))
def test_matmul_float_specials(device, shape):
    """inf * 0 and inf - inf make NaN where the reference does (order-independent)."""
    n, h, c, w = shape
    rng = np.random.default_rng(5)
    a, b = floats(rng, (n, h, c), DType.FP32), floats(rng, (n, c, w), DType.FP32)
    a[0, 0, 0] = np.inf
    b[0, 0, 1] = 0.0
    a[0, 1, :2] = [np.inf, np.inf]
    b[0, :2, 2] = [1.0, -1.0]
    a[-1, -1, -1] = np.nan
    got, want = _matmul(device, a, b)
    mag = np.abs(np.nan_to_num(a, posinf=0).astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert_same(got, want, atol=2 * c * 2.0**-24 * mag + ulp(DType.FP32, np.nan_to_num(want.astype(np.float64))))
    assert np.isnan(got[0, 0, 1]) and np.isnan(got[0, 1, 2]) and np.isnan(got[-1, -1]).all()


@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("zps", [(0, 0), (-128, 127), (5, -3)])
def test_matmul_int8(device, shape, zps):
    n, h, c, w = shape
    rng = np.random.default_rng(c + w)
    a = rng.integers(-128, 128, (n, h, c)).astype(np.int8)
    b = rng.integers(-128, 128, (n, c, w)).astype(np.int8)
    got, want = _matmul(device, a, b, A_zp=np.array([zps[0]], np.int8), B_zp=np.array([zps[1]], np.int8))
    assert_same(got, want)


@pytest.mark.parametrize("shape", MATMUL_SHAPES[:3], ids=lambda s: "x".join(map(str, s)))
def test_matmul_int16(device, shape):
    n, h, c, w = shape
    rng = np.random.default_rng(c)
    a = rng.integers(-32768, 32768, (n, h, c)).astype(np.int16)
    b = rng.integers(-32768, 32768, (n, c, w)).astype(np.int16)
    a[0, 0, :] = -32768
    b[0, :, 0] = -32768  # sums of 2^30 products: past int32, within int48
    got, want = _matmul(device, a, b)
    assert want.dtype == np.int64 and abs(int(want[0, 0, 0])) > 1 << 31
    assert_same(got, want)


def test_matmul_long_c_splits(device):
    """C past one invocation's loop budget: partial sums in a temporary, added by a second pass."""
    rng = np.random.default_rng(7)
    c = 250_003
    a = rng.integers(-4, 5, (1, 3, c)).astype(np.int8)
    b = rng.integers(-4, 5, (1, c, 5)).astype(np.int8)
    got, want = _matmul(device, a, b, A_zp=np.array([1], np.int8), B_zp=np.array([-1], np.int8))
    assert_same(got, want)
    af, bf = floats(rng, (1, 2, c), DType.FP32), floats(rng, (1, c, 3), DType.FP32)
    got, want = _matmul(device, af, bf)
    mag = np.abs(af.astype(np.float64)) @ np.abs(bf.astype(np.float64))
    assert_same(got, want, atol=2 * c * 2.0**-24 * mag)


@pytest.mark.parametrize("c, w", [(1, 1), (8, 8)])
def test_matmul_many_groups(device, c, w):
    """More than 65535 workgroups: the grid spills into y (generic and fast kernels)."""
    rng = np.random.default_rng(8)
    a, b = floats(rng, (70_000, 1, c), DType.FP32), floats(rng, (70_000, c, w), DType.FP32)
    got, want = _matmul(device, a, b)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert_same(got, want, atol=2 * c * 2.0**-24 * mag)


def test_matmul_const_b(device):
    rng = np.random.default_rng(9)
    a, bv = floats(rng, (1, 64, 64), DType.FP32), floats(rng, (1, 64, 96), DType.FP32)
    got, want = run_both(
        device, lambda bb: bb.output(bb.matmul(bb.input("a", a.shape, "fp32"), bb.const(bv))), {"a": a}
    )
    mag = np.abs(a.astype(np.float64)) @ np.abs(bv.astype(np.float64))
    assert_same(got, want, atol=2 * 64 * 2.0**-24 * mag)


# ---- pooling -------------------------------------------------------------------------------------------------------

POOL_FLOAT = [DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2]
# (input shape, kernel, stride, pad): 4-channel vectors and scalar channels, padding on every side
POOL_CASES = [
    ((2, 9, 11, 8), (3, 3), (2, 2), (1, 1, 1, 1)),
    ((1, 7, 6, 3), (2, 3), (1, 2), (1, 0, 2, 1)),
    ((1, 5, 5, 4), (5, 5), (1, 1), (4, 4, 4, 4)),
    ((1, 4, 4, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
]


def _pool_args(shape, kernel, stride, pad):
    return dict(kernel=list(kernel), stride=list(stride), pad=list(pad))


@pytest.mark.parametrize("dtype", POOL_FLOAT + [DType.INT8, DType.INT16])
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: "x".join(map(str, c[0])))
@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_max_pool(device, dtype, case, nan_mode):
    shape, kernel, stride, pad = case
    rng = np.random.default_rng(len(shape) + kernel[0])
    if dtype.is_float:
        x = with_specials(rng.standard_normal(shape) * 8, rng, every=15, at_least=4).astype(dtype.numpy)
        x[0, :2, :2, 0] = np.nan  # an all-NaN window
    else:
        info = np.iinfo(dtype.numpy)
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype.numpy)
    compare(
        device,
        lambda b: b.output(b.max_pool2d(b.input("x", shape, dtype), nan_mode=nan_mode, **_pool_args(*case))),
        {"x": x},
    )


@pytest.mark.parametrize(
    "dtype, acc",
    [
        (DType.FP32, "FP32"),
        (DType.FP16, "FP16"),
        (DType.FP16, "FP32"),
        (DType.BF16, "FP32"),
        (DType.FP8E4M3, "FP16"),
        (DType.FP8E5M2, "FP16"),
    ],
)
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_avg_pool_float(device, dtype, acc, case):
    shape = case[0]
    rng = np.random.default_rng(shape[1])
    x = (rng.standard_normal(shape) * 4).astype(dtype.numpy)
    x.reshape(-1)[3] = np.inf
    x.reshape(-1)[-1] = np.nan
    got, want = run_both(
        device,
        lambda b: b.output(b.avg_pool2d(b.input("x", shape, dtype), acc_type=acc, **_pool_args(*case))),
        {"x": x},
    )
    # fp32 sums of at most 25 values, divided once: within a few fp32 ulps of the fp64 mean before rounding
    kh, kw = case[1]
    assert_same(
        got,
        want,
        atol=ulp(
            DType.FP16 if dtype in (DType.FP8E4M3, DType.FP8E5M2) else dtype, np.nan_to_num(want.astype(np.float64))
        )
        + kh * kw * 2.0**-22 * 4 * 8,
    )


@pytest.mark.parametrize("dtype", [DType.INT8, DType.INT16])
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: "x".join(map(str, c[0])))
@pytest.mark.parametrize("zps", [(0, 0), (-7, 12), (127, -128)])
def test_avg_pool_int(device, dtype, case, zps):
    if dtype == DType.INT16 and zps != (0, 0):
        pytest.skip("zero points are int8 only")
    shape = case[0]
    info = np.iinfo(dtype.numpy)
    rng = np.random.default_rng(shape[2])
    x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype.numpy)
    zi, zo = (np.array([z], dtype.numpy) for z in zps)
    compare(device, lambda b: b.output(b.avg_pool2d(b.input("x", shape, dtype), zi, zo, **_pool_args(*case))), {"x": x})


def test_max_pool_big_grid(device):
    """More than 65535 * 64 invocations (4-channel vectors): the grid spills into y."""
    shape = (1, 2, 2_100_000, 8)
    rng = np.random.default_rng(10)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    compare(
        device,
        lambda b: b.output(b.max_pool2d(b.input("x", shape, "int8"), kernel=[2, 1], stride=[1, 1], pad=[0, 0, 0, 0])),
        {"x": x},
    )


# ---- FFT2D / RFFT2D ------------------------------------------------------------------------------------------------


def _fft_bound(re, im, inverse=False):
    """The dot-product bound of spec 1.10 (local_bound false): 2 * KS ulps of max|input| * sum|weights| per output,
    KS = 2 H W terms; sum |cos| + |sin| over the H * W terms is at most sqrt(2) H W."""
    h, w = re.shape[1:]
    m = max(np.abs(re).max(), np.abs(im).max() if im is not None else 0.0, 2.0**-126)
    return 2 * (2 * h * w) * 2.0**-24 * m * np.sqrt(2) * h * w


@pytest.mark.parametrize(
    "shape",
    [(1, 1, 1), (2, 1, 8), (1, 16, 1), (3, 8, 32), (1, 64, 16), (1, 2, 1024)],
    ids=lambda s: "x".join(map(str, s)),
)
@pytest.mark.parametrize("inverse", [False, True])
def test_fft2d(device, shape, inverse):
    rng = np.random.default_rng(shape[1] * shape[2])
    re, im = floats(rng, shape, DType.FP32), floats(rng, shape, DType.FP32)
    (gr, gi), (wr, wi) = run_both(
        device,
        lambda b: b.output(*b.fft2d(b.input("re", shape, "fp32"), b.input("im", shape, "fp32"), inverse=inverse)),
        {"re": re, "im": im},
    )
    z = re.astype(np.complex128) + 1j * im
    exact = np.fft.ifft2(z, axes=(1, 2), norm="forward") if inverse else np.fft.fft2(z, axes=(1, 2))
    bound = _fft_bound(re, im)
    assert np.abs(gr - exact.real).max() <= bound and np.abs(gi - exact.imag).max() <= bound
    # far tighter in practice: log2(H W) fp32 butterfly stages
    scale = np.sqrt(shape[1] * shape[2]) * max(np.abs(re).max(), np.abs(im).max())
    assert np.abs(gr - exact.real).max() <= 1e-5 * scale * (1 + np.log2(shape[1] * shape[2]))
    assert_same(gr, wr, atol=1e-5 * scale * 20)
    assert_same(gi, wi, atol=1e-5 * scale * 20)


@pytest.mark.parametrize(
    "shape", [(1, 1, 1), (2, 1, 8), (1, 16, 1), (3, 8, 32), (1, 64, 16), (1, 4, 2)], ids=lambda s: "x".join(map(str, s))
)
def test_rfft2d(device, shape):
    rng = np.random.default_rng(shape[2])
    x = floats(rng, shape, DType.FP32)
    (gr, gi), _ = run_both(device, lambda b: b.output(*b.rfft2d(b.input("x", shape, "fp32"))), {"x": x})
    exact = np.fft.rfft2(x.astype(np.float64), axes=(1, 2))
    h, w = shape[1:]
    assert gr.shape == gi.shape == (shape[0], h, w // 2 + 1)
    scale = np.sqrt(h * w) * np.abs(x).max()
    assert np.abs(gr - exact.real).max() <= 1e-5 * scale * (1 + np.log2(h * w))
    assert np.abs(gi - exact.imag).max() <= 1e-5 * scale * (1 + np.log2(h * w))
    for r in sorted({0, h // 2}):  # skipped imaginary parts are exactly zero
        for c in sorted({0, w // 2}):
            assert (gi[:, r, c] == 0).all()


def test_rfft2d_specials(device):
    """An infinity makes non-finite outputs (an FFT's rotations of an infinite value make NaNs where the direct sum
    of the spec would give infinities), but the skipped imaginary parts stay zero."""
    x = np.zeros((1, 4, 8), np.float32)
    x[0, 1, 2] = np.inf
    (gr, gi), _ = run_both(device, lambda b: b.output(*b.rfft2d(b.input("x", x.shape, "fp32"))), {"x": x})
    assert gi[0, 0, 0] == 0 and gi[0, 2, 4] == 0 and gi[0, 0, 4] == 0 and gi[0, 2, 0] == 0
    assert not np.isfinite(gr).any()


def test_rfft2d_big_grid(device):
    """N * H * W / 2 butterflies past 65535 * 64: the grid spills into y; long axes (2048, 4096)."""
    shape = (1, 2048, 4096)
    x = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    (gr, gi), _ = run_both(device, lambda b: b.output(*b.rfft2d(b.input("x", shape, "fp32"))), {"x": x})
    exact = np.fft.rfft2(x.astype(np.float64), axes=(1, 2))
    scale = np.sqrt(x.size) * np.abs(x).max()
    assert np.abs(gr - exact.real).max() <= 1e-5 * scale * 24
    assert np.abs(gi - exact.imag).max() <= 1e-5 * scale * 24

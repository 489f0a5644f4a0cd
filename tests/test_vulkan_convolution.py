"""Vulkan kernels of the convolutions (spec 2.3: CONV2D, CONV3D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D) against the
reference backend: integers bit-exact (zero points, int4 weights, int48 accumulators), floating point within the
dot-product bound; every chunk width (packed 8 / 16-bit words, the 4 x 4 matrix path, single elements), tile tails,
padding that must skip non-finite weights, run-time weights and zero points, grids that spill into z and
reductions split into passes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, compare, graph_of, run_both, run_reference, shrink_target

NP = {
    "int8": np.int8,
    "int4": np.int8,
    "int16": np.int16,
    "fp32": np.float32,
    "fp16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "fp8e4m3": ml_dtypes.float8_e4m3fn,
    "fp8e5m2": ml_dtypes.float8_e5m2,
}
OUT = {
    "int8": "int32",
    "int16": "int48",
    "fp32": "fp32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8e4m3": "fp16",
    "fp8e5m2": "fp16",
}
MANTISSA = {"fp32": 23, "fp16": 10, "bf16": 7}


def values(rng, shape, dtype: str) -> np.ndarray:
    if dtype == "int4":
        return rng.integers(-8, 8, shape).astype(np.int8)
    if dtype in ("int8", "int16"):
        info = np.iinfo(NP[dtype])
        return rng.integers(info.min, info.max + 1, shape).astype(NP[dtype])
    return (rng.standard_normal(shape) * 2).astype(NP[dtype])


def bias_values(rng, n: int, out: str) -> np.ndarray:
    if out == "int32":
        return rng.integers(-1000, 1000, n).astype(np.int32)
    if out == "int48":
        return rng.integers(-(2**40), 2**40, n).astype(np.int64)
    return (rng.standard_normal(n)).astype(NP[out])


def dot_product_tolerance(bound: np.ndarray, ks: int, out: str) -> np.ndarray:
    """The dot-product error bound: ks roundings of fp32 accumulation relative to `bound` (the result of the op on
    absolute values), plus the output rounding."""
    return bound.astype(np.float64) * (2 * ks * 2.0**-24 + 2.0 ** -MANTISSA[out]) + 1e-30


def conv_case(
    device,
    dtype,
    x_shape,
    w_shape,
    *,
    wdtype=None,
    op="conv2d",
    zps=(0, 0),
    bias_n=None,
    seed=0,
    runtime=False,
    **attrs,
):
    """Runs one convolution on both backends; weights / zero points are graph inputs when `runtime`."""
    rng = np.random.default_rng(seed)
    wdtype = wdtype or ("int8" if dtype == "int16" else dtype)
    out = OUT[dtype]
    x = values(rng, x_shape, dtype)
    w = values(rng, w_shape, wdtype)
    oc = {
        "conv2d": w_shape[0],
        "conv3d": w_shape[0],
        "transpose_conv2d": w_shape[0],
        "depthwise_conv2d": w_shape[2] * w_shape[3],
    }[op]
    bias = bias_values(rng, oc if bias_n is None else bias_n, out)
    wdt = {"int4": "int4"}.get(wdtype, wdtype)

    def graph(b, xv, wv, bv):
        xi = b.input("x", x.shape, dtype)
        feeds = {"x": xv}
        izp, wzp = np.array([zps[0]], NP[dtype]), np.array([zps[1]], NP[wdtype])
        if runtime:
            wi = b.input("w", w.shape, wdt)
            izp_in, wzp_in = b.input("izp", (1,), dtype), b.input("wzp", (1,), wdt)
            feeds.update(w=wv, izp=izp, wzp=wzp)
            args = (xi, wi, b.const(bv, out), izp_in, wzp_in)
        else:
            args = (xi, b.const(wv, wdt), b.const(bv, out), b.const(izp, dtype), b.const(wzp, wdt))
        b.output(getattr(b, op)(*args, **attrs))
        return feeds

    feeds = {}
    got, want = run_both(device, graph_of(lambda b: feeds.update(graph(b, x, w, bias))), feeds)
    if dtype in ("int8", "int16"):
        assert_same(got, want)
    else:  # the dot-product bound: the op on absolute values
        abs_feeds = {}
        abs_graph = graph_of(lambda b: abs_feeds.update(graph(b, np.abs(x), np.abs(w), np.abs(bias))))
        (bound,) = run_reference(abs_graph, abs_feeds)
        ks = int(np.prod(w_shape[1:])) if op != "depthwise_conv2d" else w_shape[0] * w_shape[1]
        assert_same(got, want, atol=dot_product_tolerance(bound, ks, out))


# ---- CONV2D --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "int16", "fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"])
@pytest.mark.parametrize("ic", [16, 12, 3])  # chunks of 16 / 8 / 4 elements, single elements
def test_conv2d_every_type_and_chunk_width(device, dtype, ic):
    conv_case(
        device,
        dtype,
        (2, 9, 10, ic),
        (5, 3, 3, ic),
        zps=(-7, 3) if dtype == "int8" else (0, 0),
        pad=[1, 0, 2, 1],
        stride=[1, 2],
        dilation=[2, 1],
    )


def test_conv2d_int8_int4_weights(device):
    conv_case(device, "int8", (1, 7, 6, 8), (6, 2, 3, 8), wdtype="int4", zps=(100, 0), pad=[1, 1, 1, 1])


def test_conv2d_int8_extreme_values_exact(device):
    """|in - zp| = 255 and |w - zp| = 255 everywhere: the int8 path through fp32 must stay exact."""
    b_x = np.full((1, 6, 6, 16), 127, np.int8)
    rng = np.random.default_rng(1)
    w = np.where(rng.random((8, 3, 3, 16)) < 0.5, -128, 127).astype(np.int8)

    def build(b):
        x = b.input("x", b_x.shape, "int8")
        b.output(b.conv2d(x, w, np.zeros(8, np.int32), np.int8(-128), np.int8(-128), pad=[1, 1, 1, 1]))

    compare(device, build, {"x": b_x})


@pytest.mark.parametrize("oc", [1, 4, 13])
@pytest.mark.parametrize("ow", [3, 17, 40])
def test_conv2d_tile_tails(device, oc, ow):
    conv_case(device, "fp32", (1, 5, ow, 8), (oc, 3, 3, 8), pad=[1, 1, 1, 1], bias_n=1)
    conv_case(device, "int8", (1, 5, ow, 8), (oc, 3, 3, 8), pad=[1, 1, 1, 1], zps=(5, -5))


@pytest.mark.parametrize("kernel", [(1, 1), (1, 7), (5, 2), (7, 7)])
def test_conv2d_kernel_shapes(device, kernel):
    conv_case(device, "fp32", (1, 12, 14, 4), (6, *kernel, 4), pad=[kernel[0] // 2, 0, kernel[1] // 2, 0])
    conv_case(device, "int8", (1, 12, 14, 8), (6, *kernel, 8), pad=[0, kernel[0] // 2, 0, kernel[1] // 2])


@pytest.mark.parametrize("dtype", ["int8", "fp32"])
def test_conv2d_runtime_weights_and_zero_points(device, dtype):
    conv_case(
        device,
        dtype,
        (1, 6, 7, 8),
        (5, 3, 3, 8),
        zps=(-3, 9) if dtype == "int8" else (0, 0),
        runtime=True,
        pad=[1, 1, 1, 1],
    )


def test_conv2d_padding_skips_infinite_weights(device):
    """A padded tap's multiply is skipped: an infinite weight must not make NaN from a padded 0."""
    x = np.ones((1, 4, 4, 4), np.float32)
    w = np.ones((2, 3, 3, 4), np.float32)
    w[0, 0, 0, 0] = np.inf
    w[1, 2, 2, 1] = -np.inf

    def build(b):
        b.output(b.conv2d(b.input("x", x.shape, "fp32"), w, np.zeros(2, np.float32), pad=[1, 1, 1, 1]))

    _, want = compare(device, build, {"x": x})
    assert not np.isnan(want).all()


def test_conv2d_nan_and_infinity_inputs(device):
    x = np.ones((1, 5, 5, 8), np.float32)
    x[0, 1, 1, 3] = np.nan
    x[0, 3, 2, 0] = np.inf
    w = np.ones((4, 3, 3, 8), np.float32)

    def build(b):
        b.output(b.conv2d(b.input("x", x.shape, "fp32"), w, np.zeros(4, np.float32), pad=[1, 1, 1, 1]))

    compare(device, build, {"x": x})


def test_conv2d_grid_spills_into_z(device, monkeypatch):
    shrink_target(monkeypatch, device, max_workgroup_count=(2, 65535, 65535))
    conv_case(device, "int8", (3, 20, 33, 8), (6, 3, 3, 8), pad=[1, 1, 1, 1], zps=(1, 2))
    conv_case(device, "fp32", (3, 20, 33, 8), (6, 3, 3, 8), pad=[1, 1, 1, 1])


@pytest.mark.parametrize("dtype", ["int8", "int16", "fp32"])
def test_conv2d_reduction_split_into_passes(device, monkeypatch, dtype):
    """Past the loop-iteration limit the input channels are summed in passes through a temporary."""
    shrink_target(monkeypatch, device, loop_budget=7)
    conv_case(device, dtype, (1, 6, 6, 9), (4, 3, 3, 9), pad=[1, 1, 1, 1])
    conv_case(device, dtype, (1, 6, 6, 32), (8, 3, 2, 32), pad=[1, 1, 1, 0])


# 1x1 fp32 convolutions run on matmul_fast.comp: the workgroup's lanes split between rows and columns for the shape
# (lavapipe), and EXACT (guards compiled out) where no lane, row or workgroup is spare
@pytest.mark.parametrize(
    "x_shape, oc, exact",
    [
        ((1, 4, 4, 16), 16, False),  # 2 x 2 tiles for 8 lanes
        ((1, 32, 32, 16), 96, True),
        ((1, 5, 5, 8), 24, False),
        ((2, 8, 8, 24), 144, True),
        ((1, 4, 4, 192), 64, True),
        ((1, 3, 7, 32), 40, False),
    ],
)
def test_conv2d_1x1_lane_splits(device, x_shape, oc, exact):
    import tosa_vk
    from tosa_vk.program import Kernel, walk

    conv_case(device, "fp32", x_shape, (oc, 1, 1, x_shape[-1]))
    if device.info.target.klass.name != "lavapipe":
        return
    w = np.ones((oc, 1, 1, x_shape[-1]), np.float32)
    graph = graph_of(lambda b: b.output(b.conv2d(b.input("x", x_shape, "fp32"), w, np.zeros(oc, np.float32))))
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=False) as model:
        (kernel,) = [k for k in walk(model.program.steps) if isinstance(k, Kernel)]
    assert kernel.shader == "tensor_ops/matmul_fast" and ("EXACT" in dict(kernel.defines)) == exact


def test_matmul_fast_lane_split():
    from tosa_vk.stages.lower.tensor_ops import _lanes_w

    assert _lanes_w(8, 32, 3) == 1  # 24 columns: all lanes along the rows
    assert _lanes_w(8, 128, 12) == 4  # 96 columns: 4 x 2 lanes, none spare
    assert _lanes_w(8, 1, 12) == 8  # one row tile: all along the columns
    assert _lanes_w(8, 2, 2) == 4  # 2 x 2 tiles: 4 x 2 lanes (4 spare) as good as 2 x 4, the wider wins


# ---- CONV3D --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "int16", "fp32", "fp16", "bf16"])
def test_conv3d(device, dtype):
    conv_case(
        device,
        dtype,
        (1, 5, 6, 7, 8),
        (5, 2, 3, 3, 8),
        op="conv3d",
        zps=(2, -1) if dtype == "int8" else (0, 0),
        pad=[1, 0, 1, 1, 0, 2],
        stride=[2, 1, 1],
        dilation=[1, 2, 1],
    )


# ---- DEPTHWISE_CONV2D ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "int16", "fp32", "fp16", "bf16", "fp8e4m3"])
@pytest.mark.parametrize("c, m", [(16, 1), (8, 1), (3, 1), (4, 3)])
def test_depthwise(device, dtype, c, m):
    conv_case(
        device,
        dtype,
        (2, 9, 17, c),
        (3, 3, c, m),
        op="depthwise_conv2d",
        zps=(4, -4) if dtype == "int8" else (0, 0),
        pad=[1, 1, 0, 2],
        stride=[1, 2],
        dilation=[2, 1],
    )


def test_depthwise_runtime_and_spill(device, monkeypatch):
    shrink_target(monkeypatch, device, max_workgroup_count=(3, 65535, 65535))
    conv_case(
        device, "int8", (2, 17, 19, 8), (3, 3, 8, 1), op="depthwise_conv2d", zps=(-9, 1), runtime=True, pad=[1, 1, 1, 1]
    )


# ---- TRANSPOSE_CONV2D ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "int16", "fp32", "fp16", "bf16"])
@pytest.mark.parametrize("stride, out_pad", [([1, 1], [0, 0, 0, 0]), ([2, 3], [1, 0, -1, 2]), ([3, 2], [-2, 1, 0, 0])])
def test_transpose_conv2d(device, dtype, stride, out_pad):
    conv_case(
        device,
        dtype,
        (1, 5, 6, 8),
        (6, 3, 4, 8),
        op="transpose_conv2d",
        zps=(3, -2) if dtype == "int8" else (0, 0),
        stride=stride,
        out_pad=out_pad,
    )


def test_transpose_conv2d_split_and_infinite_weights(device, monkeypatch):
    shrink_target(monkeypatch, device, loop_budget=5)
    conv_case(device, "int8", (1, 4, 5, 12), (3, 3, 3, 12), op="transpose_conv2d", stride=[2, 2])
    x = np.ones((1, 3, 3, 4), np.float32)
    w = np.ones((2, 3, 3, 4), np.float32)
    w[0, 1, 1, 2] = np.inf

    def build(b):
        b.output(b.transpose_conv2d(b.input("x", x.shape, "fp32"), w, np.zeros(2, np.float32), stride=[2, 2]))

    compare(device, build, {"x": x})

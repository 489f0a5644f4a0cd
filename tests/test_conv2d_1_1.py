"""CONV2D's TOSA 1.1 rows: input and weight of different floating-point types and block-scaled (MX) operands. The
catalogue rows and their ERROR_IFs, the reference against a float64 convolution of the decoded values, Vulkan
(strict) against the reference, and the host fallback of a block-scaled CONV2D. Arm's generated 1.1 CONV2D tests run
in tests/test_conformance_1_1.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.graph import Block, Graph, Operator, Region, Tensor
from tosa_vk.ir.ops import BlockScaled, matching_types, requirements
from tosa_vk.ir.validate import validate
from tosa_vk.reference.numeric import mx_decode

E8M0 = ml_dtypes.float8_e8m0fnu


def codes_of(rng, shape, dtype: DType) -> np.ndarray:
    """Random finite elements of `dtype` (any code of the MX types; fp8 NaN / Inf codes replaced)."""
    if dtype in (DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2, DType.MXINT8):
        bits = {DType.FP4E2M1: 4, DType.FP6E2M3: 6, DType.FP6E3M2: 6, DType.MXINT8: 8}[dtype]
        return rng.integers(0, 1 << bits, shape).astype(np.uint8).view(dtype.numpy)
    return rng.uniform(-2, 2, shape).astype(np.float32).astype(dtype.numpy)


def scales_of(rng, shape, lo=120, hi=134) -> np.ndarray:
    return rng.integers(lo, hi, (*shape[:-1], shape[-1] // 32)).astype(np.uint8).view(E8M0)


def conv_graph(
    x: Tensor, w: Tensor, out_t: DType, acc_t: DType, pad=(0, 0, 0, 0), stride=(1, 1), dilation=(1, 1), version=(1, 1)
) -> Graph:
    """y = CONV2D(x, w) with a constant weight, bias and zero points (fp32 zero points for block-scaled operands)."""
    n, ih, iw, _ = x.shape
    oc, kh, kw, _ = w.shape
    oh = (ih - 1 + pad[0] + pad[1] - (kh - 1) * dilation[0]) // stride[0] + 1
    ow = (iw - 1 + pad[2] + pad[3] - (kw - 1) * dilation[1]) // stride[1] + 1
    rng = np.random.default_rng(5)
    b = Tensor("b", (oc,), out_t, rng.uniform(-1, 1, oc).astype(np.float32).astype(out_t.numpy))
    zps = [
        Tensor(name, (1,), zt, np.zeros(1, zt.numpy))
        for name, zt in (
            ("xzp", DType.FP32 if x.block_scaled else x.dtype),
            ("wzp", DType.FP32 if w.block_scaled else w.dtype),
        )
    ]
    y = Tensor("y", (n, oh, ow, oc), out_t)
    ops = [Operator("CONST", [], [t.name]) for t in (w, b, *zps)]
    attrs = {"pad": list(pad), "stride": list(stride), "dilation": list(dilation), "acc_type": acc_t}
    ops.append(Operator("CONV2D", ["x", "w", "b", "xzp", "wzp"], ["y"], attrs))
    block = Block("main", ops, {t.name: t for t in (x, w, b, *zps, y)}, ["x"], ["y"])
    return Graph([Region("main", [block])], (*version, 0, False))


def operands(rng, in_t: DType, w_t: DType, bs_in: bool, bs_w: bool, shape=(1, 5, 6, 64), oc=6, k=(3, 2)):
    """(x tensor, its feeds, w constant tensor) of the given element types."""
    xv = codes_of(rng, shape, in_t)
    feeds = {"x": xv}
    scale_t = DType.FP8UE8M0
    x = Tensor("x", shape, in_t, scale_dtype=scale_t if bs_in else None, block_size=32 if bs_in else 0)
    if bs_in:
        feeds["x_scale"] = scales_of(rng, shape)
    wshape = (oc, *k, shape[-1])
    wv = codes_of(rng, wshape, w_t)
    ws = scales_of(rng, wshape) if bs_w else None
    w = Tensor("w", wshape, w_t, wv, scale_dtype=scale_t if bs_w else None, block_size=32 if bs_w else 0, scale_data=ws)
    return x, feeds, w


def decoded(t: Tensor, values: np.ndarray, scales: np.ndarray | None) -> np.ndarray:
    if scales is None:
        return values.astype(np.float64)
    return mx_decode(values, t.dtype, scales, 32)


def conv64(x: np.ndarray, w: np.ndarray, bias: np.ndarray, pad, stride, dilation) -> np.ndarray:
    """A float64 CONV2D (padded taps skipped) for comparison."""
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    xp = np.pad(x, [(0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)])
    oh = (ih - 1 + pad[0] + pad[1] - (kh - 1) * dilation[0]) // stride[0] + 1
    ow = (iw - 1 + pad[2] + pad[3] - (kw - 1) * dilation[1]) // stride[1] + 1
    out = np.zeros((n, oh, ow, oc))
    for ky in range(kh):
        for kx in range(kw):
            ys, xs = ky * dilation[0], kx * dilation[1]
            view = xp[:, ys : ys + (oh - 1) * stride[0] + 1 : stride[0], xs : xs + (ow - 1) * stride[1] + 1 : stride[1]]
            out += view @ w[:, ky, kx, :].T
    return out + bias.astype(np.float64)


def run(g: Graph, feeds: dict, device=None, **options) -> np.ndarray:
    if device is None:
        with tosa_vk.load(g, backend="reference") as model:
            return model.run(feeds)["y"]
    with tosa_vk.load(g, backend="vulkan", device=device, **{"strict": True, **options}) as model:
        return model.run(feeds)["y"]


# ---- the rows ------------------------------------------------------------------------------------------------------


def test_rows_as_arms_generator_emits_them():
    bs = BlockScaled(DType.FP4E2M1)
    fp32 = {"out_t": DType.FP32, "acc_t": DType.FP32}
    (row,) = matching_types("CONV2D", {"in_t": bs, "weight_t": DType.BF16, **fp32})
    assert row.since == (1, 1) and row.types["in_zp_t"] == DType.FP32 and row.types["weight_zp_t"] == DType.BF16
    assert set(row.needs) >= {"EXT-MX-COMMON", "EXT-MX-FP4E2M1", "EXT-BF16"}
    assert not matching_types("CONV2D", {"in_t": bs, "weight_t": DType.BF16, **fp32}, (1, 0))
    # fp16 out: fp16 or fp32 accumulate, no bf16 operand; bf16 out: bf16 or fp32 accumulate, no fp16 operand
    for acc in (DType.FP16, DType.FP32):
        assert matching_types("CONV2D", {"in_t": DType.FP8E5M2, "weight_t": bs, "out_t": DType.FP16, "acc_t": acc})
    assert not matching_types("CONV2D", {"in_t": DType.BF16, "weight_t": bs, "out_t": DType.FP16})
    assert not matching_types("CONV2D", {"in_t": DType.FP16, "weight_t": bs, "out_t": DType.BF16})
    assert not matching_types("CONV2D", {"in_t": DType.FP32, "weight_t": bs, "out_t": DType.BF16})
    assert matching_types("CONV2D", {"in_t": DType.BF16, "weight_t": bs, "out_t": DType.BF16, "acc_t": DType.BF16})
    # the 1.0 rows keep their zero-point types
    (row,) = matching_types("CONV2D", {"in_t": DType.INT8, "weight_t": DType.INT4}, (1, 0))
    assert (row.types["in_zp_t"], row.types["weight_zp_t"]) == (DType.INT8, DType.INT4)


def test_requirements_as_arms_tests_list_them():
    """A block-scaled operand needs EXT-MXFP-CONV besides the extensions its types bring (Arm's generated tests)."""
    rng = np.random.default_rng(0)
    x, _, w = operands(rng, DType.BF16, DType.FP4E2M1, False, True)
    assert requirements(conv_graph(x, w, DType.BF16, DType.BF16)) == (
        ["PRO-FP"],
        ["EXT-BF16", "EXT-MX-COMMON", "EXT-MX-FP4E2M1", "EXT-MXFP-CONV"],
    )
    x, _, w = operands(rng, DType.FP8E5M2, DType.FP16, False, False)
    assert requirements(conv_graph(x, w, DType.FP32, DType.FP32)) == (["PRO-FP"], ["EXT-FP8E5M2"])


def test_validation_of_the_new_rows():
    rng = np.random.default_rng(0)
    x, _, w = operands(rng, DType.FP8E4M3, DType.FP6E2M3, True, True)
    validate(conv_graph(x, w, DType.BF16, DType.BF16))
    px, _, pw = operands(rng, DType.FP16, DType.FP8E4M3, False, False)
    validate(conv_graph(px, pw, DType.FP16, DType.FP32))
    with pytest.raises(TosaError, match="TOSA 1.1 adds"):  # a 1.0 graph has no mixed rows
        validate(conv_graph(px, pw, DType.FP16, DType.FP32, version=(1, 0)))
    bx, _, bw = operands(rng, DType.BF16, DType.BF16, False, False)
    validate(conv_graph(bx, bw, DType.BF16, DType.BF16))
    with pytest.raises(TosaError, match="acc_type must be one of INT32, INT48, FP16, FP32,"):
        validate(conv_graph(bx, bw, DType.BF16, DType.BF16, version=(1, 0)))
    with pytest.raises(TosaError, match="Supported Data Types"):  # fp16 out with a bf16 operand
        validate(conv_graph(bx, w, DType.FP16, DType.FP32))
    bad = operands(rng, DType.FP8E4M3, DType.BF16, True, False, shape=(1, 3, 3, 48), k=(1, 1))
    with pytest.raises(TosaError, match=r"is_block_scale && shape\[rank\(shape\)-1\] % block_size != 0.*'x'"):
        validate(conv_graph(bad[0], bad[2], DType.FP32, DType.FP32))
    g = conv_graph(x, w, DType.FP32, DType.FP32)
    g.main.tensors["xzp"] = Tensor("xzp", (1,), DType.FP32, np.ones(1, np.float32))
    with pytest.raises(TosaError, match=r"is_same<in_t,i8_t>\(\) && input_zp != 0"):
        validate(g)
    g.main.tensors["xzp"] = Tensor("xzp", (1,), DType.FP8E4M3, np.zeros(1, ml_dtypes.float8_e4m3fn))
    with pytest.raises(TosaError, match="Supported Data Types"):  # a block-scaled input's zero point is fp32_t
        validate(g)


# ---- reference -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("in_t", "w_t", "bs_in", "bs_w", "out_t", "acc_t"),
    [
        (DType.FP8E4M3, DType.FP4E2M1, True, True, DType.FP32, DType.FP32),
        (DType.BF16, DType.MXINT8, False, True, DType.BF16, DType.BF16),
        (DType.FP6E3M2, DType.FP16, True, False, DType.FP16, DType.FP16),
        (DType.FP32, DType.FP8E5M2, False, False, DType.FP32, DType.FP32),
    ],
)
def test_reference_is_the_convolution_of_the_decoded_values(in_t, w_t, bs_in, bs_w, out_t, acc_t):
    rng = np.random.default_rng(1)
    x, feeds, w = operands(rng, in_t, w_t, bs_in, bs_w)
    pad, stride, dilation = (1, 1, 2, 1), (2, 1), (1, 2)
    g = conv_graph(x, w, out_t, acc_t, pad, stride, dilation)
    got = run(g, feeds).astype(np.float64)
    xd = decoded(x, feeds["x"], feeds.get("x_scale"))
    wd = decoded(w, w.data, w.scale_data)
    want = conv64(xd, wd, g.main.tensors["b"].data, pad, stride, dilation)
    bound = conv64(np.abs(xd), np.abs(wd), np.zeros(1), pad, stride, dilation)  # sum |x * w|
    eps = {DType.FP32: 2.0**-23, DType.FP16: 2.0**-10, DType.BF16: 2.0**-7}[out_t]
    assert np.all(np.abs(got - want) <= eps * (np.abs(want) + 1e-3) + 1e-5 * bound)


def test_reference_block_scaled_nan_scale_and_ic_error():
    rng = np.random.default_rng(2)
    x, feeds, w = operands(rng, DType.FP8E4M3, DType.FP8E4M3, True, True, shape=(1, 3, 3, 64), k=(1, 1))
    feeds["x_scale"] = np.asarray(feeds["x_scale"]).copy()
    feeds["x_scale"].view(np.uint8)[0, 1, 1, 1] = 255  # pixel (1, 1)'s second block: NaN
    got = run(conv_graph(x, w, DType.FP32, DType.FP32), feeds)
    assert np.isnan(got[0, 1, 1]).all() and np.isnan(got).sum() == got.shape[-1]


# ---- Vulkan --------------------------------------------------------------------------------------------------------


_F32, _F16, _BF16, _E4, _E5 = DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2
VULKAN_CASES = [
    # in_t, weight_t, block-scaled input / weight, out_t, acc_t, input shape, kernel, pad, stride, dilation
    (_E4, DType.FP4E2M1, 1, 1, _F32, _F32, (1, 5, 7, 64), (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),
    (DType.FP6E2M3, _E5, 1, 0, _BF16, _BF16, (2, 6, 5, 32), (2, 3), (1, 1, 2, 0), (2, 1), (1, 2)),
    (_BF16, DType.MXINT8, 0, 1, _BF16, _F32, (1, 4, 9, 96), (1, 3), (0, 0, 1, 1), (1, 2), (1, 1)),
    (_F16, DType.FP6E3M2, 0, 1, _F16, _F16, (1, 8, 8, 32), (1, 1), (0, 0, 0, 0), (1, 1), (1, 1)),
    (_F32, _F16, 0, 0, _F32, _F32, (1, 6, 6, 12), (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),
    (_E5, _BF16, 0, 0, _BF16, _BF16, (1, 5, 5, 7), (2, 2), (0, 1, 0, 1), (1, 1), (1, 1)),
    (_E4, _F16, 0, 0, _F16, _F32, (1, 4, 4, 8), (3, 1), (1, 1, 0, 0), (1, 1), (1, 1)),
]  # fmt: skip


@pytest.mark.parametrize(
    "case", VULKAN_CASES, ids=lambda c: f"{c[0].name}x{c[1].name}-{'bs' * c[2]}-{'bs' * c[3]}-{c[4].name}"
)
def test_vulkan_matches_the_reference(device, case):
    in_t, w_t, bs_in, bs_w, out_t, acc_t, shape, k, pad, stride, dilation = case
    rng = np.random.default_rng(3)
    x, feeds, w = operands(rng, in_t, w_t, bs_in, bs_w, shape=shape, k=k)
    g = conv_graph(x, w, out_t, acc_t, pad, stride, dilation)
    want = run(g, feeds).astype(np.float64)
    got = run(g, feeds, device).astype(np.float64)
    eps = {DType.FP32: 2.0**-20, DType.FP16: 2.0**-9, DType.BF16: 2.0**-6}[out_t]
    np.testing.assert_allclose(got, want, rtol=eps, atol=1e-3)


def test_vulkan_block_scaled_nan_scale_stays_in_its_outputs(device):
    """A NaN weight scale (0xff) makes its output channel NaN where the tap is inside the input; padded taps are
    skipped, so no NaN reaches an output through padding alone."""
    rng = np.random.default_rng(4)
    x, feeds, w = operands(rng, DType.FP8E4M3, DType.FP8E4M3, True, True, shape=(1, 4, 4, 32), oc=4, k=(1, 1))
    scale = np.asarray(w.scale_data).copy()
    scale.view(np.uint8)[2, 0, 0, 0] = 255
    w = Tensor("w", w.shape, w.dtype, w.data, scale_dtype=DType.FP8UE8M0, block_size=32, scale_data=scale)
    g = conv_graph(x, w, DType.FP32, DType.FP32, pad=(1, 0, 0, 1))
    want, got = run(g, feeds), run(g, feeds, device)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(want[0, 1:, :4, 2]).all() and np.isnan(want).sum() == 16  # the 4 x 4 pixels inside the input
    np.testing.assert_allclose(got[..., [0, 1, 3]], want[..., [0, 1, 3]], rtol=1e-5, atol=1e-5)


def test_vulkan_host_step_gets_the_scales(device):
    """A block-scaled CONV2D placed on the host (not strict) hands its scales to the reference implementation."""
    rng = np.random.default_rng(6)
    x, feeds, w = operands(rng, DType.FP4E2M1, DType.FP8E5M2, True, True, shape=(1, 3, 4, 32))
    g = conv_graph(x, w, DType.FP32, DType.FP32, pad=(1, 1, 1, 1))
    want = run(g, feeds)
    with tosa_vk.load(g, backend="vulkan", device=device, host_ops=["CONV2D"]) as model:
        assert model.inputs["x_scale"] == ((1, 3, 4, 1), "FP8UE8M0")
        got = model.run(feeds)["y"]
    np.testing.assert_array_equal(got, want)

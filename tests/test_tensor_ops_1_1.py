"""TOSA 1.1's MATMUL_T, ROW_GATHER (block-scaled operands too), AVG_POOL2D_ADAPTIVE, MAX_POOL2D_ADAPTIVE and MATMUL's
1.1 rows on both backends: the reference against numpy / the 1.0 operators, Vulkan (strict) against the reference,
the ERROR_IF / REQUIRE rules. Arm's generated 1.1 tests of these operators run in tests/test_conformance_1_1.py."""

from __future__ import annotations

import re
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest
from helpers import Build, assert_same, graph_of, run_both, run_reference, ulp

from tosa_vk import Builder
from tosa_vk.errors import TosaError
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.ops import matching_types
from tosa_vk.ir.validate import validate

_NUMPY = {
    DType.INT8: np.int8,
    DType.INT16: np.int16,
    DType.INT32: np.int32,
    DType.INT64: np.int64,
    DType.BOOL: np.bool_,
    DType.FP32: np.float32,
    DType.FP16: np.float16,
    DType.BF16: ml_dtypes.bfloat16,
    DType.FP8E4M3: ml_dtypes.float8_e4m3fn,
    DType.FP8E5M2: ml_dtypes.float8_e5m2,
}

_DTYPE = {np.dtype(v): k for k, v in _NUMPY.items()}


def values(rng, shape, dtype: DType, scale=1.0) -> np.ndarray:
    if dtype == DType.BOOL:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if not dtype.is_float:
        lo, hi = dtype.int_range
        return rng.integers(lo, hi, shape, endpoint=True).astype(_NUMPY[dtype])
    return (rng.standard_normal(shape) * scale).astype(_NUMPY[dtype])


# ---- catalogue -----------------------------------------------------------------------------------------------------


def test_matmul_t_rows_are_arms_pairs():
    """Every pair of fp8e4m3 / fp8e5m2 / fp16 / bf16 / fp32 with fp32 out; bf16 out unless fp32 is in the pair or both
    are fp16; fp16 out for fp16 x fp16 only (Arm's generator, agMatmulT); int8 -> int32, int16 -> int48."""
    fp = (DType.FP8E4M3, DType.FP8E5M2, DType.FP16, DType.BF16, DType.FP32)
    for a in fp:
        for b in fp:
            outs = {r.types["out_t"] for r in matching_types("MATMUL_T", {"A_t": a, "B_t": b})}
            want = {DType.FP32}
            if DType.FP32 not in (a, b):
                want.add(DType.FP16 if (a, b) == (DType.FP16, DType.FP16) else DType.BF16)
            if (a, b) == (DType.FP16, DType.FP16):
                want.add(DType.FP16)
            assert outs == want, (a, b)
    assert [r.types["out_t"] for r in matching_types("MATMUL_T", {"A_t": DType.INT8})] == [DType.INT32]
    assert [r.types["out_t"] for r in matching_types("MATMUL_T", {"A_t": DType.INT16})] == [DType.INT48]
    assert matching_types("MATMUL_T", {"A_t": DType.INT8}, (1, 0)) == []
    for index in (DType.INT32, DType.INT64):
        for v in (DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.FP16, DType.FP32, DType.BF16):
            assert matching_types("ROW_GATHER", {"index_t": index, "in_out_t": v}), (index, v)


# ---- MATMUL_T ------------------------------------------------------------------------------------------------------


def _matmul_t(a: np.ndarray, b: np.ndarray, out_t: DType | None, b_const: bool = False, **zp) -> Build:
    def build(bb: Builder):
        x = bb.input("a", a.shape, _DTYPE[a.dtype])
        y = np.asarray(b) if b_const else bb.input("b", b.shape, _DTYPE[b.dtype])
        return bb.matmul_t(x, y, out_dtype=out_t, **zp)

    return build


def _dot_bound(a: np.ndarray, b: np.ndarray, out_t: DType, want: np.ndarray) -> np.ndarray:
    """The dot-product bound of the fp32 sums plus the output rounding."""
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).transpose(0, 2, 1)
    return 2 * a.shape[2] * 2.0**-24 * mag + ulp(out_t, want.astype(np.float64))


MATMUL_T_FLOAT = [  # (A_t, B_t, out_t)
    (DType.FP32, DType.FP32, DType.FP32),
    (DType.FP16, DType.FP16, DType.FP16),
    (DType.BF16, DType.BF16, DType.BF16),
    (DType.FP8E4M3, DType.FP8E4M3, DType.FP32),
    (DType.FP8E4M3, DType.BF16, DType.BF16),
    (DType.FP16, DType.FP8E5M2, DType.BF16),
    (DType.FP32, DType.FP16, DType.FP32),
    (DType.BF16, DType.FP8E5M2, DType.FP32),
]
# (N, H, C, W, D): matmul_fast.comp shapes (C, W % 8 == 0) and matmul.comp ones, B broadcast (D == 1) or not
MATMUL_T_SHAPES = [(2, 9, 16, 24, 2), (3, 5, 16, 8, 1), (2, 7, 9, 13, 1), (1, 4, 5, 3, 1), (3, 2, 6, 5, 3)]


@pytest.mark.parametrize("types", MATMUL_T_FLOAT, ids=lambda t: "x".join(d.name for d in t))
@pytest.mark.parametrize("shape", MATMUL_T_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_t_float(device, types, shape):
    a_t, b_t, out_t = types
    n, h, c, w, d = shape
    rng = np.random.default_rng(c * w + d)
    a, b = values(rng, (n, h, c), a_t), values(rng, (d, w, c), b_t)
    got, want = run_both(device, _matmul_t(a, b, out_t), {"a": a, "b": b})
    assert want.dtype == _NUMPY[out_t]
    # the reference against float64 numpy, B broadcast over N when D == 1
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64).transpose(0, 2, 1))
    bound = _dot_bound(a, b, out_t, exact)
    assert_same(want.astype(np.float64), exact, atol=bound)
    assert_same(got, want, atol=bound)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize(
    "types",
    [(DType.FP16, DType.FP16), (DType.FP16, DType.FP8E4M3), (DType.BF16, DType.FP8E5M2), (DType.FP32, DType.BF16)],
    ids=lambda t: "x".join(d.name for d in t),
)
def test_matmul_t_constant_b(device, d, types):
    """A constant B (weights) is transposed at load time, converted to A's type where that holds it exactly, and
    runs on matmul_fast.comp."""
    a_t, b_t = types
    rng = np.random.default_rng(d)
    a, b = values(rng, (2, 6, 32), a_t), values(rng, (d, 16, 32), b_t)
    build = _matmul_t(a, b, DType.FP32, b_const=True)
    import tosa_vk
    from tosa_vk.program import Kernel

    with tosa_vk.load(graph_of(build), backend="vulkan", device=device, strict=True) as model:
        assert [s.shader for s in model.program.steps if isinstance(s, Kernel)] == ["tensor_ops/matmul_fast"]
    got, want = run_both(device, build, {"a": a})
    assert_same(got, want, atol=_dot_bound(a, b, DType.FP32, want))


@pytest.mark.parametrize("shape", MATMUL_T_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("zps", [(0, 0), (-128, 127), (5, -3)])
def test_matmul_t_int8(device, shape, zps):
    n, h, c, w, d = shape
    rng = np.random.default_rng(c + w)
    a, b = values(rng, (n, h, c), DType.INT8), values(rng, (d, w, c), DType.INT8)
    zp = {"A_zp": np.array([zps[0]], np.int8), "B_zp": np.array([zps[1]], np.int8)}
    got, want = run_both(device, _matmul_t(a, b, None, **zp), {"a": a, "b": b})
    exact = np.matmul(a.astype(np.int64) - zps[0], (b.astype(np.int64) - zps[1]).transpose(0, 2, 1))
    assert want.dtype == np.int32 and (want == exact).all()
    assert_same(got, want)


def test_matmul_t_int16(device):
    rng = np.random.default_rng(3)
    a, b = values(rng, (2, 3, 7), DType.INT16), values(rng, (1, 5, 7), DType.INT16)
    a[0, 0, :] = -32768
    b[0, 0, :] = -32768  # sums of 2^30 products: past int32, within int48
    got, want = run_both(device, _matmul_t(a, b, None), {"a": a, "b": b})
    assert want.dtype == np.int64 and want[0, 0, 0] == 7 << 30
    assert (want == np.matmul(a.astype(np.int64), b.astype(np.int64)[0].T)).all()
    assert_same(got, want)


@pytest.mark.parametrize(
    "a_shape, b_shape, a_t, b_t, out_t, zp, rule",
    [
        ((2, 3, 4), (3, 5, 4), DType.FP32, DType.FP32, DType.FP32, {}, "D != N && D != 1"),
        ((2, 3, 4), (2, 5, 6), DType.FP32, DType.FP32, DType.FP32, {}, "same C"),
        ((2, 3, 4), (2, 5, 4), DType.FP16, DType.FP16, DType.BF16, {}, "Supported Data Types"),
        ((2, 3, 4), (2, 5, 4), DType.FP32, DType.BF16, DType.BF16, {}, "Supported Data Types"),
        ((2, 3, 4), (2, 5, 4), DType.INT8, DType.INT16, DType.INT32, {}, "Supported Data Types"),
        ((2, 3, 4), (2, 5, 4), DType.FP16, DType.FP16, DType.FP32, {"A_zp": 1.0}, "!is_same<A_t,i8_t>() && A_zp"),
        ((2, 3, 4), (2, 5, 4), DType.BF16, DType.FP8E4M3, DType.FP32, {"B_zp": 2.0}, "!is_same<B_t,i8_t>() && B_zp"),
    ],
)
def test_matmul_t_errors(a_shape, b_shape, a_t, b_t, out_t, zp, rule):
    b = Builder()
    x, y = b.input("a", a_shape, a_t), b.input("b", b_shape, b_t)
    zps = {k: np.array([v], _NUMPY[a_t if k == "A_zp" else b_t]) for k, v in zp.items()}
    with pytest.raises(TosaError, match=re.escape(rule)):
        b.output(b.matmul_t(x, y, out_dtype=out_t, out_shape=(a_shape[0], a_shape[1], b_shape[1]), **zps))
        validate(b.build())


@pytest.mark.parametrize("shape", [(2, 9, 16, 24, 1), (2, 7, 9, 13, 2)], ids=lambda s: "x".join(map(str, s)))
def test_matmul_t_epilogue(device, shape):
    """MATMUL_T + ADD (bias per column) + CLAMP + TRANSPOSE run as one kernel (the epilogue and the store map)."""
    n, h, c, w, d = shape
    rng = np.random.default_rng(w)
    a, b = values(rng, (n, h, c), DType.FP32), values(rng, (d, w, c), DType.FP32)
    bias = values(rng, (1, 1, w), DType.FP32)

    def build(bb: Builder):
        y = bb.matmul_t(bb.input("a", a.shape, DType.FP32), bb.input("b", b.shape, DType.FP32))
        y = bb.clamp(bb.add(y, bias), min_val=np.float32(-1.0), max_val=np.float32(2.0))
        return bb.transpose(y, perms=[0, 2, 1])

    import tosa_vk
    from tosa_vk.program import Kernel

    with tosa_vk.load(graph_of(build), backend="vulkan", device=device, strict=True) as model:
        shaders = [s.shader for s in model.program.steps if isinstance(s, Kernel)]
    assert len([s for s in shaders if "matmul" in s]) == 1 and "fused/elementwise" not in shaders, shaders
    assert not any("transpose" in s or "copy" in s for s in shaders[-1:]), shaders
    got, want = run_both(device, build, {"a": a, "b": b})
    assert_same(got, want, atol=_dot_bound(a, b, DType.FP32, want.transpose(0, 2, 1)).transpose(0, 2, 1) + 1e-6)


# ---- the _ADAPTIVE pools -------------------------------------------------------------------------------------------

# (input shape, kernel, stride, pad): overlapping windows (kernel > stride), windows clipped by the padding, strides
# that skip input, a window as large as the input
POOL_CASES = [
    ((1, 7, 9, 4), [3, 3], [2, 2], [1, 1, 1, 1]),
    ((2, 6, 5, 3), [3, 2], [1, 1], [2, 0, 0, 1]),
    ((1, 8, 10, 8), [2, 2], [3, 4], [0, 0, 0, 0]),
    ((1, 5, 4, 2), [5, 4], [1, 1], [0, 0, 0, 0]),
    ((1, 4, 4, 5), [4, 4], [3, 3], [3, 3, 3, 3]),
]


def _pool_graphs(op: str, shape, dtype: DType, kernel, stride, pad, **extra):
    """(the _ADAPTIVE graph, the same pool with attributes)."""

    def adaptive(b: Builder):
        x = b.input("x", shape, dtype)
        if op == "AVG_POOL2D":
            return b.avg_pool2d_adaptive(x, *extra.get("zp", ()), kernel=kernel, stride=stride, pad=pad, **extra["a"])
        return b.max_pool2d_adaptive(x, kernel=kernel, stride=stride, pad=pad, **extra["a"])

    def plain(b: Builder):
        x = b.input("x", shape, dtype)
        return b.op(op, x, *extra.get("zp", ()), kernel=kernel, stride=stride, pad=pad, **extra["a"])

    return adaptive, plain


POOL_TYPES = [DType.INT8, DType.INT16, DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3]


@pytest.mark.parametrize("dtype", POOL_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: "k{}s{}p{}".format(*("".join(map(str, v)) for v in c[1:])))
def test_avg_pool2d_adaptive(device, dtype, case):
    shape, kernel, stride, pad = case
    rng = np.random.default_rng(sum(shape))
    x = values(rng, shape, dtype)
    acc = {DType.FP32: "fp32", DType.BF16: "fp32", DType.FP16: "fp32", DType.FP8E4M3: "fp16"}.get(dtype, "int32")
    extra: dict = {"a": {"acc_type": acc}}
    if dtype == DType.INT8:
        extra["zp"] = (np.array([-7], np.int8), np.array([3], np.int8))
    adaptive, plain = _pool_graphs("AVG_POOL2D", shape, dtype, kernel, stride, pad, **extra)
    got, want = run_both(device, adaptive, {"x": x})
    assert_same(want, run_reference(graph_of(plain), {"x": x})[0], bits=True)
    # fp32 sums of at most 20 values, divided once: a few fp32 ulps of the fp64 mean, then one output rounding
    if dtype.is_float:
        assert_same(
            got, want, ulps=1, atol=kernel[0] * kernel[1] * 2.0**-22 * float(np.abs(x.astype(np.float32)).max())
        )
    else:
        assert_same(got, want)


@pytest.mark.parametrize("dtype", POOL_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: "k{}s{}p{}".format(*("".join(map(str, v)) for v in c[1:])))
@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_max_pool2d_adaptive(device, dtype, case, nan_mode):
    shape, kernel, stride, pad = case
    if not dtype.is_float and nan_mode == "IGNORE":
        pytest.skip("nan_mode applies to floating point only")
    rng = np.random.default_rng(sum(shape))
    x = values(rng, shape, dtype)
    if dtype.is_float:
        x.reshape(-1)[::7] = np.nan
    adaptive, plain = _pool_graphs("MAX_POOL2D", shape, dtype, kernel, stride, pad, a={"nan_mode": nan_mode})
    got, want = run_both(device, adaptive, {"x": x})
    assert_same(want, run_reference(graph_of(plain), {"x": x})[0], bits=True)
    assert_same(got, want)


def test_pool2d_adaptive_epilogue(device):
    """An _ADAPTIVE pool + CLAMP is one kernel (the pool's epilogue), as for the 1.0 pools."""
    rng = np.random.default_rng(1)
    x = values(rng, (1, 7, 9, 4), DType.INT8)

    def build(b: Builder):
        y = b.avg_pool2d_adaptive(b.input("x", x.shape, DType.INT8), kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1])
        return b.clamp(b.max_pool2d_adaptive(y, kernel=[2, 2], stride=[1, 1], pad=[0, 1, 0, 1]), min_val=-5, max_val=9)

    import tosa_vk
    from tosa_vk.program import Kernel

    with tosa_vk.load(graph_of(build), backend="vulkan", device=device, strict=True) as model:
        assert [s.shader for s in model.program.steps if isinstance(s, Kernel)] == ["tensor_ops/pool"] * 2
    got, want = run_both(device, build, {"x": x})
    assert_same(got, want)


@pytest.mark.parametrize(
    "shape, kernel, stride, pad, rule",
    [
        ((1, 6, 6, 1), [0, 2], [1, 1], [0, 0, 0, 0], "kernel_y < 1 || kernel_x < 1"),
        ((1, 6, 6, 1), [2, 2], [1, 0], [0, 0, 0, 0], "stride_y < 1 || stride_x < 1"),
        ((1, 6, 6, 1), [2, 2], [1, 1], [0, -1, 0, 0], "pad_top < 0"),
        ((1, 6, 6, 1), [2, 2], [1, 1], [0, 0, 2, 0], "pad_right >= kernel_x || pad_left >= kernel_x"),
        ((1, 6, 6, 1), [3, 3], [2, 2], [0, 0, 0, 0], "idiv_check"),
    ],
)
@pytest.mark.parametrize("op", ["AVG_POOL2D", "MAX_POOL2D"])
def test_pool2d_adaptive_errors(op, shape, kernel, stride, pad, rule):
    extra = {"a": {"acc_type": "fp32"} if op == "AVG_POOL2D" else {}}
    adaptive, _ = _pool_graphs(op, shape, DType.FP32, kernel, stride, pad, **extra)
    with pytest.raises(TosaError, match=re.escape(rule)):
        graph_of(adaptive)


@pytest.mark.parametrize("dtype", [DType.INT16, DType.FP16])
def test_avg_pool2d_adaptive_zero_point_int8_only(dtype):
    b = Builder()
    x = b.input("x", (1, 4, 4, 2), dtype)
    zp = np.array([1], _NUMPY[dtype])
    acc = "int32" if dtype == DType.INT16 else "fp32"
    b.output(b.avg_pool2d_adaptive(x, zp, kernel=[2, 2], stride=[2, 2], pad=[0, 0, 0, 0], acc_type=acc))
    with pytest.raises(TosaError, match=re.escape("!is_same<in_out_t,i8_t>() && input_zp != 0")):
        validate(b.build())


# ---- ROW_GATHER ----------------------------------------------------------------------------------------------------


def _row_gather(values_shape, index_shape, dtype: DType, index_t: DType, row_count: int):
    def build(b: Builder):
        v = b.input("v", values_shape, dtype)
        i = b.input("i", index_shape, index_t)
        return b.row_gather(v, i, np.array([row_count], np.int32))

    return build


@pytest.mark.parametrize("dtype", [DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.FP16,
                                   DType.BF16, DType.FP32, DType.FP8E5M2], ids=lambda t: t.name)  # fmt: skip
@pytest.mark.parametrize("index_t", [DType.INT32, DType.INT64], ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(2, 9, 5, 3, 3), (1, 4, 8, 6, 1), (3, 7, 1, 2, 7)], ids=str)
def test_row_gather(device, dtype, index_t, shape):
    """Indices at both extremes (0 and K - row_count), repeated, and row_count == K."""
    n, k, c, w, r = shape
    rng = np.random.default_rng(k * c)
    v = values(rng, (n, k, c), dtype)
    idx = rng.integers(0, k - r + 1, (n, w)).astype(_NUMPY[index_t])
    idx[:, 0] = 0
    idx[:, -1] = k - r
    got, want = run_both(device, _row_gather(v.shape, idx.shape, dtype, index_t, r), {"v": v, "i": idx})
    rows = (idx.astype(np.int64)[:, :, None] + np.arange(r)).reshape(n, w * r)
    assert_same(want, np.take_along_axis(v, rows[:, :, None], axis=1), bits=True)
    assert_same(got, want, bits=True)


@pytest.mark.parametrize("bad", [-1, 5, 2**31 - 1, -(2**31)], ids=str)
@pytest.mark.parametrize("index_t", [DType.INT32, DType.INT64], ids=lambda t: t.name)
def test_row_gather_require(bad, index_t):
    """REQUIRE(0 <= k && (k+row_count) <= K) on the reference (K = 7, row_count = 3: k = 5 is one row past)."""
    graph = graph_of(_row_gather((1, 7, 2), (1, 2), DType.FP32, index_t, 3))
    idx = np.array([[0, bad]], _NUMPY[index_t])
    with pytest.raises(TosaError, match=re.escape("REQUIRE(0 <= k && (k+row_count) <= K)")):
        run_reference(graph, {"v": np.zeros((1, 7, 2), np.float32), "i": idx})


def test_row_gather_require_int64_extremes():
    """An int64 index near its maximum must not wrap around in k + row_count."""
    graph = graph_of(_row_gather((1, 7, 2), (1, 2), DType.FP32, DType.INT64, 3))
    for bad in (2**63 - 1, 2**63 - 2, -(2**63), 2**32):
        with pytest.raises(TosaError, match="REQUIRE"):
            run_reference(graph, {"v": np.zeros((1, 7, 2), np.float32), "i": np.array([[0, bad]], np.int64)})


def test_row_gather_out_of_range_stays_in_buffer(device):
    """Out-of-range indices are unpredictable, but the kernel reads inside the values (here: rows of 1.0)."""
    graph = graph_of(_row_gather((2, 6, 3), (2, 3), DType.FP32, DType.INT64, 2))
    idx = np.array([[-1, 5, 2**40], [-(2**40), 2**31, 4]], np.int64)
    import tosa_vk

    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        got = next(iter(model.run({"v": np.ones((2, 6, 3), np.float32), "i": idx}).values()))
    assert got.shape == (2, 6, 3) and (got == 1.0).all()


def test_row_gather_row_count_error():
    with pytest.raises(TosaError, match=re.escape("ERROR_IF(row_count < 1)")):
        graph_of(_row_gather((1, 7, 2), (1, 2), DType.FP32, DType.INT32, 0))


# ---- block-scaled (MX) MATMUL_T and ROW_GATHER ------------------------------------------------------------------
# Block-scaled tensors are fed as their elements (one code a byte) and `<name>_scale` (fp8ue8m0); on Vulkan the
# operators become MATMUL_T_BLOCK_SCALED / ROW_GATHER_BLOCK_SCALED (tosa_vk/stages/passes/block_scaled.py).

_SCALED = {"scale_dtype": DType.FP8UE8M0, "block_size": 32}
_MX_NUMPY = {
    DType.FP4E2M1: ml_dtypes.float4_e2m1fn,
    DType.FP6E2M3: ml_dtypes.float6_e2m3fn,
    DType.FP6E3M2: ml_dtypes.float6_e3m2fn,
    DType.FP8E4M3: ml_dtypes.float8_e4m3fn,
    DType.FP8E5M2: ml_dtypes.float8_e5m2,
}


def _mx(rng, shape, dtype: DType, exponents=(-3, 3)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes, scales, float64 value x scale) of a random block-scaled tensor."""
    if dtype == DType.MXINT8:
        data = rng.integers(-128, 128, shape).astype(np.int8)
        real = data / 64.0
    else:
        data = (rng.standard_normal(shape) * 2).astype(_MX_NUMPY[dtype])
        real = data.astype(np.float64)
    e = rng.integers(exponents[0], exponents[1], (*shape[:-1], shape[-1] // 32), endpoint=True)
    scales = (2.0**e).astype(ml_dtypes.float8_e8m0fnu)
    return data, scales, real * np.repeat(2.0**e, 32, axis=-1)


def _mx_graph(ops, tensors, inputs, outputs):
    from tosa_vk.ir.graph import Block, Graph, Region

    return Graph(
        [Region("main", [Block("main", ops, {t.name: t for t in tensors}, inputs, outputs)])], (1, 1, 0, False)
    )


def _mx_matmul_t(a_shape, a_t, a_scaled, b_shape, b_t, b_scaled, out_t):
    from tosa_vk.ir.graph import Operator, Tensor

    a = Tensor("a", a_shape, a_t, **(_SCALED if a_scaled else {}))
    b = Tensor("b", b_shape, b_t, **(_SCALED if b_scaled else {}))
    zps = [
        Tensor(n, (1,), t, np.zeros(1, (DType.FP32 if s else t).numpy))
        for n, t, s in (
            ("a_zp", DType.FP32 if a_scaled else a_t, a_scaled),
            ("b_zp", DType.FP32 if b_scaled else b_t, b_scaled),
        )
    ]
    out = Tensor("out", (a_shape[0], a_shape[1], b_shape[1]), out_t)
    ops = [Operator("CONST", [], ["a_zp"]), Operator("CONST", [], ["b_zp"])]
    ops.append(Operator("MATMUL_T", ["a", "b", "a_zp", "b_zp"], ["out"]))
    return _mx_graph(ops, [a, b, *zps, out], ["a", "b"], ["out"])


@pytest.mark.parametrize(
    "case",
    [  # (A_t, A block-scaled, B_t, B block-scaled, out_t, D)
        (DType.FP4E2M1, True, DType.FP16, False, DType.FP32, 2),
        (DType.FP16, False, DType.MXINT8, True, DType.BF16, 1),
        (DType.FP6E3M2, True, DType.FP8E4M3, True, DType.BF16, 2),
        (DType.FP32, False, DType.FP6E2M3, True, DType.FP32, 1),
        (DType.FP8E5M2, True, DType.BF16, False, DType.FP32, 1),
    ],
    ids=lambda c: f"{c[0].name}{'-bs' if c[1] else ''}x{c[2].name}{'-bs' if c[3] else ''}-{c[4].name}-D{c[5]}",
)
def test_matmul_t_block_scaled_operands(device, case):
    """A block-scaled A and / or B with a plain or block-scaled other operand, B broadcast (D == 1) or not: both
    backends against float64 value x scale products."""
    a_t, a_bs, b_t, b_bs, out_t, d = case
    n, h, c, w = 2, 3, 64, 5
    rng = np.random.default_rng(7)
    feeds, real = {}, {}
    for name, t, bs, shape in (("a", a_t, a_bs, (n, h, c)), ("b", b_t, b_bs, (d, w, c))):
        if bs:
            feeds[name], feeds[f"{name}_scale"], real[name] = _mx(rng, shape, t)
        else:
            feeds[name] = values(rng, shape, t)
            real[name] = feeds[name].astype(np.float64)
    graph = _mx_matmul_t((n, h, c), a_t, a_bs, (d, w, c), b_t, b_bs, out_t)
    got, want = run_both(device, graph, feeds)
    exact = np.matmul(real["a"], real["b"].transpose(0, 2, 1))
    bound = 2 * c * 2.0**-24 * (np.abs(real["a"]) @ np.abs(real["b"]).transpose(0, 2, 1)) + ulp(out_t, exact)
    assert_same(want.astype(np.float64), exact, atol=bound)
    assert_same(got.astype(np.float64), exact, atol=2 * bound)


def test_matmul_t_block_scaled_constant_b(device):
    """A constant block-scaled B (CONST: elements and scales in the file) with a plain A."""
    from tosa_vk.ir.graph import Operator

    rng = np.random.default_rng(11)
    b, b_s, b_real = _mx(rng, (1, 4, 32), DType.FP4E2M1)
    a = values(rng, (2, 3, 32), DType.BF16)
    graph = _mx_matmul_t((2, 3, 32), DType.BF16, False, (1, 4, 32), DType.FP4E2M1, True, DType.FP32)
    main = graph.main
    main.tensors["b"] = replace(main.tensors["b"], data=b, scale_data=b_s)
    main.operators.insert(0, Operator("CONST", [], ["b"]))
    main.inputs.remove("b")
    got, want = run_both(device, graph, {"a": a})
    exact = np.matmul(a.astype(np.float64), b_real.transpose(0, 2, 1))
    assert_same(want.astype(np.float64), exact, atol=1e-5 * np.abs(exact).max())
    assert_same(got, want, atol=1e-5 * np.abs(exact).max())


def test_matmul_t_block_scaled_nan_scale(device):
    """A NaN scale (0xFF) makes every value of its block NaN: the dot products that read it are NaN, the others
    are numbers."""
    rng = np.random.default_rng(3)
    a, a_s, _ = _mx(rng, (1, 2, 64), DType.FP8E4M3)
    b = values(rng, (1, 3, 64), DType.FP16)
    a_s.view(np.uint8)[0, 1, 1] = 0xFF  # row h = 1, second block
    graph = _mx_matmul_t((1, 2, 64), DType.FP8E4M3, True, (1, 3, 64), DType.FP16, False, DType.FP32)
    got, want = run_both(device, graph, {"a": a, "a_scale": a_s, "b": b})
    for out in (got, want):
        assert np.isnan(out[0, 1]).all() and np.isfinite(out[0, 0]).all()


def test_matmul_t_block_scaled_needs_1_1_and_c_in_blocks():
    from tosa_vk.ir.graph import Graph

    graph = _mx_matmul_t((1, 2, 32), DType.MXINT8, True, (1, 3, 32), DType.FP32, False, DType.FP32)
    validate(graph)
    with pytest.raises(TosaError):
        validate(Graph(graph.regions, (1, 0, 0, False)))


def test_row_gather_block_scaled_values(device):
    """ROW_GATHER of block-scaled values: each gathered row keeps its codes and its scales (bit-exact, both
    backends), row_count consecutive rows from each index."""
    from tosa_vk.ir.graph import Operator, Tensor

    rng = np.random.default_rng(5)
    data, scales, _ = _mx(rng, (2, 6, 64), DType.FP6E2M3)
    scales.view(np.uint8)[0, 2, 0] = 0xFF  # a NaN scale is moved like any other
    idx = np.array([[4, 0, 2], [1, 1, 3]], np.int32)
    tensors = [
        Tensor("v", (2, 6, 64), DType.FP6E2M3, **_SCALED),
        Tensor("i", (2, 3), DType.INT32),
        Tensor("r", (1,), DType.INT32, np.array([2], np.int32)),
        Tensor("out", (2, 6, 64), DType.FP6E2M3, **_SCALED),
    ]
    ops = [Operator("CONST", [], ["r"]), Operator("ROW_GATHER", ["v", "i", "r"], ["out"])]
    graph = _mx_graph(ops, tensors, ["v", "i"], ["out"])
    got, want = run_both(device, graph, {"v": data, "v_scale": scales, "i": idx})
    rows = (idx[:, :, None] + np.arange(2)).reshape(2, 6)
    for out, out_scale in (got, want):
        assert out.view(np.uint8).tolist() == np.take_along_axis(data, rows[..., None], 1).view(np.uint8).tolist()
        assert (
            out_scale.view(np.uint8).tolist() == np.take_along_axis(scales, rows[..., None], 1).view(np.uint8).tolist()
        )


# ---- MATMUL's 1.1 rows ----------------------------------------------------------------------------------------------


_E4, _E5 = DType.FP8E4M3, DType.FP8E5M2
MATMUL_1_1 = [(_E4, _E5, DType.FP16), (_E5, _E4, DType.FP16), (_E4, _E5, DType.FP32), (_E4, _E4, DType.FP32)]


@pytest.mark.parametrize("types", MATMUL_1_1, ids=lambda t: "x".join(d.name for d in t))
@pytest.mark.parametrize("shape", [(2, 5, 16, 8), (1, 3, 7, 5)], ids=lambda s: "x".join(map(str, s)))
def test_matmul_fp8_rows_1_1(device, types, shape):
    """fp8 x fp8 with fp32 accumulate and the mixed fp8 pairs (TOSA 1.1), on matmul_fast.comp / matmul.comp shapes."""
    from tosa_vk.ir.graph import Graph, Operator, Tensor

    n, h, c, w = shape
    a_t, b_t, out_t = types
    rng = np.random.default_rng(c)
    a, b = values(rng, (n, h, c), a_t), values(rng, (n, c, w), b_t)
    tensors = [
        Tensor("a", (n, h, c), a_t),
        Tensor("b", (n, c, w), b_t),
        Tensor("a_zp", (1,), a_t, np.zeros(1, a_t.numpy)),
        Tensor("b_zp", (1,), b_t, np.zeros(1, b_t.numpy)),
        Tensor("out", (n, h, w), out_t),
    ]
    ops = [
        Operator("CONST", [], ["a_zp"]),
        Operator("CONST", [], ["b_zp"]),
        Operator("MATMUL", ["a", "b", "a_zp", "b_zp"], ["out"]),
    ]
    graph = _mx_graph(ops, tensors, ["a", "b"], ["out"])
    got, want = run_both(device, graph, {"a": a, "b": b})
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    bound = 2 * c * 2.0**-24 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + ulp(out_t, exact)
    assert_same(want.astype(np.float64), exact, atol=bound)
    assert_same(got, want, atol=bound)
    with pytest.raises(TosaError):  # rows TOSA 1.0 does not have
        validate(Graph(graph.regions, (1, 0, 0, False)))

"""Vulkan kernels of the reductions (spec 2.9), ARGMAX (2.3.1) and RESIZE (2.12) against the reference backend:
every dtype of their type tables, every axis, NaN / infinity / signed-zero handling, ties, and grids large enough
to spill into y (more than 65535 * 64 invocations)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import compare, run_both, with_specials

from tosa_vk.ir.dtype import DType

SPILL = 65535 * 64 + 1000  # invocations beyond maxComputeWorkGroupCount.x groups of 64


def float_data(rng, shape, dtype: DType, specials=True):
    x = rng.standard_normal(shape) * 4
    if specials:
        with_specials(x, rng, every=20)
    return x.astype(dtype.numpy)


FLOATS = [DType.FP32, DType.FP16, DType.BF16]
INTS = [DType.INT8, DType.INT16, DType.INT32]


# ---- REDUCE_ALL / REDUCE_ANY ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["reduce_all", "reduce_any"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reduce_bool(device, op, axis):
    rng = np.random.default_rng(axis)
    x = rng.random((5, 7, 3)) < (0.9 if op == "reduce_all" else 0.1)
    _, want = compare(device, lambda b: b.output(getattr(b, op)(b.input("x", x.shape, "bool"), axis=axis)), {"x": x})
    assert want.any() and not want.all()


# ---- REDUCE_MAX / REDUCE_MIN ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
@pytest.mark.parametrize("dtype", INTS)
def test_reduce_extreme_int(device, op, dtype):
    info = np.iinfo(dtype.numpy)
    rng = np.random.default_rng(1)
    x = rng.integers(info.min, info.max, (4, 9, 6), endpoint=True).astype(dtype.numpy)
    x[0, :, 0] = info.min
    x[1, :, 1] = info.max
    for axis in range(3):
        compare(device, lambda b: b.output(getattr(b, op)(b.input("x", x.shape, dtype), axis=axis)), {"x": x})


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_reduce_extreme_float(device, op, dtype, nan_mode):
    rng = np.random.default_rng(2)
    x = float_data(rng, (6, 5, 8), dtype)
    x[0, :, 0] = np.nan  # a whole axis of NaN: NaN in both modes
    x[1, :, 1] = np.inf if op == "reduce_max" else -np.inf
    x[2, :, 2] = -np.inf if op == "reduce_max" else np.inf  # the initial value of PROPAGATE is the answer
    for axis in range(3):
        compare(
            device,
            lambda b: b.output(getattr(b, op)(b.input("x", x.shape, dtype), axis=axis, nan_mode=nan_mode)),
            {"x": x},
        )


# ---- REDUCE_SUM / REDUCE_PRODUCT -----------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reduce_sum_int32(device, axis):
    rng = np.random.default_rng(3)
    x = rng.integers(-(1 << 24), 1 << 24, (7, 13, 5)).astype(np.int32)
    compare(device, lambda b: b.output(b.reduce_sum(b.input("x", x.shape, "int32"), axis=axis)), {"x": x})


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reduce_sum_float(device, dtype, axis):
    rng = np.random.default_rng(4)
    x = float_data(rng, (9, 31, 4), dtype, specials=False)
    x[0, 0, 0] = np.nan
    x[1, 1, 1] = np.inf
    x[2, 2, 2], x[2, 3, 2] = np.inf, -np.inf  # inf - inf = NaN along axis 1
    # Both round the fp64 sum once; only the fp64 summation order may differ.
    compare(
        device,
        lambda b: b.output(b.reduce_sum(b.input("x", x.shape, dtype), axis=axis)),
        {"x": x},
        rtol=1e-6 if dtype == DType.FP32 else 0.0,
    )


def test_reduce_sum_rounds_once(device):
    """fp16: 2048 + 1 + 2^-20 is just above the tie 2048 + 1, so it must round up to 2050 (rounding via fp32
    first would drop the 2^-20 and round the tie to even, 2048)."""
    x = np.array([2048, 1, 2.0**-20, 0], np.float16)  # 2^-20: an fp16 subnormal
    got, want = run_both(device, lambda b: b.output(b.reduce_sum(b.input("x", x.shape, "fp16"), axis=0)), {"x": x})
    assert want[0] == 2050 and got[0] == 2050


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [0, 1])
def test_reduce_product(device, dtype, axis):
    rng = np.random.default_rng(5)
    x = (rng.choice([-1, 1], (12, 10)) * rng.uniform(0.5, 2.0, (12, 10))).astype(dtype.numpy)
    x[0, 0] = np.nan
    x[1, 1] = np.inf
    x[2, 2], x[2, 3] = np.inf, 0.0  # inf * 0 = NaN
    compare(
        device,
        lambda b: b.output(b.reduce_product(b.input("x", x.shape, dtype), axis=axis)),
        {"x": x},
        rtol=1e-6 if dtype == DType.FP32 else 0.0,
    )


def test_reduce_spills_into_y(device):
    rng = np.random.default_rng(6)
    x = rng.integers(-1000, 1000, (SPILL, 3)).astype(np.int32)
    compare(device, lambda b: b.output(b.reduce_sum(b.input("x", x.shape, "int32"), axis=1)), {"x": x})
    compare(device, lambda b: b.output(b.reduce_max(b.input("x", x.shape, "int32"), axis=1)), {"x": x})


@pytest.mark.parametrize(
    "op,dtype",
    [
        ("reduce_sum", DType.INT32),
        ("reduce_sum", DType.FP32),
        ("reduce_sum", DType.FP16),
        ("reduce_product", DType.BF16),
        ("reduce_max", DType.INT8),
        ("reduce_min", DType.FP16),
        ("reduce_all", DType.BOOL),
        ("reduce_any", DType.BOOL),
    ],
)
@pytest.mark.parametrize("shape,axis", [((100_003,), 0), ((3, 40_000, 2), 1)])
def test_reduce_long_axis_in_passes(device, op, dtype, shape, axis):
    """Axes longer than lavapipe's loop budget (65535 iterations per invocation) and than one pass's chunk."""
    rng = np.random.default_rng(12)
    if dtype == DType.BOOL:
        x = rng.random(shape) < (0.99999 if op == "reduce_all" else 0.00001)
    elif dtype.is_float:
        x = rng.uniform(0.9999, 1.0001, shape) if op == "reduce_product" else rng.standard_normal(shape)
        x = x.astype(dtype.numpy)
    else:
        x = rng.integers(-100, 100, shape).astype(dtype.numpy)
    kw = {"nan_mode": "IGNORE"} if op in ("reduce_max", "reduce_min") else {}
    compare(
        device,
        lambda b: b.output(getattr(b, op)(b.input("x", shape, dtype), axis=axis, **kw)),
        {"x": x},
        rtol={DType.FP32: 1e-6, DType.FP16: 1e-3, DType.BF16: 1e-2}.get(dtype, 0.0),
    )


def test_reduce_long_axis_nan_modes(device):
    """A NaN in a late chunk, and whole chunks of NaN, through the partial results."""
    x = np.random.default_rng(13).standard_normal((2, 90_000)).astype(np.float32)
    x[0, 80_000] = np.nan
    x[1, :60_000] = np.nan
    for op in ("reduce_max", "reduce_min"):
        for mode in ("PROPAGATE", "IGNORE"):
            compare(
                device,
                lambda b: b.output(getattr(b, op)(b.input("x", x.shape, "fp32"), axis=1, nan_mode=mode)),
                {"x": x},
            )


# ---- ARGMAX --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [DType.INT8, DType.INT16])
def test_argmax_int_first_of_ties(device, dtype):
    rng = np.random.default_rng(7)
    x = rng.integers(-3, 3, (6, 11, 5)).astype(dtype.numpy)  # many ties
    x[0, :, 0] = np.iinfo(dtype.numpy).min
    for axis in range(3):
        compare(device, lambda b: b.output(b.argmax(b.input("x", x.shape, dtype), axis=axis)), {"x": x})


@pytest.mark.parametrize("dtype", FLOATS + [DType.FP8E4M3, DType.FP8E5M2])
@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_argmax_float(device, dtype, nan_mode):
    rng = np.random.default_rng(8)
    x = float_data(rng, (5, 9, 7), dtype)
    if dtype == DType.FP8E4M3:  # no infinities in e4m3fn: use its largest value
        x = np.where(np.isinf(x.astype(np.float32)), np.sign(x.astype(np.float32)) * 448, x).astype(dtype.numpy)
    x[0, :, 0] = np.nan  # all NaN: index 0
    x[1, :, 1] = -0.0
    x[1, 4, 1] = 0.0  # -0 == +0: the first one (index 0)
    x[2, :, 2] = -np.inf if dtype != DType.FP8E4M3 else -448
    x[3, :, 3] = np.arange(9)[::-1]
    x[3, 0, 3] = np.nan  # NaN first, then a maximum
    for axis in range(3):
        compare(
            device, lambda b: b.output(b.argmax(b.input("x", x.shape, dtype), axis=axis, nan_mode=nan_mode)), {"x": x}
        )


@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_argmax_long_axis_in_passes(device, nan_mode):
    """First index of the maximum across chunks and passes: ties in several chunks, NaN runs, all-NaN rows."""
    rng = np.random.default_rng(14)
    x = rng.integers(-50, 50, (5, 150_000)).astype(np.float32)
    x[0, [7_000, 70_000, 140_000]] = 1000.0  # tie across chunks: index 7000
    x[1, 100_000] = np.nan  # PROPAGATE: 100000
    x[1, 120_000] = np.nan
    x[2, :] = np.nan  # all NaN: 0
    x[3, :130_000] = np.nan  # IGNORE: the maximum of the tail
    x[4, 149_999] = np.inf
    compare(device, lambda b: b.output(b.argmax(b.input("x", x.shape, "fp32"), axis=1, nan_mode=nan_mode)), {"x": x})
    i16 = rng.integers(-5, 5, (200_001, 2)).astype(np.int16)
    compare(device, lambda b: b.output(b.argmax(b.input("x", i16.shape, "int16"), axis=0)), {"x": i16})


def test_argmax_spills_into_y(device):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, SPILL)).astype(np.float16)
    compare(device, lambda b: b.output(b.argmax(b.input("x", x.shape, "fp16"), axis=0)), {"x": x})


# ---- RESIZE --------------------------------------------------------------------------------------------------------

# (IH, IW, scale [y_n, y_d, x_n, x_d], offset [y, x], border [y, x]) with the output size exactly divisible
GEOMETRIES = [
    (7, 9, [4, 3, 5, 2], [-1, 2], [2, 0]),  # up-scale, negative offset
    (15, 6, [3, 7, 2, 1], [0, -2], [0, 1]),  # down-scale in y
    (5, 5, [16, 2, 16, 2], [-7, -7], [7, 7]),  # half-pixel centres
    (9, 4, [2048, 4095, 1, 1], [2047, 0], [-2052, 0]),  # extreme scale_n
]


def _resize_graph(dtype, out_dtype, mode, ih, iw, scale, offset, border, n=2, c=3):
    def build(b):
        x = b.input("x", (n, ih, iw, c), dtype)
        b.output(b.resize(x, scale, offset, border, mode=mode, out_dtype=out_dtype))

    return build


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{g[0]}x{g[1]}_sc{'x'.join(map(str, g[2]))}")
@pytest.mark.parametrize(
    "dtype,out_dtype,mode",
    [
        ("int8", "int8", "NEAREST"),
        ("int16", "int16", "NEAREST"),
        ("int8", "int32", "BILINEAR"),
        ("int16", "int48", "BILINEAR"),
        ("fp32", "fp32", "NEAREST"),
        ("fp16", "fp16", "NEAREST"),
        ("bf16", "bf16", "NEAREST"),
        ("fp32", "fp32", "BILINEAR"),
        ("fp16", "fp16", "BILINEAR"),
        ("bf16", "bf16", "BILINEAR"),
    ],
)
def test_resize(device, geometry, dtype, out_dtype, mode):
    ih, iw, scale, offset, border = geometry
    d = DType.of(dtype)
    rng = np.random.default_rng(10)
    if d.is_float:
        x = (rng.standard_normal((2, ih, iw, 3)) * 100).astype(d.numpy)
    else:
        info = np.iinfo(d.numpy)
        x = rng.integers(info.min, info.max, (2, ih, iw, 3), endpoint=True).astype(d.numpy)
        x.reshape(-1)[:4] = [info.min, info.max, info.min, info.max]
    tol = 0.0
    if d.is_float and mode == "BILINEAR":
        # spec bound: max(|input|) * 0.006 at worst; fp32 / fp16 / bf16 arithmetic is far tighter
        tol = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 2e-2}[dtype] * float(np.abs(x.astype(np.float32)).max())
    compare(device, _resize_graph(dtype, out_dtype, mode, ih, iw, scale, offset, border), {"x": x}, atol=tol)


def test_resize_bilinear_specials(device):
    """inf / NaN samples: a zero weight times inf is NaN, as in the pseudocode's four terms."""
    x = np.arange(2 * 4 * 4 * 1, dtype=np.float32).reshape(2, 4, 4, 1)
    x[0, 1, 1, 0], x[1, 2, 2, 0] = np.inf, np.nan
    compare(
        device, _resize_graph("fp32", "fp32", "BILINEAR", 4, 4, [2, 1, 2, 1], [0, 0], [0, 0], c=1), {"x": x}, rtol=1e-6
    )


def test_resize_spills_into_y(device):
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (1, 80, 1025, 2)).astype(np.int8)
    # 16x in y, 2x in x: OH = 79 * 16 + 1, OW = 1024 * 2 + 1, 1265 * 2049 * 2 outputs
    build = _resize_graph("int8", "int32", "BILINEAR", 80, 1025, [32, 2, 4, 2], [0, 0], [0, 0], n=1, c=2)
    got, _ = compare(device, build, {"x": x})
    assert got.size > SPILL

"""Vulkan kernels of the element-wise unary (spec 2.6) and activation (spec 2.4) operators against the reference
backend: integers and sign-bit / clamp operations bit-exactly, transcendentals within one ulp (the fp64 helpers of
shaders/include/unary.glsl round correctly except in near-ties), special values exactly."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, compare, op_graph, run_both, ulp_distance

BIG = 65535 * 64 + 77  # more workgroups than maxComputeWorkGroupCount.x: the grid spills into y
FLOATS = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.0, 100.0, -100.0, 1e-3, 1e30, -1e30]


def float_data(np_t, n=4096, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore"):
        wide = rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-6, 6, n)
        return np.concatenate([np.array(SPECIALS), wide, rng.uniform(-8, 8, n)]).astype(np_t)


# -- integers: bit-exact --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,np_t", [("int8", np.int8), ("int16", np.int16), ("int32", np.int32)])
def test_bitwise_not(device, dtype, np_t):
    info = np.iinfo(np_t)
    x = np.array([0, 1, -1, info.min, info.max, 5, -77], np_t)
    got, _ = compare(device, op_graph("BITWISE_NOT", [x.shape], dtype), {"x": x})
    assert np.array_equal(got, ~x)


def test_abs_clz_int32(device):
    x = np.array([0, 1, -1, 2, 3, 0x7FFFFFFF, -0x7FFFFFFF, 1 << 30, 12345, -54321, 255, 256], np.int32)
    compare(device, op_graph("ABS", [x.shape], "int32"), {"x": x})
    x = np.append(x, np.int32(-0x80000000))
    got, _ = compare(device, op_graph("CLZ", [x.shape], "int32"), {"x": x})
    assert got[:4].tolist() == [32, 31, 0, 30]


def test_logical_not(device):
    x = np.array([True, False, False, True, True])
    got, _ = compare(device, op_graph("LOGICAL_NOT", [x.shape], "bool"), {"x": x})
    assert np.array_equal(got, ~x)


@pytest.mark.parametrize(
    "dtype,np_t,zps",
    [
        ("int8", np.int8, [(0, 0), (-128, 127), (5, -3), (127, -128)]),
        ("int16", np.int16, [(0, 0)]),
        ("int32", np.int32, [(0, 0)]),
    ],
)
def test_negate_int_zero_points_saturate(device, dtype, np_t, zps):
    info = np.iinfo(np_t)
    x = np.array([0, 1, -1, info.min + 1, info.max, info.min if np_t != np.int32 else 0, 42, -42], np_t)
    for zp1, zp2 in zps:
        compare(device, op_graph("NEGATE", [x.shape], dtype, np.array([zp1], np_t), np.array([zp2], np_t)), {"x": x})


def test_negate_zero_points_as_graph_inputs(device):
    x = np.array([1, 2, -128, 127, 0], np.int8)
    feeds = {"x": x, "z1": np.array([3], np.int8), "z2": np.array([-2], np.int8)}
    got, _ = compare(
        device,
        lambda b: b.negate(b.input("x", x.shape, "int8"), b.input("z1", (1,), "int8"), b.input("z2", (1,), "int8")),
        feeds,
    )
    assert got.tolist() == [0, -1, 127, -126, 1]


def test_negate_int8_big_grid(device):
    x = np.random.default_rng(1).integers(-128, 128, BIG).astype(np.int8)
    compare(device, op_graph("NEGATE", [x.shape], "int8", np.array([3], np.int8), np.array([-7], np.int8)), {"x": x})


@pytest.mark.parametrize("dtype,np_t", [("int8", np.int8), ("int16", np.int16)])
def test_clamp_int(device, dtype, np_t):
    info = np.iinfo(np_t)
    x = np.arange(info.min, info.max + 1, 7 if np_t == np.int8 else 997).astype(np_t).reshape(1, -1)
    for lo, hi in ((info.min, info.max), (-5, 17), (3, 3), (info.min, 0)):
        compare(device, op_graph("CLAMP", [x.shape], dtype, min_val=lo, max_val=hi), {"x": x})


# -- floats: sign-bit operations and CLAMP are exact for every encoding -------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["abs", "negate", "ceil", "floor"])
def test_exact_float_ops(device, dtype, op):
    np_t = FLOATS[dtype]
    x = float_data(np_t)
    tiny = np.array([1e-40, -1e-40, 1e-45] if dtype != "fp16" else [6e-8, -6e-8], np.float32).astype(np_t)
    x = np.concatenate([x, tiny])  # subnormals
    zero_points = [np.zeros(1, np_t)] * 2 if op == "negate" else []
    # sign-bit operations keep every bit (NaN payloads too); CEIL / FLOOR give the same values (any NaN)
    compare(device, op_graph(op.upper(), [x.shape], dtype, *zero_points), {"x": x}, bits=op in ("abs", "negate"))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["PROPAGATE", "IGNORE"])
def test_clamp_float_nan_mode(device, dtype, mode):
    np_t = FLOATS[dtype]
    x = float_data(np_t, n=256)[:512].reshape(2, -1)
    for lo, hi in ((-1.5, 2.0), (0.0, 0.0), (-np.inf, np.inf), (-3e3, -2.0)):
        got, _ = compare(device, op_graph("CLAMP", [x.shape], dtype, min_val=lo, max_val=hi, nan_mode=mode), {"x": x})
        if mode == "IGNORE":
            assert not np.isnan(got.astype(np.float32)).any()


# -- transcendentals: within one ulp of the correctly rounded result, specials exact -------------------------

TRANSCENDENTAL = ["exp", "log", "sin", "cos", "reciprocal", "rsqrt", "erf", "sigmoid", "tanh"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", TRANSCENDENTAL)
def test_transcendental(device, dtype, op):
    np_t = FLOATS[dtype]
    x = float_data(np_t, seed=3)
    if op in ("sin", "cos"):  # the spec's bound grows with |x|: compare where the reduction is exact
        x = x[~(np.abs(x.astype(np.float64)) > 1e5)]
    got, want = compare(device, op_graph(op.upper(), [x.shape], dtype), {"x": x}, ulps=1)
    d = ulp_distance(got, want)
    if dtype == "fp32":
        assert np.mean(d == 0) > 0.999
    special = np.isin(x.astype(np.float64), [0.0, np.inf, -np.inf]) | np.isnan(x.astype(np.float64))
    assert np.all(d[special] == 0)


def test_special_values_fp32(device):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0], np.float32)
    expect = {
        "exp": [1, 1, np.inf, 0, np.nan, np.exp(-1.0)],
        "log": [-np.inf, -np.inf, np.inf, np.nan, np.nan, np.nan],
        "sin": [0.0, -0.0, np.nan, np.nan, np.nan, np.sin(-1.0)],
        "cos": [1, 1, np.nan, np.nan, np.nan, np.cos(-1.0)],
        "reciprocal": [np.inf, -np.inf, 0.0, -0.0, np.nan, -1.0],
        "rsqrt": [np.inf, -np.inf, 0.0, np.nan, np.nan, np.nan],
        "erf": [0.0, -0.0, 1, -1, np.nan, -0.8427007929497149],
        "sigmoid": [0.5, 0.5, 1, 0, np.nan, 1 / (1 + np.e)],
        "tanh": [0.0, -0.0, 1, -1, np.nan, np.tanh(-1.0)],
    }
    for op, values in expect.items():
        got, _ = run_both(device, op_graph(op.upper(), [x.shape], "fp32"), {"x": x})
        assert_same(got, np.array(values, np.float32))  # the correctly rounded values (any NaN, either zero)


def test_big_grid_and_scalar(device):
    x = np.random.default_rng(2).uniform(-10, 10, BIG).astype(np.float16)
    compare(device, op_graph("SIGMOID", [x.shape], "fp16"), {"x": x}, ulps=1)
    s = np.array(0.75, np.float32)  # rank 0
    got, _ = compare(device, op_graph("TANH", [s.shape], "fp32"), {"x": s})
    assert got.shape == ()

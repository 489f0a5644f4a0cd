"""Vulkan kernels of the element-wise binary, ternary and comparison chapters (spec 2.5, 2.7, 2.8) against the
reference backend: integers and bools bit-exact, floats bit-exact where the result is correctly rounded."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, compare, edge_ints, op_graph, run_both

from tosa_vk import Builder

BIG = 65535 * 64 + 1003  # past the x limit of a 1-D grid (the y-spill of flat_index()), odd
BIG4 = 65535 * 64 * 4 + 1003  # the same for kernels doing 4 elements per invocation (VEC4)
INT_TYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32}
FLOAT_TYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}


# ---- bitwise, shifts, INTDIV, MUL, TABLE: bit-exact integers ---------------------------------------------------


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("op", ["BITWISE_AND", "BITWISE_OR", "BITWISE_XOR"])
def test_bitwise_broadcast(device, op, dtype):
    rng = np.random.default_rng(1)
    nt = INT_TYPES[dtype]
    graph = op_graph(op, [(3, 1, 20), (1, 5, 20)], dtype)
    compare(device, graph, {"x": edge_ints(rng, nt, (3, 1, 20)), "y": edge_ints(rng, nt, (1, 5, 20))})


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize(
    "op,attrs",
    [
        ("ARITHMETIC_RIGHT_SHIFT", {"round": False}),
        ("ARITHMETIC_RIGHT_SHIFT", {"round": True}),
        ("LOGICAL_LEFT_SHIFT", {}),
        ("LOGICAL_RIGHT_SHIFT", {}),
    ],
)
def test_shifts_every_amount(device, op, attrs, dtype):
    rng = np.random.default_rng(2)
    nt = INT_TYPES[dtype]
    bits = np.iinfo(nt).bits
    values = edge_ints(rng, nt, (16, 1))
    shifts = np.arange(bits, dtype=nt).reshape(1, bits)  # REQUIRE(0 <= value2 <= bits - 1)
    graph = op_graph(op, [(16, 1), (1, bits)], dtype, **attrs)
    compare(device, graph, {"x": values, "y": shifts})


def test_intdiv_truncates_toward_zero(device):
    a = np.array([7, -7, 7, -7, 2**31 - 1, -(2**31), 0, 1, -1, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, 7, 5, -1, 3, 2**31 - 1], np.int32)
    got, _ = compare(device, op_graph("INTDIV", [(10,), (10,)], "int32"), {"x": a, "y": b})
    assert got.tolist()[:4] == [3, -3, -3, 3]


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_mul_int_widens_to_int32(device, dtype):
    rng = np.random.default_rng(3)
    nt = INT_TYPES[dtype]
    graph = op_graph("MUL", [(4, 33), (1, 33)], dtype, np.array([0], np.int8))
    got, _ = compare(device, graph, {"x": edge_ints(rng, nt, (4, 33)), "y": edge_ints(rng, nt, (1, 33))})
    assert got.dtype == np.int32


def _mul_operands(rng, shift, n):
    """int32 pairs whose rounded, shifted product fits int32 (REQUIRE), edge values included."""
    a, b = edge_ints(rng, np.int32, (n,)).astype(np.int64), edge_ints(rng, np.int32, (n,))[::-1].astype(np.int64)
    if shift:
        r = (a * b + (1 << (shift - 1))) >> shift
        ok = (r >= -(2**31)) & (r < 2**31)
        a, b = np.where(ok, a, 3), np.where(ok, b, -5)
    return a.astype(np.int32), b.astype(np.int32)


@pytest.mark.parametrize("shift", [0, 1, 15, 31, 32, 63])
def test_mul_int32_constant_shift(device, shift):
    a, b = _mul_operands(np.random.default_rng(shift), shift, 200)
    graph = op_graph("MUL", [(200,), (200,)], "int32", np.array([shift], np.int8))
    compare(device, graph, {"x": a, "y": b})


def test_mul_int32_runtime_shift(device):
    bld = Builder()
    x, y, s = bld.input("x", (200,), "int32"), bld.input("y", (200,), "int32"), bld.input("s", (1,), "int8")
    bld.output(bld.mul(x, y, s))
    graph = bld.build()
    for shift in (0, 7, 40):
        a, b = _mul_operands(np.random.default_rng(shift), shift, 200)
        compare(device, graph, {"x": a, "y": b, "s": np.array([shift], np.int8)})


@pytest.mark.parametrize("dtype", sorted(INT_TYPES.keys() - {"int32"}))
@pytest.mark.parametrize("const_table", [True, False])
def test_table(device, dtype, const_table):
    rng = np.random.default_rng(4)
    nt = INT_TYPES[dtype]
    size = 256 if dtype == "int8" else 513
    if dtype == "int8":
        table = rng.integers(-128, 128, size).astype(np.int8)
    else:  # REQUIRE: |table[i + 1] - table[i]| fits int16
        table = np.clip(np.cumsum(rng.integers(-3000, 3000, size)), -32768, 32767).astype(np.int16)
    values = np.arange(np.iinfo(nt).min, np.iinfo(nt).max + 1).astype(nt).reshape(-1, 64)
    bld = Builder()
    x = bld.input("x", values.shape, dtype)
    t = bld.const(table, dtype) if const_table else bld.input("t", (size,), dtype)
    bld.output(bld.table(x, t))
    feeds = {"x": values} if const_table else {"x": values, "t": table}
    compare(device, bld.build(), feeds)


@pytest.mark.parametrize(
    "shape_a,shape_b",
    [
        ((5, 7), (5, 7)),
        ((2, 3, 8), (2, 3, 8)),
        ((5, 1), (1, 1)),
        ((1, 1, 1), (3, 4, 5)),
        ((6, 8), (1, 8)),
        ((6, 8), (6, 1)),
        ((2, 1, 3, 4), (1, 5, 1, 4)),
        ((2, 1, 3, 4), (2, 5, 3, 1)),
        ((7, 1, 9), (1, 2, 1)),
        ((), ()),
    ],
)
def test_broadcast_layouts(device, shape_a, shape_b):
    """Every kernel path: same shapes, scalars, rows read as 4-vectors or splat, general broadcasting, rank 0."""
    rng = np.random.default_rng(10)
    a, b = edge_ints(rng, np.int32, shape_a), edge_ints(rng, np.int32, shape_b)
    compare(device, op_graph("BITWISE_XOR", [shape_a, shape_b], "int32"), {"x": a, "y": b})
    compare(device, op_graph("BITWISE_XOR", [shape_b, shape_a], "int32"), {"x": b, "y": a})


# ---- floating point: MUL / POW, special values ----------------------------------------------------------------

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0e38, 1e-40, 65504.0], np.float64)


def specials(nt, shape):
    with np.errstate(over="ignore"):  # 3e38 -> inf in fp16
        return SPECIALS.reshape(shape).astype(nt)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"])
def test_float_specials_bit_exact(device, op, dtype):
    nt = FLOAT_TYPES[dtype]
    a, b = specials(nt, (-1, 1)), specials(nt, (1, -1))
    graph = op_graph(op, [a.shape, b.shape], dtype, *([np.array([0], np.int8)] if op == "MUL" else []))
    # NaN where the reference has one (inf * 0 etc.), else the same bits: one rounding of the exact result
    # (subnormals kept here)
    compare(device, graph, {"x": a, "y": b}, zero_sign=True)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_pow(device, dtype):
    rng = np.random.default_rng(5)
    nt = FLOAT_TYPES[dtype]
    n = 4096
    log_max = {"fp32": 88.0, "fp16": 11.0, "bf16": 88.0}[dtype]
    x = np.exp(rng.uniform(-log_max, log_max, n)).astype(nt)
    y = rng.uniform(-4, 4, n).astype(nt)
    x[:6] = [0.0, 0.0, 1.0, 2.0, 0.5, 10.0]
    y[:6] = [1.0, 2.5, 100.0, 0.0, 3.0, -2.0]
    got, want = run_both(device, op_graph("POW", [(n,), (n,)], dtype), {"x": x, "y": y})
    assert got[:5].astype(np.float64).tolist() == [0.0, 0.0, 1.0, 1.0, 0.125] and got[5] == want[5]
    with np.errstate(invalid="ignore"):  # results that overflow to inf (equal to the reference's then)
        ulp = np.spacing(np.abs(want)).astype(np.float64)
    assert_same(got, want, atol=ulp)  # fp64 exp / log: within one rounding of the reference


def test_pow_broadcast_rank0(device):
    got, _ = compare(
        device, op_graph("POW", [(), ()], "fp32"), {"x": np.array(1.5, np.float32), "y": np.array(-2.25, np.float32)}
    )
    assert got.shape == ()


# ---- logical, comparison, SELECT ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR"])
def test_logical(device, op):
    a = np.array([[False], [True]])
    b = np.array([[False, True, True]])
    compare(device, op_graph(op, [(2, 1), (1, 3)], "bool"), {"x": a, "y": b})


@pytest.mark.parametrize("dtype", ["int32", *FLOAT_TYPES])
@pytest.mark.parametrize("op", ["EQUAL", "GREATER", "GREATER_EQUAL"])
def test_comparison_nan_and_signed_zero(device, op, dtype):
    if dtype == "int32":
        a = edge_ints(np.random.default_rng(6), np.int32, (10, 1))
    else:
        a = specials(FLOAT_TYPES[dtype], (-1, 1))
    b = a.reshape(1, -1)
    got, _ = compare(device, op_graph(op, [a.shape, b.shape], dtype), {"x": a, "y": b})
    assert got.dtype == np.bool_


# (cond, on_true, on_false) shapes: innermost dimension not a multiple of 4 (one element per invocation), a
# multiple of 4 with rows read as 4-vectors or splat (VEC4 with broadcasting), and a scalar.
SELECT_SHAPES = [
    ((4, 1, 6), (1, 5, 6), (4, 5, 1)),
    ((4, 1, 8), (1, 5, 8), (4, 5, 1)),
    ((1, 1, 1), (3, 4, 9), (3, 4, 9)),
]


@pytest.mark.parametrize("shapes", SELECT_SHAPES, ids=["rows", "rows4", "scalar"])
@pytest.mark.parametrize("dtype", ["bool", *INT_TYPES, *FLOAT_TYPES])
def test_select_broadcast_bit_exact(device, dtype, shapes):
    rng = np.random.default_rng(7)
    sc, st, sf = shapes
    cond = rng.integers(0, 2, sc).astype(bool)
    if dtype == "bool":
        t, f = rng.integers(0, 2, st).astype(bool), rng.integers(0, 2, sf).astype(bool)
    elif dtype in INT_TYPES:
        t, f = edge_ints(rng, INT_TYPES[dtype], st), edge_ints(rng, INT_TYPES[dtype], sf)
    else:
        nt = FLOAT_TYPES[dtype]
        t = rng.choice(specials(nt, -1), st)
        f = rng.choice(specials(nt, -1), sf)
    bld = Builder()
    c, x, y = bld.input("c", cond.shape, "bool"), bld.input("x", t.shape, dtype), bld.input("y", f.shape, dtype)
    bld.output(bld.select(c, x, y))
    compare(device, bld.build(), {"c": cond, "x": t, "y": f}, bits=True)


# ---- big tensors: grids past 65535 workgroups in x ------------------------------------------------------------


def test_big_broadcast_binary_and_select(device):
    rng = np.random.default_rng(8)
    a = rng.integers(-(2**31), 2**31, (2, BIG // 2), dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, (1, BIG // 2), dtype=np.int64).astype(np.int32)
    cond = rng.integers(0, 2, (2, 1)).astype(bool)
    bld = Builder()
    x, y, c = bld.input("x", a.shape, "int32"), bld.input("y", b.shape, "int32"), bld.input("c", cond.shape, "bool")
    bld.output(bld.select(c, bld.bitwise_xor(x, y), x))
    compare(device, bld.build(), {"x": a, "y": b, "c": cond})


@pytest.mark.parametrize("op", ["BITWISE_AND", "TABLE", "SELECT"])
def test_big_vec4(device, op):
    """4 elements per invocation (inputs of the output's shape or one element), tail of 3."""
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, BIG4).astype(np.int8)
    bld = Builder()
    x = bld.input("x", (BIG4,), "int8")
    if op == "TABLE":
        bld.output(bld.table(x, bld.const(rng.integers(-128, 128, 256).astype(np.int8), "int8")))
        feeds = {"x": a}
    elif op == "SELECT":
        c = bld.input("c", (BIG4,), "bool")
        bld.output(bld.select(c, x, bld.const(np.array([7], np.int8), "int8")))
        feeds = {"x": a, "c": a > 0}
    else:
        bld.output(bld.bitwise_and(x, bld.input("y", (BIG4,), "int8")))
        feeds = {"x": a, "y": np.roll(a, 1)}
    compare(device, bld.build(), feeds)

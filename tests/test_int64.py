"""TOSA 1.1 EXT-INT64: the i64_t rows of 1.0 operators on both backends (edge cases against expected values and
against each other). Arm's generated int64 tests run in tests/test_conformance_1_1.py."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import graph_of, run_both

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.ops import matching_types

MIN, MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
EDGES = np.array([MIN, MIN + 1, -(2**32), -(2**31) - 1, -1, 0, 1, 2**31, 2**32 + 7, 2**53 + 1, MAX - 1, MAX], np.int64)


def i64(*v) -> np.ndarray:
    return np.array(v, np.int64)


def ref(build, **feeds) -> np.ndarray:
    """The one output of `build(b, *inputs)` on the reference backend; inputs typed after their feeds."""
    b = tosa_vk.Builder()
    values = [b.input(n, np.shape(a), np.asarray(a).dtype) for n, a in feeds.items()]
    b.output(build(b, *values))
    (out,) = tosa_vk.load(b.build(), backend="reference").run(feeds).values()
    return out


def pairs() -> tuple[np.ndarray, np.ndarray]:
    """Every pair of EDGES, as two flat arrays."""
    a, b = np.meshgrid(EDGES, EDGES, indexing="ij")
    return a.reshape(-1), b.reshape(-1)


# ---- catalogue ---------------------------------------------------------------------------------------------------


def test_int64_rows_are_tosa_1_1_ext_int64():
    rows = matching_types("ADD", {"in_out_t": DType.INT64}, (1, 1))
    assert [(r.profile, r.since) for r in rows] == [("EXT-INT64", (1, 1))]
    assert matching_types("ADD", {"in_out_t": DType.INT64}, (1, 0)) == []
    assert matching_types("CAST", {"in_t": DType.FP32, "out_t": DType.INT64}) == []  # only bool / i32 <-> i64
    gather = matching_types("GATHER", {"index_t": DType.INT64, "in_out_t": DType.FP16})
    assert [r.needs for r in gather] == [("PRO-FP", "EXT-INT64")]


def test_an_int64_graph_is_tosa_1_1():
    b = tosa_vk.Builder()
    x = b.input("x", (2,), "int64")
    b.output(b.add(x, x))
    assert b.build().tosa_version >= (1, 1)


# ---- reference: expected values ----------------------------------------------------------------------------------


def test_add_sub_wrap_is_a_require():
    assert ref(lambda b, x, y: b.add(x, y), x=i64(MAX - 1, MIN), y=i64(1, MAX)).tolist() == [MAX, -1]
    assert ref(lambda b, x, y: b.sub(x, y), x=i64(MIN + 1, -1), y=i64(1, MAX)).tolist() == [MIN, MIN]
    for x, y in ((MAX, 1), (MIN, -1)):
        with pytest.raises(TosaError, match="REQUIRE"):
            ref(lambda b, x, y: b.add(x, y), x=i64(x), y=i64(y))
    for x, y in ((MIN, 1), (MAX, -1), (0, MIN)):
        with pytest.raises(TosaError, match="REQUIRE"):
            ref(lambda b, x, y: b.sub(x, y), x=i64(x), y=i64(y))


def test_mul_keeps_the_low_64_bits():
    x, y = pairs()
    out = ref(lambda b, x, y: b.mul(x, y), x=x, y=y)
    want = [((int(p) * int(q) + 2**63) % 2**64) - 2**63 for p, q in zip(x, y)]
    assert out.dtype == np.int64 and out.tolist() == want
    with pytest.raises(TosaError, match="shift == 0"):
        ref(lambda b, x, y: b.mul(x, y, b.const(np.array([1], np.int8))), x=i64(3), y=i64(4))


def test_intdiv_truncates_and_int64_min_by_minus_one_is_a_require():
    x, y = pairs()
    keep = (y != 0) & ~((x == MIN) & (y == -1))
    x, y = x[keep], y[keep]
    out = ref(lambda b, x, y: b.intdiv(x, y), x=x, y=y)
    want = [abs(int(p)) // abs(int(q)) * (1 if (p < 0) == (q < 0) else -1) for p, q in zip(x, y)]
    assert out.tolist() == want
    for p, q in ((MIN, -1), (5, 0)):
        with pytest.raises(TosaError, match="REQUIRE"):
            ref(lambda b, x, y: b.intdiv(x, y), x=i64(p), y=i64(q))


def test_shifts_by_0_to_63():
    x = np.repeat(EDGES, 64)
    s = np.tile(np.arange(64, dtype=np.int64), EDGES.size)
    u = [int(v) % 2**64 for v in x]
    signed = lambda v: v - 2**64 if v >= 2**63 else v  # noqa: E731
    assert ref(lambda b, x, y: b.logical_left_shift(x, y), x=x, y=s).tolist() == [
        signed((v << int(k)) % 2**64) for v, k in zip(u, s)
    ]
    assert ref(lambda b, x, y: b.logical_right_shift(x, y), x=x, y=s).tolist() == [
        signed(v >> int(k)) for v, k in zip(u, s)
    ]
    assert ref(lambda b, x, y: b.arithmetic_right_shift(x, y), x=x, y=s).tolist() == [
        int(v) >> int(k) for v, k in zip(x, s)
    ]
    rounded = ref(lambda b, x, y: b.arithmetic_right_shift(x, y, round=True), x=x, y=s)
    assert rounded.tolist() == [
        (int(v) >> int(k)) + ((int(v) >> (int(k) - 1)) & 1 if k > 0 else 0) for v, k in zip(x, s)
    ]
    for k in (-1, 64):
        with pytest.raises(TosaError, match="REQUIRE"):
            ref(lambda b, x, y: b.logical_left_shift(x, y), x=i64(1), y=i64(k))


def test_unary_extremes():
    x = EDGES[1:]  # |MIN| and -MIN do not exist: REQUIREs
    assert ref(lambda b, x: b.abs(x), x=x).tolist() == [abs(int(v)) for v in x]
    assert ref(lambda b, x: b.negate(x, b.const(i64(0)), b.const(i64(0))), x=x).tolist() == [-int(v) for v in x]
    assert ref(lambda b, x: b.bitwise_not(x), x=EDGES).tolist() == [~int(v) for v in EDGES]
    assert ref(lambda b, x: b.clz(x), x=EDGES).tolist() == [
        64 if v == 0 else 64 - (int(v) % 2**64).bit_length() for v in EDGES
    ]
    with pytest.raises(TosaError, match="REQUIRE"):
        ref(lambda b, x: b.abs(x), x=i64(MIN))
    with pytest.raises(TosaError, match="REQUIRE"):
        ref(lambda b, x: b.negate(x, b.const(i64(0)), b.const(i64(0))), x=i64(MIN))
    with pytest.raises(TosaError, match="output_zp != 0"):
        ref(lambda b, x: b.negate(x, b.const(i64(0)), b.const(i64(1))), x=i64(1))


def test_comparisons_and_min_max_need_all_64_bits():
    x, y = i64(2**53, -(2**63), 2**62 + 1), i64(2**53 + 1, -(2**63) + 1, 2**62)
    assert ref(lambda b, x, y: b.greater(x, y), x=x, y=y).tolist() == [False, False, True]
    assert ref(lambda b, x, y: b.equal(x, y), x=x, y=x).tolist() == [True] * 3
    assert ref(lambda b, x, y: b.maximum(x, y), x=x, y=y).tolist() == [2**53 + 1, -(2**63) + 1, 2**62 + 1]


def test_reduce_sum_require_and_extremes():
    x = np.array([[MAX, 1, -2], [MIN, 5, -1]], np.int64)
    with pytest.raises(TosaError, match="REQUIRE"):  # MAX + 1 wraps even though the full sum fits
        ref(lambda b, x: b.reduce_sum(x, axis=1), x=x)
    assert ref(lambda b, x: b.reduce_sum(x, axis=0), x=x).tolist() == [[-1, 6, -3]]
    assert ref(lambda b, x: b.reduce_max(x, axis=1), x=x).tolist() == [[MAX], [5]]
    assert ref(lambda b, x: b.reduce_min(x, axis=1), x=x).tolist() == [[-2], [MIN]]


def test_argmax_int64_output():
    x = np.array([[MIN, MAX, MAX], [MIN, MIN, MIN]], np.int64)
    out = ref(lambda b, x: b.argmax(x, axis=1, out_dtype="int64"), x=x)
    assert out.dtype == np.int64 and out.tolist() == [1, 0]
    f = np.array([[1.0, np.nan, 3.0]], np.float32)
    assert ref(lambda b, x: b.argmax(x, axis=1, out_dtype="int64"), x=f).tolist() == [1]


def test_cast_to_and_from_int64():
    assert ref(lambda b, x: b.cast(x, out_dtype="int32"), x=EDGES).tolist() == [
        ((int(v) + 2**31) % 2**32) - 2**31 for v in EDGES
    ]
    assert ref(lambda b, x: b.cast(x, out_dtype="bool"), x=EDGES).tolist() == [bool(v) for v in EDGES]
    x32 = np.array([-(2**31), -1, 0, 2**31 - 1], np.int32)
    out = ref(lambda b, x: b.cast(x, out_dtype="int64"), x=x32)
    assert out.dtype == np.int64 and out.tolist() == x32.tolist()
    assert ref(lambda b, x: b.cast(x, out_dtype="int64"), x=np.array([True, False])).tolist() == [1, 0]
    with pytest.raises(TosaError):
        ref(lambda b, x: b.cast(x, out_dtype="int64"), x=np.array([1.5], np.float32))


def test_gather_scatter_int64_indices():
    values = np.arange(2 * 5 * 3, dtype=np.int64).reshape(2, 5, 3) * (2**40)
    idx = np.array([[4, 0], [2, 2]], np.int64)
    out = ref(lambda b, v, i: b.gather(v, i), v=values, i=idx)
    assert out.tolist() == np.take_along_axis(values, idx[:, :, None], axis=1).tolist()
    f = values.astype(np.float32)
    assert (
        ref(lambda b, v, i: b.gather(v, i), v=f, i=idx).tolist()
        == np.take_along_axis(f, idx[:, :, None], axis=1).tolist()
    )
    with pytest.raises(TosaError, match="REQUIRE"):
        ref(lambda b, v, i: b.gather(v, i), v=values, i=np.array([[5, 0], [0, 0]], np.int64))
    data = np.full((2, 2, 3), MIN, np.int64)
    out = ref(lambda b, v, i, d: b.scatter(v, i, d), v=values, i=np.array([[4, 0], [1, 2]], np.int64), d=data)
    want = values.copy()
    want[0, [4, 0]] = MIN
    want[1, [1, 2]] = MIN
    assert out.tolist() == want.tolist()


# ---- Vulkan against the reference, bit-exact ----------------------------------------------------------------------

RNG = np.random.default_rng(64)


def full_range(*shape) -> np.ndarray:
    """int64 values over the whole range, with EDGES mixed in."""
    x = RNG.integers(MIN, MAX, size=shape, dtype=np.int64, endpoint=True).reshape(-1)
    x[: min(x.size, EDGES.size)] = EDGES[: x.size]
    return x.reshape(shape)


def same(device, build, **feeds) -> np.ndarray:
    """Runs build on both backends (Vulkan strict) and requires identical int64 / bool results; returns them."""
    got, want = run_both(device, lambda b: build(b, *[b.input(n, a.shape, a.dtype) for n, a in feeds.items()]), feeds)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    return got


def _no_wrap(fn):
    """The EDGES pairs whose exact fn(x, y) fits int64 (others violate a REQUIRE)."""
    x, y = pairs()
    keep = np.array([MIN <= fn(int(p), int(q)) <= MAX for p, q in zip(x, y)])
    return x[keep], y[keep]


@pytest.mark.parametrize("op", ["add", "sub"])
def test_vulkan_add_sub(device, op):
    x, y = _no_wrap(lambda p, q: p + q if op == "add" else p - q)
    same(device, lambda b, x, y: getattr(b, op)(x, y), x=x, y=y)


@pytest.mark.parametrize("op", ["mul", "bitwise_and", "bitwise_or", "bitwise_xor", "maximum", "minimum"])
@pytest.mark.parametrize("shapes", [((144,), (144,)), ((3, 8), (1, 8)), ((3, 8), (3, 1)), ((5, 7), (1, 1))])
def test_vulkan_binary_full_range_and_broadcast(device, op, shapes):
    x, y = full_range(*shapes[0]), full_range(*shapes[1])
    same(device, lambda b, x, y: getattr(b, op)(x, y), x=x, y=y)


@pytest.mark.parametrize("op", ["equal", "greater", "greater_equal"])
def test_vulkan_comparisons(device, op):
    x, y = pairs()
    out = same(device, lambda b, x, y: getattr(b, op)(x, y), x=x, y=y)
    assert out.dtype == np.bool_


def test_vulkan_intdiv(device):
    x, y = pairs()
    keep = (y != 0) & ~((x == MIN) & (y == -1))
    same(
        device,
        lambda b, x, y: b.intdiv(x, y),
        x=np.concatenate([x[keep], full_range(64)]),
        y=np.concatenate([y[keep], RNG.integers(1, 2**40, 64, dtype=np.int64) * RNG.choice([-1, 1], 64)]),
    )


@pytest.mark.parametrize("op", ["logical_left_shift", "logical_right_shift", "arithmetic_right_shift", "round"])
def test_vulkan_shifts_by_0_to_63(device, op):
    x = np.repeat(EDGES, 64)
    s = np.tile(np.arange(64, dtype=np.int64), EDGES.size)
    if op == "round":
        same(device, lambda b, x, y: b.arithmetic_right_shift(x, y, round=True), x=x, y=s)
    else:
        same(device, lambda b, x, y: getattr(b, op)(x, y), x=x, y=s)


def test_vulkan_unary(device):
    x = np.concatenate([EDGES[1:], full_range(61)[1:]])
    x = x[x != MIN]
    same(device, lambda b, x: b.abs(x), x=x)
    same(device, lambda b, x: b.negate(x, b.const(i64(0)), b.const(i64(0))), x=x)
    y = np.concatenate([EDGES, full_range(50), np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))])
    same(device, lambda b, x: b.bitwise_not(x), x=y)
    same(device, lambda b, x: b.clz(x), x=y)


def test_vulkan_select(device):
    cond = RNG.integers(0, 2, (4, 9)).astype(np.bool_)
    same(device, lambda b, c, x, y: b.select(c, x, y), c=cond, x=full_range(4, 9), y=full_range(1, 9))


@pytest.mark.parametrize("length", [5, 1000])
def test_vulkan_reductions_and_argmax(device, length):
    x = full_range(3, length, 2)
    for op in ("reduce_max", "reduce_min"):
        same(device, lambda b, x, op=op: getattr(b, op)(x, axis=1), x=x)
    small = RNG.integers(-(2**52), 2**52, (3, length, 2), dtype=np.int64)
    same(device, lambda b, x: b.reduce_sum(x, axis=1), x=small)
    assert same(device, lambda b, x: b.argmax(x, axis=1, out_dtype="int64"), x=x).dtype == np.int64
    f = RNG.standard_normal((3, length)).astype(np.float32)
    same(device, lambda b, x: b.argmax(x, axis=1, out_dtype="int64"), x=f)


def test_vulkan_data_layout(device):
    x, y = full_range(3, 4, 5), full_range(3, 2, 5)
    same(device, lambda b, x, y: b.concat([x, y], axis=1), x=x, y=y)
    same(device, lambda b, x: b.pad(x, b.const_shape([1, 0, 0, 2, 3, 1]), b.const(i64(MIN))), x=x)
    same(device, lambda b, x: b.reverse(x, axis=2), x=x)
    same(device, lambda b, x: b.slice(x, b.const_shape([1, 1, 1]), b.const_shape([2, 2, 3])), x=x)
    same(device, lambda b, x: b.tile(x, b.const_shape([2, 1, 3])), x=x)
    same(device, lambda b, x: b.transpose(x, perms=[2, 0, 1]), x=x)
    same(device, lambda b, x: b.bitwise_xor(b.reshape(x, b.const_shape([5, 12])), b.const(full_range(1, 12))), x=x)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float16, np.bool_])
def test_vulkan_gather_scatter_int64_indices(device, dtype):
    values = full_range(2, 7, 5)
    values = values.astype(dtype) if dtype != np.float16 else (values % 1000).astype(dtype)
    idx = np.array([[6, 0, 3], [2, 2, 5]], np.int64)
    same(device, lambda b, v, i: b.gather(v, i), v=values, i=idx)
    unique = np.array([[6, 0, 3], [1, 2, 5]], np.int64)
    data = values[:, :3]
    same(device, lambda b, v, i, d: b.scatter(v, i, d), v=values, i=unique, d=np.ascontiguousarray(data[:, ::-1]))


def test_vulkan_cast(device):
    x = np.concatenate([EDGES, full_range(40)])
    same(device, lambda b, x: b.cast(x, out_dtype="int32"), x=x)
    same(device, lambda b, x: b.cast(x, out_dtype="bool"), x=x)
    x32 = RNG.integers(-(2**31), 2**31, 77, dtype=np.int64).astype(np.int32)
    same(device, lambda b, x: b.cast(x, out_dtype="int64"), x=x32)
    same(device, lambda b, x: b.cast(x, out_dtype="int64"), x=RNG.integers(0, 2, 9).astype(np.bool_))


def test_a_device_without_shader_int64_is_named_in_strict_placement():
    import dataclasses

    from tosa_vk.stages.compiler import compile
    from tosa_vk.target import named

    target = named("lavapipe")
    target = dataclasses.replace(target, features=target.features - {"shaderInt64"})
    graph = graph_of(lambda b: b.add(b.input("x", (4,), "int64"), b.input("y", (4,), "int64")))
    with pytest.raises(TosaError, match="shaderInt64"):
        compile(graph, target, strict=True)

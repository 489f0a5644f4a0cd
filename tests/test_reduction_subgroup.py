"""The subgroup family of the reductions and ARGMAX (tosa_vk/stages/lower/families/reduction_subgroup.py) with GPU
classes forced on this device (lavapipe: subgroups of 8), against the reference backend: every operator x dtype, rows
(innermost axis) and columns (strided axes), axes past a workgroup, a pass and the loop budget, NaN modes, ties, each
GPU class, the kill switch, fused epilogues and prologues. Integers and bools bit-exact; floats within the spec's bounds
(sums and products accumulate in fp64 here, as the register kernels do, in another order)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import assert_same, graph_of, run_reference, shrink_target, with_specials

import tosa_vk
from tosa_vk.ir.dtype import DType
from tosa_vk.stages.lower.families import reduction_subgroup
from tosa_vk.target import LAVAPIPE, named

pytestmark = pytest.mark.vulkan

FLOATS = [DType.FP32, DType.FP16, DType.BF16]
INTS = [DType.INT8, DType.INT16, DType.INT32]
# what a dtype's result may differ by: fp64 sums in another order, rounded once (ulps of the output type)
ULPS = {DType.FP32: 2, DType.FP16: 1, DType.BF16: 1}
SUBGROUP_SHADERS = {"reduction/reduce_subgroup", "reduction/argmax_subgroup"}


def run_forced(device, build, feeds, target="nvidia"):
    """(vulkan outputs with the class `target` forced, reference outputs, the shaders the program runs)."""
    graph = graph_of(build)
    want = run_reference(graph, feeds)
    with tosa_vk.load(graph, "vulkan", device=device, target=target, strict=True, cache_dir=False) as model:
        got = list(model.run(feeds).values())
        shaders = {getattr(s, "shader", "") for s in model.program.steps} - {""}
    return got, want, shaders


def check(device, build, feeds, target="nvidia", family=True, **tolerance):
    got, want, shaders = run_forced(device, build, feeds, target)
    for g, w in zip(got, want):
        assert_same(g, w, **tolerance)
    assert bool(shaders & SUBGROUP_SHADERS) == family, shaders
    return got, want


def data(rng, shape, dtype: DType, specials=False):
    if dtype == DType.BOOL:
        return rng.random(shape) < 0.5
    if dtype.is_float:
        x = rng.standard_normal(shape) * 4
        if specials:
            with_specials(x, rng, every=40)
        return x.astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype.numpy)


def one(op, dtype, axis, shape, **attrs):
    return lambda b: b.output(getattr(b, op)(b.input("x", shape, dtype), axis=axis, **attrs))


CASES = [
    *[("reduce_sum", d, {}) for d in (DType.INT32, *FLOATS)],
    *[("reduce_product", d, {}) for d in FLOATS],
    *[(op, d, {}) for op in ("reduce_max", "reduce_min") for d in INTS],
    *[(op, d, {"nan_mode": m}) for op in ("reduce_max", "reduce_min") for d in FLOATS for m in ("PROPAGATE", "IGNORE")],
    ("reduce_all", DType.BOOL, {}),
    ("reduce_any", DType.BOOL, {}),
    *[("argmax", d, {}) for d in (DType.INT8, DType.INT16)],
    *[("argmax", d, {"nan_mode": m}) for d in (*FLOATS, DType.FP8E4M3, DType.FP8E5M2) for m in ("PROPAGATE", "IGNORE")],
]


def _values(rng, op, dtype, shape):
    if op == "reduce_product":
        x = rng.choice([-1, 1], shape) * rng.uniform(0.9, 1.1, shape)
        return x.astype(dtype.numpy)
    if op == "reduce_sum" and dtype == DType.INT32:
        return rng.integers(-(1 << 24), 1 << 24, shape).astype(np.int32)
    if op == "reduce_all":
        return rng.random(shape) < 0.98
    if op == "reduce_any":
        return rng.random(shape) < 0.02
    if op == "argmax" and not dtype.is_float:
        return rng.integers(-3, 3, shape).astype(dtype.numpy)  # many ties: the first index wins
    x = data(rng, shape, dtype, specials=op != "reduce_sum" and dtype != DType.FP8E4M3)
    if dtype == DType.FP8E4M3:  # no infinities in e4m3fn
        x = np.clip(x.astype(np.float32), -448, 448).astype(dtype.numpy)
    return x


@pytest.mark.parametrize("op, dtype, attrs", CASES, ids=lambda v: getattr(v, "name", None) or str(v))
def test_every_operator_and_dtype_along_rows(device, op, dtype, attrs):
    """The innermost axis (a row per workgroup, subgroup operations), 300 long: past nvidia's 256 invocations."""
    x = _values(np.random.default_rng(1), op, dtype, (5, 300))
    check(device, one(op, dtype, 1, x.shape, **attrs), {"x": x}, ulps=ULPS.get(dtype, 0))


@pytest.mark.parametrize("op, dtype, attrs", CASES[::3], ids=lambda v: getattr(v, "name", None) or str(v))
@pytest.mark.parametrize("axis", [0, 1])
def test_strided_axes_as_columns(device, op, dtype, attrs, axis):
    """NHWC-like strided axes: columns, adjacent invocations on adjacent elements (inner 1*... of 3 and 70)."""
    x = _values(np.random.default_rng(2 + axis), op, dtype, (37, 14, 5))
    check(device, one(op, dtype, axis, x.shape, **attrs), {"x": x}, ulps=ULPS.get(dtype, 0))


@pytest.mark.parametrize("target", ["amd", "intel", "mali", "adreno", "generic"])
def test_each_gpu_class(device, target):
    """Each class's workgroup (64 to 256 invocations) on rows and columns."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 333, 40)).astype(np.float32)
    x[0, 100, 0] = np.nan
    for axis in (1, 2):
        for op, attrs in (("reduce_sum", {}), ("reduce_max", {"nan_mode": "IGNORE"}), ("argmax", {})):
            check(device, one(op, "fp32", axis, x.shape, **attrs), {"x": x}, target, ulps=2)
    i = rng.integers(-5, 5, (4, 1000)).astype(np.int16)
    check(device, one("argmax", "int16", 1, i.shape), {"x": i}, target)


@pytest.mark.parametrize(
    "op, dtype",
    [("reduce_sum", DType.INT32), ("reduce_sum", DType.FP16), ("reduce_min", DType.FP32), ("reduce_any", DType.BOOL)],
)
@pytest.mark.parametrize("shape, axis", [((200_003,), 0), ((2, 70_000, 3), 1)])
def test_long_axes_in_pieces_and_passes(device, op, dtype, shape, axis):
    """Axes longer than the loop budget (lavapipe: 65,535 iterations per invocation), split over workgroups."""
    rng = np.random.default_rng(4)
    if dtype == DType.BOOL:
        x = rng.random(shape) < 0.00001
    elif dtype == DType.INT32:
        x = rng.integers(-(1 << 12), 1 << 12, shape).astype(np.int32)  # (the reference refuses an overflow)
    else:
        x = rng.standard_normal(shape).astype(dtype.numpy)
    kw = {"nan_mode": "IGNORE"} if op == "reduce_min" else {}
    check(device, one(op, dtype, axis, shape, **kw), {"x": x}, ulps=ULPS.get(dtype, 0))


def test_loop_budget_forces_passes(device, monkeypatch):
    """A small budget: more passes, same results (and every invocation's loop within it)."""
    budget = 600
    for length, inner in ((100_000, 1), (30_000, 3)):
        for step in reduction_subgroup.plan(dataclasses.replace(LAVAPIPE, loop_budget=budget), 2, length, inner):
            _, chunk, _, _, sy = step
            assert -(-chunk // sy) + sy <= budget
    x = np.random.default_rng(5).standard_normal((3, 50_000)).astype(np.float32)
    x[1, 40_000] = np.nan
    shrink_target(monkeypatch, device, loop_budget=budget)
    check(device, one("argmax", "fp32", 1, x.shape), {"x": x})
    check(device, one("reduce_max", "fp32", 1, x.shape, nan_mode="PROPAGATE"), {"x": x})


@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_argmax_nan_runs_and_ties_across_workgroups(device, nan_mode):
    rng = np.random.default_rng(6)
    x = rng.integers(-50, 50, (6, 150_000)).astype(np.float32)
    x[0, [7_000, 70_000, 140_000]] = 1000.0  # a tie across pieces: 7000
    x[1, 100_000] = x[1, 120_000] = np.nan  # PROPAGATE: 100000
    x[2, :] = np.nan  # all NaN: 0
    x[3, :130_000] = np.nan  # IGNORE: the maximum of the tail
    x[4, 149_999] = np.inf
    x[5, :] = -0.0
    x[5, 3] = 0.0  # -0 == +0: index 0
    check(device, one("argmax", "fp32", 1, x.shape, nan_mode=nan_mode), {"x": x})
    check(device, one("argmax", "fp32", 0, x.T.shape, nan_mode=nan_mode), {"x": np.ascontiguousarray(x.T)})


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_max_min_nan_rows(device, op, nan_mode):
    """A whole row of NaN, one NaN per row, the initial value as the answer: rows and columns."""
    x = np.random.default_rng(7).standard_normal((5, 1000)).astype(np.float32)
    x[0, :] = np.nan
    x[1, 999] = np.nan
    x[2, :] = -np.inf if op == "reduce_max" else np.inf
    x[3, :500] = np.nan
    for axis, v in ((1, x), (0, np.ascontiguousarray(x.T))):
        check(device, one(op, "fp32", axis, v.shape, nan_mode=nan_mode), {"x": v})


def test_fp32_accumulation_without_fp64(device, monkeypatch):
    """A device without fp64 sums in fp32: within the dot-product bound of REDUCE_SUM (2 * n * eps * sum |x|)."""
    shrink_target(monkeypatch, device, features=device.info.target.features - {"shaderFloat64"})
    x = np.random.default_rng(8).standard_normal((4, 5000)).astype(np.float16)
    got, want, shaders = run_forced(device, one("reduce_sum", "fp16", 1, x.shape), {"x": x})
    assert "reduction/reduce_subgroup" in shaders
    bound = 2 * 5000 * 2.0**-24 * np.abs(x.astype(np.float64)).sum(axis=1, keepdims=True) + 2.0**-11 * np.abs(want[0])
    assert_same(got[0], want[0], atol=bound.astype(np.float64))


def test_fused_epilogue_and_prologue(device):
    """A mean (REDUCE_SUM then MUL by 1/n, fused), a global pool as two REDUCE_SUMs (the first a prologue) and a
    REDUCE_MAX then CLAMP: one subgroup kernel each, results as unfused."""
    x = np.random.default_rng(9).standard_normal((2, 7, 9, 40)).astype(np.float32)

    def build(b):
        v = b.input("x", x.shape, "fp32")
        s = b.reduce_sum(v, axis=3)
        mean = b.mul(s, b.const(np.full((1, 1, 1, 1), 1 / 40, np.float32)))
        pool = b.reduce_sum(b.reduce_sum(v, axis=1), axis=2)
        top = b.clamp(b.reduce_max(v, axis=2, nan_mode="PROPAGATE"), min_val=-1.0, max_val=1.0)
        return mean, pool, top

    check(device, build, {"x": x}, ulps=2)
    graph = graph_of(build)
    with tosa_vk.load(graph, "vulkan", device=device, target="nvidia", cache_dir=False) as model:
        kernels = [s for s in model.program.steps if getattr(s, "shader", "")]
    assert len(kernels) == 3 and {k.shader for k in kernels} == {"reduction/reduce_subgroup"}, kernels


def test_kill_switch_and_lavapipe_keep_the_register_kernels(device, monkeypatch):
    x = np.random.default_rng(10).standard_normal((3, 100)).astype(np.float32)
    check(device, one("argmax", "fp32", 1, x.shape), {"x": x}, "lavapipe", family=False)
    monkeypatch.setenv("TOSA_VK_DISABLE", "subgroup")
    check(device, one("reduce_sum", "fp32", 1, x.shape), {"x": x}, "nvidia", family=False, rtol=1e-6)
    check(device, one("argmax", "fp32", 1, x.shape), {"x": x}, "mali", family=False)


def test_int64_and_short_rows_decline_to_the_register_kernels(device):
    x = np.random.default_rng(11).integers(-(1 << 40), 1 << 40, (3, 100)).astype(np.int64)
    check(device, one("reduce_sum", "int64", 1, x.shape), {"x": x}, family=False)
    short = np.random.default_rng(12).standard_normal((50, reduction_subgroup.ROW_MIN - 1)).astype(np.float32)
    check(device, one("argmax", "fp32", 1, short.shape), {"x": short}, family=False)


def test_workgroups_smaller_than_a_subgroup(device, monkeypatch):
    """A workgroup of 4 invocations (lavapipe's subgroups have 8): one partial subgroup per workgroup."""
    shrink_target(monkeypatch, device, max_workgroup_invocations=4)
    x = np.random.default_rng(13).standard_normal((5, 999)).astype(np.float32)
    x[1, 500:] = np.nan
    for op, attrs in (("reduce_sum", {}), ("reduce_min", {"nan_mode": "IGNORE"}), ("argmax", {"nan_mode": "IGNORE"})):
        check(device, one(op, "fp32", 1, x.shape, **attrs), {"x": x}, ulps=2)
        check(device, one(op, "fp32", 0, x.T.shape, **attrs), {"x": np.ascontiguousarray(x.T)}, ulps=2)


def test_workgroups_fit_the_target():
    for name in ("nvidia", "amd", "intel", "mali", "adreno", "generic"):
        small = dataclasses.replace(named(name), max_workgroup_invocations=96)
        tiny = dataclasses.replace(named(name), max_shared_memory=512)
        for target in (named(name), small, tiny):
            wg = reduction_subgroup.workgroup(target)
            assert wg & (wg - 1) == 0 and wg <= min(target.max_workgroup_invocations, target.klass.reduce_workgroup)
            assert wg * reduction_subgroup.SHARED_BYTES <= target.max_shared_memory
            for outer, length, inner in ((1, 10, 1), (3, 1000, 1), (2, 50, 7), (1, 300_000, 1000)):
                for _, chunk, _, sx, sy in reduction_subgroup.plan(target, outer, length, inner):
                    assert sx * sy <= wg and -(-chunk // sy) + sy <= target.loop_budget

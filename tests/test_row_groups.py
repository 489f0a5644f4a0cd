"""Row groups (tosa_vk/stages/fuse.py _rows, tosa_vk/stages/lower/fused/rows.py): softmax and layer norm chains, fp32
and the int8 forms of tosa_vk/tools/bench/graphs.py, as one kernel per row block, on the register class (lavapipe: one
invocation per row, the unfused fold order, so bit-exact with fuse=False) and the GPU classes forced (several lanes per
row: fp32 sums in another order, within the spec's bound), against the reference backend; the chains the fuse stage or
the dry run declines (loop budget, an outside operator between members)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_same, graph_of, run_reference, shrink_target

import tosa_vk
from tosa_vk.tools.bench.graphs import _Quant

pytestmark = pytest.mark.vulkan
ROWS = "fused/rows"
CLASSES = ["lavapipe", "nvidia", "mali"]


def softmax(b, x, axis):
    e = b.exp(b.sub(x, b.reduce_max(x, axis=axis)))
    return b.mul(e, b.reciprocal(b.reduce_sum(e, axis=axis)))


def layer_norm(b, x, axis, dim):
    mean = b.mul(b.reduce_sum(x, axis=axis), np.full((1,) * (axis + 1), 1 / dim, np.float32))
    centered = b.sub(x, mean)
    var = b.mul(b.reduce_sum(b.mul(centered, centered), axis=axis), np.full((1,) * (axis + 1), 1 / dim, np.float32))
    return b.mul(centered, b.rsqrt(b.add(var, np.full((1,) * (axis + 1), 1e-5, np.float32))))


def fp32(fn, shape):
    def build(b):
        b.output(fn(b, b.input("x", shape, "fp32"), len(shape) - 1, *([shape[-1]] if fn is layer_norm else [])))

    return graph_of(build)


def run(device, graph, feeds, target, fuse=True):
    """(outputs, the program's kernel labels by shader)."""
    with tosa_vk.load(graph, "vulkan", device=device, target=target, fuse=fuse, strict=True, cache_dir=False) as m:
        got = list(m.run(feeds).values())
        kernels = [(s.shader, s.op) for s in m.program.steps if hasattr(s, "shader")]
    return got, kernels


def check(device, graph, feeds, target, rows=1, **tolerance):
    """Fused against the reference backend (and bit for bit against fuse=False on the register class); `rows`:
    the row kernels the program should have."""
    got, kernels = run(device, graph, feeds, target)
    assert sum(s == ROWS for s, _ in kernels) == rows, kernels
    for g, w in zip(got, run_reference(graph, feeds)):
        assert_same(g, w, **tolerance)
    if target == "lavapipe":
        plain, _ = run(device, graph, feeds, target, fuse=False)
        for g, p in zip(got, plain):  # bit for bit (zero signs too), any NaN for a NaN (payloads unspecified)
            nan = np.isnan(p) if p.dtype.kind == "f" else np.zeros(p.shape, bool)
            assert_same(g, p)
            assert_same(g, p, bits=True, ignore=nan)
    return got, kernels


@pytest.mark.parametrize("target", CLASSES)
@pytest.mark.parametrize("shape", [(1, 2), (3, 37), (1, 300, 33), (2, 5, 1029)])
def test_softmax_is_one_kernel(device, target, shape):
    x = (np.random.default_rng(1).standard_normal(shape) * 4).astype(np.float32)
    _, kernels = check(device, fp32(softmax, shape), {"x": x}, target, ulps=2)
    assert len(kernels) == 1, kernels


@pytest.mark.parametrize("target", CLASSES)
@pytest.mark.parametrize("shape", [(1, 3), (70, 64), (1, 2, 1500)])
def test_layer_norm_is_one_kernel(device, target, shape):
    x = (np.random.default_rng(2).standard_normal(shape) + 3).astype(np.float32)
    _, kernels = check(device, fp32(layer_norm, shape), {"x": x}, target, atol=2e-5, rtol=2e-5)
    assert len(kernels) == 1, kernels


@pytest.mark.parametrize("target", CLASSES)
def test_nan_and_infinity_rows_as_the_reference_gives_them(device, target):
    x = np.random.default_rng(3).standard_normal((6, 9)).astype(np.float32)
    x[1, 4] = np.nan
    x[2, 0] = np.inf
    x[3, :] = -np.inf
    x[4, 2] = -np.inf
    x[5, 7] = np.float32(3e38)
    for fn in (softmax, layer_norm):
        check(device, fp32(fn, (6, 9)), {"x": x}, target, ulps=2, atol=2e-5, rtol=2e-5)


def int8_softmax(b, e):
    """transformer_int8's softmax after its MATMUL's TABLE: sums of int32 values, a TABLE per row, RESCALEs."""
    qz = _Quant(b, None)
    total = b.reduce_sum(qz.rescale(e, 1.0, "int32"), axis=2)
    inv = qz.table(qz.rescale(total, 1 / 64, "int8"), lambda t: 1 / (1 + np.abs(t)))
    return qz.rescale(b.mul(qz.rescale(e, 1.0, "int32"), qz.rescale(inv, 1.0, "int32")), 1 / 128, "int8")


def int8_center(b, x):
    """transformer_int8's mean subtraction."""
    qz = _Quant(b, None)
    wide = qz.rescale(x, 1.0, "int32")
    mean = b.reduce_sum(wide, axis=2)
    return qz.rescale(b.sub(wide, qz.rescale(qz.rescale(mean, 1 / 64, "int8"), 1.0, "int32")), 1.0, "int8")


@pytest.mark.parametrize("target", CLASSES)
@pytest.mark.parametrize("fn", [int8_softmax, int8_center])
def test_int8_forms_bit_exact(device, target, fn):
    shape = (4, 32, 64)
    graph = graph_of(lambda b: b.output(fn(b, b.input("x", shape, "int8"))))
    x = np.random.default_rng(4).integers(-128, 128, shape).astype(np.int8)
    _, kernels = check(device, graph, {"x": x}, target, bits=True)
    assert len(kernels) == 1, kernels


def test_values_used_outside_are_stored(device):
    """EXP's values are a graph output too: the row kernel stores them besides the softmax."""

    def build(b):
        x = b.input("x", (5, 17), "fp32")
        e = b.exp(b.sub(x, b.reduce_max(x, axis=1)))
        b.output(b.mul(e, b.reciprocal(b.reduce_sum(e, axis=1))), e)

    x = np.random.default_rng(5).standard_normal((5, 17)).astype(np.float32)
    _, kernels = check(device, graph_of(build), {"x": x}, "lavapipe", ulps=2)
    assert len(kernels) == 1, kernels


def test_an_outside_operator_between_members_splits_the_chain(device):
    """NEGATE (no group's operator) reads the group's SUB and feeds its EXP: the kernel could not run it in the
    middle, so the chain is two row groups (the fuse stage's structure declines the single one)."""

    def build(b):
        x = b.input("x", (7, 20), "fp32")
        n = b.negate(b.sub(x, b.reduce_max(x, axis=1)))
        e = b.exp(n)
        b.output(b.mul(e, b.reciprocal(b.reduce_sum(e, axis=1))))

    x = np.random.default_rng(6).standard_normal((7, 20)).astype(np.float32)
    _, kernels = check(device, graph_of(build), {"x": x}, "lavapipe", rows=2, ulps=2)
    assert [s for s, _ in kernels] == [ROWS, "elementwise_unary/unary", ROWS], kernels


def test_past_the_loop_budget_the_operators_keep_their_kernels(device, monkeypatch):
    """3 passes over rows of 100 take 300 loop iterations: past a budget of 250 the dry run declines the group
    (the reductions' own kernels and epilogues do it, as without row groups)."""
    shrink_target(monkeypatch, device, loop_budget=250)
    graph = fp32(softmax, (4, 100))
    x = np.random.default_rng(7).standard_normal((4, 100)).astype(np.float32)
    with tosa_vk.load(graph, "vulkan", device=device, strict=True, cache_dir=False) as m:
        got = list(m.run({"x": x}).values())
        shaders = [s.shader for s in m.program.steps if hasattr(s, "shader")]
    assert ROWS not in shaders and len(shaders) > 1, shaders
    assert_same(got[0], run_reference(graph, {"x": x})[0], ulps=2)


def test_fuse_false_keeps_one_kernel_per_operator(device):
    _, kernels = run(device, fp32(softmax, (3, 8)), {"x": np.zeros((3, 8), np.float32)}, "lavapipe", fuse=False)
    assert ROWS not in {s for s, _ in kernels}


def test_a_reduction_with_per_row_steps_only_keeps_its_epilogue(device):
    """REDUCE_SUM then MUL by a constant: no per-element value joins, so the reduction's kernel (which splits long
    axes over workgroups) applies the MUL as its epilogue."""

    def build(b):
        x = b.input("x", (3, 40), "fp32")
        b.output(b.mul(b.reduce_sum(x, axis=1), np.full((1, 1), 0.5, np.float32)))

    x = np.random.default_rng(8).standard_normal((3, 40)).astype(np.float32)
    _, kernels = check(device, graph_of(build), {"x": x}, "lavapipe", rows=0, ulps=2)
    assert [s for s, _ in kernels] == ["reduction/reduce"] and " + MUL" in kernels[0][1], kernels

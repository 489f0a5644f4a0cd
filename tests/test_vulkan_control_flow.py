"""Control flow on Vulkan (spec 2.15): COND_IF / WHILE_LOOP regions compiled into the program, loop-carried tensors
on the device, only the condition read back. The conformance selection covers the generator's tests."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import compare

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.vulkan.runtime import BATCH_ITERATIONS


def counting_loop(limit: int = 10):
    """i, acc = 0, x; while i < limit: i += 1; acc = acc * 2 - 1  (and a carried pair that swaps every step)."""
    b = Builder()
    x = b.input("x", (3, 4), "fp32")
    a = b.input("a", (2,), "int32")
    c = b.input("c", (2,), "int32")
    zero = b.const(np.zeros(1, np.int32), name="zero")

    def cond(s, i, acc, p, q):
        return s.greater(s.const(np.full(1, limit, np.int32)), i)

    def body(s, i, acc, p, q):
        i = s.add(i, s.const(np.ones(1, np.int32)))
        acc = s.sub(s.mul(acc, s.const(np.full((1, 1), 2, np.float32))), s.const(np.ones((1, 1), np.float32)))
        return i, acc, q, p  # p and q swap: each is read after the other is written

    outs = b.while_loop([zero, x, a, c], cond, body)
    assert isinstance(outs, tuple)  # four loop values
    b.output(*outs)
    return b.build()


def feeds():
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((3, 4)).astype(np.float32),
        "a": np.array([1, 2], np.int32),
        "c": np.array([3, 4], np.int32),
    }


@pytest.mark.parametrize("limit", [0, 1, 7])
def test_while_loop_matches_reference_on_the_device(device, limit):
    graph = counting_loop(limit)
    want = tosa_vk.load(graph, backend="reference").run(feeds())
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        got = model.run(feeds())
        moved = model.transferred
    assert list(got) == list(want)
    for name in want:
        assert np.array_equal(got[name], want[name]), name
    assert all(where in ("vulkan", "fused") for _, where, _ in model.placement)
    inputs = 12 * 4 + 2 * 4 + 2 * 4
    # the loop-carried tensors never leave the device: only the inputs, the outputs and one bool per test read
    # back (one per batch of BATCH_ITERATIONS iterations where the device has conditional rendering)
    batch = BATCH_ITERATIONS if device.info.features["conditionalRendering"] else 1
    tests = 1 + -(-limit // batch)
    assert moved == {"to_device": inputs, "from_device": 4 + inputs + tests}


@pytest.mark.parametrize("iterations", [BATCH_ITERATIONS * 2 + 3, BATCH_ITERATIONS * 2 + 4])
@pytest.mark.parametrize("backend", ["vulkan", "reference"])
def test_iteration_cap_is_exact_with_batched_iterations(device, iterations, backend):
    """max_iterations = 2 batches + 3: a loop of exactly that many iterations finishes, one more raises — on both
    backends alike."""
    cap = BATCH_ITERATIONS * 2 + 3
    options = {"device": device} if backend == "vulkan" else {}
    with tosa_vk.load(counting_loop(iterations), backend=backend, max_iterations=cap, **options) as model:
        if iterations <= cap:
            assert model.run(feeds())["while_loop"].tolist() == [iterations]
        else:
            with pytest.raises(TosaError, match=f"within {cap} iterations"):
                model.run(feeds())


def test_while_loop_iteration_cap(device):
    with tosa_vk.load(counting_loop(50), backend="vulkan", device=device, max_iterations=5) as model:
        with pytest.raises(TosaError, match="WHILE_LOOP.*within 5 iterations"):
            model.run(feeds())


def branchy():
    """while i < 6: i += 1; v = (i is odd) ? v + 1 : v * 3  — a COND_IF nested in a WHILE_LOOP body."""
    b = Builder()
    v = b.input("v", (5,), "int32")
    i0 = b.const(np.zeros(1, np.int32), name="i0")

    def body(s, i, v):
        i = s.add(i, s.const(np.ones(1, np.int32)))
        odd = s.equal(s.bitwise_and(i, s.const(np.ones(1, np.int32))), s.const(np.ones(1, np.int32)))
        v = s.cond_if(
            odd,
            [v],
            lambda t, w: t.add(w, t.const(np.ones(1, np.int32))),
            lambda e, w: e.mul(w, e.const(np.full(1, 3, np.int32))),
        )
        return i, v

    _, out = b.while_loop([i0, v], lambda s, i, v: s.greater(s.const(np.full(1, 6, np.int32)), i), body)
    b.output(out)
    return b.build()


def test_cond_if_nested_in_a_loop(device):
    v = np.arange(5, dtype=np.int32) - 2
    got, _ = compare(device, branchy(), {"v": v})
    expected = v
    for i in range(1, 7):
        expected = expected + 1 if i % 2 else expected * 3
    assert got.tolist() == expected.tolist()


def test_a_region_run_by_two_operators_compiles_twice(device):
    b = Builder()
    c = b.input("c", (1,), "bool")
    x = b.input("x", (4,), "fp32")
    first = b.cond_if(c, [x], lambda t, w: t.add(w, w), lambda e, w: e.negate(w))
    second = b.cond_if(c, [first], lambda t, w: t.add(w, w), lambda e, w: e.negate(w))
    op = b.block.operators[-1]
    op.attrs["then_graph"], op.attrs["else_graph"] = "cond_if_then", "cond_if_else"  # share the first's regions
    b.output(second)
    graph = b.build()
    x_value = np.array([1, -2, 3, 0.5], np.float32)
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        for flag, expected in ((True, 4 * x_value), (False, x_value)):
            got = model.run(c=np.array([flag]), x=x_value)[second.name]
            assert got.tolist() == expected.tolist()


def test_builder_regions_run_the_same_in_arms_reference_model(tmp_path):
    """The builder's regions are encoded as Arm's tools expect: the reference model agrees with us."""
    trm = pytest.importorskip("tosa_reference_model")
    from tosa_vk.ir.flatbuffer import save_graph

    for graph, values in ((counting_loop(7), feeds()), (branchy(), {"v": np.arange(5, dtype=np.int32) - 2})):
        save_graph(graph, tmp_path / "g.tosa")
        outs, status = trm.run((tmp_path / "g.tosa").read_bytes(), [values[n] for n in graph.main.inputs])
        assert status == trm.GraphStatus.TOSA_VALID
        ours = tosa_vk.load(graph, backend="reference").run(values)
        assert all(np.array_equal(a, b) for a, b in zip(outs, ours.values()))


def test_profile_lists_the_segments_that_ran(device):
    with tosa_vk.load(branchy(), backend="vulkan", device=device, timestamps=True) as model:
        model.run(v=np.zeros(5, np.int32))
        names = [t.op for t in model.profile()]
    assert any("cond_if_then" in n for n in names) and any("cond_if_else" in n for n in names)


def test_custom_shader_op_inside_a_region(device):
    """A registered GLSL op in a COND_IF branch binds the region's tensors (names qualified by region)."""
    import importlib.util
    from pathlib import Path

    from tosa_vk import custom

    path = Path(__file__).resolve().parent.parent / "resources" / "custom_ops" / "color_matrix.py"
    spec = importlib.util.spec_from_file_location("custom_op_example_color_matrix", path)
    cm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cm)
    attrs = cm.attrs(np.eye(3) * 2, [1.0, 0.0, -1.0])
    b = Builder()
    c = b.input("c", (1,), "bool")
    x = b.input("x", (1, 2, 3, 3), "fp32")
    b.output(
        b.cond_if(
            c, [x], lambda t, w: custom.call(t, cm.DOMAIN, cm.NAME, [w], attrs, name_hint="y"), lambda e, w: e.negate(w)
        )
    )
    graph = b.build()
    xv = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        for flag in (True, False):
            got = model.run(c=np.array([flag]), x=xv)
            want = tosa_vk.load(graph, backend="reference").run(c=np.array([flag]), x=xv)
            (name,) = want
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6)


def test_batched_loop_with_a_staged_arena(device):
    """The discrete-GPU memory path (device-local arena, copies in every command buffer) with batched iterations."""
    from test_vulkan_runtime import check_staged

    check_staged(counting_loop(BATCH_ITERATIONS + 5), feeds(), device)

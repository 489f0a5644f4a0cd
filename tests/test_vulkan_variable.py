"""Variables (spec 2.16, EXT-VARIABLE) on both backends: state across runs (device-resident on Vulkan), the
seen / is_written rules, and the stateful RNN example of resources/examples checked against the reference backend
over 100 steps."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from test_reference_stateful import accumulator

import tosa_vk
from tosa_vk import Builder, TosaError

EXAMPLE = Path(__file__).resolve().parents[1] / "resources" / "examples" / "rnn_cell.py"


@pytest.mark.parametrize("backend", ["reference", "vulkan"])
def test_state_persists_across_runs_and_sessions_are_independent(device, backend):
    graph = accumulator()
    ones = np.ones(2, np.float32)
    options = {"device": device, "strict": True} if backend == "vulkan" else {}
    with tosa_vk.load(graph, backend=backend, **options) as one, tosa_vk.load(graph, backend=backend, **options) as two:
        assert one.variables == {}
        for step in range(1, 4):
            assert one.run(x=ones)["add"].tolist() == [step, step]
            if backend == "vulkan":  # h stays on the device: only x in and the sum out
                assert one.transferred == {"to_device": 8, "from_device": 8}
        assert two.run(x=ones)["add"].tolist() == [1, 1]
        assert one.variables["h"].tolist() == [3, 3]
        one.set_variable("h", [10, 20])
        assert one.run(x=ones)["add"].tolist() == [11, 21]
        one.reset_variables()
        assert one.run(x=ones)["add"].tolist() == [1, 1]
        assert two.variables["h"].tolist() == [1, 1]


def _read_before_write():
    b = Builder()
    h = b.variable("h", (2,), "fp32")  # no initial value
    b.output(b.variable_read(h))
    return b.build()


def _declared_twice():
    """Two VARIABLE declarations of one uid: made in the IR (the Builder refuses the second one itself)."""
    b = Builder()
    h = b.variable("h", (1,), "int8", [1])
    b.output(b.variable_read(h))
    graph = b.build()
    declare = next(op for op in graph.main.operators if op.op == "VARIABLE")
    graph.main.operators.insert(0, copy.deepcopy(declare))
    return graph


def _write_wrong_shape():
    b = Builder()
    x = b.input("x", (3,), "fp32")
    h = b.variable("h", (2,), "fp32", [0, 0])
    b.variable_write(h, x)
    b.output(b.variable_read(h))
    return b.build()


@pytest.mark.parametrize(
    "make, feeds, rule",
    [
        (_read_before_write, {}, "is_written"),
        (_declared_twice, {}, "declared twice"),
        (_write_wrong_shape, {"x": np.zeros(3, np.float32)}, "VARIABLE_WRITE.*shape"),
    ],
    ids=["read_before_write", "declared_twice", "write_wrong_shape"],
)
def test_rules_raise_on_both_backends(device, make, feeds, rule):
    with pytest.raises(TosaError, match=rule):
        tosa_vk.load(make(), backend="reference").run(feeds)
    with tosa_vk.load(make(), backend="vulkan", device=device, strict=True) as model:
        with pytest.raises(TosaError, match=rule):
            model.run(feeds)


def test_rnn_example_matches_the_reference_over_100_steps(device):
    spec = importlib.util.spec_from_file_location("rnn_cell", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = example.compare(100, device=device, strict=True)
    assert result["max_abs_diff"] < 1e-4
    assert np.allclose(result["final_state"], result["reference_state"], atol=1e-4)
    # only the step's input and output cross: x (16 fp32) in, h (32 fp32) out
    assert all(m == {"to_device": 64, "from_device": 128} for m in result["bytes_per_step"])

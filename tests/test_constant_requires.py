"""REQUIREs on constant operands are refused at load on every backend (issue 34). Found: Vulkan ran a RESCALE whose
shift was outside 2..62 (shift 1 saturated, 63 gave zeros) where the reference backend raised the REQUIRE."""

from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk import TosaError


def with_constant(graph, old: np.ndarray, new: np.ndarray):
    """The graph with the constant operand holding `old` changed to `new` (Builder.build would refuse `new`)."""
    (t,) = [t for t in graph.main.tensors.values() if t.data is not None and np.array_equal(t.data, old)]
    t.data = new.astype(t.dtype.numpy)
    return graph


@pytest.fixture(params=["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
def load(request):
    """tosa_vk.load on each backend."""
    if request.param == "reference":
        return lambda graph: tosa_vk.load(graph, backend="reference")
    device = request.getfixturevalue("device")
    return lambda graph: tosa_vk.load(graph, backend="vulkan", device=device)


def rescale(shift: int, multiplier: int = 1 << 30):
    b = tosa_vk.Builder()
    x = b.input("x", (8,), "int32")
    m, s = np.array([1 << 30], np.int32), np.array([7], np.int8)
    b.output(b.rescale(x, m, s, out_dtype="int16", name="y"))
    graph = with_constant(b.build(), s, np.array([shift]))
    return with_constant(graph, m, np.array([multiplier]))


@pytest.mark.parametrize("shift", [1, 63])
def test_rescale_shift_outside_2_to_62_is_refused(load, shift):
    rule = rf"RESCALE #\d+ 'y': REQUIRE\(2 <= shift && shift <= 62\) does not hold: {shift}"
    with pytest.raises(TosaError, match=rule):
        load(rescale(shift))


def test_a_negative_rescale_multiplier_is_refused(load):
    with pytest.raises(TosaError, match=r"RESCALE #\d+ 'y': REQUIRE\(multiplier >= 0\) does not hold: -5"):
        load(rescale(7, multiplier=-5))


def test_rescale_shifts_at_the_bounds_run(load):
    for shift in (2, 62):
        with load(rescale(shift)) as model:
            assert model.run(x=np.zeros(8, np.int32))["y"].tolist() == [0] * 8


def test_other_constant_operand_requires_are_refused():
    b = tosa_vk.Builder()
    x = b.input("x", (4,), "int32")
    b.output(b.op("LOGICAL_LEFT_SHIFT", x, np.array([3, 1, 2, 0], np.int32), name="y"))
    with pytest.raises(TosaError, match=r"LOGICAL_LEFT_SHIFT .*REQUIRE\(0 <= value2 && value2 <= 31\).*: 32"):
        tosa_vk.load(with_constant(b.build(), np.array([3, 1, 2, 0]), np.array([3, 1, 32, 0])), backend="reference")

    b = tosa_vk.Builder()
    x = b.input("x", (4,), "int32")
    b.output(b.op("INTDIV", x, np.array([3, 1, 2, 5], np.int32), name="y"))
    with pytest.raises(TosaError, match=r"INTDIV .*REQUIRE\(value2 != 0\)"):
        tosa_vk.load(with_constant(b.build(), np.array([3, 1, 2, 5]), np.array([3, 1, 0, 5])), backend="reference")

    b = tosa_vk.Builder()
    values = b.input("values", (1, 4, 2), "fp32")
    b.output(b.op("GATHER", values, np.array([[3, 1, 2]], np.int32), name="y"))
    with pytest.raises(TosaError, match=r"GATHER .*REQUIRE\(0 <= k && k < K\).*: 4"):
        tosa_vk.load(with_constant(b.build(), np.array([[3, 1, 2]]), np.array([[3, 4, 2]])), backend="reference")

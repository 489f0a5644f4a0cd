"""Reference backend: variables across runs and sessions, CUSTOM via the registry, and the session API. The
seen / is_written rules are tested on both backends in test_vulkan_variable.py."""
from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, TosaError


def accumulator(initial=(0.0, 0.0)):
    b = Builder()
    x = b.input("x", (2,), "fp32")
    h = b.variable("h", (2,), "fp32", initial)
    new = b.add(b.variable_read(h), x)
    b.variable_write(h, new)
    b.output(new)
    return b.build()


def test_variables_persist_across_runs_and_sessions_are_independent():
    graph = accumulator()
    one, two = tosa_vk.load(graph), tosa_vk.load(graph)
    ones = np.ones(2, np.float32)
    for step in range(1, 4):
        assert one.run(x=ones)["add"].tolist() == [step, step]
    assert two.run(x=ones)["add"].tolist() == [1, 1]
    assert one.variables["h"].tolist() == [3, 3]
    one.set_variable("h", [10, 20])
    assert one.run(x=ones)["add"].tolist() == [11, 21]
    one.reset_variables()
    assert one.run(x=ones)["add"].tolist() == [1, 1]


def test_custom_op_registry():
    @tosa_vk.custom_op("com.example.test", "double")
    def double(inputs, attrs):
        return [inputs[0] * 2]

    b = Builder()
    x = b.input("x", (4,), "int32")
    y = b.custom([x], domain_name="com.example.test", operator_name="double", implementation_attrs=b"",
                 out_shape=(4,), out_dtype="int32")
    b.output(y)
    model = tosa_vk.load(b.build())
    assert model.run(x=np.arange(4, dtype=np.int32))[y.name].tolist() == [0, 2, 4, 6]


def test_unknown_custom_op_is_a_clear_error():
    b = Builder()
    x = b.input("x", (4,), "int32")
    b.output(b.custom([x], domain_name="com.nowhere", operator_name="nothing", implementation_attrs=b"",
                      out_shape=(4,), out_dtype="int32"))
    with pytest.raises(TosaError, match=r"CUSTOM #0 .*com\.nowhere::nothing"):
        tosa_vk.load(b.build()).run(x=np.zeros(4, np.int32))


def test_session_input_errors():
    model = tosa_vk.load(accumulator())
    with pytest.raises(TosaError, match="missing graph input"):
        model.run({})
    with pytest.raises(TosaError, match="unknown graph input"):
        model.run(x=np.zeros(2, np.float32), y=np.zeros(1))
    with pytest.raises(TosaError, match="shape"):
        model.run(x=np.zeros(3, np.float32))
    with pytest.raises(TosaError, match="unknown backend"):
        tosa_vk.load(accumulator(), backend="nope")

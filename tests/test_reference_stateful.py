"""Reference backend: CUSTOM via the registry and the session API. Variables (state across runs, the seen /
is_written rules) are tested on both backends in test_vulkan_variable.py."""

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


def test_custom_op_registry():
    @tosa_vk.custom_op("com.example.test", "double")
    def double(inputs, attrs):
        return [inputs[0] * 2]

    b = Builder()
    x = b.input("x", (4,), "int32")
    y = b.custom(
        [x],
        domain_name="com.example.test",
        operator_name="double",
        implementation_attrs=b"",
        out_shape=(4,),
        out_dtype="int32",
    )
    b.output(y)
    model = tosa_vk.load(b.build(), backend="reference")
    assert model.run(x=np.arange(4, dtype=np.int32))[y.name].tolist() == [0, 2, 4, 6]


def test_unknown_custom_op_is_a_clear_error():
    b = Builder()
    x = b.input("x", (4,), "int32")
    b.output(
        b.custom(
            [x],
            domain_name="com.nowhere",
            operator_name="nothing",
            implementation_attrs=b"",
            out_shape=(4,),
            out_dtype="int32",
        )
    )
    with pytest.raises(TosaError, match=r"CUSTOM #0 .*com\.nowhere::nothing"):
        tosa_vk.load(b.build(), backend="reference").run(x=np.zeros(4, np.int32))


def test_session_input_errors():
    model = tosa_vk.load(accumulator(), backend="reference")
    with pytest.raises(TosaError, match="missing graph input"):
        model.run({})
    with pytest.raises(TosaError, match="unknown graph input"):
        model.run(x=np.zeros(2, np.float32), y=np.zeros(1))
    with pytest.raises(TosaError, match="shape"):
        model.run(x=np.zeros(3, np.float32))
    with pytest.raises(TosaError, match="unknown backend"):
        tosa_vk.load(accumulator(), backend="nope")

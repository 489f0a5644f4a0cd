"""The Khronos validation layer's messages reach the user (issue 19): TOSA_VK_VALIDATION=1 or load(validation=True)
turns the layer on, and a message is a VulkanError after the load or run that caused it, or a warning with
validation="warn". The layer stays silent on the whole suite, so a message is planted where the layer's callback
puts it (Device.validation_messages)."""

from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.vulkan import VulkanError

pytestmark = pytest.mark.vulkan


def tanh_graph() -> tosa_vk.Graph:
    b = tosa_vk.Builder()
    b.output(b.tanh(b.input("x", (4,), "fp32"), name="y"))
    return b.build()


def test_a_message_after_a_run_is_an_error():
    with tosa_vk.load(tanh_graph(), backend="vulkan", validation=True) as model:
        assert model.device is not None and model.device._messenger is not None  # the layer is on
        model.device.validation_messages.append("VUID-planted: a message")
        with pytest.raises(VulkanError, match="validation layer reported 1 message.*VUID-planted"):
            model.run(x=np.zeros(4, np.float32))
        assert model.run(x=np.zeros(4, np.float32))["y"].tolist() == [0.0] * 4  # reported once


def test_validation_warn_makes_it_a_warning():
    with tosa_vk.load(tanh_graph(), backend="vulkan", validation="warn") as model:
        model.device.validation_messages.append("VUID-planted: a message")
        with pytest.warns(RuntimeWarning, match="VUID-planted"):
            model.run(x=np.zeros(4, np.float32))


def test_the_environment_chooses_warn(monkeypatch):
    monkeypatch.setenv("TOSA_VK_VALIDATION", "warn")
    with tosa_vk.load(tanh_graph(), backend="vulkan") as model:
        assert model.device._messenger is not None
        model.device.validation_messages.append("VUID-planted: a message")
        with pytest.warns(RuntimeWarning, match="VUID-planted"):
            model.run(x=np.zeros(4, np.float32))


def test_an_unknown_validation_value_is_refused():
    with pytest.raises(TosaError, match="validation='loud'"):
        tosa_vk.load(tanh_graph(), backend="vulkan", validation="loud")

"""Vulkan bring-up: an instance and a compute device exist on this machine (lavapipe in CI)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tosa_vk.vulkan import Device, VulkanError, enumerate_devices, select


def test_enumerate_and_open_device():
    devices = enumerate_devices()
    assert devices, "no Vulkan device: install mesa-vulkan-drivers"
    with Device() as dev:
        info = dev.info
        print(f"\nVulkan device: {info.name} ({info.type}, Vulkan {info.api_version}, subgroup {info.subgroup_size})")
        print("features:", info.features)
        assert info.api_version.startswith("1.")
        assert info.limits["maxStorageBufferRange"] > 0 and info.subgroup_size > 0
        assert dev.queue is not None


def test_select_by_index_and_name():
    devices = enumerate_devices()
    assert select(devices, 0) is devices[0]
    assert select(devices, devices[0].name[:4].upper()) is devices[0]
    with pytest.raises(VulkanError, match="no Vulkan device #99"):
        select(devices, 99)
    with pytest.raises(VulkanError, match="no Vulkan device with a UUID or name like"):
        select(devices, "no-such-gpu")


def test_validation_layer_is_silent_on_device_lifetime():
    with Device(validation=True) as dev:
        pass
    assert dev.validation_messages == []


def test_devices_cli_json():
    done = subprocess.run(
        [sys.executable, "-m", "tosa_vk.tools.cli", "devices", "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout)[0]["name"]

"""Device choice (issue 37): by index, UUID (prefix) or name; TOSA_VK_VISIBLE_DEVICES restricts and renumbers, as
CUDA_VISIBLE_DEVICES does. Unit tests on made-up device lists (several GPUs, two of one model), then the devices this
machine has."""

import subprocess
import sys

import numpy as np
import pytest

import tosa_vk
from tosa_vk import VulkanError
from tosa_vk.session import vulkan_devices
from tosa_vk.vulkan.device import DeviceInfo, select, visible


def _device(physical: int, name: str, kind: str, uuid: str) -> DeviceInfo:
    return DeviceInfo(physical, name, kind, "1.3.0", 1, 0x10DE, 0x2330, 32, uuid=uuid, physical=physical)


# the loader's order: two identical GPUs, an iGPU, lavapipe
MACHINE = [
    _device(0, "NVIDIA H100", "discrete", "aa11" + "0" * 28),
    _device(1, "NVIDIA H100", "discrete", "bb22" + "1" * 28),
    _device(2, "Intel(R) UHD 770", "integrated", "cc33" + "2" * 28),
    _device(3, "llvmpipe (LLVM 15.0.6, 256 bits)", "cpu", "dd44" + "3" * 28),
]


def test_select_by_index_uuid_and_name():
    assert select(MACHINE).physical == 0  # discrete first
    assert select(MACHINE, 2).name.startswith("Intel")
    assert select(MACHINE, "1").physical == 1
    assert select(MACHINE, "bb22" + "1" * 28).physical == 1  # the full UUID
    assert select(MACHINE, "BB221111").physical == 1  # a prefix of 8 hex digits, any case
    assert select(MACHINE, "GPU-bb221111-1111").physical == 1  # nvidia-smi's spelling
    assert select(MACHINE, "llvmpipe").physical == 3
    assert select(MACHINE, "h100").physical == 0  # a name matching several: the first (use a UUID)
    with pytest.raises(VulkanError, match="no Vulkan device #4"):
        select(MACHINE, 4)
    with pytest.raises(VulkanError, match="UUID or name like 'ee55ee55'"):
        select(MACHINE, "ee55ee55")


def test_visible_restricts_and_renumbers_in_its_order(monkeypatch):
    seen = visible(MACHINE, "3, bb221111")
    assert [(d.index, d.physical) for d in seen] == [(0, 3), (1, 1)]
    assert select(seen, 1).uuid.startswith("bb22")  # index 1 is the second visible device
    assert select(seen).physical == 1  # still discrete before cpu among the visible ones
    assert visible(MACHINE, "") == []  # empty: none (the reference backend then)
    monkeypatch.delenv("TOSA_VK_VISIBLE_DEVICES", raising=False)
    assert visible(MACHINE) == MACHINE  # unset: all
    monkeypatch.setenv("TOSA_VK_VISIBLE_DEVICES", "2")
    assert [d.name for d in visible(MACHINE)] == ["Intel(R) UHD 770"]


@pytest.mark.parametrize(
    ("spec", "rule"),
    [("7", "not a device index or UUID"), ("0,0", "twice"), ("aa11,1", "not a device index"), ("h100", "not a")],
)
def test_visible_refuses_what_names_no_single_device(spec, rule):
    with pytest.raises(VulkanError, match=rule):
        visible(MACHINE, spec)


def test_uuid_prefix_matching_two_devices_is_refused():
    twins = [_device(0, "A", "discrete", "ab" * 16), _device(1, "B", "discrete", "ab" * 15 + "cd")]
    with pytest.raises(VulkanError, match="matches 2 devices"):
        select(twins, "abababab")


@pytest.fixture
def fresh_devices():
    vulkan_devices.cache_clear()
    yield
    vulkan_devices.cache_clear()


def test_devices_says_why_where_vulkan_is_missing(monkeypatch, fresh_devices):
    """No loader / no driver: devices() raises the VulkanError the Vulkan backend raises (with its fix), not a bare
    []; load() without backend= still falls back (vulkan_devices() is empty). A driver error after the instance is a
    VulkanError too. (tests/test_doctor.py hides the real loader and driver.)"""
    import tosa_vk.vulkan
    from tosa_vk.session import default_backend
    from tosa_vk.vulkan import loader

    def missing(**_):
        raise loader.no_driver(RuntimeError("VK_ERROR_INCOMPATIBLE_DRIVER"))

    monkeypatch.setattr(tosa_vk.vulkan, "enumerate_devices", missing)
    with pytest.raises(VulkanError, match=r"no Vulkan driver; install one: .*backend='reference'"):
        tosa_vk.devices()
    assert vulkan_devices() == () and default_backend() == "reference"

    def broken(**_):
        raise ValueError("a bad property")

    monkeypatch.setattr(tosa_vk.vulkan, "enumerate_devices", broken)
    vulkan_devices.cache_clear()
    with pytest.raises(VulkanError, match=r"enumerating the Vulkan devices failed \(ValueError: a bad property\)"):
        tosa_vk.devices()
    monkeypatch.setattr(tosa_vk.vulkan, "enumerate_devices", lambda **_: [])  # Vulkan works, no device: []
    vulkan_devices.cache_clear()
    assert tosa_vk.devices() == []


@pytest.mark.vulkan
def test_this_machines_device_by_uuid_name_and_visibility(monkeypatch, fresh_devices):
    found = tosa_vk.devices()
    if not found:
        pytest.skip("no Vulkan device")
    d = found[0]
    assert d.uuid and d.kind in ("discrete", "integrated", "virtual", "cpu", "other") and d.driver
    graph = tosa_vk.Builder()
    x = graph.input("x", (4,), "fp32")
    graph.output(graph.abs(x))
    feeds = {"x": np.array([-1, 2, -3, 4], np.float32)}
    for selector in (d.uuid, d.uuid[:8], d.name.split()[0], 0):
        m = tosa_vk.load(graph.build(), backend="vulkan", device=selector)
        try:
            assert m.device.info.uuid == d.uuid
            np.testing.assert_array_equal(next(iter(m.run(feeds).values())), [1, 2, 3, 4])
        finally:
            m.close()
    monkeypatch.setenv("TOSA_VK_VISIBLE_DEVICES", d.uuid)
    vulkan_devices.cache_clear()
    assert [v.uuid for v in tosa_vk.devices()] == [d.uuid]
    monkeypatch.setenv("TOSA_VK_VISIBLE_DEVICES", "")
    vulkan_devices.cache_clear()
    assert tosa_vk.devices() == []
    with pytest.raises(VulkanError, match="TOSA_VK_VISIBLE_DEVICES=''"):
        tosa_vk.load(graph.build(), backend="vulkan")


@pytest.mark.vulkan
def test_cli_lists_devices_when_tosa_vk_device_names_none():
    env = {"TOSA_VK_DEVICE": "7", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "tosa_vk", "devices"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "TOSA_VK_DEVICE" in done.stderr and "uuid" in done.stdout


@pytest.mark.vulkan
def test_lavapipe_asked_for_by_name_loads_only_its_driver(monkeypatch):
    """TOSA_VK_DEVICE=lavapipe: the loader is shown only lavapipe's manifests while the instance is made (it would
    open every installed Mesa driver), and the variable is restored after; a driver list of the user's wins."""
    import os

    from tosa_vk.vulkan import device as vk_device

    monkeypatch.delenv("VK_DRIVER_FILES", raising=False)
    monkeypatch.delenv("VK_ICD_FILENAMES", raising=False)
    seen = []
    real = vk_device.create_instance

    def spy(*args, **kwargs):
        seen.append(os.environ.get("VK_DRIVER_FILES"))
        return real(*args, **kwargs)

    monkeypatch.setattr(vk_device, "create_instance", spy)
    monkeypatch.setenv("TOSA_VK_DEVICE", "lavapipe")
    with vk_device.Device() as dev:
        assert dev.info.device_class == "lavapipe"
    assert seen[-1] and all("lvp_icd" in f for f in seen[-1].split(os.pathsep))
    assert "VK_DRIVER_FILES" not in os.environ
    monkeypatch.setenv("VK_DRIVER_FILES", "/nowhere/mine.json")
    with vk_device.loader_drivers("lavapipe"):
        assert os.environ["VK_DRIVER_FILES"] == "/nowhere/mine.json"
    monkeypatch.delenv("TOSA_VK_DEVICE")
    assert not vk_device.asks_for_lavapipe(None) and vk_device.asks_for_lavapipe("llvmpipe")

"""Device classes (tosa_vk/device_class.py): classification, forcing a class, kernel-feature switches, cache keys."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tosa_vk
from tosa_vk import device_class
from tosa_vk.store.program_cache import ProgramCache
from tosa_vk.target import LAVAPIPE, NAMED, named


@pytest.mark.parametrize(
    "vendor, driver, kind, expected",
    [
        (0x10DE, "NVIDIA", "discrete", "nvidia"),
        (0x1002, "radv", "discrete", "amd"),
        (0x1002, "AMD proprietary driver", "integrated", "amd"),
        (0x8086, "Intel open-source Mesa driver", "integrated", "intel"),
        (0x13B5, "Mali", "integrated", "mali"),
        (0x5143, "Qualcomm", "integrated", "adreno"),
        (0x10005, "llvmpipe", "cpu", "lavapipe"),
        (0x1AE0, "SwiftShader driver", "cpu", "lavapipe"),
        (0x1234, "unknown", "discrete", "generic"),
    ],
)
def test_classify(vendor, driver, kind, expected):
    assert device_class.classify(vendor, driver, kind) == expected


def test_every_class_is_data_with_a_named_target():
    for name, c in device_class.CLASSES.items():
        assert c.name == name
        assert set(c.families) <= set(device_class.OPERATORS)
        assert all(f in device_class.FAMILIES for fams in c.families.values() for f in fams)
        assert c.uses <= set(device_class.FEATURES)
        assert name in NAMED and named(name).device_class == name
        for tile in (c.matmul_tile, c.conv_tile):
            # a generic or named device of the class can run the tile's workgroup and its shared memory
            assert tile.invocations <= named(name).max_workgroup_invocations or name == "lavapipe"
            assert tile.shared_bytes() <= named(name).max_shared_memory or name == "lavapipe"


def test_family_needs_the_device_features_and_honours_the_kill_switch():
    nvidia = LAVAPIPE.with_class("nvidia")
    assert nvidia.family("MATMUL") == "tiled"  # lavapipe has no cooperative matrices: the next family
    assert nvidia.family("REDUCE") == "subgroup"
    assert nvidia.uses("int8dot") and nvidia.uses("fp16")
    off = nvidia.with_class(disabled=frozenset({"shared", "subgroup"}))
    assert off.family("MATMUL") == off.family("REDUCE") == "register"
    assert LAVAPIPE.family("MATMUL") == "register"  # lavapipe's class keeps its own kernels
    assert named("nvidia").family("MATMUL") == "coopmat"


def test_bad_names_are_clear_errors(monkeypatch):
    with pytest.raises(tosa_vk.TosaError, match="unknown device class 'nvidai'"):
        device_class.forced("nvidai")
    monkeypatch.setenv(device_class.ENV_DISABLE, "coopmat,tensorcores")
    with pytest.raises(tosa_vk.TosaError, match="TOSA_VK_DISABLE: unknown kernel feature.*tensorcores"):
        device_class.disabled()
    monkeypatch.setenv(device_class.ENV_DISABLE, " FP16 , coopmat")
    assert device_class.disabled() == {"fp16", "coopmat"}


def test_the_class_is_part_of_the_cache_key():
    keys = {ProgramCache.key(b"graph", {}, LAVAPIPE.with_class(c)) for c in device_class.CLASSES}
    assert len(keys) == len(device_class.CLASSES)
    off = LAVAPIPE.with_class("nvidia", frozenset({"fp16"}))
    assert ProgramCache.key(b"graph", {}, off) not in keys


def _add_graph():
    b = tosa_vk.Builder()
    x = b.input("x", (1, 4, 4, 8), "FP32")
    y = b.input("y", (1, 4, 4, 8), "FP32")
    b.output(b.add(x, y))
    return b.build()


@pytest.mark.vulkan
def test_load_forces_a_class(monkeypatch, tmp_path):
    x = np.arange(128, dtype=np.float32).reshape(1, 4, 4, 8)
    with tosa_vk.load(_add_graph(), "vulkan", target="nvidia", cache_dir=False) as m:
        assert m.target.device_class == "nvidia"
        out = m.run({"x": x, "y": x})
    np.testing.assert_array_equal(next(iter(out.values())), 2 * x)
    monkeypatch.setenv(device_class.ENV_TARGET, "mali")
    monkeypatch.setenv(device_class.ENV_DISABLE, "subgroup")
    with tosa_vk.load(_add_graph(), "vulkan", cache_dir=False) as m:
        assert (m.target.device_class, m.target.disabled) == ("mali", {"subgroup"})
    with pytest.raises(tosa_vk.TosaError, match="unknown device class"):
        tosa_vk.load(_add_graph(), "vulkan", target="h100")


def test_targets_command_lists_the_classes():
    out = subprocess.run(
        [sys.executable, "-m", "tosa_vk", "targets"], capture_output=True, text=True, check=True
    ).stdout
    names = [line.split()[0] for line in out.splitlines() if line and not line.startswith("(")]
    assert names == list(device_class.CLASSES)
    rows = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tosa_vk", "targets", "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert [r["name"] for r in rows] == list(device_class.CLASSES)


@pytest.mark.vulkan
def test_devices_shows_the_class():
    rows = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tosa_vk", "devices", "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert all(r["device_class"] in device_class.CLASSES for r in rows)


def test_without_a_glsl_compiler_every_class_takes_the_shipped_register_kernels():
    """compile(kernels=...) is the no-compiler case (tosa_vk/vulkan/builtin.py shipped_only): the GPU families'
    kernels are not shipped, so a forced class must build the register kernels, not fail or decline a fusion."""
    from tosa_vk.program import Kernel, walk
    from tosa_vk.stages.compiler import compile as compile_graph

    def shaders(program):
        return {k.shader for k in walk(program.steps) if isinstance(k, Kernel)}

    b = tosa_vk.Builder()
    x = b.input("x", (1, 8, 8, 16), "FP32")
    y = b.conv2d(x, np.ones((64, 3, 3, 16), np.float32), np.zeros(64, np.float32), pad=(1, 1, 1, 1))
    b.output(b.reduce_sum(y, axis=3))
    graph = b.build()
    nvidia = LAVAPIPE.with_class("nvidia")
    assert shaders(compile_graph(graph, nvidia)) != shaders(compile_graph(graph, LAVAPIPE))  # GPU families chosen
    assert shaders(compile_graph(graph, nvidia, kernels=lambda kernel: True)) == shaders(compile_graph(graph, LAVAPIPE))

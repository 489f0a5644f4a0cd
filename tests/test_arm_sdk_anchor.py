"""The Arm ML SDK for Vulkan benchmark anchor (tosa_vk/tools/bench/anchors/arm_sdk.py): .tosa -> model-converter ->
VGF -> scenario-runner in a worker process. Skipped when Arm's wheels (or their Vulkan layers) are not usable here; set
TOSA_VK_ARM_SDK_PYTHON to an interpreter that has them to use a separate environment."""

from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk.tools.bench.anchors import arm_sdk

pytestmark = pytest.mark.vulkan


@pytest.fixture(scope="module")
def sdk():
    reason = arm_sdk.available()
    if reason is not None:
        pytest.skip(reason)
    return arm_sdk


def test_add_matches_numpy(sdk, tmp_path):
    b = tosa_vk.Builder()
    x = b.input("x", (1, 8, 8, 4), "fp32")
    y = b.input("y", (1, 8, 8, 4), "fp32")
    b.output(b.add(x, y, name="z"))
    tosa_vk.save_graph(b.build(), tmp_path / "add.tosa")
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    ys = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    with sdk.ArmSdkAnchor(tmp_path / "add.tosa", workdir=tmp_path / "work") as anchor:
        assert anchor.vgf_path.is_file() and anchor.scenario_path.is_file()
        outputs, times = anchor.run({"x": xs, "y": ys}, repeats=2)
        assert list(outputs) == ["z"] and len(times) == 2 and all(t > 0 for t in times)
        assert outputs["z"].dtype == np.float32 and outputs["z"].shape == (1, 8, 8, 4)
        np.testing.assert_array_equal(outputs["z"], xs + ys)
        outputs, _ = anchor.run({"x": 2 * xs, "y": ys})  # new inputs reach the same loaded scenario
        np.testing.assert_array_equal(outputs["z"], 2 * xs + ys)


def test_inputs_and_outputs_keep_the_graph_order(sdk, tmp_path):
    b = tosa_vk.Builder()
    second = b.input("b", (2, 3), "fp32")
    first = b.input("a", (2, 3), "fp32")
    diff = b.sub(first, second, name="diff")
    total = b.add(first, second, name="total")
    b.output(total, diff)
    tosa_vk.save_graph(b.build(), tmp_path / "two.tosa")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    bb = np.full((2, 3), 10, np.float32)
    with sdk.ArmSdkAnchor(tmp_path / "two.tosa") as anchor:
        assert anchor.input_names == ["b", "a"] and anchor.output_names == ["total", "diff"]
        outputs, _ = anchor.run({"a": a, "b": bb})
    np.testing.assert_array_equal(outputs["total"], a + bb)
    np.testing.assert_array_equal(outputs["diff"], a - bb)


def test_converter_errors_are_reported(sdk, tmp_path):
    bad = tmp_path / "bad.tosa"
    bad.write_bytes(b"not a flatbuffer")
    with pytest.raises(sdk.ArmSdkError, match="model-converter"):
        sdk.ArmSdkAnchor(bad, workdir=tmp_path / "work")

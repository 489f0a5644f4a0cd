"""The cold-run warm-up (tosa_vk/vulkan/warmup.py): lavapipe's pipelines compiled in parallel at load by empty
dispatches on this device and twin devices. It never changes results, never fails a load, leaves no thread behind
and keeps the validation layer silent (the `device` fixture)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import tosa_vk
from tosa_vk.tools.bench import graphs
from tosa_vk.vulkan import Device, VulkanError
from tosa_vk.vulkan.warmup import THREAD_NAME, compiles_at_dispatch, warm_up


@pytest.fixture
def lavapipe(device):
    if not compiles_at_dispatch(device):
        pytest.skip("the warm-up is lavapipe's (other drivers compile at pipeline creation)")
    return device


def _load(device, graph):
    return tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=False)


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def test_warm_up_on_and_off_same_outputs(lavapipe, monkeypatch):
    graph, feeds = graphs.resnet_fp32(np.random.default_rng(0), size=8)  # texel views, several pipelines
    monkeypatch.setenv("TOSA_VK_WARMUP", "0")
    with _load(lavapipe, graph) as plain:
        assert plain.warmup is None
        expected = plain.run(feeds)
    monkeypatch.delenv("TOSA_VK_WARMUP")
    with _load(lavapipe, graph) as model:
        report = warm_up(model.runtime, workers=2, probe=False)  # twins, whatever Mesa's cache holds
        assert report is not None and report.problems == [] and len(report.shares) == 2, report
        assert not _threads()
        got = model.run(feeds)
    assert list(got) == list(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_failing_warm_up_still_loads_and_runs(lavapipe, monkeypatch):
    graph, feeds = graphs.gru_fp32(np.random.default_rng(0), steps=2)

    def refused(self):
        raise VulkanError("cannot open the device twice")

    monkeypatch.setenv("TOSA_VK_WARMUP", "0")
    with _load(lavapipe, graph) as plain:
        expected = plain.run(feeds)
    monkeypatch.setattr(Device, "twin", refused)
    monkeypatch.setenv("TOSA_VK_WARMUP", "3")
    with _load(lavapipe, graph) as model:
        report = warm_up(model.runtime, probe=False)
        assert report is not None and len(report.problems) == 2, report  # one per twin
        assert "cannot open the device twice" in report.problems[0]
        assert not _threads()
        got = model.run(feeds)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_warm_mesa_cache_is_probed_and_nothing_more_started(lavapipe, monkeypatch):
    graph, feeds = graphs.gru_fp32(np.random.default_rng(0), steps=2)
    monkeypatch.setenv("TOSA_VK_WARMUP", "0")
    with _load(lavapipe, graph) as plain:  # its first run puts every variant into Mesa's disk cache
        plain.run(feeds)
    monkeypatch.setenv("TOSA_VK_WARMUP", "1")
    with _load(lavapipe, graph) as model:
        report = model.warmup
        assert report is not None and report.problems == [], report
        if os.environ.get("MESA_SHADER_CACHE_DISABLE", "").lower() in ("1", "true"):
            pytest.skip("Mesa's disk cache is off here")
        assert report.cached and report.shares == [], report
        assert not _threads()


def test_a_model_on_its_own_device_without_compute_threads_warms_up_on_twins(lavapipe, monkeypatch):
    """A small program reopens its device with lavapipe's compute threads off (tosa_vk/vulkan/threads.py); its twins
    share that instance and warm up like any other."""
    graph, feeds = graphs.gru_fp32(np.random.default_rng(0), steps=2)
    monkeypatch.delenv("LP_NUM_THREADS", raising=False)
    with tosa_vk.load(graph, backend="vulkan", cache_dir=False) as model:
        assert model.device.threads == 0
        report = warm_up(model.runtime, workers=2, probe=False)
        assert report is not None and report.problems == [] and len(report.shares) == 2, report
        got = model.run(feeds)
    want = tosa_vk.load(graph, backend="reference").run(feeds)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)

"""lavapipe's compute threads (issue 40, tosa_vk/vulkan/threads.py): a program of small dispatches runs on its own
device reopened with LP_NUM_THREADS=0 (the queue thread runs the workgroups; no hand-off to the pool per dispatch),
with the same results as on a device with the pool; a program of large dispatches, a device the user gave and a
thread count the user set are left alone."""

from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder
from tosa_vk.target import LAVAPIPE, MINIMUM
from tosa_vk.vulkan.threads import VARIABLE, inline


def small_graph():
    """A recurrent cell's worth of tiny kernels: every dispatch one workgroup."""
    b = Builder()
    x = b.input("x", (1, 8), "fp32")
    h = b.input("h", (1, 8), "fp32")
    for _ in range(3):
        h = b.tanh(b.add(b.mul(h, x), b.sigmoid(x)))
        x = b.sub(h, x)
    b.output(b.add(h, x, name="y"))
    return b.build()


def large_graph():
    b = Builder()
    x = b.input("x", (1 << 18,), "fp32")
    b.output(b.add(b.mul(x, x), x, name="y"))
    return b.build()


def feeds(graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in graph.inputs}


@pytest.fixture
def lavapipe(device):
    if device.info.device_class != "lavapipe":
        pytest.skip("lavapipe's compute threads")
    return device


def test_small_dispatches_run_without_the_pool_with_the_same_results(lavapipe, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    graph = small_graph()
    with (
        tosa_vk.load(graph, backend="vulkan", cache_dir=False, validation=True) as own,
        tosa_vk.load(graph, backend="vulkan", cache_dir=False, device=lavapipe) as given,
    ):
        assert own.device.threads == 0 and given.device is lavapipe  # a device the user gave is theirs
        assert not own.runtime.queue.polls and given.runtime.queue.polls  # the queue thread keeps its core
        for seed in range(3):  # new feeds each run: fresh outputs, not the last run's
            f = feeds(graph, seed)
            a, b = own.run(f)["y"], given.run(f)["y"]
            assert np.array_equal(a, b)
            assert not np.shares_memory(a, own.run(f)["y"])  # outputs are copies, never views a run reuses
        assert own.device.validation_messages == []


def test_large_dispatches_and_a_user_thread_count_keep_the_pool(lavapipe, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    with tosa_vk.load(large_graph(), backend="vulkan", cache_dir=False) as model:
        assert model.device.threads is None
    monkeypatch.setenv(VARIABLE, "2")
    with tosa_vk.load(small_graph(), backend="vulkan", cache_dir=False) as model:
        assert model.device.threads is None


def test_a_program_cache_hit_runs_without_the_pool_too(lavapipe, monkeypatch, tmp_path):
    monkeypatch.delenv(VARIABLE, raising=False)
    graph = small_graph()
    f = feeds(graph)
    with tosa_vk.load(graph, backend="vulkan", cache_dir=tmp_path) as first:
        expected = first.run(f)["y"]
    with tosa_vk.load(graph, backend="vulkan", cache_dir=tmp_path) as hit:
        assert hit.cached and hit.device.threads == 0
        assert np.array_equal(hit.run(f)["y"], expected)


def test_only_lavapipe_targets_run_inline(lavapipe, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    with tosa_vk.load(small_graph(), backend="vulkan", cache_dir=False, device=lavapipe) as model:
        assert inline(model.program, LAVAPIPE)
        assert not inline(model.program, MINIMUM)  # a GPU's driver has no such pool

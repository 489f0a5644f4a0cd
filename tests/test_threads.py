"""A Model used from several threads: runs are serialised, never mixed; close() waits for a run in progress; two
Models on one device stay independent."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.vulkan import VulkanError


def graph():
    """y = x * x + x over a vector large enough that runs overlap in time."""
    b = Builder()
    x = b.input("x", (1 << 16,), "fp32")
    b.output(b.add(b.mul(x, x), x, name="y"))
    return b.build()


def hammer(model, worker: int, runs: int, wrong: list) -> None:
    for i in range(runs):
        x = np.full(1 << 16, worker * 100 + i, np.float32)
        y = model.run(x=x)["y"]
        if not np.array_equal(y, x * x + x):
            wrong.append((worker, i))


@pytest.mark.parametrize("backend", ["vulkan", "reference"])
def test_one_model_many_threads(device, backend):
    options = {"device": device} if backend == "vulkan" else {}
    wrong: list = []
    with tosa_vk.load(graph(), backend=backend, **options) as model:
        threads = [threading.Thread(target=hammer, args=(model, w, 25, wrong)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert wrong == []


def test_two_models_on_one_device(device):
    wrong: list = []
    with (
        tosa_vk.load(graph(), backend="vulkan", device=device) as a,
        tosa_vk.load(graph(), backend="vulkan", device=device) as b,
    ):
        threads = [threading.Thread(target=hammer, args=(m, w, 25, wrong)) for w, m in enumerate((a, b, a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert wrong == []


def test_close_while_another_thread_runs(device):
    """close() waits for the run in progress; later runs say the model is closed (no crash, no garbage)."""
    model = tosa_vk.load(graph(), backend="vulkan", device=device)
    errors: list = []
    wrong: list = []

    def runner():
        try:
            hammer(model, 1, 200, wrong)
        except TosaError as err:
            errors.append(str(err))

    t = threading.Thread(target=runner)
    t.start()
    model.close()
    t.join()
    assert wrong == []
    assert errors == [] or "the model is closed" in errors[0]


def test_dropped_models_free_their_device():
    """Models dropped without close() release their device (lavapipe starts threads per device)."""
    import gc
    import os

    def threads() -> int:
        return len(os.listdir("/proc/self/task"))

    tosa_vk.load(graph(), backend="vulkan").close()  # the driver's one-off threads
    gc.collect()
    before = threads()
    for _ in range(5):
        model = tosa_vk.load(graph(), backend="vulkan")
        model.run(x=np.ones(1 << 16, np.float32))
        del model
    gc.collect()
    assert threads() <= before


def test_a_run_that_takes_too_long_fails_clearly(device):
    """timeout_s bounds a run; the model then refuses to run again, and close() still works."""
    model = tosa_vk.load(graph(), backend="vulkan", device=device, timeout_s=1e-9)
    try:
        with pytest.raises(VulkanError, match="the run did not finish within"):
            for _ in range(50):  # a tiny kernel may beat even this deadline: some run will not
                model.run(x=np.ones(1 << 16, np.float32))
        with pytest.raises(VulkanError, match="cannot run again"):
            model.run(x=np.ones(1 << 16, np.float32))
    finally:
        model.close()

"""One submit / close contract for every kind of Model (issue 46, part 5): a .tosa on either backend, a .vgf of
COMPUTE segments, a .pte on either backend. close() cancels the submitted runs not started yet, lets the run in
progress finish, and a later run or submit is a TosaError naming the model; load(max_in_flight=) is bounded."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.backends.model import MAX_IN_FLIGHT

PTE = Path(__file__).resolve().parent / "data" / "pte" / "two_in_two_out_fp32"


def scale_graph():
    b = Builder()
    x = b.input("x", (2, 3), "fp32")
    b.output(b.mul(x, b.const(np.full((1, 1), 2.0, np.float32))), name="y")
    return b.build()


def pte_feeds() -> dict[str, np.ndarray]:
    desc = json.loads((PTE / "desc.json").read_text())
    return {n: np.load(PTE / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}


KINDS = [
    "tosa-reference",
    pytest.param("tosa-vulkan", marks=pytest.mark.vulkan),
    pytest.param("vgf", marks=pytest.mark.vulkan),
    "pte-reference",
    pytest.param("pte-vulkan", marks=pytest.mark.vulkan),
]


def load_kind(kind: str, request, tmp_path: Path, **options) -> tuple[tosa_vk.Model, dict[str, np.ndarray]]:
    """A model of that kind, loaded from a file (so errors name it), and feeds for it."""
    source, backend = kind.split("-") if "-" in kind else (kind, "vulkan")
    if backend == "vulkan":
        options["device"] = request.getfixturevalue("device")
    if source == "pte":
        return tosa_vk.load(PTE / "model.pte", backend=backend, **options), pte_feeds()
    path = tmp_path / "scale.tosa"
    tosa_vk.save_graph(scale_graph(), path)
    if source == "vgf":
        with tosa_vk.load(path, backend="reference") as ref:
            ref.export_vgf(tmp_path / "scale.vgf")
        return tosa_vk.load(tmp_path / "scale.vgf", **options), {"x": np.ones((2, 3), np.float32)}
    return tosa_vk.load(path, backend=backend, **options), {"x": np.ones((2, 3), np.float32)}


class Held:
    """A feed whose conversion to an array (inside run, after it started) waits until the test lets it go."""

    def __init__(self, array: np.ndarray, entered: threading.Event, gate: threading.Event):
        self.array, self.entered, self.gate = array, entered, gate
        self.shape, self.dtype = array.shape, array.dtype

    def __array__(self, dtype=None, copy=None):
        self.entered.set()
        assert self.gate.wait(60)
        return self.array if dtype is None else self.array.astype(dtype)


def settles(predicate, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("kind", KINDS)
def test_close_cancels_queued_runs_finishes_the_running_one_and_refuses_later_runs(kind, request, tmp_path):
    """Before: a .pte model's close() left its queued runs running (reference) or failing with "closed" (Vulkan);
    a .tosa reference model ran again after close(); a Vulkan run still converting its feeds when close() came
    failed with "closed" instead of finishing."""
    model, feeds = load_kind(kind, request, tmp_path)
    want = model.run(feeds)
    entered, gate = threading.Event(), threading.Event()
    name = next(iter(feeds))
    running = model.submit({**feeds, name: Held(feeds[name], entered, gate)})
    queued = [model.submit(feeds) for _ in range(3)]
    assert entered.wait(60)
    closer = threading.Thread(target=model.close)
    closer.start()
    try:
        assert settles(lambda: all(f.cancelled() for f in queued)), [f for f in queued if not f.cancelled()]
    finally:
        gate.set()
        closer.join(60)
    assert not closer.is_alive()
    got = running.result(timeout=60)
    assert list(got) == list(want) and all(np.array_equal(got[n], want[n]) for n in want)
    with pytest.raises(TosaError, match="the model is closed") as err:
        model.run(feeds)
    assert Path(str(err.value.file)).name in ("scale.tosa", "scale.vgf", "model.pte")  # it names the model
    with pytest.raises(TosaError, match="the model is closed"):
        model.submit(feeds)
    model.close()  # idempotent


def test_a_graph_models_closed_error_names_the_model():
    model = tosa_vk.load(scale_graph(), backend="reference")
    model.close()
    with pytest.raises(TosaError, match=r"the model is closed: ReferenceModel\(graph, backend='reference'\)"):
        model.run(x=np.ones((2, 3), np.float32))


@pytest.mark.parametrize("kind", ["tosa-reference", "pte-reference"])
def test_a_run_in_progress_from_another_thread_finishes_before_close_returns(kind, request, tmp_path):
    """close() waits for run() calls in progress too, not only submitted ones (a .pte's delegates were closed under
    its run)."""
    model, feeds = load_kind(kind, request, tmp_path)
    entered, gate = threading.Event(), threading.Event()
    name = next(iter(feeds))
    result: list = []
    runner = threading.Thread(
        target=lambda: result.append(model.run({**feeds, name: Held(feeds[name], entered, gate)}))
    )
    runner.start()
    assert entered.wait(60)
    closer = threading.Thread(target=model.close)
    closer.start()
    assert settles(lambda: model._closed)
    assert closer.is_alive()  # waiting for the run
    gate.set()
    closer.join(60)
    runner.join(60)
    assert not closer.is_alive() and len(result) == 1 and set(result[0]) == set(model.outputs)


def test_a_pte_model_runs_max_in_flight_at_once():
    """Its own submit() took one run at a time whatever max_in_flight said (only its delegates had the slots)."""
    with tosa_vk.load(PTE / "model.pte", backend="reference", max_in_flight=3) as model:
        assert model.max_in_flight == 3
        futures: list[Future] = [model.submit(pte_feeds()) for _ in range(4)]
        assert all(set(f.result(timeout=60)) == set(model.outputs) for f in futures)


@pytest.mark.parametrize("backend", ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
def test_max_in_flight_has_a_documented_maximum(backend, request):
    """max_in_flight=10**9 was accepted and the Vulkan load never returned (every slot built up front)."""
    options = {"device": request.getfixturevalue("device")} if backend == "vulkan" else {}
    # (before, a Vulkan load of 10**9 slots never returned)
    for bad in (MAX_IN_FLIGHT + 1, 10**9):
        with pytest.raises(TosaError, match=f"max_in_flight={bad}: take an integer from 1 to {MAX_IN_FLIGHT}"):
            tosa_vk.load(scale_graph(), backend=backend, max_in_flight=bad, **options)
    with pytest.raises(TosaError, match=f"model.pte: max_in_flight={MAX_IN_FLIGHT + 1}"):
        tosa_vk.load(PTE / "model.pte", backend=backend, max_in_flight=MAX_IN_FLIGHT + 1, **options)
    with tosa_vk.load(scale_graph(), backend=backend, max_in_flight=MAX_IN_FLIGHT, **options) as model:
        assert model.max_in_flight == MAX_IN_FLIGHT

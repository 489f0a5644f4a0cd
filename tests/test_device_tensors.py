"""Device tensors and runs in flight (issue 37): `run(device_outputs=True)` -> tosa_vk.DeviceTensor kept on the
device, fed to the next model with no host copy; their lifetime; `Model.submit` with `load(max_in_flight=N)`.
The validation layer stays silent (the `device` fixture fails a test it speaks in)."""

from __future__ import annotations

import gc
import os
import threading
from concurrent.futures import CancelledError
from pathlib import Path

import numpy as np
import pytest
from test_reference_stateful import accumulator

import tosa_vk
from tosa_vk import Builder, DeviceTensor, TosaError
from tosa_vk.vulkan import Device
from tosa_vk.vulkan.runtime import Runtime

os.environ.setdefault("TOSA_VK_VALIDATION", "1")

MODELS = Path(__file__).resolve().parents[1] / "resources" / "models"
CNN = MODELS / "resnet_int8"  # the shipped CNN the in-flight tests run (int8: ~20 ms a run on lavapipe)
MOBILENET = MODELS / "mobilenetv2_fp32"


def scale() -> tosa_vk.Graph:
    """(1, 3, 64, 64) fp32 -> x * 0.5 + 0.25: a preprocessing model in front of mobilenetv2."""
    b = Builder()
    x = b.input("image", (1, 3, 64, 64), "fp32")
    half = b.const(np.full((1, 1, 1, 1), 0.5, np.float32))
    b.output(b.add(b.mul(x, half), b.const(np.full((1, 1, 1, 1), 0.25, np.float32)), name="scaled"))
    return b.build()


def head() -> tosa_vk.Graph:
    """(1, 10) fp32 logits -> sigmoid: a model behind mobilenetv2."""
    b = Builder()
    x = b.input("logits", (1, 10), "fp32")
    b.output(b.sigmoid(x, name="probabilities"))
    return b.build()


def image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, 64, 64)).astype(np.float32)


@pytest.fixture(scope="module")
def chain(_vulkan_device):
    """scale -> mobilenetv2 -> head on the shared device."""
    with (
        tosa_vk.load(scale(), backend="vulkan", device=_vulkan_device) as a,
        tosa_vk.load(MOBILENET / "model.tosa", backend="vulkan", device=_vulkan_device) as b,
        tosa_vk.load(head(), backend="vulkan", device=_vulkan_device) as c,
    ):
        yield a, b, c


def test_chained_on_the_device_equals_the_host_path_with_no_bytes_across(device, chain):
    a, b, c = chain
    for seed in range(3):
        x = image(seed)
        scaled = a.run({"image": x})["scaled"]
        logits = b.run({"x": scaled})["tosa_reshape_default"]
        want = c.run({"logits": logits})["probabilities"]

        on_a = a.run({"image": x}, device_outputs=True)
        assert a.transferred == {"to_device": x.nbytes, "from_device": 0}
        assert isinstance(on_a["scaled"], DeviceTensor) and on_a["scaled"].device is device
        assert on_a["scaled"].shape == (1, 3, 64, 64) and on_a["scaled"].dtype == np.float32
        on_b = b.run({"x": on_a["scaled"]}, device_outputs=True)
        assert b.transferred == {"to_device": 0, "from_device": 0}
        got = c.run({"logits": on_b["tosa_reshape_default"]})["probabilities"]
        assert c.transferred == {"to_device": 0, "from_device": want.nbytes}
        assert np.array_equal(got, want)  # bit-identical
        assert np.array_equal(on_a["scaled"].numpy(), scaled)
        assert np.array_equal(np.asarray(on_b["tosa_reshape_default"]), logits)


def test_a_later_run_does_not_overwrite_a_held_tensor(device, chain):
    a = chain[0]
    first = a.run({"image": image(1)}, device_outputs=True)["scaled"]
    kept = first.numpy()
    second = a.run(image=image(2), device_outputs=True, outputs=["scaled"])["scaled"]
    assert np.array_equal(first.numpy(), kept) and not np.array_equal(second.numpy(), kept)


def test_release_and_garbage_collection_free_the_memory(device, chain):
    a = chain[0]
    before = len(device.buffers)
    t = a.run({"image": image(0)}, device_outputs=True)["scaled"]
    assert len(device.buffers) == before + 1
    t.release()
    t.release()  # idempotent
    assert len(device.buffers) == before and t.released
    with pytest.raises(TosaError, match="released"):
        t.numpy()
    with pytest.raises(TosaError, match="released"):
        a.run({"image": t})
    a.run({"image": image(0)}, device_outputs=True)  # dropped at once
    gc.collect()
    assert len(device.buffers) == before


def test_a_tensor_outliving_its_device_keeps_its_values_on_the_host(device, chain):
    with tosa_vk.load(scale(), backend="vulkan", validation=True) as own:  # opens (and closes) its own device
        t = own.run({"image": image(3)}, device_outputs=True)["scaled"]
        want = t.numpy()
        assert t.device is own.device
    assert t.device == "host" and np.array_equal(t.numpy(), want)
    with pytest.raises(TosaError, match="lives on the host"):
        chain[0].run({"image": t})  # another device's (now the host's) tensor: no silent round trip
    t.release()


def test_wrong_device_backend_shape_or_dtype_is_refused(device, chain):
    a, b, _ = chain
    on_device = a.run({"image": image(0)}, device_outputs=True)["scaled"]
    with pytest.raises(TosaError, match=r"tensor\.numpy\(\)"):
        tosa_vk.load(scale(), backend="reference").run({"image": on_device})
    host = tosa_vk.load(scale(), backend="reference").run({"image": image(0)}, device_outputs=True)["scaled"]
    assert host.device == "host"
    with pytest.raises(TosaError, match="lives on the host"):
        a.run({"image": host})
    logits = b.run({"x": on_device}, device_outputs=True)["tosa_reshape_default"]
    with pytest.raises(TosaError, match=r"takes shape \(1, 3, 64, 64\)"):
        a.run({"image": logits})
    with pytest.raises(TosaError, match="device_outputs"):
        a.run({"image": image(0)}, device_outputs="yes")
    with pytest.raises(TosaError, match="capture"):
        a.run({"image": image(0)}, device_outputs=True, capture="all")


def test_the_reference_backend_returns_the_same_type():
    a, c = tosa_vk.load(scale(), backend="reference"), tosa_vk.load(head(), backend="reference")
    b = tosa_vk.load(MOBILENET / "model.tosa", backend="reference")
    x = image(4)
    want = c.run(logits=b.run(x=a.run(image=x)["scaled"])["tosa_reshape_default"])["probabilities"]
    t = b.run({"x": a.run({"image": x}, device_outputs=True)["scaled"]}, device_outputs=True)
    assert isinstance(t["tosa_reshape_default"], DeviceTensor) and t["tosa_reshape_default"].device == "host"
    assert np.array_equal(c.run({"logits": t["tosa_reshape_default"]})["probabilities"], want)


def test_staged_arena_and_tensors_copy_on_the_device(device, chain):
    """A device-local arena and tensor memory (discrete GPUs), forced on lavapipe: feeds and outputs copied on the
    device, numpy() through a staging copy."""
    model = chain[0]
    runtime = Runtime(model.program, device, force_staging=True)
    try:
        x = image(5)
        want = model.run({"image": x})["scaled"]
        first = runtime.run({"image": x}, keep=["scaled"])["scaled"]
        assert first.staged and np.array_equal(first.numpy(), want)
        again = runtime.run({}, {"image": runtime.run({"image": x}, keep=["scaled"])["scaled"]}, keep=["scaled"])
        assert runtime.transferred == {"to_device": 0, "from_device": 0}
        assert np.allclose(again["scaled"].numpy(), want * 0.5 + 0.25)
    finally:
        runtime.close()


def cnn_inputs(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.integers(-128, 128, (1, 3, 64, 64), dtype=np.int8) for _ in range(count)]


@pytest.mark.parametrize("in_flight", [1, 2, 4])
def test_submitted_runs_equal_sequential_runs_in_order(device, in_flight):
    inputs = cnn_inputs(32)
    with tosa_vk.load(CNN / "model.tosa", backend="vulkan", device=device, max_in_flight=in_flight) as model:
        name = next(iter(model.inputs))
        assert model.max_in_flight == in_flight
        want = [model.run({name: x})["tosa_reshape_default"] for x in inputs]
        futures = [model.submit({name: x}) for x in inputs]
        got = [f.result(timeout=120)["tosa_reshape_default"] for f in futures]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert len({w.tobytes() for w in want}) > 1  # the inputs differ, so the order is checked


def test_device_outputs_from_submitted_runs_chain(device):
    inputs = cnn_inputs(4)
    with tosa_vk.load(CNN / "model.tosa", backend="vulkan", device=device, max_in_flight=2) as model:
        name = next(iter(model.inputs))
        futures = [model.submit({name: x}, device_outputs=True) for x in inputs]
        for x, f in zip(inputs, futures):
            want = model.run({name: x})["tosa_reshape_default"]
            assert np.array_equal(f.result()["tosa_reshape_default"].numpy(), want)


def test_an_error_lands_on_its_future(device):
    with tosa_vk.load(scale(), backend="vulkan", device=device, max_in_flight=2) as model:
        bad = model.submit({"image": np.zeros((2, 2), np.float32)})
        good = model.submit({"image": image(0)})
        assert isinstance(bad.exception(timeout=60), TosaError)
        assert good.result(timeout=60)["scaled"].shape == (1, 3, 64, 64)


@pytest.mark.parametrize("in_flight", [1, 3])
def test_close_with_runs_pending_does_not_hang(device, in_flight):
    model = tosa_vk.load(CNN / "model.tosa", backend="vulkan", device=device, max_in_flight=in_flight)
    name = next(iter(model.inputs))
    futures = [model.submit({name: x}) for x in cnn_inputs(12)]
    closer = threading.Thread(target=model.close)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive()
    outcomes = set()
    for f in futures:
        try:
            f.result(timeout=60)
            outcomes.add("done")
        except CancelledError:
            outcomes.add("cancelled")
        except TosaError as err:
            assert "closed" in str(err)
            outcomes.add("closed")
    assert "cancelled" in outcomes
    with pytest.raises(TosaError, match="closed"):
        model.submit({name: cnn_inputs(1)[0]})


def test_max_in_flight_is_checked_and_stateful_models_run_one_at_a_time(device):
    for backend, options in (("vulkan", {"device": device, "strict": True}), ("reference", {})):
        with pytest.raises(TosaError, match="has variables"):
            tosa_vk.load(accumulator(), backend=backend, max_in_flight=2, **options)
        with tosa_vk.load(accumulator(), backend=backend, **options) as model:
            ones = np.ones(2, np.float32)
            futures = [model.submit({"x": ones}) for _ in range(3)]
            assert [f.result()[next(iter(model.outputs))].tolist() for f in futures][-1] == [3, 3]
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(TosaError, match="max_in_flight"):
            tosa_vk.load(scale(), backend="reference", max_in_flight=bad)


def test_the_device_closing_copies_held_tensors_down(device):
    with Device(validation=True) as dev:
        model = tosa_vk.load(head(), backend="vulkan", device=dev)
        t = model.run({"logits": np.ones((1, 10), np.float32)}, device_outputs=True)["probabilities"]
        model.close()
        assert t.device is dev  # the model closed, the device (not its own) still open
    assert t.device == "host" and np.allclose(t.numpy(), 1 / (1 + np.exp(-1)))


def test_a_tensor_of_another_open_device_is_refused_with_a_hint(device, chain):
    with tosa_vk.load(scale(), backend="vulkan", validation=True) as own:  # its own Device, maybe the same GPU
        t = own.run({"image": image(0)}, device_outputs=True)["scaled"]
        with pytest.raises(TosaError, match=r"device=first_model\.device"):
            chain[1].run({"x": t})


@pytest.mark.parametrize("host_op", ["MUL", "ADD"])
def test_copies_around_host_steps(device, host_op):
    """The first step on the host (it reads a device-fed input) or the last (it writes a kept output): the copies
    then go in a submission of their own."""
    x = image(6)
    with tosa_vk.load(scale(), backend="vulkan", device=device, host_ops=[host_op]) as model:
        assert any(p.where == "host" for p in model.placement)
        want = model.run({"image": x})["scaled"]
        fed = tosa_vk.load(scale(), backend="vulkan", device=device).run({"image": x}, device_outputs=True)["scaled"]
        kept = model.run({"image": x}, device_outputs=True)["scaled"]
        assert np.array_equal(kept.numpy(), want)
        assert np.array_equal(model.run({"image": fed})["scaled"], want * 0.5 + 0.25)
        assert model.transferred["to_device"] == x.nbytes  # the host step's result only, not the input


def test_a_vgf_runs_in_flight_and_gives_host_backed_device_tensors(device, chain, tmp_path):
    path = tmp_path / "scale.vgf"
    chain[0].export_vgf(path)
    with tosa_vk.load(path, device=device, max_in_flight=2) as model:
        name = next(iter(model.inputs))
        xs = [image(i) for i in range(4)]
        futures = [model.submit({name: x}) for x in xs]
        for x, f in zip(xs, futures):
            (got,) = f.result(timeout=60).values()
            assert np.array_equal(got, x * 0.5 + 0.25)
        (kept,) = model.run({name: xs[0]}, device_outputs=True).values()
        assert kept.device == "host" and np.array_equal(kept.numpy(), xs[0] * 0.5 + 0.25)

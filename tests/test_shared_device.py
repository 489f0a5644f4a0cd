"""One Device per physical device per process (issue 49, tosa_vk/vulkan/shared.py): models loaded with defaults, or
naming the same GPU, share one VkDevice, chain device tensors with no bytes across, and release it with the last
model; loads from several threads get the one device; lavapipe's compute-threads-off sibling takes tensors as copies;
.pte models take and give device tensors where a value goes straight into or out of a Vulkan delegate; a Device the
user opened stays theirs, and a tensor of a genuinely other device is refused."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import vulkan as vk

import tosa_vk
from tosa_vk import Builder, DeviceTensor, TosaError
from tosa_vk.vulkan import Device, shared

os.environ.setdefault("TOSA_VK_VALIDATION", "1")

PTE = Path(__file__).resolve().parent / "data" / "pte"
LARGE = 1 << 18  # elements a kernel writes: past lavapipe's inline limit, so the threaded device (threads.py)


def large(name: str = "y") -> tosa_vk.Graph:
    b = Builder()
    x = b.input("x", (LARGE,), "fp32")
    b.output(b.add(b.mul(x, x), x, name=name))
    return b.build()


def small(shape=(1, 3, 8, 8)) -> tosa_vk.Graph:
    """x * 0.5 + 0.25: few elements, so on lavapipe it runs on the compute-threads-off sibling."""
    b = Builder()
    x = b.input("image", shape, "fp32")
    half = b.const(np.full((1,) * len(shape), 0.5, np.float32))
    b.output(b.add(b.mul(x, half), b.const(np.full((1,) * len(shape), 0.25, np.float32)), name="scaled"))
    return b.build()


def load(graph, **options) -> tosa_vk.Model:
    return tosa_vk.load(graph, backend="vulkan", cache_dir=False, **options)


@pytest.fixture
def created(monkeypatch):
    """vkCreateDevice calls while the test runs (the lavapipe warm-up's twin devices off)."""
    monkeypatch.setenv("TOSA_VK_WARMUP", "0")
    calls: list[int] = []
    real = vk.vkCreateDevice

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(vk, "vkCreateDevice", counted)
    gc.collect()  # models other tests dropped give their devices back first
    return calls


def test_models_loaded_with_defaults_chain_with_no_bytes_across(created):
    x = np.random.default_rng(0).standard_normal(LARGE).astype(np.float32)
    before = {id(d) for d in shared.open_devices()}
    with load(large()) as a, load(large("z"), device=0) as b, load(large(), device="llvmpipe") as c:
        assert a.device is b.device is c.device and a.device.threads is None
        new = [d for d in shared.open_devices() if id(d) not in before]
        assert len(created) == len(new) <= 1  # one VkDevice per physical device, none for the later loads
        want = b.run({"x": a.run({"x": x})["y"]})["z"]
        t = a.run({"x": x}, device_outputs=True)["y"]
        assert a.transferred == {"to_device": x.nbytes, "from_device": 0}
        got = b.run({"x": t})["z"]
        assert b.transferred == {"to_device": 0, "from_device": x.nbytes}
        assert np.array_equal(got, want)


def test_the_device_is_released_when_the_last_model_closes(created):
    a, b = load(large()), load(large())
    device = a.device
    t = a.run({"x": np.ones(LARGE, np.float32)}, device_outputs=True)["y"]
    a.close()
    assert device in shared.open_devices() and device.device is not None and t.device is device
    assert np.array_equal(b.run({"x": t})["y"], np.full(LARGE, 6, np.float32))  # b keeps it open
    b.close()
    assert device not in shared.open_devices() and device.device is None
    assert t.device == "host" and np.array_equal(t.numpy(), np.full(LARGE, 2, np.float32))  # copied down first
    c = load(large())  # a fresh one, and a model dropped without close() gives it back (its finalizer)
    again = c.device
    assert again is not device and again in shared.open_devices()
    del c
    gc.collect()
    assert again not in shared.open_devices() and again.device is None


def test_a_shared_device_passed_on_stays_open_for_the_model_given_it(created):
    a = load(large())
    with load(large(), device=a.device) as b:
        a.close()
        assert b.device.device is not None
        assert b.run({"x": np.ones(LARGE, np.float32)})["y"][0] == 2
    assert b.device is None and a.device is None


def test_loads_from_four_threads_get_one_device(created):
    before = {id(d) for d in shared.open_devices()}
    start = threading.Barrier(4)
    models: list[tosa_vk.Model] = []
    errors: list[BaseException] = []

    def loading():
        start.wait()
        try:
            models.append(load(large()))
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=loading) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert not errors and len(models) == 4
        assert len({id(m.device) for m in models}) == 1
        assert len(created) == len([d for d in shared.open_devices() if id(d) not in before]) <= 1
    finally:
        for m in models:
            m.close()


@pytest.fixture
def lavapipe(monkeypatch):
    monkeypatch.delenv("LP_NUM_THREADS", raising=False)
    if tosa_vk.devices()[0].device_class != "lavapipe":
        pytest.skip("lavapipe's compute threads")


def widen() -> tosa_vk.Graph:
    """(1, 3, 8, 8) -> x + zeros((512, 3, 8, 8)): a small input, a large output (the threaded device)."""
    b = Builder()
    x = b.input("image", (1, 3, 8, 8), "fp32")
    b.output(b.add(x, b.const(np.zeros((512, 3, 8, 8), np.float32)), name="wide"))
    return b.build()


def total() -> tosa_vk.Graph:
    """(LARGE,) -> its sum: a large input, one element written (the compute-threads-off sibling)."""
    b = Builder()
    x = b.input("x", (LARGE,), "fp32")
    b.output(b.reduce_sum(x, axis=0, name="sum"))
    return b.build()


def test_small_programs_run_on_the_sibling_and_tensors_cross_as_copies(lavapipe, created):
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    with load(small()) as a, load(small()) as b, load(widen()) as wide, load(total()) as summed:
        assert a.device is b.device is summed.device and a.device.threads == 0
        assert wide.device.threads is None and wide.device.info.uuid == a.device.info.uuid
        assert "compute threads off" in repr(a.device)
        t = a.run({"image": x}, device_outputs=True)["scaled"]
        assert np.array_equal(b.run({"image": t})["scaled"], (x * 0.5 + 0.25) * 0.5 + 0.25)
        assert b.transferred["to_device"] == 0  # the same device: copied on it
        got = wide.run({"image": t}, device_outputs=True)["wide"]  # the sibling's tensor: a copy, counted
        assert wide.transferred == {"to_device": t.nbytes, "from_device": 0}
        assert np.array_equal(got.numpy(), np.broadcast_to(x * 0.5 + 0.25, (512, 3, 8, 8)))
        flat = tosa_vk.load(large(), backend="vulkan", cache_dir=False, device=wide.device)
        with flat:
            ones = flat.run({"x": np.ones(LARGE, np.float32)}, device_outputs=True)["y"]
        assert np.allclose(summed.run({"x": ones})["sum"], 2 * LARGE)  # and the other way
        assert summed.transferred["to_device"] == ones.nbytes
        with pytest.raises(TosaError, match="takes shape"):
            summed.run({"x": got})  # a crossing tensor's shape and dtype are checked all the same


def inputs_of(name: str) -> dict[str, np.ndarray]:
    return {
        f"input_{i}": np.load(PTE / name / f"input_{i}.npy")
        for i in range(2)
        if (PTE / name / f"input_{i}.npy").exists()
    }


def test_a_pte_model_takes_and_gives_device_tensors(created):
    x = inputs_of("cnn_fp32")["input_0"]
    with (
        tosa_vk.load(PTE / "cnn_fp32" / "model.pte", cache_dir=False) as cnn,
        load(small()) as pre,
        tosa_vk.load(PTE / "cnn_fp32" / "model.pte", backend="reference") as host,
    ):
        scaled = pre.run({"image": x})["scaled"]
        want = host.run({"input_0": scaled})["output_0"]
        fed = pre.run({"image": x}, device_outputs=True)["scaled"]
        assert fed.device is cnn.delegates[0].device  # the delegate shares the process's device
        out = cnn.run({"input_0": fed}, device_outputs=True)["output_0"]
        assert cnn.transferred == {"to_device": 0, "from_device": 0}
        assert isinstance(out, DeviceTensor) and out.device is fed.device
        assert np.allclose(out.numpy(), want, atol=1e-4)
        assert np.array_equal(cnn.run({"input_0": fed})["output_0"], out.numpy())  # host results: the same
    two = inputs_of("two_in_two_out_fp32")
    with tosa_vk.load(PTE / "two_in_two_out_fp32" / "model.pte", cache_dir=False) as pair:
        want2 = pair.run(two)
        kept = pair.run(two, device_outputs=True)
        assert all(isinstance(v, DeviceTensor) and v.device is pair.delegates[0].device for v in kept.values())
        assert all(np.array_equal(kept[n].numpy(), want2[n]) for n in want2)
        pair.run({"input_0": kept["output_0"], "input_1": two["input_1"]})  # fed back, one on the device
        assert pair.transferred["to_device"] == two["input_1"].nbytes


def test_a_pte_input_read_on_the_host_refuses_a_device_tensor(created):
    x = inputs_of("cnn_int8")["input_0"]
    with tosa_vk.load(PTE / "cnn_int8" / "model.pte", cache_dir=False) as lowered, load(small()) as pre:
        fed = pre.run({"image": x}, device_outputs=True)["scaled"]  # its quantize is lowered: it takes the tensor
        want = lowered.run({"input_0": fed.numpy()})["output_0"]
        assert np.array_equal(lowered.run({"input_0": fed})["output_0"], want)
    with (
        tosa_vk.load(PTE / "cnn_int8" / "model.pte", cache_dir=False, host_lowering=False) as cnn,
        load(small()) as pre,
    ):
        fed = pre.run({"image": x}, device_outputs=True)["scaled"]
        with pytest.raises(TosaError, match=r"host operator quantized_decomposed::quantize_per_tensor\.out #0"):
            cnn.run({"input_0": fed})
        out = cnn.run({"input_0": x}, device_outputs=True)["output_0"]  # written by a host dequantize
        assert out.device == "host" and np.array_equal(out.numpy(), cnn.run({"input_0": x})["output_0"])
        host = pre.run({"image": x}, device_outputs=True)["scaled"]
        assert np.array_equal(
            cnn.run({"input_0": DeviceTensor(host.numpy())})["output_0"], cnn.run({"input_0": host.numpy()})["output_0"]
        )


def test_an_explicit_device_is_the_users_and_other_devices_are_refused(created):
    x = np.ones(LARGE, np.float32)
    with Device(validation=True) as mine:
        with load(large(), device=mine) as own, load(large()) as default:
            assert own.device is mine and default.device is not mine and mine not in shared.open_devices()
            t = default.run({"x": x}, device_outputs=True)["y"]
            with pytest.raises(TosaError, match=r"lives on device .* the model runs on device .*device=first_model"):
                own.run({"x": t})
            mine_t = own.run({"x": x}, device_outputs=True)["y"]
            with pytest.raises(TosaError, match="lives on device"):
                default.run({"x": mine_t})
        assert mine.device is not None  # the models closed; the user's device is still open
        assert mine_t.device is mine


def test_a_device_left_busy_is_forgotten_not_shared(created):
    """A run close() abandoned (tosa_vk/backends/on_device.py) leaves its device busy: never closed, and the next
    load opens a fresh one instead of queueing behind that work."""
    with load(large()) as a:
        busy = a.device
        shared.forget(busy)  # what _release does for an abandoned run's device
        with load(large()) as b:
            assert b.device is not busy and busy not in shared.open_devices()
    assert busy.device is not None  # a's close gave back no reference to it: not closed
    busy.close()

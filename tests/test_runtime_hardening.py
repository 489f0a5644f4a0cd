"""Runtime hardening (issue 34): timeout_s is checked at load on every backend and bounds reference runs too;
close() stops a runaway run at once; feeds whose values the input's type would change (an overflow to inf, an
integer a float type rounds) or that are not arrays (ragged lists) are clear errors."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from test_untrusted_payloads import runaway_graph

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.errors import TosaTimeoutError

BACKENDS = ["reference", "vulkan"]


def fp32_graph(dtype="fp32"):
    b = Builder()
    x = b.input("x", (2, 3), dtype)
    b.output(b.add(x, x, name="y"))
    return b.build()


def load(graph, backend, device, **options):
    return tosa_vk.load(graph, backend=backend, **({"device": device} if backend == "vulkan" else {}), **options)


BAD_TIMEOUTS = [0, -1, 0.0, math.nan, math.inf, -math.inf, "5", True, [1]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("timeout", BAD_TIMEOUTS, ids=repr)
def test_a_bad_timeout_is_refused_at_load(device, backend, timeout):
    """0 / -1 made every run fail, nan / inf raised ValueError / OverflowError in run(), the reference backend took
    no timeout_s at all."""
    with pytest.raises(TosaError, match=r"timeout_s=.*: take a positive, finite number of seconds, or None"):
        load(fp32_graph(), backend, device, timeout_s=timeout).close()


@pytest.mark.parametrize("timeout", [0, math.nan, "5"], ids=repr)
def test_a_vgf_model_refuses_a_bad_timeout_alike(device, tmp_path, timeout):
    with tosa_vk.load(fp32_graph(), backend="vulkan", device=device, strict=True) as model:
        model.export_vgf(tmp_path / "g.vgf")
    with pytest.raises(TosaError, match=r"timeout_s=.*: take a positive"):
        tosa_vk.load(tmp_path / "g.vgf", device=device, timeout_s=timeout).close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("timeout", [None, 30, 2.5, np.float32(30)], ids=repr)
def test_a_good_timeout_or_none_runs(device, backend, timeout):
    with load(fp32_graph(), backend, device, timeout_s=timeout) as model:
        assert model.run(x=np.ones((2, 3), np.float32))["y"].tolist() == [[2.0] * 3] * 2


def counting_loop():
    """while i < n: i += 1 — as many iterations as the input n says."""
    b = Builder()
    n = b.input("n", (1,), "int32")
    zero = b.const(np.zeros(1, np.int32), name="zero")
    i, _ = b.while_loop(
        [zero, n], lambda s, i, n: s.greater(n, i), lambda s, i, n: (s.add(i, s.const(np.ones(1, np.int32))), n)
    )
    b.output(i)
    return b.build()


def test_the_reference_backend_stops_a_long_loop_at_its_timeout():
    """Checked before every operator and block, so each WHILE_LOOP iteration; the model runs again afterwards."""
    with tosa_vk.load(counting_loop(), backend="reference", timeout_s=0.2) as model:
        with pytest.raises(TosaTimeoutError, match=r"the run did not finish within 0.2 s \(timeout_s; next ") as err:
            model.run(n=np.array([2_000_000_000], np.int32))  # hours of numpy
        assert isinstance(err.value, TimeoutError) and "WHILE_LOOP" in str(err.value)
        assert model.run(n=np.array([3], np.int32))["while_loop"].tolist() == [3]


# the child: a model on its own validating device runs a shader that would take hours (default timeout_s: 300 s)
# in a thread; the main thread closes the model while it runs
CLOSE_DURING_A_RUNAWAY_RUN = """
import sys, threading, time, numpy as np, tosa_vk
from tosa_vk.vulkan import Device
device = Device(validation=True)
model = tosa_vk.load(sys.argv[1], backend="vulkan", device=device)
errors = []
def run():
    try:
        model.run(x=np.ones(64, np.float32))
    except Exception as err:
        errors.append(f"{type(err).__name__}: {err}")
thread = threading.Thread(target=run)
thread.start()
time.sleep(2)  # the run waits for the device
model.close()
print("closed", flush=True)
thread.join()
print("run:", errors)
try:
    model.run(x=np.ones(64, np.float32))
except Exception as err:
    print("after:", err)
print("layer:", device.validation_messages, flush=True)
"""


def test_close_stops_a_runaway_run_at_once(tmp_path):
    """close() used to wait for the run in progress, i.e. until timeout_s (300 s by default; 59 s measured with
    60): it now gives the run ABANDON_AFTER_S, then stops its fence wait; the device work is left running (never
    destroyed under it: the validation layer stays silent). The child's time limit is far below timeout_s."""
    path = tmp_path / "runaway.tosa"
    tosa_vk.save_graph(runaway_graph(), path)
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_DURING_A_RUNAWAY_RUN, str(path)], capture_output=True, text=True, timeout=90
    )
    out = done.stdout
    assert done.returncode == 0 and "closed" in out, out + done.stderr[-2000:]
    assert "run: ['TosaError: " in out and "runaway.tosa: the model is closed: close() stopped this run" in out, out
    assert "after: " in out and "the model is closed" in out.split("after: ")[1]
    assert "layer: []" in out, out


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_past_the_largest_value_of_the_input_type_is_refused(device, backend):
    """float64 1e300 into an FP32 input became inf, silently; cast=True still converts."""
    x = np.ones((2, 3))
    x[1, 2] = 1e300
    with load(fp32_graph(), backend, device) as model:
        with pytest.raises(TosaError) as err:
            model.run(x=x)
        message = str(err.value)
        assert "input 'x' holds 1e+300 at [1, 2]" in message and "FP32" in message and "inf" in message
        assert "cast=True" in message
        with np.errstate(over="ignore"):  # numpy's own warning of the cast asked for
            assert model.run(x=x, cast=True)["y"][1, 2] == np.inf
        assert model.run(x=np.full((2, 3), np.inf))["y"][0, 0] == np.inf  # inf was inf already: not refused
        assert model.run(x=np.full((2, 3), 3.4e38))["y"][0, 0] == np.inf  # a sum past the range is the graph's own
    with load(fp32_graph("fp16"), backend, device) as model:
        with pytest.raises(TosaError, match=r"input 'x' holds 70000.0 at \[0, 0\], past the largest finite FP16"):
            model.run(x=np.full((2, 3), 70000, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_integer_a_float_input_does_not_hold_exactly_is_refused(device, backend):
    """int64 2**34 + 1 into an FP32 input was rounded, silently (into INT32 it was refused already)."""
    x = np.ones((2, 3), np.int64)
    x[0, 1] = 2**34 + 1
    with load(fp32_graph(), backend, device) as model:
        with pytest.raises(TosaError) as err:
            model.run(x=x)
        message = str(err.value)
        assert "input 'x' holds 17179869185 at [0, 1], which FP32 (numpy float32) does not hold exactly" in message
        assert "17179869184.0" in message and "cast=True" in message
        assert model.run(x=x, cast=True)["y"][0, 1] == 2.0**35
        exact = np.array([[2**34, -(2**24), 2**24 + 2], [-(2**63), 0, 3]], np.int64)  # large but exact: taken
        assert model.run(x=exact)["y"].tolist() == (2 * exact.astype(np.float32)).tolist()
        with pytest.raises(TosaError, match=r"holds 16777217 at \[0, 0\]"):
            model.run(x=np.full((2, 3), 2**24 + 1, np.int32))
    with load(fp32_graph("int32"), backend, device) as model:
        with pytest.raises(TosaError, match=r"input 'x' holds values 1..17179869185, outside INT32's storage range"):
            model.run(x=x)


def test_small_integers_into_a_narrow_float_are_checked_too():
    b = Builder()
    x = b.input("x", (3,), "bf16")
    b.output(b.add(x, x, name="y"))
    with tosa_vk.load(b.build(), backend="reference") as model:
        assert model.run(x=np.array([1, -256, 255], np.int16))["y"].astype(np.float32).tolist() == [2, -512, 510]
        with pytest.raises(TosaError, match=r"holds 257 at \[2\], which BF16 .* it would become 256.0"):
            model.run(x=np.array([1, 2, 257], np.int16))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_ragged_list_is_a_clear_error(device, backend):
    with load(fp32_graph(), backend, device) as model:
        with pytest.raises(TosaError, match=r"input 'x' is not an array numpy can make .*declares FP32"):
            model.run(x=[[1, 2, 3], [4, 5]])
        assert model.run(x=[[1, 2, 3], [4, 5, 6]])["y"].tolist() == [[2, 4, 6], [8, 10, 12]]

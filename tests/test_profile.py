"""Profiles (issue 19): `tosa-vk profile` prints per-kernel times and writes a Perfetto trace, and Model.profile()
says when it cannot time anything (it returned [] on a Vulkan model loaded without timestamps)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import host_step_graph

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.program import Kernel, walk
from tosa_vk.tools.cli import main
from tosa_vk.tools.profile import operators, shorten

ROOT = Path(__file__).resolve().parent.parent
RESNET = ROOT / "resources" / "models" / "resnet_int8"
RUNS = 2
# a table line: index, median ms, %, operators covered, where, the kernel's operators
ROW = re.compile(r"^\s*(\d+)\s+(\d+\.\d{3})\s+(\d+\.\d)\s+(\d+)\s+(device|host)\s+(\S.*)$")


@pytest.fixture(scope="module")
def resnet(_vulkan_device):
    """resnet_int8 on the shared device with timestamps, run once: its kernels and placement."""
    feeds = {"quantized_decomposed_quantize_per_tensor_default": np.load(RESNET / "input-0.npy")}
    with tosa_vk.load(RESNET / "model.tosa", backend="vulkan", device=_vulkan_device, timestamps=True) as model:
        model.run(feeds)
        yield model


@pytest.fixture(scope="module")
def cli_profile(tmp_path_factory):
    """One `tosa-vk profile` of resnet_int8 on Vulkan with a trace: (exit code, stdout, the trace)."""
    trace = tmp_path_factory.mktemp("profile") / "trace.json"
    out = io.StringIO()
    args = ["profile", "--test-desc", str(RESNET / "desc.json"), "--backend", "vulkan", "--runs", str(RUNS)]
    with contextlib.redirect_stdout(out):
        code = main([*args, "--trace", str(trace)])
    return code, out.getvalue(), json.loads(trace.read_text())


def kernel_labels(model) -> list[str]:
    return [k.op for k in walk(model.program.steps) if isinstance(k, Kernel)]


@pytest.mark.vulkan
def test_profile_prints_each_kernel_in_ms_and_totals(cli_profile, resnet):
    code, out, _ = cli_profile
    assert code == 0, out
    lines = out.splitlines()
    assert "median of 2 runs after 1 warm-up" in lines[0] and "median ms" in lines[1]
    rows = [m.groups() for m in map(ROW.match, lines) if m]
    labels = kernel_labels(resnet)
    assert len(rows) == len(labels) == 22
    for (_, ms, _, count, where, shown), label in zip(rows, labels):
        assert where == "device" and float(ms) > 0
        assert int(count) == len(operators(label))
        first = operators(label)[0]  # cut to the terminal's width: whole operators, else the first one cut
        assert shown == label or shown.startswith(first) or first.startswith(shown.split("...")[0]), (shown, label)
    assert abs(sum(float(r[2]) for r in rows) - 100) < 1
    assert re.search(r"^kernel time\s+\d+\.\d{3} ms \(device \d+\.\d{3} ms, host 0\.000 ms\)$", out, re.M)
    assert re.search(r"^wall time\s+\d+\.\d{3} ms per run \(median of 2\)$", out, re.M)
    covered = {op for label in labels for op in operators(label)}
    assert f"kernels       22, covering {len(covered)} TOSA operators" in out


@pytest.mark.vulkan
def test_trace_has_one_event_per_kernel_per_run_covering_every_placed_operator(cli_profile, resnet):
    _, _, trace = cli_profile
    assert trace["displayTimeUnit"] == "ms"
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    kernels = len(kernel_labels(resnet))
    assert len(events) == RUNS * kernels
    for run in range(1, RUNS + 1):
        mine = [e for e in events if e["args"]["run"] == run]
        assert len(mine) == kernels
        for a, b in zip(mine, mine[1:]):  # real start times, in order, one kernel at a time on the device
            assert b["ts"] >= a["ts"] + a["dur"] - 0.01
    assert all(isinstance(e["pid"], int) and isinstance(e["tid"], int) for e in trace["traceEvents"])
    assert all(e["dur"] >= 0 and e["ts"] >= 0 and e["args"]["where"] == "device" for e in events)
    assert all(e["args"]["measured_start"] for e in events)
    placed = {p.op for p in resnet.placement if p.where in ("vulkan", "fused")}
    traced = {op for e in events if e["args"]["run"] == 1 for op in e["args"]["operators"]}
    assert placed and placed <= traced


@pytest.mark.vulkan
def test_model_profile_is_per_kernel_in_microseconds(resnet):
    prof = resnet.profile()
    assert [t.op for t in prof] == kernel_labels(resnet)
    assert all(t.where == "device" and type(t.microseconds) is float and 0 < t.microseconds < 10e6 for t in prof)


def small_graph():
    b = Builder()
    x = b.input("x", (2, 3), "fp32")
    b.output(b.maximum(b.add(x, x, name="s"), x, name="y"))
    return b.build()


@pytest.mark.vulkan
def test_profile_without_timestamps_is_an_error(device):
    """Found: profile() returned [] (read as "nothing ran") on a model loaded without timestamps=True."""
    with tosa_vk.load(small_graph(), backend="vulkan", device=device) as model:
        model.run(x=np.ones((2, 3), np.float32))
        with pytest.raises(TosaError, match=r"load the model with timestamps=True"):
            model.profile()


@pytest.mark.vulkan
def test_host_steps_are_in_the_profile_between_the_kernels(device):
    """Found: a host step (an operator without a Vulkan kernel) was missing from the Vulkan profile."""

    with tosa_vk.load(
        host_step_graph("com.example.profile"), backend="vulkan", device=device, timestamps=True
    ) as model:
        model.run(x=np.ones(3, np.float32))
        prof = model.profile()
        with model.using() as runtime:
            spans = runtime.spans()
    assert [(t.op.split()[0], t.where) for t in prof] == [("ADD", "device"), ("CUSTOM", "host"), ("ADD", "device")]
    assert all(t.microseconds > 0 for t in prof)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))


def test_reference_backend_profile_and_trace(tmp_path, capsys):
    tosa_vk.save_graph(small_graph(), tmp_path / "m.tosa")
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    args = ["profile", str(tmp_path / "m.tosa"), "-i", f"x={tmp_path / 'x.npy'}", "--backend", "reference"]
    assert main([*args, "--runs", "3", "--sort", "time", "--trace", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    rows = [m.groups() for m in map(ROW.match, out.splitlines()) if m]
    assert sorted(r[5].split()[0] for r in rows) == ["ADD", "MAXIMUM"] and {r[4] for r in rows} == {"host"}
    assert [float(r[1]) for r in rows] == sorted((float(r[1]) for r in rows), reverse=True)  # --sort time
    assert "per operator" in out and "(median of 3)" in out
    events = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 3 * 2 and not any(e["args"]["measured_start"] for e in events)  # laid end to end


def test_runs_must_be_positive(capsys):
    assert main(["profile", str(RESNET / "model.tosa"), "--runs", "0"]) == 2
    assert "--runs takes 1 or more" in capsys.readouterr().err


def test_labels_split_into_operators_and_shorten_by_whole_operators():
    label = "CONV2D #58 'a + b' + RESCALE #63 'y' + R::ADD #69 'z'"
    assert operators(label) == ["CONV2D #58 'a + b'", "RESCALE #63 'y'", "R::ADD #69 'z'"]
    assert shorten(label, 200) == label
    assert shorten(label, 45) == "CONV2D #58 'a + b' + RESCALE #63 'y' + 1 more"
    assert shorten(label, 44) == "CONV2D #58 'a + b' + 2 more"
    assert shorten(label, 20) == "CONV2D #... + 2 more"


def two_ops():
    b = Builder()
    x = b.input("x", (4,), "fp32")
    b.output(b.mul(b.add(x, x, name="s"), x, name="y"))
    return b.build()


# issue 39: profiles leave the first run's pipeline compilation out (a warm-up run, said in the output)


def test_profile_with_feeds_runs_a_warm_up_first(monkeypatch):
    feeds = {"x": np.ones(4, np.float32)}
    with tosa_vk.load(two_ops(), backend="reference") as model:
        ran = []
        real = model.run
        monkeypatch.setattr(model, "run", lambda *a, **k: ran.append(1) or real(*a, **k))
        prof = model.profile(feeds)
        assert len(ran) == 2 and [t.op.split()[0] for t in prof] == ["ADD", "MUL"]
        model.profile(feeds, warmup=0)
        assert len(ran) == 3
        with pytest.raises(TosaError, match="warmup"):
            model.profile(feeds, warmup=-1)


@pytest.mark.vulkan
def test_profile_of_a_first_vulkan_run_says_it_includes_compilation(device):
    feeds = {"x": np.ones(4, np.float32)}
    with tosa_vk.load(two_ops(), backend="vulkan", device=device, timestamps=True) as model:
        model.run(feeds)
        with pytest.warns(RuntimeWarning, match="include pipeline compilation"):
            model.profile()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert model.profile(feeds) and model.profile()  # warm: no warning


def test_profile_warmup_option(capsys):
    args = ["profile", "--test-desc", str(RESNET / "desc.json"), "--backend", "reference", "--runs", "1"]
    assert main([*args, "--warmup", "0"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "median of 1 runs after no warm-up (the first run's times include pipeline compilation)" in first
    assert main([*args, "--warmup", "-1"]) != 0
    assert "--warmup takes 0 or more" in capsys.readouterr().err

"""The IREE benchmark anchor (tosa_vk/tools/bench/anchors/iree.py): .tosa -> tosa-opt --tosa-deserialize -> iree-compile
(Vulkan, llvm-cpu) -> iree.runtime in-process, on a small Builder graph; and the skip paths with their reasons.
Compiled .vmfb files are cached (<tosa_vk cache>/iree): the first run compiles (seconds), later runs load. Skipped
when IREE (the `iree` extra, which scripts/setup.sh installs) is not importable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk.tools import bench
from tosa_vk.tools.bench import runners
from tosa_vk.tools.bench.anchors import iree
from tosa_vk.tools.bench.stats import compare

pytestmark = pytest.mark.vulkan


def _needs(backend: str) -> None:
    reason = iree.available(backend)
    if reason is not None:
        pytest.skip(reason)


def _two_outputs(folder: Path) -> tuple[tosa_vk.Graph, Path, dict[str, np.ndarray]]:
    """Inputs declared b, a and outputs total, act: the anchor must keep the graph's order, not sort names."""
    b = tosa_vk.Builder()
    second = b.input("b", (1, 8, 8, 4), "fp32")
    first = b.input("a", (1, 8, 8, 4), "fp32")
    total = b.add(first, second, name="total")
    act = b.sigmoid(b.sub(first, second), name="act")
    b.output(total, act)
    graph = b.build()
    path = folder / "two.tosa"
    tosa_vk.save_graph(graph, path)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal((1, 8, 8, 4)).astype(np.float32) for n in ("a", "b")}
    return graph, path, feeds


@pytest.mark.parametrize("backend", ["iree_vulkan", "iree_cpu"])
def test_anchor_matches_the_reference_backend(backend, tmp_path):
    _needs(backend)
    graph, path, feeds = _two_outputs(tmp_path)
    with tosa_vk.load(graph, backend="reference") as model:
        want = model.run(feeds)
    with iree.IreeAnchor(path, backend) as anchor:
        assert anchor.input_names == ["b", "a"] and anchor.output_names == ["total", "act"]
        assert anchor.vmfb.is_file() and anchor.vmfb.parent.name == "iree"
        got, seconds = anchor.run(feeds)
        assert list(got) == ["total", "act"] and seconds > 0
        assert all(got[n].dtype == np.float32 and got[n].shape == (1, 8, 8, 4) for n in got)
        np.testing.assert_array_equal(got["total"], want["total"])  # one fp32 rounding: exact
        assert compare(got, want)["ok"], compare(got, want)
        again, _ = anchor.run({"a": 2 * feeds["a"], "b": feeds["b"]})  # new inputs reach the loaded module
        np.testing.assert_array_equal(again["total"], 2 * feeds["a"] + feeds["b"])
    assert iree.IreeAnchor(path, backend).cached  # the second load takes the .vmfb from the cache


def test_bench_runs_the_anchors_and_reports_x_iree(tmp_path):
    _needs("iree_vulkan")
    _needs("iree_cpu")
    _, path, _ = _two_outputs(tmp_path)
    names = ["reference", "vulkan", "iree_vulkan", "iree_cpu"]
    report = bench.run(bench.model_cases([path]), names, repeats=2, warmup=1, cold=False)
    results = report["cases"][0]["results"]
    for name in ("iree_vulkan", "iree_cpu"):
        res = results[name]
        assert res["status"] == "ok", res.get("note")
        assert res["ok"] is True and len(res["wall_s"]) == 2 and res["first_run_s"] > 0
        assert "compile_cached" in res and res["compile_s"] >= 0
    text = bench.markdown(report)
    header = next(line for line in text.splitlines() if "x IREE" in line)
    assert header.startswith("| case | Vulkan wall") and "IREE Vulkan" in header and "x IREE CPU" in header
    row = next(line for line in text.splitlines() if line.startswith("| two "))
    assert row.count("|") == header.count("|") and "✗" not in row
    assert "| IREE Vulkan |" not in bench.markdown({**report, "settings": {**report["settings"], "backends": []}})


def test_a_refused_compile_is_a_skip_with_its_reason_and_is_cached(tmp_path, monkeypatch):
    _needs("iree_vulkan")
    graph, path, feeds = _two_outputs(tmp_path)
    # a refusal in seconds: an unknown Vulkan target (the shipped int8 ResNet's refusal by IREE's default target
    # takes ~30 s to reach)
    driver, flags = iree.TARGETS["iree_vulkan"]
    monkeypatch.setitem(iree.TARGETS, "iree_vulkan", (driver, (*flags, "--iree-vulkan-target=no_such_gpu")))
    monkeypatch.setenv("TOSA_VK_CACHE", str(tmp_path / "cache"))
    with pytest.raises(runners.Skip, match="iree-compile .*refused the graph: .*Unknown Vulkan target 'no_such_gpu'"):
        runners.RUNNERS["iree_vulkan"](graph, feeds, path, {"cleanup": []})
    (refused,) = (tmp_path / "cache" / "iree").glob("*.refused.txt")
    monkeypatch.setattr(iree, "_iree_compile", lambda: pytest.fail("a cached refusal compiles nothing"))
    with pytest.raises(iree.IreeError, match="no_such_gpu"):
        iree.IreeAnchor(path, "iree_vulkan")
    assert "no_such_gpu" in refused.read_text()


def test_what_tosa_opt_cannot_translate_is_a_skip(tmp_path):
    _needs("iree_vulkan")
    b = tosa_vk.Builder()
    x = b.input("x", (4,), "fp32")
    h = b.variable("h", (4,), "fp32")
    s = b.add(b.variable_read(h), x, name="s")
    b.variable_write(h, s)
    b.output(s)
    graph = b.build()
    tosa_vk.save_graph(graph, tmp_path / "state.tosa")
    with pytest.raises(runners.Skip, match="tosa-opt --tosa-deserialize refused state.tosa: .*VARIABLE"):
        runners.RUNNERS["iree_vulkan"](graph, {"x": np.ones(4, np.float32)}, tmp_path / "state.tosa", {"cleanup": []})


def test_not_installed_and_not_a_graph_are_skips(monkeypatch):
    monkeypatch.setitem(iree._AVAILABLE, "iree_cpu", "IREE not installed (test): pip install ...")
    with pytest.raises(runners.Skip, match="IREE not installed"):
        runners.RUNNERS["iree_cpu"](tosa_vk.Builder(), {}, None, {"cleanup": []})
    with pytest.raises(runners.Skip, match="IREE runs TOSA graphs"):
        runners.RUNNERS["iree_cpu"]("model.pte", {}, None, {"cleanup": []})


def test_a_vulkan_first_run_that_does_not_end_is_a_skip_and_remembered(tmp_path):
    _needs("iree_vulkan")
    _, path, feeds = _two_outputs(tmp_path)
    with iree.IreeAnchor(path, "iree_vulkan", cache=tmp_path / "cache") as anchor:
        with pytest.raises(iree.IreeError, match=r"did not end within 0.001 s .*hung.txt to try again"):
            anchor.guard_first_run(feeds, timeout_s=0.001)  # the child is killed long before its first run
        with pytest.raises(iree.IreeError, match="did not end"):  # remembered: no second child
            anchor.guard_first_run(feeds, timeout_s=1e9)
        anchor.vmfb.with_suffix(".hung.txt").unlink()
        anchor.guard_first_run(feeds)
        assert anchor.vmfb.with_suffix(".ran").is_file()
        anchor.guard_first_run(feeds, timeout_s=0.001)  # ran before: no child at all
        assert iree.IreeAnchor(path, "iree_cpu").guard_first_run(feeds) is None  # the CPU runs unguarded

"""The benchmark engine (the package tosa_vk.tools.bench, `tosa-vk bench`, the presets in benchmarks/) on two tiny
cases, repeats=2, so the scripts cannot rot. Checks the structure of the JSON and the table, never timings."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk.tools import bench
from tosa_vk.tools.bench.anchors import arm_sdk

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.vulkan


def _tiny_graph(tmp_path: Path) -> Path:
    b = tosa_vk.Builder()
    x = b.input("x", (1, 4, 4, 8), "fp32")
    w = np.random.default_rng(1).standard_normal((8, 1, 1, 8)).astype(np.float32)
    b.output(b.sigmoid(b.conv2d(x, w, np.zeros(8, np.float32))))
    path = tmp_path / "tiny.tosa"
    tosa_vk.save_graph(b.build(), path)
    return path


@pytest.fixture(scope="module")
def backends():
    names = list(bench.BACKENDS)
    try:
        import tosa_reference_model  # noqa: F401
    except ImportError:
        names.remove("refmodel")
    if arm_sdk.available() is not None:
        names.remove("arm_sdk")
    return names


@pytest.fixture(scope="module")
def report(tmp_path_factory, backends):
    tmp = tmp_path_factory.mktemp("bench")
    add = [c for c in bench.op_cases(quick=True) if c.info["op"] == "ADD"][:1]
    add[0].make = lambda: bench.build_op("ADD", "fp32", (1, 8, 8, 4), {})  # tiny instead of 1x64x64x32
    cases = add + bench.model_cases([_tiny_graph(tmp)])
    lines = []
    result = bench.run(cases, backends, repeats=2, warmup=1, progress=lambda text, done=False: lines.append(text))
    result["progress"] = lines
    bench.write(result, tmp / "out")
    return result, tmp / "out"


def test_report_structure(report, backends):
    result, out = report
    data = json.loads((out / "results.json").read_text())
    assert data["schema"] == "tosa_vk.bench/1" and data["settings"]["repeats"] == 2
    assert {"machine", "packages", "device"} <= set(data["environment"])
    assert data["environment"]["device"]["name"] and data["environment"]["packages"]["numpy"]
    assert [c["suite"] for c in data["cases"]] == ["ops", "models"]
    assert result["progress"] and any("[2/2]" in line for line in result["progress"])
    assert (out / "results.png").stat().st_size > 0  # matplotlib: the bench extra, which scripts/setup.sh installs
    for case in data["cases"]:
        assert set(backends) <= set(case["results"])
        for name in backends:
            res = case["results"][name]
            if name == "numpy" and case["suite"] == "models":
                assert res["status"] == "skipped" and "numpy" in res["note"]
                continue
            assert res["status"] == "ok", (case["case"], name, res.get("note"))
            assert len(res["wall_s"]) == 2 and set(res["wall"]) == {"median", "min", "max", "q1", "q3"}
            assert res["first_run_s"] > 0 and "method" in res["peak_mem"]
            assert res["ok"] is True and res["max_abs_diff"] is not None
        vk = case["results"]["vulkan"]
        assert len(vk["device_s"]) == 2 and vk["first_run_cold_s"] > 0 and vk["placement"]["vulkan"] >= 1
        if case["suite"] == "models":  # a file: cold and warm first runs in processes of their own
            assert vk["first_run_warm_process_s"] > 0


def test_markdown_table(report, backends):
    result, out = report
    text = (out / "results.md").read_text()
    assert text == bench.markdown(result)
    header = next(line for line in text.splitlines() if line.startswith("| case | Vulkan wall"))
    for column in ("x refmodel", "x numpy", "x Arm SDK", "tosa_reference_model", "Vulkan device"):
        assert column in header
    rows = [line for line in text.splitlines() if line.startswith("| ADD ") or line.startswith("| tiny ")]
    assert len(rows) == 4 and all(row.count("|") == header.count("|") for row in rows[:2])
    assert not any("✗" in row for row in rows)
    if "arm_sdk" not in backends:
        assert "—" in rows[0]


def test_missing_backend_is_a_note_not_a_crash(monkeypatch):
    monkeypatch.setattr(arm_sdk, "available", lambda: "not installed here")
    case = bench.Case("broken", "ops", lambda: bench.build_op("ADD", "fp32", (2, 2), {}))
    case.make = lambda: (_ for _ in ()).throw(RuntimeError("cannot build"))
    result = bench.run([case] + bench.model_cases([ROOT / "nonexistent.tosa"]), ["reference", "arm_sdk"], repeats=1)
    assert "Arm SDK anchor skipped: not installed here" in result["notes"]
    assert all("error" in row for row in result["cases"])
    assert "could not build" in bench.markdown(result)


def test_compare_tolerances():
    ints = {"y": np.array([1, 2], np.int8)}
    assert bench.compare(ints, ints)["ok"]
    assert not bench.compare({"y": np.array([1, 3], np.int8)}, ints)["ok"]
    floats = {"y": np.array([1.0, 100.0], np.float32)}
    assert bench.compare({"y": np.array([1.0, 100.001], np.float32)}, floats)["ok"]
    assert not bench.compare({"y": np.array([1.5, 100.0], np.float32)}, floats)["ok"]
    assert not bench.compare({}, floats)["ok"]


def test_cli_and_script_parse():
    from tosa_vk.tools.cli import build_parser

    args = build_parser().parse_args(["bench", "--suite", "ops", "--quick", "--repeats", "2", "--device", "0"])
    assert args.func.__name__ == "cmd_bench" and args.quick and args.repeats == 2
    assert len(bench.op_cases(quick=True)) < len(bench.op_cases()) and bench.default_models()
    for script in sorted((ROOT / "benchmarks").glob("*.py")):  # the presets import the installed package plainly
        runpy.run_path(str(script), run_name="not_main")


def test_built_graphs_join_the_model_suite(tmp_path, monkeypatch, capsys):
    """--built writes the Builder-made graphs as .tosa (conformance layout) and benchmarks them with the rest."""
    from tosa_vk.tools.bench import graphs
    from tosa_vk.tools.cli import build_parser

    monkeypatch.setattr(graphs, "GRAPHS", {"gru_fp32": graphs.GRAPHS["gru_fp32"]})  # one, to stay quick
    args = build_parser().parse_args(
        [
            "bench",
            "--suite",
            "models",
            "--built",
            "--filter",
            "gru",
            "--backends",
            "reference",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--no-cold",
            "--out",
            str(tmp_path),
        ]  # fmt: skip
    )
    assert bench.main_from_args(args) == 0
    assert (tmp_path / "graphs" / "gru_fp32" / "desc.json").is_file()
    assert "| gru_fp32 |" in capsys.readouterr().out


def test_in_flight_reports_throughput_and_the_pipeline_case(tmp_path, capsys):
    """--in-flight: latency and runs/s per N, and the pipeline with and without device tensors (issue 37)."""
    from tosa_vk.tools.cli import build_parser

    tiny = _tiny_graph(tmp_path)
    args = build_parser().parse_args(
        ["bench", str(tiny), "--in-flight", "1,2", "--runs", "3", "--repeats", "1", "--out", str(tmp_path)]
    )
    assert bench.main_from_args(args) == 0
    out = capsys.readouterr().out
    assert "| tiny | 1 |" in out and "| tiny | 2 |" in out and "throughput (runs/s" in out
    found = json.loads((tmp_path / "in_flight.json").read_text())
    assert [r["in_flight"] for r in found["in_flight"]["tiny"]] == [1, 2]
    assert all(r["ok"] and r["runs_per_s"] > 0 for r in found["in_flight"]["tiny"])
    pipe = found["pipeline"]["tiny"]
    assert pipe["identical"] and pipe["device_bytes"] < pipe["host_bytes"]
    bad = build_parser().parse_args(["bench", str(tiny), "--in-flight", "0", "--out", str(tmp_path)])
    assert bench.main_from_args(bad) == 2


def test_batches_report_the_steady_time_spread():
    """--batch N: each backend N runs in a row per round; the spread is max / min of the rounds' medians."""
    assert bench.stats.spread([1.0, 3.0, 2.0, 2.0, 4.0, 4.0], 2) == {"batch_medians": [2.0, 2.0, 4.0], "spread": 2.0}
    assert bench.stats.spread([1.0, 2.0], 1) == {} and bench.stats.spread([1.0, 2.0], 2) == {}
    case = bench.Case("add", "ops", lambda: bench.build_op("ADD", "fp32", (2, 2), {}))
    result = bench.run([case], ["reference", "vulkan"], repeats=3, warmup=0, cold=False, batch=2)
    res = result["cases"][0]["results"]["vulkan"]
    assert len(res["wall_s"]) == 6 and len(res["batch_medians"]) == 3 and res["spread"] >= 1.0
    text = bench.markdown(result)
    assert "Steady-time spread" in text and any(line.startswith("| add | ") and line.count("|") == 4
                                                for line in text.splitlines())  # fmt: skip

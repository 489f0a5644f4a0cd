"""The benchmark harness for one model (issue 39): `tosa-vk bench model.tosa|.vgf|.pte --input ... | --random SEED`,
its IREE-like input specs (tosa_vk/tools/bench/inputs.py), the same inputs for run / profile / compare, and run's
summary of each output. Structure and order only, never timings."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.ir import DType
from tosa_vk.tools.bench import harness_chosen
from tosa_vk.tools.bench.inputs import Spec, feeds, parse, summary
from tosa_vk.tools.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
LSTM = ROOT / "resources" / "models" / "lstm_unrolled_fp32"
PTE = ROOT / "tests" / "data" / "pte" / "two_in_two_out_fp32" / "model.pte"
PERCENTILES = ("min", "p50", "p90", "p99", "max")


# the input specs


@pytest.mark.parametrize(
    "text, want",
    [
        ("x=1x8x8x3xf32=0.5", Spec("x=1x8x8x3xf32=0.5", "x", (1, 8, 8, 3), DType.FP32, "0.5")),
        ("1x8xi8=-3", Spec("1x8xi8=-3", None, (1, 8), DType.INT8, "-3")),
        ("f32=1", Spec("f32=1", None, (), DType.FP32, "1")),
        ("x=2x3xbf16", Spec("x=2x3xbf16", "x", (2, 3), DType.BF16)),
        ("x=2x3xint16", Spec("x=2x3xint16", "x", (2, 3), DType.INT16)),  # TOSA's names too
        ("m=4xi1=true", Spec("m=4xi1=true", "m", (4,), DType.BOOL, "true")),
        ("x=-1e-3", Spec("x=-1e-3", "x", value="-1e-3")),
        ("x=data/a=b.npy", Spec("x=data/a=b.npy", "x", file=Path("data/a=b.npy"))),
        ("x=inputs", Spec("x=inputs", "x", file=Path("inputs"))),
    ],
)
def test_parse_takes_ireees_forms(text, want):
    assert parse(text) == want


@pytest.mark.parametrize("text", ["", "x==1", "x=1x2xq9=1", "1x2xf32=abc", "a=b=c=d", "x=1x2xf32=0.5=1"])
def test_parse_refuses_other_forms_naming_the_rule(text):
    with pytest.raises(TosaError, match="name=SHAPExTYPE=VALUE"):
        parse(text)


SIGNATURE = {
    "a": ((2, 3), "FP32"),
    "b": ((4,), "INT8"),
    "c": ((2,), "BOOL"),
    "d": ((1, 2), "BF16"),
    "e": ((3,), "INT32"),
    "f": ((2, 2), "float16"),  # a numpy name, as an ExecuTorch program declares its inputs
}


def test_splats_fill_the_declared_types():
    made, how = feeds(SIGNATURE, [parse(t) for t in ("a=2x3xf32=0.5", "b=4xi8=-7", "c=true", "d=1x2xbf16=1.5",
                                                     "e=3xi32", "f=2x2xf16=-2")])  # fmt: skip
    assert made["a"].dtype == np.float32 and (made["a"] == 0.5).all()
    assert made["b"].dtype == np.int8 and (made["b"] == -7).all()
    assert made["c"].dtype == np.bool_ and made["c"].all()
    assert made["d"].dtype == ml_dtypes.bfloat16 and (made["d"].astype(np.float32) == 1.5).all()
    assert made["e"].dtype == np.int32 and not made["e"].any() and how["e"] == "zeros"
    assert made["f"].dtype == np.float16 and (made["f"] == -2).all()
    assert how["a"] == "splat 0.5"


def test_random_is_reproducible_in_each_types_range():
    one, how = feeds(SIGNATURE, [], seed=3)
    two, _ = feeds(SIGNATURE, [parse("b=4xi8=1")], seed=3)
    again, _ = feeds(SIGNATURE, [], seed=3)
    for name in SIGNATURE:
        assert one[name].shape == SIGNATURE[name][0]
        np.testing.assert_array_equal(one[name], again[name])
        if name != "b":  # each input its own stream: another input's spec changes nothing
            np.testing.assert_array_equal(one[name], two[name])
    assert one["a"].dtype == np.float32 and np.abs(one["a"]).max() <= 1
    assert one["e"].min() >= 0 and one["e"].max() < 16
    assert how["a"] == "random (seed 3)"
    assert not np.array_equal(feeds(SIGNATURE, [], seed=4)[0]["a"], one["a"])


@pytest.mark.parametrize(
    "specs, message",
    [
        (["a=2x4xf32=1"], r"input 'a' has shape 2x3 \(\[2, 3\]\), the spec says 2x4: a spec's shape must be"),
        (["a=2x3xi8=1"], r"input 'a' is FP32 \(f32\), the spec says INT8 \(i8\): a spec's element type must be"),
        (["b=300"], r"300 is outside INT8 \(i8\)'s range \[-128, 127\]"),
        (["b=0.5"], r"input 'b'.*takes an integer, got '0.5'"),
        (["c=2"], r"a bool input takes 0, 1, true or false"),
        (["d=1e40"], r"outside BF16 \(bf16\)'s range|outside BF16"),
        (["z=1"], r"the model has no input 'z'"),
        (["2x3xf32=1"], r"names no input and the model takes 6"),
        (["a=1", "a=2"], r"input 'a' is given twice"),
        ([], r"no value for input 'a' \(2x3 FP32\): give --input a=VALUE"),
    ],
)
def test_spec_errors_name_the_input_and_the_rule(specs, message):
    with pytest.raises(TosaError, match=message):
        feeds(SIGNATURE, [parse(t) for t in specs], seed=0 if specs else None)


def test_summary_of_an_output():
    assert summary(np.array([[1.5, -2.0], [0.5, 4.0]], np.float32), first=3) == (
        "min -2 max 4 mean 1; first [1.5, -2, 0.5, ...]"
    )
    assert summary(np.array([3, -1], np.int8)) == "min -1 max 3 mean 1; first [3, -1]"
    assert summary(np.array([True, False, True])) == "2 of 3 true; first [true, false, true]"
    assert summary(np.array([np.nan, 1.0])).startswith("min 1 max 1 mean 1 (1 non-finite)")
    assert summary(np.zeros((0, 3))) == "empty"


# which mode `tosa-vk bench` runs


@pytest.mark.parametrize(
    "argv, harness",
    [
        (["m.tosa"], False),
        (["m.tosa", "--in-flight", "1,2", "--runs", "3"], False),
        (["m.tosa", "--in-flight", "2"], False),
        (["--suite", "ops", "--quick"], False),
        (["m.tosa", "--random", "0"], True),
        (["m.tosa", "--input", "x=0.5"], True),
        (["m.tosa", "--json", "r.json"], True),
        (["m.tosa", "--runs", "20"], True),
        (["m.tosa", "--random", "0", "--in-flight", "2"], True),
    ],
)
def test_the_harnesss_options_choose_it(argv, harness):
    assert harness_chosen(build_parser().parse_args(["bench", *argv])) is harness


@pytest.mark.parametrize(
    "extra, message",
    [
        (["other.tosa"], "takes one model file, got 2"),
        (["--suite", "models"], "--suite selects suite cases"),
        (["--in-flight", "1,2"], "takes one --in-flight N"),
    ],
)
def test_the_harness_refuses_the_suites_options(extra, message, capsys):
    assert main(["bench", str(LSTM / "model.tosa"), *extra, "--random", "0"]) == 2
    assert message in capsys.readouterr().err


# the harness on a .tosa, a .vgf and a .pte


def _ordered(stats: dict) -> bool:
    values = [stats[k] for k in PERCENTILES]
    return values == sorted(values) and stats["min"] <= stats["mean"] <= stats["max"]


@pytest.mark.vulkan
def test_harness_on_a_shipped_tosa_model(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["bench", str(LSTM / "model.tosa"), "--random", "0", "--runs", "4", "--warmup", "1", "--json", str(out)]
    assert main([*argv, "--backends", "vulkan"]) == 0
    text = capsys.readouterr().out
    assert "latency ms:  p50 " in text and "throughput:  " in text and "device ms:   p50 " in text
    assert "input x: 1x4x16 FP32, random (seed 0)" in text
    report = json.loads(out.read_text())
    assert report["schema"] == "tosa_vk.bench.model/1" and report["backend"] == "vulkan" and report["device"]
    assert report["settings"] == {"runs": 4, "warmup": 1, "in_flight": 1, "seed": 0}
    assert report["inputs"] == [{"name": "x", "shape": [1, 4, 16], "dtype": "FP32", "source": "random (seed 0)"}]
    assert len(report["samples_ms"]) == 4 and len(report["device_samples_ms"]) == 4
    assert _ordered(report["latency_ms"]) and _ordered({**report["device_ms"], "mean": report["device_ms"]["p50"]})
    assert report["throughput_runs_per_s"] > 0 and report["load_ms"] > 0 and report["first_run_ms"] > 0
    assert {"tosa_vk", "python", "platform"} <= set(report["environment"])


@pytest.mark.vulkan
def test_harness_on_an_exported_vgf_with_runs_in_flight(tmp_path, capsys):
    vgf = tmp_path / "lstm.vgf"
    assert main(["export", str(LSTM / "model.tosa"), "-o", str(vgf), "--segments", "compute"]) == 0
    out = tmp_path / "r.json"
    argv = ["bench", str(vgf), "--input", "1x4x16xf32=0.25", "--runs", "4", "--in-flight", "2", "--json", str(out)]
    assert main(argv) == 0
    assert "2 in flight" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["kind"] == "VGF" and report["inputs"][0]["source"] == "splat 0.25"
    assert len(report["samples_ms"]) == 4 and _ordered(report["latency_ms"])
    assert len(report["device_samples_ms"]) == 4 and "4 more runs one at a time" in report["notes"][0]
    assert main(["bench", str(vgf), "--input", "x=1x4x8xf32=1"]) == 2  # wrong shape, named
    assert "input 'x' has shape 1x4x16" in capsys.readouterr().err


def test_harness_on_an_executorch_program(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["bench", str(PTE), "--input", "input_0=0.5", "--random", "1", "--runs", "3", "--json", str(out)]
    assert main([*argv, "--backends", "reference"]) == 0
    report = json.loads(out.read_text())
    assert report["kind"] == "ExecuTorch program" and report["backend"] == "reference"
    assert [i["source"] for i in report["inputs"]] == ["splat 0.5", "random (seed 1)"]
    assert _ordered(report["latency_ms"]) and report["device_ms"] is None
    assert main(["bench", str(PTE), "--input", "2x3x4xf32=1", "--backends", "reference"]) == 2
    assert "names no input and the model takes 2: ['input_0', 'input_1']" in capsys.readouterr().err


def test_bench_model_from_python():
    from tosa_vk.tools.bench.harness import bench_model, lines

    report = bench_model(PTE, [parse("input_1=-1")], seed=0, runs=3, warmup=0, backend="reference")
    assert report["first_run_ms"] is None and len(report["samples_ms"]) == 3
    assert any(line.startswith("latency ms:") for line in lines(report))


# run / profile / compare take the same inputs; run summarizes each output


def test_run_takes_splats_and_random_and_summarizes_outputs(capsys):
    assert main(["run", str(PTE), "--backend", "reference", "-i", "input_0=2x3x4xf32=0.5", "--random", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "output_0: [2, 3, 4] float32"
    assert out[1].startswith("  min ") and " mean " in out[1] and "; first [" in out[1]
    with tosa_vk.load(PTE, backend="reference") as model:
        want = model.run(input_0=np.full((2, 3, 4), 0.5, np.float32), input_1=_second_input(2))
    assert out[1] == f"  {summary(want['output_0'])}"


def _second_input(seed: int) -> np.ndarray:
    """input_1 as --random SEED makes it: the stream of its position (1) in the program's inputs."""
    return np.random.default_rng((seed, 1)).uniform(-1.0, 1.0, size=(2, 3, 4)).astype(np.float32)


def test_run_with_a_desc_prints_no_summary(tmp_path, capsys):
    assert main(["run", "--test-desc", str(LSTM / "desc.json"), "-o", str(tmp_path), "--backend", "reference"]) == 0
    out = capsys.readouterr().out
    assert "min " not in out and "first [" not in out


def test_profile_and_compare_take_random_inputs(capsys):
    model = str(LSTM / "model.tosa")
    assert main(["profile", model, "--backend", "reference", "--random", "0", "--runs", "1"]) == 0
    assert "median of 1 runs" in capsys.readouterr().out
    assert main(["run", model, "--backend", "reference", "-i", "x=1x4x16xi8=1"]) == 2
    assert "input 'x' is FP32 (f32), the spec says INT8 (i8)" in capsys.readouterr().err


def test_a_quantized_input_takes_a_float_splat(tmp_path, capsys):
    """--input-qparams: the input takes float data, so its splat is a float, quantized before the run."""
    b = tosa_vk.Builder()
    x = b.input("x", (2, 2), "int8")
    b.output(b.clamp(x, min_val=-100, max_val=100, name="y"))
    tosa_vk.save_graph(b.build(), tmp_path / "q.tosa")
    argv = ["run", str(tmp_path / "q.tosa"), "--backend", "reference", "--input-qparams", "x=0.5,1", "-i", "x=1.5"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["y: [2, 2] INT8", "  min 4 max 4 mean 4; first [4, 4, 4, 4]"]

"""Quantized I/O for plain .tosa files (Model.quantize_io, load(input_qparams=, output_qparams=), `tosa-vk run
--input-qparams / --output-qparams`): the shipped int8 ResNet fed float data equals quantize-by-hand, run,
dequantize-by-hand on both backends; `cast=True` into an integer input warns that it truncates."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.reference.quantization import QParams, dequantize, quantize

ROOT = Path(__file__).resolve().parent.parent
RESNET = ROOT / "resources/models/resnet_int8"
DESC = json.loads((RESNET / "desc.json").read_text())
IN, OUT = DESC["ifm_name"][0], DESC["ofm_name"][0]
QIN, QOUT = (
    QParams(q["scale"], q["zero_point"], "int8")
    for q in (DESC["test_details"]["io_quantization"][k][0] for k in ("inputs", "outputs"))
)


def float_input() -> np.ndarray:
    """The shipped int8 input as float data, nudged off the quantization grid (so rounding matters)."""
    q = np.load(RESNET / "input-0.npy")
    rng = np.random.default_rng(0)
    return dequantize(q, QIN) + rng.uniform(-0.6, 0.6, q.shape).astype(np.float32) * QIN.scale


def by_hand(x: np.ndarray, **options) -> np.ndarray:
    with tosa_vk.load(RESNET / "model.tosa", **options) as model:
        return dequantize(model.run({IN: quantize(x, QIN)})[OUT], QOUT)


@pytest.mark.parametrize("backend", ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
def test_float_data_through_qparams_equals_quantizing_by_hand(backend, request):
    options = {"backend": backend}
    if backend == "vulkan":
        options["device"] = request.getfixturevalue("device")
    x = float_input()
    want = by_hand(x, **options)
    with tosa_vk.load(RESNET / "model.tosa", input_qparams={IN: QIN}, output_qparams={OUT: QOUT}, **options) as model:
        got = model.run({IN: x})[OUT]
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        # (scale, zero_point) pairs read the same; int8 data is taken as quantized already
        model.quantize_io({IN: (QIN.scale, QIN.zero_point)}, {OUT: (QOUT.scale, QOUT.zero_point)})
        np.testing.assert_array_equal(model.run({IN: x})[OUT], want)
        np.testing.assert_array_equal(model.run({IN: quantize(x, QIN)})[OUT], want)


def test_cast_into_an_integer_input_warns_and_points_at_qparams():
    with tosa_vk.load(RESNET / "model.tosa", backend="reference") as model:
        with pytest.warns(UserWarning, match=r"truncation .* input_qparams=.*--input-qparams"):
            model.run({IN: float_input()}, cast=True)
        model.quantize_io({IN: QIN})
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # quantized: no warning
            model.run({IN: float_input()}, cast=True)


@pytest.mark.parametrize(
    "inputs, outputs, message",
    [
        ({"nope": QIN}, None, r"no input 'nope' to quantize; the inputs are \['quantized"),
        (None, {"nope": QOUT}, r"no output 'nope' to quantize"),
        ({IN: QParams(0.1, 0, "int16")}, None, r"input '.*' is INT8, its QParams say int16"),
        ({IN: (0.0, 0)}, None, r"scale must be positive and finite"),
        ({IN: "0.1,0"}, None, r"a QParams or a \(scale, zero_point\) pair"),
    ],
)
def test_bad_qparams_are_errors(inputs, outputs, message):
    with pytest.raises(TosaError, match=message):
        tosa_vk.load(RESNET / "model.tosa", backend="reference", input_qparams=inputs, output_qparams=outputs)


def test_float_tensors_take_no_qparams():
    model_dir = ROOT / "resources/models/mobilenetv2_fp32"
    with pytest.raises(TosaError, match=r"input 'x' is FP32: quantization parameters apply to integer tensors"):
        tosa_vk.load(model_dir / "model.tosa", backend="reference", input_qparams={"x": (0.1, 0)})


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tosa_vk.tools.cli", *map(str, args)], capture_output=True, text=True)


def test_cli_run_with_qparams(tmp_path):
    np.save(tmp_path / "x.npy", float_input())
    qin, qout = f"{IN}={QIN.scale!r},{QIN.zero_point}", f"{OUT}={QOUT.scale!r},{QOUT.zero_point}"
    common = [RESNET / "model.tosa", "-i", f"{IN}={tmp_path / 'x.npy'}", "--backend", "reference"]
    run = cli("run", *common, "--input-qparams", qin, "--output-qparams", qout, "-o", tmp_path / "out", "--check")
    assert run.returncode == 0, run.stderr
    assert f"{OUT}: [1, 10] FP32" in run.stdout and "PASS vs reference backend" in run.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"{OUT}.npy"), by_hand(float_input(), backend="reference"))
    # the desc.json's int8 inputs are quantized already; its int8 expected results are dequantized to compare
    desc = cli("run", "--test-desc", RESNET / "desc.json", "--compare", "--backend", "reference",
               "--input-qparams", qin, "--output-qparams", qout)  # fmt: skip
    assert desc.returncode == 0 and "PASS vs ref-result-0.npy" in desc.stdout, desc.stdout + desc.stderr
    cast = cli("run", *common, "--cast")
    assert cast.returncode == 0
    assert cast.stderr.startswith(f"tosa-vk: warning: cast=True converts the float data of INT8 input '{IN}' by")
    assert f"--input-qparams {IN}=SCALE,ZP" in cast.stderr and len(cast.stderr.splitlines()) == 1
    bad = cli("run", *common, "--input-qparams", f"{IN}=0.1")
    assert bad.returncode == 2 and "--input-qparams takes NAME=SCALE,ZERO_POINT" in bad.stderr

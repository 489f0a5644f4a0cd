"""`tosa-vk import model.tflite` (tosa_vk/formats/tflite_import.py): resources/tflite/tiny_cnn.tflite (made by
scripts/make_tflite_fixture.py without TensorFlow) goes through Arm's converter and serializer and runs on both
backends to numpy's own computation of the same network; refusals and missing tools are errors naming the file.
Skipped where the `tflite` extra (tosa-converter-for-tflite) is not installed."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaFormatError, TosaUnsupportedError
from tosa_vk.formats import tflite_import
from tosa_vk.formats.tflite_import import (
    CONVERTER,
    TFLITE_CONVERTER_VERSION,
    TFLITE_SCHEMA_VERSION,
    import_model,
    tflite_names,
    tflite_qparams,
)
from tosa_vk.ir import mlir
from tosa_vk.paths import find_tool
from tosa_vk.reference.quantization import QParams, dequantize, quantize

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "resources/tflite/tiny_cnn.tflite"
TINY_INT8 = ROOT / "resources/tflite/tiny_cnn_int8.tflite"
needs_converter = pytest.mark.skipif(
    find_tool(CONVERTER) is None or mlir.find_tool() is None,
    reason="the tflite extra (tosa-converter-for-tflite, tosa-tools) is not installed",
)


def fixture_script():
    spec = importlib.util.spec_from_file_location("make_tflite_fixture", ROOT / "scripts/make_tflite_fixture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_cnn(x: np.ndarray, int8: bool = False) -> np.ndarray:
    """The fixture's network in numpy (float64): CONV_2D 3x3 SAME + bias + RELU, MAX_POOL_2D 2x2, SOFTMAX. int8:
    TFLite's integer model simulated in float (each quantized tensor rounded to its grid: weights per channel, the
    input, the convolution's output and the softmax's output)."""
    script = fixture_script()
    filt, bias = (a.astype(np.float64) for a in script.weights())  # OHWI
    x = x.astype(np.float64)

    def grid(a: np.ndarray, scale_zp) -> np.ndarray:
        q = QParams(*scale_zp)
        return dequantize(quantize(a, q), q).astype(np.float64)

    if int8:
        w_scale = np.abs(filt).reshape(4, -1).max(axis=1) / 127
        filt = np.rint(filt / w_scale[:, None, None, None]) * w_scale[:, None, None, None]
        bias = np.rint(bias / (script.INPUT_Q[0] * w_scale)) * (script.INPUT_Q[0] * w_scale)
        x = grid(x, script.INPUT_Q)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((1, 8, 8, 4))
    for dy in range(3):
        for dx in range(3):
            conv += np.einsum("nhwc,oc->nhwo", padded[:, dy : dy + 8, dx : dx + 8, :], filt[:, dy, dx, :])
    relu = np.maximum(conv + bias, 0)
    if int8:
        relu = grid(relu, script.CONV_Q)
    pool = relu.reshape(1, 4, 2, 4, 2, 4).max(axis=(2, 4))
    e = np.exp(pool - pool.max(axis=-1, keepdims=True))
    softmax = e / e.sum(axis=-1, keepdims=True)
    return grid(softmax, script.OUTPUT_Q) if int8 else softmax


def cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tosa_vk.tools.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


@needs_converter
@pytest.mark.parametrize("backend", ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
def test_import_then_run_matches_numpy(tmp_path, backend, request):
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(TINY, user / "tiny.tflite")
    done = cli("import", user / "tiny.tflite", "-o", tmp_path / "tiny.tosa")
    assert done.returncode == 0, done.stderr
    assert "inputs: input [1, 8, 8, 3] FP32" in done.stdout and "outputs: output [1, 4, 4, 4] FP32" in done.stdout
    assert sorted(p.name for p in user.iterdir()) == ["tiny.tflite"]  # nothing written beside the model
    options = {"device": request.getfixturevalue("device")} if backend == "vulkan" else {}
    x = np.random.default_rng(1).normal(size=(1, 8, 8, 3)).astype(np.float32)
    with tosa_vk.load(tmp_path / "tiny.tosa", backend=backend, **options) as model:
        got = model.run(input=x)["output"]
    np.testing.assert_allclose(got, tiny_cnn(x), rtol=0, atol=1e-6)


@needs_converter
def test_int8_import_runs_float_data_through_the_tflite_qparams(tmp_path, device):
    pytest.importorskip("tflite", reason="tflite_qparams reads the .tflite with the tflite schema package")
    script = fixture_script()
    inputs, outputs = tflite_qparams(TINY_INT8)
    assert inputs == {"input": QParams(script.INPUT_Q[0], script.INPUT_Q[1], "int8")}
    assert outputs == {"output": QParams(script.OUTPUT_Q[0], script.OUTPUT_Q[1], "int8")}
    done = cli("import", TINY_INT8, "-o", tmp_path / "q.tosa")
    assert done.returncode == 0, done.stderr
    assert "inputs: input [1, 8, 8, 3] INT8" in done.stdout
    flags = "--input-qparams input=0.03125,0 --output-qparams output=0.00390625,-128"
    assert f"quantized I/O, float data in and out: tosa-vk run {tmp_path / 'q.tosa'} {flags}" in done.stdout
    x = np.random.default_rng(1).normal(size=(1, 8, 8, 3)).astype(np.float32)
    got = {}
    for backend, options in (("reference", {}), ("vulkan", {"device": device})):
        with tosa_vk.load(tmp_path / "q.tosa", backend, input_qparams=inputs, output_qparams=outputs, **options) as m:
            got[backend] = m.run(input=x)["output"]
    np.testing.assert_array_equal(got["vulkan"], got["reference"])  # an integer graph: the same bits
    # TFLite's integer model simulated in float: at most one output step apart (measured: none)
    np.testing.assert_allclose(got["reference"], tiny_cnn(x, int8=True), rtol=0, atol=script.OUTPUT_Q[0] * 1.01)


@needs_converter
def test_import_refuses_to_overwrite(tmp_path):
    out = tmp_path / "m.tosa"
    out.write_bytes(b"mine")
    refused = cli("import", TINY, "-o", out)
    assert refused.returncode == 2 and "exists: the TOSA graph is not written over it (--overwrite" in refused.stderr
    assert out.read_bytes() == b"mine"
    assert cli("import", TINY, "-o", out, "--overwrite").returncode == 0
    assert tosa_vk.load(out, backend="reference").inputs == {"input": ((1, 8, 8, 3), "FP32")}


@needs_converter
def test_import_errors_name_the_file(tmp_path):
    truncated = tmp_path / "cut.tflite"
    truncated.write_bytes(TINY.read_bytes()[:600])
    with pytest.raises(TosaFormatError) as err:
        import_model(truncated)
    assert str(err.value).startswith(f"{truncated}: {CONVERTER} cannot convert it (exit code 1): ")
    assert "error: couldn't parse flatbuffer" in str(err.value)
    other = tmp_path / "notes.txt"
    other.write_text("not a model at all")
    with pytest.raises(TosaFormatError, match=r"notes.txt: not a TFLite flatbuffer \(file identifier b'a mo'"):
        import_model(other)
    done = cli("import", other, "-o", tmp_path / "x.tosa")
    assert done.returncode == 2 and "not a TFLite flatbuffer" in done.stderr and not (tmp_path / "x.tosa").exists()


def test_tflite_qparams_errors(tmp_path, monkeypatch):
    pytest.importorskip("tflite")
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(TINY_INT8.read_bytes()[:600])
    with pytest.raises(TosaFormatError, match=r"cut.tflite: corrupt TFLite flatbuffer \(error: unpack_from"):
        tflite_qparams(cut)
    assert tflite_qparams(TINY) == ({}, {})  # float32: nothing to quantize
    monkeypatch.setitem(sys.modules, "tflite.Model", None)  # as if the package were not installed
    with pytest.raises(TosaUnsupportedError, match=rf"pip install tflite=={TFLITE_SCHEMA_VERSION}"):
        tflite_qparams(TINY_INT8)


def test_missing_converter_says_what_to_install(monkeypatch):
    monkeypatch.setattr(tflite_import, "find_tool", lambda name: None)
    with pytest.raises(TosaUnsupportedError) as err:
        import_model(TINY)
    assert f"pip install {CONVERTER}=={TFLITE_CONVERTER_VERSION} tosa-tools==" in str(err.value)
    assert str(err.value).startswith(f"{TINY}: a TFLite model is legalized to TOSA by {CONVERTER}")


def test_tflite_names_from_the_entry_function():
    text = 'func.func @main(%arg0: tensor<1xf32>) attributes {tf.entry_function = {inputs = "a,b:0", outputs = "y"}}'
    assert tflite_names(text) == (["a", "b:0"], ["y"])
    assert tflite_names("module {}") is None


def test_pins_agree():
    constraints = (ROOT / "constraints.txt").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    pins = [f"{CONVERTER}=={TFLITE_CONVERTER_VERSION}", f"tflite=={TFLITE_SCHEMA_VERSION}"]
    assert all(f"{pin}\n" in constraints for pin in pins)
    extra = f'tflite = ["{pins[0]}", "tosa-tools=={mlir.TOSA_TOOLS_VERSION}", "{pins[1]}"]'
    assert extra in pyproject


def test_fixtures_are_what_the_script_writes():
    pytest.importorskip("tflite", reason="the `tflite` schema package writes the fixture (pip install tflite==2.18.0)")
    assert fixture_script().build() == TINY.read_bytes()
    assert fixture_script().build(int8=True) == TINY_INT8.read_bytes()


def test_the_converter_messages_only_with_verbose(tmp_path, monkeypatch, capfd):
    """The converter's own log lines (its standard error) stay out of the output unless verbose; a converter that
    logs and succeeds here (a stand-in: it writes `module {}`)."""
    fake = tmp_path / "fake-converter"
    fake.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdin.buffer.read()\nprint('I0000 converter log line', file=sys.stderr)\n"
        "open(sys.argv[sys.argv.index('-o') + 1], 'w').write('module {}')\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(tflite_import, "find_tool", lambda name: str(fake))
    data = TINY.read_bytes()
    assert tflite_import.to_mlir(data, file=str(TINY)) == "module {}"
    assert "converter log line" not in capfd.readouterr().err
    assert tflite_import.to_mlir(data, file=str(TINY), verbose=True) == "module {}"
    assert f"{CONVERTER}: I0000 converter log line" in capfd.readouterr().err

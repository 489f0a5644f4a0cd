"""TOSA MLIR in (tosa_vk/ir/mlir.py): text and bytecode of the shipped models load through tosa-tools' serializer and
run to the same bits as their .tosa files on both backends; the tool's refusals, its absence and its hangs are
TosaErrors naming the file; nothing is written beside the user's file or left in the temporary folder.

The MLIR fixtures are the shipped .tosa files turned back into MLIR by the same tool's `--tosa-deserialize`
(text), then `--emit-bytecode` (bytecode), once per test session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError, TosaFormatError, TosaUnsupportedError
from tosa_vk.ir import load_graph, mlir, read_graph

ROOT = Path(__file__).resolve().parent.parent
TOOL = mlir.find_tool()
needs_tool = pytest.mark.skipif(TOOL is None, reason="tosa-tools' tosa-opt is not installed")

BAD_MLIR = """// a TOSA graph with an operator TOSA does not have
module {
  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = tosa.frobnicate %a : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""


def _opt(*args: str) -> None:
    assert TOOL is not None
    subprocess.run([TOOL, *args], check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def mlir_of(tmp_path_factory):
    """model folder -> {"mlir": text file, "mlirbc": bytecode file} of its model.tosa (made on first use)."""
    made: dict[Path, dict[str, Path]] = {}

    def make(model_dir: Path) -> dict[str, Path]:
        if model_dir not in made:
            folder = tmp_path_factory.mktemp(model_dir.name)
            text, bytecode = folder / "model.mlir", folder / "model.mlirbc"
            _opt(f"--tosa-deserialize=tosa-flatbuffer-filename={model_dir / 'model.tosa'}", "-o", str(text))
            _opt("--emit-bytecode", str(text), "-o", str(bytecode))
            made[model_dir] = {"mlir": text, "mlirbc": bytecode}
        return made[model_dir]

    return make


@pytest.fixture(scope="session")
def tosa_results():
    """(model folder, backend) -> its model.tosa's outputs, run once (the device: the session's shared one)."""
    results: dict[tuple[Path, str], dict[str, np.ndarray]] = {}

    def get(model_dir: Path, **options) -> dict[str, np.ndarray]:
        key = (model_dir, options["backend"])
        if key not in results:
            results[key] = _run(model_dir / "model.tosa", model_dir, **options)
        return results[key]

    return get


def _run(source, model_dir: Path, **options) -> dict[str, np.ndarray]:
    feed = np.load(model_dir / "input-0.npy")
    with tosa_vk.load(source, **options) as model:
        return model.run({next(iter(model.inputs)): feed})


@needs_tool
@pytest.mark.parametrize("fmt", ["mlir", "mlirbc"])
def test_mlir_runs_like_its_tosa_reference(model_dir, mlir_of, fmt, tosa_results):
    source = mlir_of(model_dir)[fmt]
    assert mlir.kind(source.read_bytes()) == ("MLIR text" if fmt == "mlir" else "MLIR bytecode")
    want = tosa_results(model_dir, backend="reference")
    got = _run(source, model_dir, backend="reference")
    assert list(got) == list(want)  # the graph's output names survive the round trip
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


@needs_tool
@pytest.mark.vulkan
@pytest.mark.parametrize("fmt", ["mlir", "mlirbc"])
def test_mlir_runs_like_its_tosa_vulkan(model_dir, mlir_of, fmt, device, tosa_results):
    source = mlir_of(model_dir)[fmt]
    want = tosa_results(model_dir, backend="vulkan", device=device, cache_dir=False)
    got = _run(source, model_dir, backend="vulkan", device=device, cache_dir=False)
    for name in want:  # the same graph compiled for the same device: the same bits
        np.testing.assert_array_equal(got[name], want[name])


def test_kind_sniffs_text_bytecode_and_nothing_else():
    assert mlir.kind(b"ML\xefR\x0dMLIR") == "MLIR bytecode"
    assert mlir.kind(b"module {\n}") == "MLIR text"
    assert mlir.kind(b"\xef\xbb\xbf  // a comment\n\n// another\nfunc.func @main() {") == "MLIR text"
    assert mlir.kind(b'"builtin.module"() ({\n}) : () -> ()') == "MLIR text"
    assert mlir.kind(b"#loc = loc(unknown)\nmodule {}") == "MLIR text"
    tosa = (ROOT / "resources/models/resnet_int8/model.tosa").read_bytes()
    for other in (tosa, b"", b"modules are nice", b"hello", b"\x00\x00\x00\x00ET12"):
        assert mlir.kind(other) is None


def test_not_tosa_nor_mlir_says_both():
    with pytest.raises(TosaFormatError, match=r"x.bin: not a TOSA flatbuffer .* nor TOSA MLIR text or bytecode"):
        read_graph(b"hello world, a file of text", file="x.bin")


@needs_tool
def test_refused_mlir_names_file_and_tool_error(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    bad = tmp_path / "user" / "bad.mlir"
    bad.parent.mkdir()
    bad.write_text(BAD_MLIR)
    with pytest.raises(TosaFormatError) as err:
        load_graph(bad)
    text = str(err.value)
    assert text.startswith(f"{bad}: MLIR text that tosa-opt --tosa-serialize refuses")
    assert "line 4:10: error: custom op 'tosa.frobnicate' is unknown" in text
    # nothing beside the user's file, nothing left in the temporary folder
    assert sorted(os.listdir(bad.parent)) == ["bad.mlir"] and os.listdir(tmp_path / "tmp") == []
    with pytest.raises(TosaFormatError, match="MLIR bytecode that tosa-opt"):
        read_graph(b"ML\xefR truncated bytecode", file="t.mlirbc")


def test_missing_tool_says_what_to_install(monkeypatch):
    monkeypatch.setattr(mlir, "find_tool", lambda: None)
    with pytest.raises(TosaUnsupportedError) as err:
        read_graph(BAD_MLIR.encode(), file="m.mlir")
    assert str(err.value).startswith("m.mlir: MLIR text is turned into a TOSA flatbuffer by tosa-tools' tosa-opt")
    assert f"pip install tosa-tools=={mlir.TOSA_TOOLS_VERSION}" in str(err.value)


def test_pinned_version_is_the_test_environments():
    pins = dict(line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line)
    assert pins["tosa-tools"].strip() == mlir.TOSA_TOOLS_VERSION


@needs_tool
def test_a_tool_that_hangs_is_stopped(tmp_path, monkeypatch):
    slow = tmp_path / "tosa-opt"  # stands in for the tool: sleeps past the timeout
    slow.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    slow.chmod(0o755)
    monkeypatch.setattr(mlir, "find_tool", lambda: str(slow))
    monkeypatch.setattr(mlir, "SERIALIZE_TIMEOUT_S", 0.5)
    with pytest.raises(TosaError, match=r"m.mlir: tosa-opt --tosa-serialize did not finish within 0.5 s"):
        read_graph(BAD_MLIR.encode(), file="m.mlir")


@needs_tool
@pytest.mark.vulkan
def test_cli_info_run_compare_take_mlir(mlir_of, tmp_path):
    model_dir = ROOT / "resources/models/lstm_unrolled_fp32"
    files = mlir_of(model_dir)

    def cli(*args) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tosa_vk.tools.cli", *map(str, args)], capture_output=True, text=True
        )

    info = cli("info", files["mlir"], "--json")
    assert info.returncode == 0, info.stderr
    assert '"name": "x"' in info.stdout
    feed = f"x={model_dir / 'input-0.npy'}"
    run = cli("run", files["mlirbc"], "-i", feed, "--backend", "reference", "-o", tmp_path)
    assert run.returncode == 0, run.stderr
    (out,) = tmp_path.iterdir()
    want = _run(model_dir / "model.tosa", model_dir, backend="reference")
    np.testing.assert_array_equal(np.load(out), want[out.stem])
    compared = cli("compare", files["mlir"], "-i", feed)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    bad = tmp_path / "bad.mlir"
    bad.write_text(BAD_MLIR)
    refused = cli("info", bad)
    assert refused.returncode == 2 and "custom op 'tosa.frobnicate' is unknown" in refused.stderr


@needs_tool
@pytest.mark.vulkan
def test_program_cache_keys_mlir_by_its_bytes(mlir_of, tmp_path, monkeypatch, device):
    """A cached program runs without serializing the MLIR again (the tool is not even looked for). With custom ops
    registered (other tests of the same process register some), the cache must read the graph to see whether it
    uses one: this test runs with none."""
    from tosa_vk import custom

    monkeypatch.setattr(custom, "REGISTRY", {})
    model_dir = ROOT / "resources/models/lstm_unrolled_fp32"
    source = mlir_of(model_dir)["mlirbc"]
    first = _run(source, model_dir, backend="vulkan", device=device, cache_dir=tmp_path)
    monkeypatch.setattr(mlir, "find_tool", lambda: None)
    with tosa_vk.load(source, backend="vulkan", device=device, cache_dir=tmp_path) as model:
        assert model.cached
        again = model.run({"x": np.load(model_dir / "input-0.npy")})
        with pytest.raises(TosaUnsupportedError, match="pip install tosa-tools"):
            model.graph  # noqa: B018 - only asking for the graph itself needs the tool
    for name in first:
        np.testing.assert_array_equal(again[name], first[name])


def _splat(elements: int) -> bytes:
    """A few hundred bytes of MLIR text whose splat constant declares `elements` fp32 elements."""
    t = f"tensor<{elements}xf32>"
    return (
        "module {\n"
        f"  func.func @main(%a: tensor<1xf32>) -> {t} {{\n"
        f'    %big = "tosa.const"() <{{values = dense<0.000000e+00> : {t}}}> : () -> {t}\n'
        f"    return %big : {t}\n  }}\n}}\n"
    ).encode()


def test_a_splat_beyond_the_constant_budget_is_refused_before_serializing(monkeypatch):
    """Issue 46: 276 bytes declaring 256 MiB made the serializer write and read it all (no tool needed to refuse)."""
    monkeypatch.setattr(mlir, "find_tool", lambda: pytest.fail("the serializer was reached"))
    data = _splat(64 << 20)
    with pytest.raises(TosaError) as err:
        read_graph(data, file="splat.mlir")
    text = str(err.value)
    assert text.startswith("splat.mlir: constant %big (line 3) declares 67108864 elements")
    assert mlir.CONSTANT_ENV in text
    monkeypatch.setenv(mlir.CONSTANT_ENV, str(64 << 20))  # the user raises the budget: checked and passed
    mlir.check_constants(data, "splat.mlir")
    monkeypatch.setenv(mlir.CONSTANT_ENV, "lots")
    with pytest.raises(TosaError, match=mlir.CONSTANT_ENV):
        mlir.check_constants(data, "splat.mlir")


@needs_tool
def test_sigterm_while_serializing_removes_the_private_folder(tmp_path):
    """Issue 46: SIGTERM left the serializer's temporary folder (256 MiB for a small file) behind; Ctrl-C did not."""
    source = tmp_path / "splat.mlir"
    source.write_bytes(_splat(32 << 20))
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "TOSA_VK_MLIR_CONSTANT_ELEMENTS": str(64 << 20)}
    code = "import sys; from tosa_vk.ir import load_graph; load_graph(sys.argv[1])"
    proc = subprocess.Popen([sys.executable, "-c", code, str(source)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not list((tmp_path / "tmp").glob("tosa_vk-mlir-*")):  # the private folder is there
            assert proc.poll() is None and time.monotonic() < deadline, "serialization ended before the signal"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM  # still ends as SIGTERM says
    finally:
        proc.kill()
    assert os.listdir(tmp_path / "tmp") == []

"""Bad input gives one clear error line naming the file and what is wrong: never a traceback, never a hang."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from tosa_vk import Builder, TosaError, TosaFormatError
from tosa_vk.ir import flatbuffer, read_graph, validate, write_graph

MODEL = Path(__file__).resolve().parent.parent / "resources" / "models" / "lstm_unrolled_fp32" / "model.tosa"


def small_graph():
    b = Builder()
    x = b.input("x", (2, 3), "fp32")
    b.output(b.add(x, x, name="sum"))
    return b.build()


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tosa_vk.tools.cli", *map(str, args)], capture_output=True, text=True, timeout=60
    )


def assert_one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tosa-vk: error: "), done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "empty file"),
        (b"TOSA", "too short"),
        (b"\x00" * 64, "not a TOSA flatbuffer"),
        (b"hello world, this is not a flatbuffer at all", "not a TOSA flatbuffer"),
    ],
)
def test_garbage_files(tmp_path, content, message):
    path = tmp_path / "bad.tosa"
    path.write_bytes(content)
    assert_one_line_error(cli("info", path), str(path), message)


def test_missing_file(tmp_path):
    assert_one_line_error(cli("info", tmp_path / "nope.tosa"), "nope.tosa", "cannot read")


def test_truncated_model(tmp_path):
    path = tmp_path / "truncated.tosa"
    path.write_bytes(MODEL.read_bytes()[:20000])
    assert_one_line_error(cli("info", path), str(path), "flatbuffer")


def test_wrong_version(tmp_path):
    graph = small_graph()
    graph.version = (2, 0, 0, False)
    path = tmp_path / "v2.tosa"
    path.write_bytes(write_graph(graph))
    assert_one_line_error(cli("info", path), "TOSA version 2.0.0 is not supported")


def test_unknown_op_code(tmp_path, monkeypatch):
    graph = small_graph()
    monkeypatch.setitem(flatbuffer.OP_CODES, "ADD", 250)
    monkeypatch.setitem(flatbuffer._ATTR_CLASS, 250, "AddAttribute")
    buf = write_graph(graph)
    monkeypatch.undo()
    path = tmp_path / "op250.tosa"
    path.write_bytes(buf)
    assert_one_line_error(cli("info", path), "unknown operator code 250", "'sum'")


def test_undefined_tensor_name(tmp_path):
    graph = small_graph()
    graph.main.operators[-1].inputs[1] = "ghost"
    path = tmp_path / "ghost.tosa"
    path.write_bytes(write_graph(graph))
    done = cli("info", path)
    assert done.returncode == 1 and "ADD #0 'sum'" in done.stdout and "ghost" in done.stdout
    with pytest.raises(TosaError, match="ghost"):
        validate(read_graph(path.read_bytes()))


@pytest.mark.parametrize("which", ["inputs", "outputs"])
def test_block_io_naming_no_tensor(which):
    """Found by tests/fuzz.py: a region block whose output named no tensor raised KeyError in validation."""
    from test_vulkan_control_flow import branchy

    graph = branchy()
    region, block = next((r, b) for r, b in graph.blocks() if r is not graph.regions[0])
    getattr(block, which)[0] = "ghost"
    with pytest.raises(TosaError, match=f"block '{block.name}' {which[:-1]} 'ghost' is not a tensor of the block"):
        validate(graph)


def test_shape_mismatch(tmp_path):
    graph = small_graph()
    graph.main.tensors["sum"].shape = (2, 4)
    with pytest.raises(TosaError, match=r"ADD #0 'sum'.*"):
        validate(graph)


def test_dtype_mismatch():
    graph = small_graph()
    graph.main.tensors["sum"].dtype = graph.main.tensors["sum"].dtype.__class__.INT8
    with pytest.raises(TosaError, match=r"ADD #0 'sum'"):
        validate(graph)


def test_fuzzed_models_fail_cleanly():
    """Random byte flips, truncations and splices of a real model: TosaError or success, nothing else (a mutant that
    hangs the reader is caught by the suite's per-test timeout, pyproject.toml)."""
    original = MODEL.read_bytes()
    rng = random.Random(1234)
    for i in range(400):
        buf = bytearray(original)
        kind = i % 3
        if kind == 0:
            for _ in range(rng.randint(1, 16)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif kind == 1:
            buf = buf[: rng.randrange(8, len(buf))]
        else:
            pos = rng.randrange(8, len(buf) - 4)
            buf[pos : pos + 4] = rng.randrange(1 << 32).to_bytes(4, "little")
        try:
            graph = read_graph(bytes(buf), file=f"mutant{i}")
        except TosaFormatError as err:
            assert str(err).startswith(f"mutant{i}: ")
        else:
            try:
                validate(graph)
            except TosaError:
                pass


def test_format_error_names_file():
    with pytest.raises(TosaFormatError, match=r"^x\.tosa: empty file"):
        read_graph(b"", file="x.tosa")

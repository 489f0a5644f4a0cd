"""`tosa-vk info`: what a user sees about a model, checked against the exporter's own record (info.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def info(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tosa_vk.tools.cli", "info", *map(str, args)], capture_output=True, text=True, check=True
    )


def test_info_json_matches_model_record(model_dir):
    summary = json.loads(info(model_dir / "model.tosa", "--json").stdout)
    record = json.loads((model_dir / "info.json").read_text())
    block = record["graph"]["regions"][0]["blocks"][0]
    assert summary["op_counts"] == record["graph"]["op_counts_total"]
    assert summary["num_operators"] == block["num_operators"]
    assert summary["inputs"] == [{"name": t["name"], "shape": t["shape"], "dtype": t["dtype"]} for t in block["inputs"]]
    assert summary["outputs"] == [
        {"name": t["name"], "shape": t["shape"], "dtype": t["dtype"]} for t in block["outputs"]
    ]
    assert summary["valid"]
    profile = record["tosa_spec"].split("+")[1]  # "TOSA-1.0+INT" -> INT
    assert summary["profiles"] == ["PRO-" + profile] and summary["extensions"] == []


def test_info_text(model_dir):
    out = info(model_dir / "model.tosa").stdout
    assert "inputs:" in out and "CONV2D" in out and "validation: ok" in out


@pytest.mark.parametrize(
    "args",
    [
        ["info", "resources/models/resnet_int8/model.tosa"],
        ["run", "resources/models/lstm_unrolled_fp32/model.tosa", "--backend", "reference", "--random", "1"],
        ["bench", "--help"],
    ],
    ids=["info", "run", "bench-help"],
)
def test_a_pipe_closed_early_ends_the_command_quietly(args):
    """`tosa-vk ... | head`: the reader is gone before the command writes (both ends closed here at once), so its
    first write meets a broken pipe: no "[Errno 32] Broken pipe", no traceback, no "Exception ignored" at exit."""
    import os

    from tosa_vk.tools.cli.common import EXIT_OUTPUT_CLOSED

    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tosa_vk.tools.cli", *args], stdout=write, stderr=subprocess.PIPE, text=True,
            cwd=ROOT, timeout=300,
        )  # fmt: skip
    finally:
        os.close(write)
    # --help: argparse itself drops a write that fails, and exits 0
    assert proc.stderr == "" and proc.returncode == (0 if "--help" in args else EXIT_OUTPUT_CLOSED)

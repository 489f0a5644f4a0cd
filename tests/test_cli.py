"""`tosa-vk info`: what a user sees about a model, checked against the exporter's own record (info.json)."""

from __future__ import annotations

import json
import subprocess
import sys


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

"""The .tosa reader and writer: real files load, validate, save and reload to an equal graph, and Arm's reference
model runs what we write exactly as it runs the original."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tosa_vk.ir import load_graph, read_graph, save_graph, validate, write_graph
from tosa_vk.ir.dtype import DType, decode, encode


def roundtrip(path: Path):
    graph = load_graph(path)
    again = read_graph(write_graph(graph))
    assert again == graph
    return graph


def test_models_roundtrip_and_validate(model_dir):
    graph = roundtrip(model_dir / "model.tosa")
    validate(graph)
    info = json.loads((model_dir / "info.json").read_text())
    assert graph.op_counts() == info["graph"]["op_counts_total"]
    assert [t.name for t in graph.inputs] == [t["name"] for t in info["graph"]["regions"][0]["blocks"][0]["inputs"]]


@pytest.mark.conformance
def test_conformance_positive_roundtrip_and_validate(positive_test):
    validate(roundtrip(positive_test / "test.tosa"))


@pytest.mark.conformance
def test_conformance_negative_roundtrip(negative_test):
    roundtrip(negative_test / "test.tosa")


def _reference_model_outputs(test: Path, tosa_file: Path, out: Path) -> dict[str, np.ndarray]:
    from tosa_vk.tools.conformance.generate import tools_root

    desc = json.loads((test / "desc.json").read_text())
    desc["tosa_file"] = str(tosa_file)
    desc["ifm_file"] = [str(test / f) for f in desc["ifm_file"]]
    out.mkdir()
    (out / "desc.json").write_text(json.dumps(desc))
    subprocess.run(
        [
            str(tools_root() / "bin" / "tosa_reference_model"),
            "--test_desc",
            str(out / "desc.json"),
            "--output_dir",
            str(out),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "TOSA_MODEL_NO_BACKTRACE": "1"},
    )
    return {f: np.load(out / f) for f in desc["ofm_file"]}


@pytest.mark.conformance
def test_reference_model_runs_what_we_write(op_positive_test, tmp_path):
    resaved = tmp_path / "resaved.tosa"
    save_graph(load_graph(op_positive_test / "test.tosa"), resaved)
    ours = _reference_model_outputs(op_positive_test, resaved, tmp_path / "ours")
    theirs = _reference_model_outputs(op_positive_test, op_positive_test / "test.tosa", tmp_path / "theirs")
    for name in theirs:
        assert ours[name].tobytes() == theirs[name].tobytes()


def test_model_reference_run_on_resaved_file(model_dir, tmp_path):
    resaved = tmp_path / "model.tosa"
    save_graph(load_graph(model_dir / "model.tosa"), resaved)
    ours = _reference_model_outputs(model_dir, resaved, tmp_path / "ours")
    desc = json.loads((model_dir / "desc.json").read_text())
    expected = desc.get("expected_result_file", desc["ofm_file"])  # (Arm's conformance layout: a file of its own)
    for value, name in zip(ours.values(), expected, strict=True):  # the shipped results came from the reference
        assert value.tobytes() == np.load(model_dir / name).tobytes()  # model: bit-identical


@pytest.mark.parametrize(
    "dtype,values",
    [
        (DType.INT4, [-8, -7, -1, 0, 1, 7, 3]),
        (DType.INT48, [-(1 << 47), (1 << 47) - 1, -1, 0, 123456789012]),
        (DType.BF16, [1.0, -2.5, np.inf, 3.0e38]),
        (DType.FP8E4M3, [0.5, -448.0, 1.125]),
        (DType.FP8E5M2, [0.5, -57344.0, np.inf]),
        (DType.BOOL, [True, False, True]),
        (DType.SHAPE, [1, -1, 1 << 40]),
    ],
)
def test_constant_encodings_roundtrip(dtype, values):
    arr = np.asarray(values).astype(dtype.numpy)
    raw = encode(dtype, arr)
    assert len(raw) == (len(values) + 1) // 2 if dtype == DType.INT4 else len(raw) == len(values) * dtype.bits // 8
    assert decode(dtype, raw, arr.shape).tobytes() == arr.tobytes()


def test_int4_packs_low_nibble_first():
    assert encode(DType.INT4, np.array([1, -2], np.int8)) == bytes([0xE1])
    assert decode(DType.INT4, bytes([0xE1]), (2,)).tolist() == [1, -2]

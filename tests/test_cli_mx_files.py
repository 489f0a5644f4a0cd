"""The drop-in CLI reads and writes TOSA 1.1's MX types as Arm's tools do (issue 39): `tosa-vk run --test-desc`
takes fp4 / fp6 inputs packed and a block-scaled input as a data, scale pair of files (`x.npy`, `x_scale.npy`), and
writes its results the same way (tosa_vk/ir/arm_files.py, the conformance runner's own reader and writer).

A hand-made graph checks the files always; the conformance tier runs one generated test of each way MX types reach
files (conftest.py::mx_file_classes) through the command on both backends, judged by Arm's tosa_verify."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tosa_vk.ir import DType
from tosa_vk.ir.arm_files import read_inputs, scale_file
from tosa_vk.ir.dtype import to_npy
from tosa_vk.ir.flatbuffer import save_graph
from tosa_vk.ir.graph import Block, Graph, Operator, Region, Tensor
from tosa_vk.tools.cli import main

BACKENDS = ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)]


def scaled(name: str, dtype: DType) -> Tensor:
    return Tensor(name, (2, 32), dtype, scale_dtype=DType.FP8UE8M0, block_size=32)


def identity_test(folder: Path) -> dict[str, np.ndarray]:
    """A TOSA 1.1 graph of two IDENTITYs on block-scaled fp4 / fp6 tensors, with a desc.json and its inputs in Arm's
    encodings; returns the inputs (storage arrays) by array name."""
    tensors = [scaled(n, d) for n, d in (("x", DType.FP4E2M1), ("y", DType.FP4E2M1))]
    tensors += [scaled(n, d) for n, d in (("p", DType.FP6E3M2), ("q", DType.FP6E3M2))]
    ops = [Operator("IDENTITY", ["x"], ["y"], {}), Operator("IDENTITY", ["p"], ["q"], {})]
    block = Block("main", ops, {t.name: t for t in tensors}, ["x", "p"], ["y", "q"])
    save_graph(Graph([Region("main", [block])], (1, 1, 0, True)), folder / "test.tosa")
    values = np.linspace(-6, 6, 64).reshape(2, 32)
    feeds = {
        "x": values.astype(ml_dtypes.float4_e2m1fn),
        "x_scale": np.array([[0.5], [4.0]], ml_dtypes.float8_e8m0fnu),
        "p": values.astype(ml_dtypes.float6_e3m2fn),
        "p_scale": np.array([[2.0], [0.25]], ml_dtypes.float8_e8m0fnu),
    }
    for name, dtype in (("x", DType.FP4E2M1), ("p", DType.FP6E3M2)):
        np.save(folder / f"in-{name}.npy", to_npy(feeds[name], dtype))
        np.save(folder / f"in-{name}_scale.npy", to_npy(feeds[f"{name}_scale"], DType.FP8UE8M0))
    desc = {"tosa_file": "test.tosa", "ifm_name": ["x", "p"], "ifm_file": ["in-x.npy", "in-p.npy"]}
    desc |= {"ofm_name": ["y", "q"], "ofm_file": ["out-y.npy", "out-q.npy"]}
    (folder / "desc.json").write_text(json.dumps(desc))
    return feeds


@pytest.mark.parametrize("backend", BACKENDS)
def test_packed_and_block_scaled_files_in_and_out(tmp_path, backend, capsys):
    feeds = identity_test(tmp_path)
    out = tmp_path / "out"
    code = main(["run", "--test-desc", str(tmp_path / "desc.json"), "--output-dir", str(out), "--backend", backend])
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["out-q.npy", "out-q_scale.npy", "out-y.npy", "out-y_scale.npy"]
    for got, given, packed in (("y", "x", (2, 16)), ("q", "p", (2, 24))):
        data, scales = np.load(out / f"out-{got}.npy"), np.load(out / f"out-{got}_scale.npy")
        assert data.dtype == np.uint8 and data.shape == packed  # packed, as tosa_reference_model writes them
        assert scales.dtype.str == "|V1" and scales.shape == (2, 1)  # fp8ue8m0 as raw bytes, as Arm's files
        assert data.tobytes() == np.load(tmp_path / f"in-{given}.npy").tobytes()
        assert scales.tobytes() == feeds[f"{given}_scale"].tobytes()


def test_compare_reads_the_expected_scales_beside_the_expected_result(tmp_path, capsys):
    """--compare: a block-scaled output is compared with its expected data and scale files."""
    identity_test(tmp_path)
    assert main(["run", "--test-desc", str(tmp_path / "desc.json"), "--output-dir", str(tmp_path)]) == 0
    assert main(["run", "--test-desc", str(tmp_path / "desc.json"), "--compare"]) == 0
    said = capsys.readouterr().out
    assert "y_scale: [2, 1] FP8UE8M0; PASS vs out-y_scale.npy" in said and "FAIL" not in said


@pytest.mark.vulkan
@pytest.mark.parametrize("command", ["compare", "profile"])
def test_compare_and_profile_take_the_same_files(tmp_path, command, capsys):
    identity_test(tmp_path)
    assert main([command, "--test-desc", str(tmp_path / "desc.json")]) == 0, capsys.readouterr().err


def test_read_inputs_decodes_for_the_declared_type(tmp_path):
    """Packed fp4 becomes its elements, a block-scaled input's scales come from the file beside it; an array that
    is not in one of Arm's own encodings is left for the model's conversion rules."""
    feeds = identity_test(tmp_path)
    tensors = {t.name: t for t in (scaled("x", DType.FP4E2M1), Tensor("f", (3,), DType.FP32))}
    np.save(tmp_path / "f.npy", np.arange(3, dtype=np.float64))
    read = read_inputs(tmp_path, ["x", "f"], ["in-x.npy", "f.npy"], tensors)
    assert sorted(read) == ["f", "x", "x_scale"]
    assert read["x"].dtype == ml_dtypes.float4_e2m1fn and read["x"].tobytes() == feeds["x"].tobytes()
    assert read["x_scale"].tobytes() == feeds["x_scale"].tobytes()
    assert read["f"].dtype == np.float64
    np.save(tmp_path / "other-scales.npy", to_npy(feeds["p_scale"], DType.FP8UE8M0))  # named in the lists: taken
    read = read_inputs(tmp_path, ["x", "x_scale"], ["in-x.npy", "other-scales.npy"], tensors)
    assert read["x_scale"].dtype == ml_dtypes.float8_e8m0fnu and read["x_scale"].tobytes() == feeds["p_scale"].tobytes()
    assert scale_file("sub/ref-result-0.npy") == "sub/ref-result-0_scale.npy"


def test_a_missing_scale_file_names_it(tmp_path, capsys):
    identity_test(tmp_path)
    (tmp_path / "in-p_scale.npy").unlink()
    code = main(["run", "--test-desc", str(tmp_path / "desc.json"), "--output-dir", str(tmp_path / "o")])
    assert code == 2 and "in-p_scale.npy" in capsys.readouterr().err


@pytest.mark.conformance
@pytest.mark.parametrize("backend", BACKENDS)
def test_mx_conformance_files_through_the_cli(mx_files_test_1_1, backend):
    """Arm's generated test through `tosa-vk run --test-desc desc.json --output-dir DIR`, the files judged by
    tosa_verify (tosa_vk.tools.conformance.run.run_via_cli)."""
    from tosa_vk.tools.conformance.run import run_tests

    (outcome,) = run_tests([mx_files_test_1_1], backend, cli=main)
    assert outcome.status == "pass", outcome.detail


@pytest.mark.conformance
def test_a_wrong_result_file_is_not_compliant(tmp_path):
    """verify_files judges the files themselves: a result file with a changed scale fails."""
    from conftest import mx_file_classes

    from tosa_vk.tools.conformance.run import verify_files

    test = next(t for t in mx_file_classes() if t.name.startswith("cast_to_block_scaled"))
    desc = json.loads((test / "desc.json").read_text())
    assert main(["run", "--test-desc", str(test / "desc.json"), "--output-dir", str(tmp_path)]) == 0
    assert verify_files(test, desc, tmp_path) is None
    files = dict(zip(desc["ofm_name"], desc["ofm_file"]))
    scale = files[desc["meta"]["compliance"]["tensors"][desc["ofm_name"][0]]["scale_tensor_name"]]
    bits = np.load(tmp_path / scale)
    np.save(tmp_path / scale, (bits.view(np.uint8) + 1).view(bits.dtype))
    assert "not compliant" in (verify_files(test, desc, tmp_path) or "")

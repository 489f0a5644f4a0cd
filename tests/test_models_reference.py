"""The shipped ExecuTorch models on the reference backend match their reference results, through the API and the
`tosa-vk run` drop-in for tosa_reference_model."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np

import tosa_vk
from tosa_vk.ir.dtype import from_npy


def test_model_matches_reference_result(model_dir, model_desc):
    model = tosa_vk.load(model_dir / model_desc["tosa_file"], backend="reference")
    outputs = model.run({n: np.load(model_dir / f) for n, f in zip(model_desc["ifm_name"], model_desc["ifm_file"])})
    for name, f in zip(model_desc["ofm_name"], model_desc["expected_result_file"]):
        expected, got = np.load(model_dir / f), outputs[name]
        if expected.dtype.kind in "iu":
            assert np.array_equal(got, expected)  # int8: bit-exact
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())


def test_run_cli_writes_desc_outputs(model_dir, model_desc, tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tosa_vk.tools.cli",
            "run",
            "--test-desc",
            str(model_dir / "desc.json"),
            "--output-dir",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    for f, want in zip(model_desc["ofm_file"], model_desc["expected_result_file"]):
        assert np.load(tmp_path / f).shape == np.load(model_dir / want).shape


def test_shipped_models_keep_results_and_expected_results_apart(model_dir, model_desc):
    """Found: the shipped desc.json files named the expected results as ofm_file, the files a run writes, so
    `tosa-vk run --test-desc` wrote over them and a later --compare compared tosa_vk with itself. Arm's conformance
    layout: ofm_file for the result, expected_result_file for the expected one."""
    results, expected = model_desc["ofm_file"], model_desc["expected_result_file"]
    assert len(results) == len(expected) == len(model_desc["ofm_name"])
    assert not set(results) & set(expected) and all((model_dir / f).is_file() for f in expected)


def test_run_cli_with_named_inputs(tmp_path):
    b = tosa_vk.Builder()
    x = b.input("x", (3,), "bf16")
    b.output(b.add(x, x, name="y"))
    tosa_vk.save_graph(b.build(), tmp_path / "g.tosa")
    np.save(tmp_path / "x.npy", np.array([1, 2, 3], np.float32).astype(ml_dtypes.bfloat16))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tosa_vk.tools.cli",
            "run",
            str(tmp_path / "g.tosa"),
            "-i",
            f"x={tmp_path / 'x.npy'}",
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    y = np.load(tmp_path / "out" / "y.npy")
    assert y.dtype.kind == "V" and y.dtype.itemsize == 2
    assert from_npy(y, tosa_vk.DType.BF16).astype(np.float32).tolist() == [2, 4, 6]


def test_run_cli_error_exit_code(tmp_path):
    (tmp_path / "bad.tosa").write_bytes(b"nonsense")
    done = subprocess.run(
        [sys.executable, "-m", "tosa_vk.tools.cli", "run", str(tmp_path / "bad.tosa")], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.startswith("tosa-vk: error: ")

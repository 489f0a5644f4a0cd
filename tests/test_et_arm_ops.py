"""ExecuTorch's own Arm operator tests (backends/arm/test/ops in the executorch wheel, issue 50) as committed
fixtures, run without torch: the first TOSA FP and the first TOSA INT case of every module, exported with the pinned
ExecuTorch (random weights; INT with the Arm quantizer calibrated on the inputs) and saved with their inputs and
PyTorch eager's outputs (INT: the quantized module's) by scripts/run_et_arm_op_tests.py --save, packed into
tests/data/et_arm_ops.tar.xz (the sampled cases it lacks, and why: tests/data/et_arm_ops_left_out.txt). Each case
runs on both backends and is compared as the runner compares it (helpers.run_saved / compare_to_pytorch: the test's
own atol / rtol, or qtol output steps for INT; integer and bool outputs exact). Its results are the committed
summary's, benchmarks/et_arm_op_tests/summary.json."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from helpers import run_saved

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "tests" / "data" / "et_arm_ops.tar.xz"
SUMMARY = ROOT / "benchmarks" / "et_arm_op_tests" / "summary.json"


def _cases() -> list[str]:
    if not ARCHIVE.is_file():  # test_et_arm_op_cases_are_the_summarys says so
        return []
    with tarfile.open(ARCHIVE) as tar:
        return sorted({Path(n).parent.name for n in tar.getnames() if n.endswith("/desc.json")})


CASES = _cases()
BACKENDS = ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)]
# case (both backends) or case@backend -> why it does not match PyTorch yet (the cause, as found), strict so that a
# fix shows as XPASS; empty since every saved case matches (None inputs, in-place outputs, aliased views and complex
# values run: tests/test_pte_host_ops.py has each alone)
XFAIL: dict[str, str] = {}


@pytest.fixture(scope="session")
def cases_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("et_arm_ops")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(folder, filter="data")
    return folder


def test_et_arm_op_cases_are_the_summarys(cases_dir):
    """The archive holds exactly the cases the committed summary says were saved (one run made both)."""
    assert ARCHIVE.is_file(), f"{ARCHIVE} is missing"
    rows = json.loads(SUMMARY.read_text())["cases_detail"]
    saved = [
        (r["module"].removeprefix("test_"), r["test"], r["data"]) for r in rows if r["result"].get("saved") == "saved"
    ]
    descs = [(c.split("__")[0], json.loads((cases_dir / c / "desc.json").read_text())) for c in CASES]
    assert sorted(saved) == sorted((m, d["test"], d["data"]) for m, d in descs)
    assert {k.split("@")[0] for k in XFAIL} <= set(CASES)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES)
def test_et_arm_op_matches_pytorch(case, backend, cases_dir, request):
    reason = XFAIL.get(f"{case}@{backend}") or XFAIL.get(case)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    options = {"device": request.getfixturevalue("device")} if backend == "vulkan" else {}
    result = run_saved(cases_dir / case, backend, **options)
    assert result.startswith("match"), f"{case} on {backend}: {result}"


def test_suffixed_test_functions_are_sampled():
    """Modules whose TOSA tests all have suffixed names (test_convolution_2d_tosa_FP_depthwise, ...) were never tried
    before (the runner matched test_*_tosa_FP / _INT only); their first FP and INT cases are in the archive now."""
    modules = {c.split("__")[0] for c in CASES}
    assert {"conv_combos", "depthwise_conv", "max_pool1d", "unary_combos", "upsample_bilinear2d"} <= modules


def test_write_case_layout(tmp_path):
    """torch_export.write_case, the one writer of every .pte fixture's desc.json: a None input has no file and no ifm
    entry, a Python scalar is a 0-d array, method_inputs says which; extra keys follow; fresh removes old files."""
    import numpy as np

    from tosa_vk.tools.torch_export import write_case

    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "stale.npy").write_bytes(b"old")
    write_case(folder, [np.ones(2, np.float32), 0.5, None, 3, True], [np.zeros(1, np.int8)], b"pte", fresh=True,
               input_types=True, flow="FP")  # fmt: skip
    desc = json.loads((folder / "desc.json").read_text())
    assert sorted(p.name for p in folder.iterdir()) == ["desc.json", "eager_0.npy", "input_0.npy", "input_1.npy",
                                                        "input_3.npy", "input_4.npy", "model.pte"]  # fmt: skip
    assert desc["ifm_name"] == ["input_0", "input_1", "input_3", "input_4"]
    assert desc["method_inputs"] == {"input_0": "ndarray", "input_1": "float", "input_2": "none", "input_3": "int",
                                     "input_4": "bool"}  # fmt: skip
    assert list(desc)[-2:] == ["method_inputs", "flow"]
    assert np.load(folder / "input_1.npy").shape == ()
    write_case(folder, [np.ones(2)], [np.ones(2)])  # without input_types: the layout the older fixtures have
    assert "method_inputs" not in json.loads((folder / "desc.json").read_text())

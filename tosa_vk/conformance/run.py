"""Run conformance tests on a tosa_vk backend and judge them with Arm's verifier (tosa-tools).

Expected results come from Arm's reference model in precise mode (FP64 results, plus bounds where the compliance
mode needs them), computed once per test and cached beside it. Positive tests pass when `tosa_verify`'s library
accepts every output; negative tests (desc.json `expected_failure`) pass when tosa_vk rejects the graph with a
TosaError.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType
from .generate import tools_root


@dataclass
class Outcome:
    test: str
    op: str
    status: str  # "pass" | "fail" | "error"
    detail: str = ""
    seconds: float = 0.0


def op_of(desc: dict, test: Path) -> str:
    return desc.get("test_details", {}).get("operator", test.name.split("_")[0]).upper()


def reference_results(test: Path) -> Path:
    """Folder with the reference model's precise-mode outputs for `test` (computed once, published atomically)."""
    final = test / "ref64"
    if (final / "exit_code").exists():
        return final
    work = test / f".ref64-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    binary = tools_root() / "bin" / "tosa_reference_model"
    done = subprocess.run(
        [str(binary), "--test_desc", str(test / "desc.json"), "--output_dir", str(work), "--precise_mode", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "TOSA_MODEL_NO_BACKTRACE": "1"},
        timeout=600,
    )
    (work / "exit_code").write_text(str(done.returncode))
    try:
        work.rename(final)
    except OSError:  # published by another worker meanwhile
        shutil.rmtree(work, ignore_errors=True)
    return final


@lru_cache(maxsize=1)
def _verifier():
    from checker.verifier import VerifierLibrary

    return VerifierLibrary(tools_root() / "tosa_reference_model" / "libtosa_reference_verify_lib.so")


def verifier_array(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Storage array -> the numpy encoding the verifier library reads (bf16 as V2, fp8e4m3 as V1, fp8e5m2 u8)."""
    values = np.require(values, requirements="C")  # (ascontiguousarray would make rank 0 rank 1)
    if dtype == DType.BF16:
        return values.view("V2")
    if dtype == DType.FP8E4M3:
        return values.view("V1")
    if dtype == DType.FP8E5M2:
        return values.view(np.uint8)
    return values


def load_inputs(test: Path, desc: dict, graph) -> dict[str, np.ndarray]:
    from ..ir.dtype import from_npy

    tensors = graph.main.tensors
    return {
        name: from_npy(np.load(test / f), tensors[name].dtype) for name, f in zip(desc["ifm_name"], desc["ifm_file"])
    }


@lru_cache(maxsize=1)
def shared_device():
    """One Vulkan device per process, reused by every test (creating one costs more than most tests)."""
    from ..vulkan import Device

    return Device()


def _load(path: Path, backend: str, strict: bool):
    from ..session import load

    if backend == "vulkan":
        return load(path, backend="vulkan", device=shared_device(), strict=strict)
    return load(path, backend=backend)


def run_test(test: Path, backend: str = "reference", strict: bool = False) -> Outcome:
    """Runs one conformance test folder on `backend` and judges it. `strict` (Vulkan): every operator must
    run as a Vulkan kernel, none on the host."""
    start = time.perf_counter()
    desc = json.loads((test / "desc.json").read_text())
    op = op_of(desc, test)

    def outcome(status, detail=""):
        return Outcome(test.name, op, status, detail, time.perf_counter() - start)

    if desc.get("expected_failure"):
        try:
            with _load(test / desc["tosa_file"], backend, strict) as model:
                model.run(load_inputs(test, desc, model.graph))
        except TosaError as err:
            return outcome("pass", str(err))
        return outcome("fail", "accepted a graph the spec rejects (expected an ERROR_IF)")

    ref_dir = reference_results(test)
    code = (ref_dir / "exit_code").read_text().strip()
    if code != "0":
        return outcome("error", f"the reference model could not run this test (exit {code})")
    try:
        with _load(test / desc["tosa_file"], backend, strict) as model:
            outputs = model.run(load_inputs(test, desc, model.graph))
    except TosaError as err:
        return outcome("fail", f"raised {err}")
    tensors = model.graph.main.tensors
    problem = judge(test, desc, outputs, {name: tensors[name].dtype for name in desc["ofm_name"]})
    return outcome("fail", problem) if problem else outcome("pass")


def judge(test: Path, desc: dict, outputs: dict[str, np.ndarray], dtypes: dict[str, DType]) -> str | None:
    """None when every output (by the test's output names, storage arrays) is compliant with the reference
    model's results, judged by Arm's verifier in the test's compliance mode; else what failed."""
    ref_dir = reference_results(test)
    compliance = desc.get("meta", {}).get("compliance")
    for name, f in zip(desc["ofm_name"], desc["ofm_file"]):
        imp = outputs[name]
        ref = np.load(ref_dir / f)
        bounds = ref_dir / f"bounds_{f}"
        bnd = np.load(bounds) if bounds.exists() else None
        if compliance is None:
            ok = np.array_equal(imp, ref)
        else:
            ok = _verifier().verify_data(name, compliance, verifier_array(imp, dtypes[name]), ref, bnd)
        if not ok:
            mode = compliance["tensors"][name]["mode"] if compliance else "EXACT"
            return f"output '{name}' is not compliant ({mode})"
    return None


def run_tests(
    tests: list[Path], backend: str = "reference", jobs: int = 1, progress=None, strict: bool = False
) -> list[Outcome]:
    """Runs many tests (in `jobs` processes); `progress(done, total)` is called as they finish."""
    results: list[Outcome] = []
    if jobs <= 1:
        for t in tests:
            results.append(_safe_run(t, backend, strict))
            if progress:
                progress(len(results), len(tests))
        return results
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        for r in pool.map(_safe_run, tests, [backend] * len(tests), [strict] * len(tests), chunksize=4):
            results.append(r)
            if progress:
                progress(len(results), len(tests))
    return results


def _safe_run(test: Path, backend: str, strict: bool = False) -> Outcome:
    try:
        outcome = run_test(test, backend, strict)
        if backend == "vulkan" and shared_device().validation_messages:  # TOSA_VK_VALIDATION=1
            messages = shared_device().validation_messages
            outcome = Outcome(
                outcome.test, outcome.op, "fail", "validation layer: " + " | ".join(messages[:3]), outcome.seconds
            )
            messages.clear()
        return outcome
    except Exception as err:  # a crash is a result to report, not a reason to stop the run
        return Outcome(test.name, test.name.split("_")[0].upper(), "error", f"{type(err).__name__}: {err}")


def table(results: list[Outcome]) -> str:
    """Per-op pass table (markdown)."""
    per_op: dict[str, list[int]] = {}
    for r in results:
        row = per_op.setdefault(r.op, [0, 0])
        row[0] += r.status == "pass"
        row[1] += 1
    lines = ["| op | pass | total |", "|---|---:|---:|"]
    lines += [f"| {op} | {p} | {n} |" for op, (p, n) in sorted(per_op.items())]
    passed = sum(p for p, _ in per_op.values())
    lines.append(f"| **all** | {passed} | {len(results)} |")
    return "\n".join(lines)

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

from ..errors import ShaderError, TosaError, TosaTimeoutError, VulkanError
from ..ir.dtype import DType
from ..session import load
from .generate import tools_root

# TosaErrors that say the machinery failed, not that the graph was refused: a crash to report, never a verdict
NOT_A_VERDICT = (VulkanError, ShaderError, TosaTimeoutError)


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
    """The test's input files as feeds; a block-scaled input's scales (`<file>_scale.npy`) as `<name>_scale`."""
    from ..ir.dtype import from_npy

    tensors = graph.main.tensors
    feeds = {}
    for name, f in zip(desc["ifm_name"], desc["ifm_file"]):
        t = tensors[name]
        feeds[name] = from_npy(np.load(test / f), t.dtype)
        if t.scale_dtype is not None:
            feeds[t.scale_name] = from_npy(np.load(test / Path(f).with_stem(Path(f).stem + "_scale")), t.scale_dtype)
    return feeds


@lru_cache(maxsize=1)
def shared_device():
    """One Vulkan device per process, reused by every test (creating one costs more than most tests)."""
    from ..vulkan import Device  # here: importing tosa_vk.vulkan loads libvulkan, which only a Vulkan run needs

    return Device()


def _load(path: Path, backend: str, strict: bool):
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
        except NOT_A_VERDICT:
            raise
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
    except NOT_A_VERDICT:
        raise
    except TosaError as err:
        return outcome("fail", f"raised {err}")
    tensors = model.graph.main.tensors
    if model.graph.tosa_version > (1, 0):
        problem = judge_files(test, desc, outputs, tensors)
    else:
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


def judge_files(test: Path, desc: dict, outputs: dict[str, np.ndarray], tensors: dict) -> str | None:
    """`judge` for TOSA 1.1 tests, through Arm's `tosa_verify` program, which reads the result files in Arm's
    encodings and knows the 1.1 types the verifier library's Python interface does not (INT64, MX): a block-scaled
    result is checked with its scales (a composite tensor's `<name>_scale`, or the separate output its compliance
    entry names as scale_tensor_name)."""
    import tempfile

    from ..ir.dtype import to_npy

    ref_dir = reference_results(test)
    compliance = desc.get("meta", {}).get("compliance")
    files = dict(zip(desc["ofm_name"], desc["ofm_file"]))
    checked: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="tosa_vk-imp-") as tmp:

        def imp_file(name: str, dtype: DType) -> str:
            path = Path(tmp) / f"{name}.npy"
            np.save(path, to_npy(outputs[name], dtype))
            return str(path)

        for name, f in files.items():
            if name in checked:
                continue
            t = tensors[name]
            if compliance is None:
                if not np.array_equal(outputs[name], np.load(ref_dir / f)):
                    return f"output '{name}' is not compliant (EXACT)"
                continue
            imp, ref = [imp_file(name, t.dtype)], [str(ref_dir / f)]
            scale = compliance["tensors"][name].get("scale_tensor_name")
            if scale in files:  # a block-scaled operator's separate scale output
                imp.append(imp_file(scale, tensors[scale].dtype))
                ref.append(str(ref_dir / files[scale]))
                checked.add(scale)
            elif scale:  # a block-scaled tensor: its scales are `<name>_scale`
                imp.append(imp_file(t.scale_name, t.scale_dtype))
                ref.append(str(ref_dir / Path(f).with_stem(Path(f).stem + "_scale")))
            cmd = [str(tools_root() / "bin" / "tosa_verify"), "--test_desc", str(test / "desc.json")]
            cmd += ["--ofm_name", name, "--imp_result_file", ",".join(imp), "--ref_result_file", ",".join(ref)]
            bounds = ref_dir / f"bounds_{f}"
            if bounds.exists():
                cmd += ["--bnd_result_file", str(bounds)]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                mode = compliance["tensors"][name]["mode"]
                detail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
                return f"output '{name}' is not compliant ({mode}): {detail[0]}"
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

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
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...errors import ShaderError, TosaError, TosaTimeoutError, VulkanError
from ...ir.dtype import DType
from ...session import load
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
    """The test's input files as feeds (ir/arm_files.py: a block-scaled input's scales from `<file>_scale.npy`)."""
    from ...ir.arm_files import read_inputs

    return read_inputs(test, desc["ifm_name"], desc["ifm_file"], graph.main.tensors)


@lru_cache(maxsize=1)
def shared_device():
    """One Vulkan device per process, reused by every test (creating one costs more than most tests)."""
    from ...vulkan import Device  # here: importing tosa_vk.vulkan loads libvulkan, which only a Vulkan run needs

    return Device()


def _load(path: Path, backend: str, strict: bool, target: str | None = None):
    if backend == "vulkan":
        return load(path, backend="vulkan", device=shared_device(), strict=strict, target=target)
    return load(path, backend=backend)


def run_test(test: Path, backend: str = "reference", strict: bool = False, target: str | None = None) -> Outcome:
    """Runs one conformance test folder on `backend` and judges it. `strict` (Vulkan): every operator must
    run as a Vulkan kernel, none on the host; `target` (Vulkan): the device class to compile for (default
    TOSA_VK_TARGET, else the device's own)."""
    start = time.perf_counter()
    desc = json.loads((test / "desc.json").read_text())
    op = op_of(desc, test)

    def outcome(status, detail=""):
        return Outcome(test.name, op, status, detail, time.perf_counter() - start)

    if desc.get("expected_failure"):
        try:
            with _load(test / desc["tosa_file"], backend, strict, target) as model:
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
        with _load(test / desc["tosa_file"], backend, strict, target) as model:
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
    """`judge` for TOSA 1.1 tests: the results written as tosa_reference_model writes them (ir/arm_files.py), then
    judged by `verify_files`."""
    import tempfile

    from ...ir.arm_files import encoded, result_files

    with tempfile.TemporaryDirectory(prefix="tosa_vk-imp-") as tmp:
        files = result_files(tensors, dict(zip(desc["ofm_name"], desc["ofm_file"])))
        for name, (f, dtype) in files.items():
            np.save(Path(tmp) / f, encoded(outputs[name], dtype), allow_pickle=False)
        return verify_files(test, desc, Path(tmp))


def verify_files(test: Path, desc: dict, folder: Path) -> str | None:
    """None when the result files in `folder` (each ofm_file, in Arm's encodings: `tosa-vk run --test-desc` writes
    them) are compliant with the reference model's, judged by Arm's `tosa_verify` program, which knows the 1.1 types
    the verifier library's Python interface does not (INT64, MX); else what failed. A block-scaled result is checked
    with its scales: a composite tensor's `<file>_scale.npy` (ir/arm_files.py), or the separate output its
    compliance entry names as scale_tensor_name."""
    from ...ir.arm_files import scale_file

    ref_dir = reference_results(test)
    compliance = desc.get("meta", {}).get("compliance")
    files = dict(zip(desc["ofm_name"], desc["ofm_file"]))
    checked: set[str] = set()
    for name, f in files.items():
        if name in checked:
            continue
        if not (folder / f).is_file():
            return f"output '{name}': no result file {f}"
        if compliance is None:
            if not np.array_equal(np.load(folder / f), np.load(ref_dir / f)):
                return f"output '{name}' is not compliant (EXACT)"
            continue
        pairs = [(f, f)]
        scale = compliance["tensors"][name].get("scale_tensor_name")
        if scale in files:  # a block-scaled operator's separate scale output
            pairs.append((files[scale], files[scale]))
            checked.add(scale)
        elif scale:  # a block-scaled tensor: its scales beside it
            pairs.append((scale_file(f), scale_file(f)))
        imp = ",".join(str(folder / i) for i, _ in pairs)
        ref = ",".join(str(ref_dir / r) for _, r in pairs)
        cmd = [str(tools_root() / "bin" / "tosa_verify"), "--test_desc", str(test / "desc.json")]
        cmd += ["--ofm_name", name, "--imp_result_file", imp, "--ref_result_file", ref]
        bounds = ref_dir / f"bounds_{f}"
        if bounds.exists():
            cmd += ["--bnd_result_file", str(bounds)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            mode = compliance["tensors"][name]["mode"]
            detail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            return f"output '{name}' is not compliant ({mode}): {detail[0]}"
    return None


def run_via_cli(test: Path, backend: str, main: Callable[[list[str]], int], target: str | None = None) -> Outcome:
    """Runs one test through the drop-in command, `tosa-vk run --test-desc desc.json --output-dir DIR --backend
    BACKEND`, in this process (`main`: tosa_vk.tools.cli.main, given by the caller, which stands above this module), and
    judges the files it writes with Arm's tosa_verify (`verify_files`). A negative test passes when the command
    refuses it (exit 2). Vulkan models share this process's device (`shared_device`) and are closed after each
    test. `target`: the device class Vulkan models compile for (default TOSA_VK_TARGET, else the device's own)."""
    import contextlib
    import io
    import tempfile

    from ... import session

    start = time.perf_counter()
    desc = json.loads((test / "desc.json").read_text())
    op = op_of(desc, test)

    def outcome(status, detail=""):
        return Outcome(test.name, op, status, detail, time.perf_counter() - start)

    if not desc.get("expected_failure"):
        ref_code = (reference_results(test) / "exit_code").read_text().strip()
        if ref_code != "0":
            return outcome("error", f"the reference model could not run this test (exit {ref_code})")
    opened = []
    real_load = session.load

    def load(source, backend=None, **options):
        if backend == "vulkan":
            options.setdefault("device", shared_device())
            options.setdefault("target", target)
        model = real_load(source, backend=backend, **options)
        opened.append(model)
        return model

    said = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="tosa_vk-cli-") as out:
        args = ["run", "--test-desc", str(test / "desc.json"), "--output-dir", out, "--backend", backend]
        session.load = load
        try:
            with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
                code = main(args)
        finally:
            session.load = real_load
            for model in opened:
                model.close()
        last = (said.getvalue().strip().splitlines() or [""])[-1]
        if desc.get("expected_failure"):
            if code == 2:
                return outcome("pass", last)
            return outcome("fail", f"exit {code}: accepted a graph the spec rejects (expected an ERROR_IF)")
        if code != 0:
            return outcome("fail" if code == 2 else "error", f"exit {code}: {last}")
        problem = verify_files(test, desc, Path(out))
    return outcome("fail", problem) if problem else outcome("pass")


def run_tests(
    tests: list[Path],
    backend: str = "reference",
    jobs: int = 1,
    progress=None,
    strict: bool = False,
    cli: Callable[[list[str]], int] | None = None,
    target: str | None = None,
) -> list[Outcome]:
    """Runs many tests (in `jobs` processes); `progress(done, total)` is called as they finish. With `cli`
    (tosa_vk.tools.cli.main), each test goes through the drop-in command instead (`run_via_cli`; `strict` does not
    apply).
    `target`: the device class Vulkan models compile for (run_test)."""
    results: list[Outcome] = []
    if jobs <= 1:
        for t in tests:
            results.append(_safe_run(t, backend, strict, cli, target))
            if progress:
                progress(len(results), len(tests))
        return results
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        for r in pool.map(_safe_run, tests, *([x] * len(tests) for x in (backend, strict, cli, target)), chunksize=4):
            results.append(r)
            if progress:
                progress(len(results), len(tests))
    return results


def _safe_run(
    test: Path,
    backend: str,
    strict: bool = False,
    cli: Callable[[list[str]], int] | None = None,
    target: str | None = None,
) -> Outcome:
    try:
        outcome = run_via_cli(test, backend, cli, target) if cli else run_test(test, backend, strict, target)
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

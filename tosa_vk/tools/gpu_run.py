"""scripts/gpu-run.sh's Python side: one report of what tosa_vk does on a Vulkan device, within a time budget.

    python -m tosa_vk.tools.gpu_run [--quick] [--out DIR] [--conformance DIR] [--budget S]
    python -m tosa_vk.tools.gpu_run pack-conformance DEST   (scripts/gpu-pack.sh: the selection that travels)
    python -m tosa_vk.tools.gpu_run check FILE.json          (the report against SCHEMA; .ci/run)

Writes DIR/gpu_run.json (SCHEMA) and DIR/gpu_run.md, again after every section, so a run stopped at its limit still
leaves what it measured:
  device       name, driver, UUID, limits, features; its tosa_vk device class (TOSA_VK_TARGET forces one) and the
               kernel family each operator takes (Target.family: whatever the class chooses, reported as is)
  models       every shipped model (resources/models) on Vulkan against its reference result (compare.judged: the
               reference backend matches these files, tests/test_models_reference.py), with its steady time
  ops          CONV2D and MATMUL in fp32 / fp16 / int8: GPU time (timestamp queries, the median), GFLOP/s and the
               fraction of the device's peak (PEAKS, by device name; null where the device is not in it), each
               result checked against numpy in float64
  conformance  one test per operator x type class of the TOSA 1.0 selection, strict placement (every operator a
               Vulkan kernel), judged by Arm's verifier: pass / fail / error per operator
`--quick`: a few operators, one model, small sizes, on any device (CI runs it on lavapipe).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..paths import find_tool
from ..store.files import write_atomic

ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = ROOT / "resources" / "models"
SCHEMA_VERSION = 1

# Dense peaks, TFLOP/s (int8: TOPS), by a device-name substring, first match wins: NVIDIA's data sheets (H100 SXM5
# and H200 share the numbers; fp16 and int8 are the tensor cores' dense rates, fp32 the CUDA cores').
PEAKS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"fp32": 51.0, "fp16": 756.0, "int8": 1513.0}),
    ("H100", {"fp32": 67.0, "fp16": 989.0, "int8": 1979.0}),
    ("H200", {"fp32": 67.0, "fp16": 989.0, "int8": 1979.0}),
)
DTYPES = ("fp32", "fp16", "int8")

# (operator, dtype class) the quick conformance subset keeps; all of them without --quick
QUICK_OPERATORS = ("ADD", "CONV2D", "MATMUL", "REDUCE_SUM", "ARGMAX")


def peak(device_name: str) -> tuple[dict[str, float] | None, str]:
    """The device's dense peaks by dtype (TFLOP/s) and which table row matched, or (None, why)."""
    for key, row in PEAKS:
        if key.lower() in device_name.lower():
            return dict(row), key
    return None, f"no peak known for {device_name!r} (PEAKS in tosa_vk/tools/gpu_run.py)"


# --- the report's schema (checked by `check`, tests/test_gpu_run.py and .ci/run) ---

_NUM = {"type": ["number", "null"]}
_COUNTS = {
    "type": "object",
    "required": ["pass", "fail", "error"],
    "properties": {k: {"type": "integer", "minimum": 0} for k in ("pass", "fail", "error")},
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema", "quick", "started", "seconds", "environment", "device", "models", "ops", "conformance"],
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "quick": {"type": "boolean"},
        "started": {"type": "string"},
        "seconds": {"type": "number"},
        "environment": {"type": "object", "required": ["python", "tosa_vk", "target_env", "disable_env"]},
        "device": {
            "type": "object",
            "required": ["name", "driver", "uuid", "device_class", "families", "limits", "peak_tflops"],
            "properties": {
                "name": {"type": "string"},
                "driver": {"type": "string"},
                "uuid": {"type": "string"},
                "device_class": {"type": "string"},
                "families": {"type": "object", "additionalProperties": {"type": "string"}},
                "limits": {"type": "object"},
                "peak_tflops": {"type": ["object", "null"]},
            },
        },
        "models": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["model", "status", "detail", "steady_ms", "device_ms"],
                "properties": {
                    "status": {"enum": ["pass", "fail", "error", "skipped"]},
                    "steady_ms": _NUM,
                    "device_ms": _NUM,
                },
            },
        },
        "ops": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["op", "dtype", "shape", "flops", "status", "device_ms", "gflops", "peak_fraction"],
                "properties": {
                    "status": {"enum": ["pass", "fail", "error", "skipped"]},
                    "flops": {"type": "integer"},
                    "device_ms": _NUM,
                    "wall_ms": _NUM,
                    "gflops": _NUM,
                    "peak_fraction": _NUM,
                },
            },
        },
        "conformance": {
            "type": "object",
            "required": ["source", "total", "counts", "per_operator", "not_run", "failures"],
            "properties": {
                "total": {"type": "integer"},
                "not_run": {"type": "integer"},
                "counts": _COUNTS,
                "per_operator": {"type": "object", "additionalProperties": _COUNTS},
                "failures": {"type": "array"},
            },
        },
    },
}


def check(report: dict) -> list[str]:
    """What is wrong with a report against SCHEMA (empty: valid); jsonschema does the work."""
    import jsonschema

    errors = jsonschema.Draft202012Validator(SCHEMA).iter_errors(report)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors]


# --- sections ---


class Clock:
    """The run's time budget: a section stops starting work past its share."""

    def __init__(self, budget_s: float):
        self.start, self.budget = time.monotonic(), budget_s

    def left(self, until: float = 1.0) -> float:
        """Seconds left before `until` (a fraction of the budget) has passed."""
        return self.start + until * self.budget - time.monotonic()


def device_section(dev) -> dict:
    """The device's facts, its class (TOSA_VK_TARGET forces one) and each operator's kernel family."""
    from .. import device_class

    info = dev.info
    target = info.target.with_class(device_class.forced(None), device_class.disabled())
    peaks, row = peak(info.name)
    return {
        "name": info.name,
        "type": info.kind,
        "vendor_id": f"0x{info.vendor_id:04x}",
        "device_id": f"0x{info.device_id:04x}",
        "api_version": info.api_version,
        "driver": info.driver,
        "uuid": info.uuid,
        "subgroup_size": info.subgroup_size,
        "features": sorted(k for k, v in info.features.items() if v),
        "limits": {k: list(v) if isinstance(v, tuple) else v for k, v in info.limits.items()},
        "coopmat_shapes": [list(s) for s in info.coopmat_shapes],
        "own_class": info.device_class,
        "device_class": target.device_class,
        "disabled": sorted(target.disabled),
        "families": {op: target.family(op) for op in device_class.OPERATORS},
        "peak_tflops": peaks,
        "peak_source": row,
    }


def _runs(model, feeds, min_runs: int, min_s: float, gpu: bool) -> list[float]:
    """Runs after a warm-up until `min_runs` and `min_s` are both reached (at most 5 s, 200 runs): each run's wall
    seconds, or with `gpu` its kernels' GPU seconds (timestamp queries)."""
    model.run(feeds)  # the warm-up (a first run compiles the pipelines)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_s:
        t = time.perf_counter()
        model.run(feeds)
        wall = time.perf_counter() - t
        times.append(sum(x.microseconds for x in model.profile() if x.where == "device") * 1e-6 if gpu else wall)
        if len(times) >= 200 or time.perf_counter() - start > 5.0:  # slow kernels: fewer runs, not more minutes
            break
    return times


def _measure(graph, dev, feeds: dict, min_runs: int, min_s: float, **options) -> dict:
    """A plain model (its first run, compile included; its outputs; steady wall times) and a timestamped twin (GPU
    times): timestamp queries inflate the wall time (on lavapipe up to 2x on graphs of small kernels)."""
    import tosa_vk

    from ..program import Kernel, walk

    with tosa_vk.load(graph, backend="vulkan", device=dev, **options) as model:
        t = time.perf_counter()
        outputs = model.run(feeds)
        first = time.perf_counter() - t
        where = [p.where for p in model.placement]
        target = model.target
        shaders = sorted({k.shader for k in walk(model.program.steps) if isinstance(k, Kernel)})
        walls = _runs(model, feeds, min_runs, min_s, gpu=False)
    with tosa_vk.load(graph, backend="vulkan", device=dev, timestamps=True, **options) as twin:
        gpus = _runs(twin, feeds, min_runs, min_s, gpu=True)
    return {
        "outputs": outputs,
        "first_run_ms": round(first * 1e3, 1),
        "placement": {k: where.count(k) for k in ("vulkan", "host", "alias")},
        "target": target,
        "shaders": shaders,  # the kernels the lowering built: whether a class's family is there yet
        "walls": walls,
        "gpus": gpus,
    }


def _ms(values: list[float]) -> float | None:
    return round(statistics.median(values) * 1e3, 4) if values else None


def model_section(dev, clock: Clock, until: float, quick: bool) -> list[dict]:
    """Every shipped model (the smallest with --quick) against its reference result, with its steady time."""
    from ..ir import load_graph
    from ..ir.dtype import from_npy
    from .compare import judged

    dirs = sorted(p.parent for p in MODELS_DIR.glob("*/desc.json"))
    if quick:
        dirs = sorted(dirs, key=lambda d: (d / "model.tosa").stat().st_size)[:1]
    rows = []
    for d in dirs:
        row: dict[str, Any] = {"model": d.name, "status": "skipped", "detail": "", "steady_ms": None, "device_ms": None}
        rows.append(row)
        if clock.left(until) <= 0:
            row["detail"] = "out of time"
            continue
        desc = json.loads((d / "desc.json").read_text())
        try:
            graph = load_graph(d / desc["tosa_file"])
            tensors = graph.main.tensors
            feeds = {n: from_npy(np.load(d / f), tensors[n].dtype) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
            got = _measure(graph, dev, feeds, 3 if quick else 10, 0.2 if quick else 1.0)
            worst, problems = 0.0, []
            for name, f in zip(desc["ofm_name"], desc["expected_result_file"]):
                verdict, ratio = judged(got["outputs"][name], np.load(d / f), tensors[name].dtype)
                worst = max(worst, ratio)
                if not verdict.ok:
                    problems.append(f"{name}: {verdict.how}")
            row.update(
                status="fail" if problems else "pass",
                detail="; ".join(problems) or f"error ratio {worst:.3g} (passes <= 1)",
                steady_ms=_ms(got["walls"]),
                device_ms=_ms(got["gpus"]),
                first_run_ms=got["first_run_ms"],
                placement=got["placement"],
                runs=len(got["walls"]),
            )
        except Exception as err:  # a model that cannot run is a result to report
            row.update(status="error", detail=f"{type(err).__name__}: {str(err).strip()[:300]}")
    return rows


# --- op timings ---


def conv_layers(quick: bool) -> list[dict]:
    """The distinct 3x3 CONV2D layers of the shipped CNNs (stride 1 ones and the first, the stem): input NHWC,
    output channels, stride, pad."""
    from ..ir import load_graph

    seen: dict[tuple, dict] = {}
    for path in sorted(MODELS_DIR.glob("*/model.tosa")):
        graph = load_graph(path)
        tensors = graph.main.tensors
        for op in graph.main.operators:
            if op.op != "CONV2D":
                continue
            oc, kh, kw, _ = tensors[op.inputs[1]].shape
            stride, pad = tuple(op.attrs["stride"]), tuple(op.attrs["pad"])
            if (kh, kw) != (3, 3) or (stride != (1, 1) and seen):
                continue
            shape = tuple(tensors[op.inputs[0]].shape)
            key = (shape, oc, stride, pad)
            seen.setdefault(key, {"model": path.parent.name, "input": shape, "oc": oc, "stride": stride, "pad": pad})
    layers = list(seen.values())
    return layers[:1] if quick else layers


MATMUL_SIZES = (1024, 4096)
CONV_BATCH = 64


def op_cases(quick: bool, matmul: tuple[int, ...] = MATMUL_SIZES, batch: int = CONV_BATCH) -> list[dict]:
    """MATMUL N^3 and the shipped 3x3 CONV2D layers (as shipped, batch 1, and at `batch`: enough work to time a
    GPU), each in fp32 / fp16 / int8."""
    cases = []
    for n in (128,) if quick else matmul:
        for dt in ("fp32", "int8") if quick else DTYPES:
            cases.append({"op": "MATMUL", "dtype": dt, "shape": [1, n, n, n]})
    for layer in conv_layers(quick):
        for n in (1,) if quick else (1, batch):
            for dt in ("fp32", "int8") if quick else DTYPES:
                shape = [n, *layer["input"][1:]]
                cases.append(
                    {
                        "op": "CONV2D",
                        "dtype": dt,
                        "shape": shape,
                        "oc": layer["oc"],
                        "stride": list(layer["stride"]),
                        "pad": list(layer["pad"]),
                        "layer_of": layer["model"],
                    }
                )
    return cases


def _values(rng, shape, dtype: str) -> np.ndarray:
    if dtype == "int8":
        return rng.integers(-128, 128, size=shape, dtype=np.int8)
    return rng.uniform(-1, 1, size=shape).astype(np.float16 if dtype == "fp16" else np.float32)


def build_case(case: dict):
    """(graph, feeds, flops, numpy float64 reference of the feeds) for one op case. fp16 accumulates in fp32
    (MATMUL: an fp32 result; CONV2D: acc_type fp32), as a GPU's fp16 tensor-core path does."""
    from ..builder import Builder

    rng = np.random.default_rng(0)
    b, dt = Builder(), case["dtype"]
    if case["op"] == "MATMUL":
        n, m, k, c = case["shape"]
        x, y = _values(rng, (n, m, k), dt), _values(rng, (n, k, c), dt)
        result = {"fp32": "fp32", "fp16": "fp32", "int8": "int32"}[dt]
        b.output(b.matmul(b.input("x", x.shape, dt), b.input("y", y.shape, dt), out_dtype=result))
        flops = 2 * n * m * k * c

        def product() -> np.ndarray:
            return np.matmul(x.astype(np.float64), y.astype(np.float64))

        return b.build(), {"x": x, "y": y}, flops, product
    n, h, w, ic = case["shape"]
    oc, (sy, sx), pad = case["oc"], case["stride"], case["pad"]
    x, wt = _values(rng, (n, h, w, ic), dt), _values(rng, (oc, 3, 3, ic), dt)
    acc = "int32" if dt == "int8" else "fp32"
    bias = (
        rng.integers(-1000, 1000, size=(oc,), dtype=np.int32)
        if dt == "int8"
        else rng.uniform(-1, 1, size=(oc,)).astype(np.float16 if dt == "fp16" else np.float32)
    )
    out = b.conv2d(b.input("x", x.shape, dt), wt, bias, pad=pad, stride=(sy, sx), acc_type=acc)
    b.output(out)
    oh, ow = (h + pad[0] + pad[1] - 3) // sy + 1, (w + pad[2] + pad[3] - 3) // sx + 1
    flops = 2 * n * oh * ow * oc * 9 * ic

    def convolution() -> np.ndarray:
        xp = np.pad(x.astype(np.float64), ((0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)))
        win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # type: ignore[call-overload]
        win = win[:, ::sy, ::sx][:, :oh, :ow]
        return np.tensordot(win, wt.astype(np.float64), axes=([3, 4, 5], [3, 1, 2])) + bias.astype(np.float64)

    return b.build(), {"x": x}, flops, convolution


def _check_result(got: np.ndarray, want: np.ndarray, dtype: str) -> tuple[bool, str]:
    """int8 (int32 results) exactly; floats within a loose product bound: |err| <= 1e-3 (fp32) / 1e-2 (fp16) of
    the result's magnitude (timings of a wrong kernel mean nothing; the conformance section is the strict judge)."""
    if dtype == "int8":
        bad = int(np.count_nonzero(got.astype(np.int64) != want.astype(np.int64)))
        return bad == 0, f"{bad} elements differ" if bad else "exact"
    scale = float(np.max(np.abs(want))) or 1.0
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    limit = 1e-3 if dtype == "fp32" else 1e-2
    return err <= limit, f"max error {err:.2e} of the result's magnitude (limit {limit:g})"


def op_section(dev, clock: Clock, until: float, quick: bool, peaks: dict | None, **sizes) -> list[dict]:
    """Each op case's GPU time (median), GFLOP/s and fraction of the dtype's peak, its result checked."""
    rows = []
    for case in op_cases(quick, **sizes):
        row: dict[str, Any] = {
            **case,
            "flops": 0,
            "status": "skipped",
            "detail": "",
            "device_ms": None,
            "wall_ms": None,
            "gflops": None,
            "peak_fraction": None,
        }
        rows.append(row)
        if clock.left(until) <= 0:
            row["detail"] = "out of time"
            continue
        try:
            graph, feeds, flops, reference = build_case(case)
            row["flops"] = flops
            m = _measure(graph, dev, feeds, 3 if quick else 5, 0.1 if quick else 0.5, strict=True)
            row["first_run_ms"] = m["first_run_ms"]  # with compiling its kernels
            row["family"] = m["target"].family(case["op"])
            row["shaders"] = m["shaders"]
            gpus, walls = m["gpus"], m["walls"]
            ok, detail = _check_result(next(iter(m["outputs"].values())), reference(), case["dtype"])
            device_s = statistics.median(gpus) if gpus else 0.0
            gflops = flops / device_s / 1e9 if device_s else None
            row.update(
                status="pass" if ok else "fail",
                detail=detail,
                device_ms=_ms(gpus),
                wall_ms=_ms(walls),
                gflops=round(gflops, 2) if gflops else None,
                peak_fraction=round(gflops / (peaks[case["dtype"]] * 1e3), 4) if gflops and peaks else None,
                runs=len(walls),
            )
        except Exception as err:
            row.update(status="error", detail=f"{type(err).__name__}: {str(err).strip()[:300]}")
    return rows


# --- conformance ---


def class_key(test: Path, desc: dict | None = None) -> tuple[str, str]:
    """(operator, type class) of a generated test: the operator and the data types of its inputs and results, with
    the accumulator type where the name gives one ('..._acci32_...')."""
    desc = desc or json.loads((test / "desc.json").read_text())
    meta = desc.get("meta", {})
    op = desc.get("test_details", {}).get("operator") or test.name.split("_")[0].upper()
    # the distinct types in order: CONCAT of 2 or 3 fp32 inputs is one class
    ins = list(dict.fromkeys(t.get("data_type", "?") for t in meta.get("data_gen", {}).get("tensors", {}).values()))
    outs = list(dict.fromkeys(t.get("data_type", "?") for t in meta.get("compliance", {}).get("tensors", {}).values()))
    acc = [part for part in test.name.split("_") if part.startswith("acc")]
    kind = "x".join(ins) + "->" + "x".join(outs) + ("_" + acc[0] if acc else "")
    return op.upper(), kind


def _size(test: Path) -> int:
    return sum(f.stat().st_size for f in test.rglob("*") if f.is_file())


def one_per_class(tests: Iterable[Path]) -> list[Path]:
    """The smallest test of each (operator, type class), preferring tests whose reference results are computed."""
    best: dict[tuple[str, str], tuple[tuple, Path]] = {}
    for t in tests:
        desc = json.loads((t / "desc.json").read_text())
        if desc.get("expected_failure"):
            continue
        key = class_key(t, desc)
        rank = (not (t / "ref64" / "exit_code").exists(), _size(t), t.name)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, t)
    return sorted(t for _, t in best.values())


def pack_conformance(dest: Path) -> int:
    """Copies one test per class of the TOSA 1.0 positive selection to `dest`, with the reference model's results
    (computed here where missing: the GPU machine has no reference model)."""
    from .conformance.generate import Selection, selected_tests
    from .conformance.run import reference_results

    chosen = one_per_class(selected_tests(Selection()))
    dest.mkdir(parents=True, exist_ok=True)
    kept = 0
    for t in chosen:
        ref = reference_results(t)
        if (ref / "exit_code").read_text().strip() != "0":
            continue  # the reference model cannot run it: nothing to judge by
        shutil.copytree(t, dest / t.name, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ref64-*"))
        kept += 1
    print(f"gpu_run: {kept} conformance tests ({len(chosen)} classes) -> {dest}")
    return kept


def conformance_tests(folder: Path | None, quick: bool) -> tuple[list[Path], str]:
    """The tests to run and where they came from: `folder` (gpu-run.sh unpacks gpu-pack.sh's there), else the 1.0
    selection already generated on this machine (the conformance tests' cache), else none."""
    if folder is not None:
        tests, source = sorted(p for p in folder.iterdir() if (p / "desc.json").is_file()), str(folder)
    else:
        try:
            from .conformance.generate import Selection, cache_folder, is_generated, test_operator

            if not is_generated(Selection()):
                return [], "none: no packed selection (scripts/gpu-pack.sh) and the 1.0 selection is not generated"
            folder = cache_folder(Selection()) / "tests"
            wanted = {op.lower() for op in QUICK_OPERATORS} if quick else None
            found = [p for p in folder.iterdir() if wanted is None or test_operator(p.name) in wanted]
            tests, source = one_per_class(p for p in found if (p / "desc.json").is_file()), str(folder)
        except ImportError as err:
            return [], f"none: {err}"
    if quick:
        per_op: dict[str, int] = {}
        kept = []
        for t in tests:
            op = class_key(t)[0]
            if op in QUICK_OPERATORS and per_op.get(op, 0) < 2:
                per_op[op] = per_op.get(op, 0) + 1
                kept.append(t)
        tests = kept
    return tests, source


def _one_test(test: Path):
    """One strict Vulkan run of a conformance test (in a worker process with its own device when jobs > 1)."""
    from .conformance.run import Outcome, run_test

    try:
        return run_test(test, "vulkan", strict=True)
    except Exception as err:  # a crash of the machinery (run.NOT_A_VERDICT) is an error, and the run goes on
        return Outcome(test.name, class_key(test)[0], "error", f"{type(err).__name__}: {str(err).strip()[:300]}")


def conformance_section(tests: list[Path], source: str, clock: Clock, until: float, jobs: int = 1) -> dict:
    """Strict runs of `tests`, judged by Arm's verifier; none starts past `until`. With `jobs` > 1 in worker
    processes started fresh (spawn: a process forked from one that opened a Vulkan device may not use it)."""
    counts = {"pass": 0, "fail": 0, "error": 0}
    per_op: dict[str, dict[str, int]] = {}
    failures = []

    def count(r) -> None:
        counts[r.status] += 1
        row = per_op.setdefault(r.op, {"pass": 0, "fail": 0, "error": 0})
        row[r.status] += 1
        if r.status != "pass":
            failures.append({"test": r.test, "status": r.status, "detail": r.detail[:300]})

    todo = list(tests)
    if jobs <= 1:
        while todo and clock.left(until) > 0:
            count(_one_test(todo.pop(0)))
    else:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
        running: set = set()
        try:
            while todo or running:
                while todo and len(running) < 2 * jobs and clock.left(until) > 0:
                    running.add(pool.submit(_one_test, todo.pop(0)))
                if not running or clock.left(1.0) <= 0:  # the whole budget spent: leave a hung test behind
                    break
                done, running = wait(running, timeout=max(1.0, clock.left(1.0)), return_when=FIRST_COMPLETED)
                for future in done:
                    count(future.result())
        finally:
            pool.shutdown(wait=not running, cancel_futures=True)
        todo += [Path("(running)")] * len(running)
    return {
        "source": source,
        "strict": True,
        "jobs": jobs,
        "total": len(tests),
        "counts": counts,
        "per_operator": dict(sorted(per_op.items())),
        "not_run": len(todo),
        "failures": failures,
    }


# --- the report ---


def targets(ops: list[dict]) -> list[dict]:
    """Issue 38's targets against the op timings: each one's fraction of peak (the lowest where several cases
    count) and whether it is met (None: no peak known or no measurement)."""

    def rows(op, dtype, pick):
        return [o for o in ops if o["op"] == op and o["dtype"] == dtype and pick(o) and o["status"] == "pass"]

    wanted = (
        ("MATMUL 4096^3 fp32 >= 30 % of the fp32 peak", 0.30, rows("MATMUL", "fp32", lambda o: o["shape"][1] == 4096)),
        (
            "MATMUL 4096^3 fp16 with cooperative matrices >= 15 % of the dense fp16 tensor peak",
            0.15,
            rows("MATMUL", "fp16", lambda o: o["shape"][1] == 4096 and o.get("family") == "coopmat"),
        ),
        (
            "CONV2D 3x3 layers of the shipped CNNs (batch 64) fp32 >= 25 % of the fp32 peak",
            0.25,
            rows("CONV2D", "fp32", lambda o: o["shape"][0] == 64),
        ),
    )
    out = []
    for text, goal, found in wanted:
        fractions = [o["peak_fraction"] for o in found if o["peak_fraction"] is not None]
        low = min(fractions) if fractions else None
        out.append({"target": text, "goal": goal, "fraction": low, "met": None if low is None else low >= goal})
    return out


def markdown(report: dict) -> str:
    d = report["device"]
    if "error" in report:
        return f"# tosa_vk: {report['error']}\n\n```\n" + "\n".join(report.get("loader_says", [])) + "\n```\n"
    lines = [
        f"# tosa_vk on {d.get('name', '?')}{' (quick)' if report['quick'] else ''}",
        "",
        f"- driver {d.get('driver', '?')}, UUID {d.get('uuid', '?')}, subgroup {d.get('subgroup_size', '?')}, "
        f"class **{d.get('device_class', '?')}** (own class {d.get('own_class', '?')}"
        f"{', disabled ' + ','.join(d['disabled']) if d.get('disabled') else ''})",
        "- kernel families: " + ", ".join(f"{k} {v}" for k, v in d.get("families", {}).items()),
        f"- peak: {d.get('peak_tflops') or 'unknown'} ({d.get('peak_source', '')})",
        f"- {report['seconds']:.0f} s, started {report['started']}",
        "",
        "## Models",
        "| model | status | steady ms | GPU ms | detail |",
        "|---|---|---:|---:|---|",
    ]
    lines += [
        f"| {m['model']} | {m['status']} | {m['steady_ms']} | {m['device_ms']} | {m['detail'][:120]} |"
        for m in report["models"]
    ]
    lines += ["", "## Ops", "| op | dtype | shape | family: shaders | GPU ms | GFLOP/s | of peak | check |"]
    lines.append("|---|---|---|---|---:|---:|---:|---|")
    for o in report["ops"]:
        frac = f"{o['peak_fraction'] * 100:.1f} %" if o["peak_fraction"] is not None else "-"
        shape = "x".join(map(str, o["shape"])) + (f" oc{o['oc']} s{o['stride'][0]}" if "oc" in o else "")
        kernels = f"{o.get('family', '-')}: {', '.join(o.get('shaders', []))}"
        lines.append(
            f"| {o['op']} | {o['dtype']} | {shape} | {kernels} | {o['device_ms']} | {o['gflops']} | {frac} | "
            f"{o['status']}: {o['detail'][:60]} |"
        )
    lines += ["", "## Targets (issue 38)"]
    for t in report.get("targets", []):
        got = "not measured" if t["fraction"] is None else f"{t['fraction'] * 100:.1f} %"
        lines.append(f"- {t['target']}: {got}{'' if t['met'] is None else (' (met)' if t['met'] else ' (not met)')}")
    c = report["conformance"]
    lines += [
        "",
        f"## Conformance (strict, {c['total']} tests from {c['source']})",
        f"pass {c['counts']['pass']}, fail {c['counts']['fail']}, error {c['counts']['error']}, "
        f"not run (time) {c['not_run']}",
        "",
        "| op | pass | fail | error |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {op} | {r['pass']} | {r['fail']} | {r['error']} |" for op, r in c["per_operator"].items()]
    if c["failures"]:
        lines += ["", "First failures:"]
        lines += [f"- {f['test']}: {f['status']}: {f['detail'][:200]}" for f in c["failures"][:20]]
    return "\n".join(lines) + "\n"


def _loaded(name: str) -> list[str]:
    """The files of this process's mappings whose name starts with `name` (which Vulkan loader gpu-run.sh got)."""
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    return sorted({line.split()[-1] for line in maps if Path(line.split()[-1]).name.startswith(name)})


def _loader_debug() -> list[str]:
    """The Vulkan loader's own account of the drivers it tried (VK_LOADER_DEBUG) in a new process: the last lines."""
    import subprocess

    code = "from tosa_vk.vulkan.device import enumerate_devices; print(enumerate_devices(all_devices=True))"
    env = {**os.environ, "VK_LOADER_DEBUG": "error,warn,driver"}
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        return ["(the loader did not answer within 60 s)"]
    return (done.stdout + done.stderr).strip().splitlines()[-40:]


def _write(report: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "gpu_run.json", json.dumps(report, indent=1, default=str).encode(), overwrite=True)
    write_atomic(out / "gpu_run.md", markdown(report).encode(), overwrite=True)


def run(
    out: Path,
    quick: bool,
    budget_s: float,
    conformance: Path | None = None,
    log: Callable = print,
    matmul: tuple[int, ...] = MATMUL_SIZES,
    batch: int = CONV_BATCH,
) -> dict:
    """The whole report, written to `out` after every section. Shares: models until 25 % of the budget, ops until
    60 %, conformance until 95 % (sections that finish early leave their time to the next)."""
    from .. import device_class
    from ..version import __version__
    from .conformance.run import shared_device

    clock = Clock(budget_s)
    report: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "quick": quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": 0.0,
        "budget_s": budget_s,
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "tosa_vk": __version__,
            "numpy": np.__version__,
            "target_env": os.environ.get(device_class.ENV_TARGET, ""),
            "disable_env": os.environ.get(device_class.ENV_DISABLE, ""),
            "vk_driver_files": os.environ.get("VK_DRIVER_FILES", ""),
            "glslc": find_tool("glslc"),
        },
        "device": {},
        "models": [],
        "ops": [],
        "conformance": {
            "source": "",
            "total": 0,
            "counts": {"pass": 0, "fail": 0, "error": 0},
            "per_operator": {},
            "not_run": 0,
            "failures": [],
        },
    }

    def done(section: str) -> None:
        report["seconds"] = round(time.monotonic() - clock.start, 1)
        _write(report, out)
        log(f"gpu_run: {section} done at {report['seconds']:.0f} s")

    try:
        dev = shared_device()
    except Exception as err:  # no device: say why, with what the loader says, in the report the run returns
        report["error"] = f"no Vulkan device: {type(err).__name__}: {str(err).strip()[:500]}"
        report["loader_says"] = _loader_debug()
        done("device (failed)")
        return report
    report["environment"]["vulkan_loader"] = _loaded("libvulkan")
    report["device"] = device_section(dev)
    done("device")
    report["models"] = model_section(dev, clock, 0.25, quick)
    done("models")
    report["ops"] = op_section(dev, clock, 0.60, quick, report["device"]["peak_tflops"], matmul=matmul, batch=batch)
    report["targets"] = targets(report["ops"])
    done("ops")
    tests, source = conformance_tests(conformance, quick)
    jobs = 1 if quick else max(1, min(8, (os.cpu_count() or 1) // 2))  # a GPU machine's cores: 16 there
    report["conformance"] = conformance_section(tests, source, clock, 0.95, jobs)
    done("conformance")
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pack-conformance"]:
        return 0 if pack_conformance(Path(argv[1])) else 1
    if argv[:1] == ["check"]:
        problems = check(json.loads(Path(argv[1]).read_text()))
        for problem in problems:
            print(f"gpu_run check: {problem}", file=sys.stderr)
        return 1 if problems else 0
    p = argparse.ArgumentParser(prog="gpu_run", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a few operators, one model, small sizes")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-run-out"), help="report folder")
    p.add_argument("--conformance", type=Path, help="conformance tests folder (default: the generated 1.0 selection)")
    p.add_argument("--budget", type=float, help="seconds for the whole report (default 420; --quick 90)")
    p.add_argument("--matmul", default="1024,4096", help="MATMUL sizes N (N^3), comma-separated (not --quick)")
    p.add_argument("--batch", type=int, default=CONV_BATCH, help="the CONV2D layers' larger batch (not --quick)")
    args = p.parse_args(argv)
    budget = args.budget or (90.0 if args.quick else 420.0)
    sizes = tuple(int(n) for n in args.matmul.split(","))
    report = run(args.out, args.quick, budget, args.conformance, matmul=sizes, batch=args.batch)
    if "error" in report:
        print(f"gpu_run: {report['error']} (the loader's lines: {args.out / 'gpu_run.json'})", file=sys.stderr)
        print("\n".join(report["loader_says"][-15:]), file=sys.stderr)
        return 2
    c = report["conformance"]["counts"]
    models = [m["status"] for m in report["models"]]
    ops = [o["status"] for o in report["ops"]]
    print(
        f"gpu_run: {report['device']['name']} class {report['device']['device_class']}: models "
        f"{models.count('pass')}/{len(models)} pass, ops {ops.count('pass')}/{len(ops)} pass, conformance "
        f"{c['pass']} pass {c['fail']} fail {c['error']} error -> {args.out / 'gpu_run.json'}"
    )
    bad = models.count("fail") + models.count("error") + ops.count("fail") + ops.count("error") + c["fail"] + c["error"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

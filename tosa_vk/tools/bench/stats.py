"""Measuring one case: every backend loaded (the reference first: its outputs are the truth), warmed up, then run
`repeats` rounds **interleaved** (the order rotates each round) so drift on a shared machine hits all alike, each
backend `batch` runs in a row per round; medians and quartiles of the samples, and with batch > 1 the steady-time
spread: max / min of the rounds' medians (what a user sees from one batch of runs to the next); each backend's
first-run outputs compared with the reference's (graphs with variables change state run by run): ok = integers
exact, floats within rtol * (1 + max |ref|)."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from .cases import Case
from .runners import RUNNERS, Runner, Skip, short

RTOL = {2: 1e-2, 4: 1e-4, 8: 1e-9}  # float tolerance by element size (fp16 / bf16, fp32, fp64)


def summary(samples: list[float]) -> dict:
    if not samples:
        return {}
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "q1": q[0], "q3": q[2]}


def compare(got: dict, want: dict) -> dict:
    """Max |diff| over all outputs and whether it is within tolerance (integers exact)."""
    worst, ok = 0.0, True
    for name, ref in want.items():
        ref = np.asarray(ref)
        if name not in got:
            return {"max_abs_diff": None, "ok": False, "why": f"output {name!r} missing"}
        val = np.asarray(got[name])
        if val.shape != ref.shape:
            return {"max_abs_diff": None, "ok": False, "why": f"{name}: shape {val.shape} != {ref.shape}"}
        a, b = val.astype(np.float64), ref.astype(np.float64)
        diff = np.abs(a - b)
        diff[np.isnan(a) & np.isnan(b)] = 0.0
        d = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0
        worst = max(worst, d)
        if ref.dtype.kind in "f" or ref.dtype.kind == "V" or "float" in ref.dtype.name:
            scale = float(np.nanmax(np.abs(b), initial=0.0)) if b.size else 0.0
            ok &= d <= RTOL.get(ref.dtype.itemsize, 1e-2) * (1.0 + scale)
        else:
            ok &= d == 0.0
    return {"max_abs_diff": worst, "ok": bool(ok)}


def _output_bytes(graph) -> int:
    """The bytes a case's outputs hold: a graph's, or an ExecuTorch program's (a .pte case passes its path)."""
    if not isinstance(graph, (str, Path)):
        return sum(int(np.prod(t.shape)) * np.dtype(t.dtype.numpy).itemsize for t in graph.outputs)
    from ...formats.pte import load_program

    plan = load_program(graph)[0]
    return sum(int(np.prod(plan.values[i].sizes)) * plan.values[i].dtype.itemsize for i in plan.outputs)


def bench_case(case: Case, backends: list[str], settings: dict, progress=None) -> dict[str, Any]:
    """Measures one case on every backend in `backends`; never raises for a backend's failure."""
    row: dict[str, Any] = {"case": case.name, "suite": case.suite, **case.info, "results": {}}
    try:
        graph, feeds, numpy_fn, path = case.make()
    except Exception as err:  # noqa: BLE001 - a case that cannot be built is reported, not fatal
        row["error"] = short(err)
        return row
    row["bytes_io"] = int(sum(v.nbytes for v in feeds.values()) + _output_bytes(graph))
    ctx = {**settings, "numpy_fn": numpy_fn, "cleanup": []}
    runners: dict[str, Runner] = {}
    results = row["results"]
    truth = None
    try:
        for name in ["reference", *[b for b in backends if b != "reference"]]:  # the reference is the truth
            if name == "arm_sdk" and settings.get("arm_sdk_note"):
                results[name] = {"status": "skipped", "note": settings["arm_sdk_note"]}
                continue
            if progress:
                progress(f"{case.name}: loading {name}")
            try:
                runner = RUNNERS[name](graph, feeds, path, ctx)
            except Skip as err:
                results[name] = {"status": "skipped", "note": short(err)}
                continue
            except Exception as err:  # noqa: BLE001
                results[name] = {"status": "error", "note": short(err)}
                continue
            if name == "reference":
                truth = runner.outputs
                if "reference" not in backends:  # the truth only
                    runner.close()
                    continue
            runners[name] = runner
            results[name] = {"status": "ok", **runner.result, "wall_s": [], "device_s": []}
        _interleave(
            runners,
            results,
            settings["warmup"],
            settings["repeats"],
            settings.get("batch", 1),
            progress and (lambda text: progress(f"{case.name}: {text}")),
        )
        for name, runner in runners.items():
            res = results[name]
            res["wall"], res["device"] = summary(res["wall_s"]), summary(res["device_s"])
            res.update(spread(res["wall_s"], settings.get("batch", 1)))
            if truth is not None:
                res.update(compare(runner.outputs, truth))
    finally:
        for runner in runners.values():
            try:
                runner.close()
            except Exception:  # noqa: BLE001
                pass
        for folder in ctx["cleanup"]:
            shutil.rmtree(folder, ignore_errors=True)
    return row


def spread(walls: list[float], batch: int) -> dict:
    """{"batch_medians", "spread"}: the median of each round's `batch` runs and max / min of them ({} for batch 1)."""
    if batch < 2 or len(walls) < 2 * batch:
        return {}
    medians = [statistics.median(walls[i : i + batch]) for i in range(0, len(walls) - batch + 1, batch)]
    return {"batch_medians": medians, "spread": max(medians) / min(medians)}


def _interleave(
    runners: dict[str, Runner], results: dict, warmup: int, repeats: int, batch: int = 1, progress=None
) -> None:
    """Warm-up rounds, then `repeats` timed rounds whose order rotates by one backend each round; each backend runs
    `batch` times in a row within a round."""
    order = list(runners)
    for _ in range(warmup):
        for name in order:
            if name in runners:  # not dropped after an error
                _guarded(runners, results, name)
    for i in range(repeats if order else 0):
        if progress:
            progress(f"run {i + 1}/{repeats}")
        for name in order[i % len(order) :] + order[: i % len(order)]:
            for _ in range(batch):
                if name not in runners:
                    break
                got = _guarded(runners, results, name)
                if got is not None:
                    _, wall, dev = got
                    results[name]["wall_s"].append(wall)
                    if dev is not None:
                        results[name]["device_s"].append(dev)


def _guarded(runners, results, name):
    try:
        return runners[name].run()
    except Exception as err:  # noqa: BLE001 - a backend failing mid-way is dropped from this case
        results[name].update(status="error", note=short(err))
        try:
            runners.pop(name).close()
        except Exception:  # noqa: BLE001
            pass
        return None

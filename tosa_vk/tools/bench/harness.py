"""A benchmark harness for one model (`tosa-vk bench model.tosa|.vgf|.pte --random 0`, issue 39), as
iree-benchmark-module and onnxruntime_perf_test are: synthetic or given inputs (bench/inputs.py), warm-up runs, then
`runs` timed runs, `in_flight` at once (load(max_in_flight=N) and Model.submit); latency percentiles, throughput and
device time (the sum of the kernels' GPU timestamps, Model.profile(), where the backend has them; with runs in
flight, from up to 10 more runs one at a time after the timed ones).

    tosa-vk bench model.tosa --random 0 --runs 50
    tosa-vk bench model.vgf --input x=1x8x8x3xf32=0.5 --in-flight 2 --json result.json

Latency of a run: from its submit to its outputs on the host (with N in flight, N runs are kept going: each new
one as the oldest returns). Throughput: timed runs / the wall time of all of them. The load (compile included) and
the first run (lavapipe compiles each pipeline at its first dispatch) are reported apart and never in the samples.
"""

from __future__ import annotations

import collections
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import TosaError
from ...store.files import write_atomic
from . import inputs as synthetic

SCHEMA = "tosa_vk.bench.model/1"
PERCENTILES = (50, 90, 99)
DEVICE_RUNS = 10  # with runs in flight: runs one at a time after the timed ones, for the device time


def stats(samples_ms: list[float]) -> dict[str, float]:
    """p50 / p90 / p99 (numpy's linear interpolation), min, max and mean of samples in ms."""
    a = np.asarray(samples_ms, dtype=np.float64)
    row = {f"p{p}": float(np.percentile(a, p)) for p in PERCENTILES}
    return {**row, "min": float(a.min()), "max": float(a.max()), "mean": float(a.mean())}


def bench_model(
    path: str | Path,
    specs: list[synthetic.Spec] | None = None,
    seed: int | None = None,
    runs: int = 50,
    warmup: int = 1,
    in_flight: int = 1,
    backend: str | None = None,
    device: Any = None,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """One model benchmarked: the report dict (schema tosa_vk.bench.model/1; `print_report` prints it)."""
    from ...session import default_backend, load

    if runs < 1 or warmup < 0 or in_flight < 1:
        raise TosaError(f"--runs takes 1 or more ({runs}), --warmup 0 or more ({warmup}), --in-flight 1 or more "
                        f"({in_flight})")  # fmt: skip
    path = Path(path)
    backend = backend or default_backend()
    options: dict[str, Any] = {"max_in_flight": in_flight}
    if timeout_s is not None:
        options["timeout_s"] = timeout_s
    if backend == "vulkan":
        options["timestamps"] = True
        if device is not None:
            options["device"] = int(device) if str(device).isdigit() else device
    notes: list[str] = []
    start = time.perf_counter()
    with load(path, backend=backend, **options) as model:
        load_ms = (time.perf_counter() - start) * 1e3
        feeds, made = synthetic.feeds(model.inputs, specs or [], seed, file=str(path))
        first_ms = None
        for i in range(warmup):
            t = time.perf_counter()
            model.run(feeds)
            if i == 0:
                first_ms = (time.perf_counter() - t) * 1e3
        device_ms: list[float]
        if in_flight == 1:
            latency, device_ms, wall = _sequential(model, runs, feeds)
        else:
            latency, wall = _in_flight(model, runs, feeds, in_flight)
            extra = min(runs, DEVICE_RUNS)  # a run's kernel times are read after it alone: runs one at a time
            device_ms = _sequential(model, extra, feeds)[1]
            if device_ms:
                notes.append(f"device time from {extra} more runs one at a time, after the timed ones")
        if backend == "vulkan" and not device_ms:
            notes.append("no GPU timestamps from this model's runs (its operators ran on the host)")
        info = _device_info(model)
        signature = model.inputs
        outputs = model.outputs
        kind = getattr(model, "source_kind", "graph")
    return {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "model": str(path),
        "kind": kind,
        "backend": backend,
        "device": info.name if info is not None else None,
        "settings": {"runs": runs, "warmup": warmup, "in_flight": in_flight, "seed": seed},
        "inputs": [
            {"name": n, "shape": list(signature[n][0]), "dtype": signature[n][1], "source": made[n]} for n in feeds
        ],
        "outputs": [{"name": n, "shape": list(s), "dtype": d} for n, (s, d) in outputs.items()],
        "load_ms": load_ms,
        "first_run_ms": first_ms,
        "latency_ms": stats(latency),
        "throughput_runs_per_s": runs / wall if wall > 0 else None,
        "device_ms": stats(device_ms) if device_ms else None,
        "samples_ms": latency,
        "device_samples_ms": device_ms,
        "wall_s": wall,
        "environment": {
            "tosa_vk": _version(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "numpy": np.__version__,
        },
        "notes": notes,
    }


def _device_info(model):
    """The Vulkan device's info of a model (an ExecuTorch program's: its delegates'); None on the host."""
    for m in [model, *getattr(model, "delegates", [])]:
        info = getattr(getattr(m, "device", None), "info", None)
        if info is not None:
            return info
    return None


def _version() -> str:
    from ... import version

    return version.__version__


def _sequential(model, runs: int, feeds: dict) -> tuple[list[float], list[float], float]:
    """One run at a time: each run's wall time, and its kernels' device time where the backend timed them."""
    latency, device = [], []
    begin = time.perf_counter()
    for _ in range(runs):
        t = time.perf_counter()
        model.run(feeds)
        latency.append((time.perf_counter() - t) * 1e3)
        try:
            timings = model.profile()
        except TosaError:  # a backend without timestamps (the reference backend times operators by wall clock)
            continue
        on_device = [t.microseconds for t in timings if t.where == "device"]
        if on_device:
            device.append(sum(on_device) / 1e3)
    wall = time.perf_counter() - begin
    return latency, device, wall


def _in_flight(model, runs: int, feeds: dict, n: int) -> tuple[list[float], float]:
    """`n` runs kept going at once (Model.submit): each one's submit-to-result time, and the wall time of all."""
    latency: list[float] = []
    going: collections.deque = collections.deque()
    begin = time.perf_counter()
    submitted = 0
    while submitted < runs or going:
        while submitted < runs and len(going) < n:
            going.append((time.perf_counter(), model.submit(feeds)))
            submitted += 1
        started, future = going.popleft()
        future.result()
        latency.append((time.perf_counter() - started) * 1e3)
    return latency, time.perf_counter() - begin


def lines(report: dict[str, Any]) -> list[str]:
    """The report as text: settings, inputs, latency percentiles, throughput, device time."""
    s = report["settings"]
    on = f"{report['backend']} ({report['device']})" if report["device"] else report["backend"]
    out = [
        f"{report['model']} ({report['kind']}) on {on}: {s['runs']} runs after {s['warmup']} warm-up, "
        f"{s['in_flight']} in flight"
    ]
    for i in report["inputs"]:
        out.append(f"  input {i['name']}: {'x'.join(map(str, i['shape'])) or 'scalar'} {i['dtype']}, {i['source']}")
    first = report["first_run_ms"]
    out.append(
        f"load {report['load_ms']:.1f} ms (compile included)"
        + (f", first run {first:.2f} ms (not in the samples)" if first is not None else "")
    )
    lat = report["latency_ms"]
    out.append("latency ms:  " + "  ".join(f"{k} {lat[k]:.3f}" for k in ("p50", "p90", "p99", "min", "max", "mean")))
    if report["throughput_runs_per_s"] is not None:
        out.append(f"throughput:  {report['throughput_runs_per_s']:.1f} runs/s")
    dev = report["device_ms"]
    if dev:
        out.append(
            "device ms:   " + "  ".join(f"{k} {dev[k]:.3f}" for k in ("p50", "p90", "p99", "min", "max"))
            + "  (GPU timestamps, the sum of a run's kernels)"
        )  # fmt: skip
    out += [f"note: {n}" for n in report["notes"]]
    return out


def main(args, model: str) -> int:
    """`tosa-vk bench MODEL --random SEED | --input ...` (add_arguments in bench/__init__.py)."""
    specs = [synthetic.parse(text) for text in args.input or []]
    backend = None
    if args.backends is not None:
        backend = args.backends.strip()
        if backend not in ("vulkan", "reference"):
            raise TosaError(f"the harness (one model) takes --backends vulkan or reference, got {args.backends!r}")
    if args.json and Path(args.json).is_dir():  # refused before any work
        raise TosaError("--json names a file, not a folder", file=str(args.json))
    report = bench_model(
        model,
        specs,
        args.random,
        runs=args.runs if args.runs is not None else 50,
        warmup=args.warmup,
        in_flight=int(args.in_flight) if args.in_flight else 1,
        backend=backend,
        device=args.device,
    )
    print("\n".join(lines(report)))
    if args.json:
        write_atomic(args.json, json.dumps(report, indent=1).encode(), overwrite=True)
        print(f"JSON: {args.json}", file=sys.stderr)
    return 0

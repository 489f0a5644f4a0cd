"""Throughput and pipelines on the Vulkan backend (`tosa-vk bench --in-flight 1,2,4`, issue 37).

in_flight(): per model and N, the latency of one run() (median) and the throughput of `runs` submitted runs
(Model.submit with load(max_in_flight=N): runs / s, median over rounds); every N loaded once on one device, the
rounds interleaved (the order of N rotates each round) so drift on a shared machine hits all alike.

pipeline(): two models chained: a preprocessing model (x * 0.5 + 0.25 on the model's input, built here) feeding the
model, with the intermediate through the host (run -> numpy -> run) and on the device (run(device_outputs=True) ->
DeviceTensor -> run), interleaved; the outputs must be bit-identical, and the bytes that crossed between host and
device are reported for both.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...builder import Builder
from ...errors import TosaError
from ...ir import Graph

LATENCY_RUNS = 5  # run() calls timed per round and N (latency is their median over every round)


def _median(samples: list[float]) -> float:
    return statistics.median(samples) if samples else float("nan")


def in_flight(
    source: Any,
    feeds: dict[str, np.ndarray],
    levels: Sequence[int] = (1, 2, 4),
    runs: int = 32,
    repeats: int = 5,
    device: Any = None,
) -> list[dict[str, Any]]:
    """Rows {in_flight, latency_ms, runs_per_s, runs, repeats, ok} for one model (a path or a Graph)."""
    from ...session import load
    from ...vulkan import Device

    dev = device if isinstance(device, Device) else Device(device)
    models = {}
    try:
        for n in levels:
            models[n] = load(source, backend="vulkan", device=dev, max_in_flight=n)
        want = next(iter(models.values())).run(feeds)
        latency: dict[int, list[float]] = {n: [] for n in levels}
        rate: dict[int, list[float]] = {n: [] for n in levels}
        ok = {n: True for n in levels}
        for n, model in models.items():  # warm: every slot has run once
            for f in [model.submit(feeds) for _ in range(n)]:
                f.result()
        order = list(levels)
        for i in range(repeats):
            for n in order[i % len(order) :] + order[: i % len(order)]:
                model = models[n]
                for _ in range(LATENCY_RUNS):
                    start = time.perf_counter()
                    model.run(feeds)
                    latency[n].append(time.perf_counter() - start)
                start = time.perf_counter()
                futures = [model.submit(feeds) for _ in range(runs)]
                results = [f.result() for f in futures]
                rate[n].append(runs / (time.perf_counter() - start))
                ok[n] &= all(np.array_equal(r[k], want[k]) for r in results for k in want)
        return [
            {
                "in_flight": n,
                "latency_ms": _median(latency[n]) * 1e3,
                "runs_per_s": _median(rate[n]),
                "runs": runs,
                "repeats": repeats,
                "ok": ok[n],
            }
            for n in levels
        ]
    finally:
        for model in models.values():
            model.close()
        if dev is not device:
            dev.close()


def preprocessing(name: str, shape: tuple[int, ...]) -> Graph:
    """x * 0.5 + 0.25 on an fp32 tensor: the first model of the pipeline case."""
    b = Builder()
    x = b.input(name, shape, "fp32")
    ones = (1,) * len(shape)
    half = b.const(np.full(ones, 0.5, np.float32))
    b.output(b.add(b.mul(x, half), b.const(np.full(ones, 0.25, np.float32)), name="preprocessed"))
    return b.build()


def first_fp32_input(model: Any) -> tuple[str, tuple[int, ...]]:
    """The pipeline case's model input: its first, which must be FP32 (Model.inputs names types as TOSA does,
    whatever the file: .tosa, .pte, .vgf); a TosaError otherwise."""
    name, spec = next(iter(model.inputs.items()))
    if spec.dtype != "FP32":
        raise TosaError(f"the pipeline case needs an FP32 first input; {name!r} is {spec.dtype}")
    return name, spec.shape


def pipeline(source: Any, feeds: dict[str, np.ndarray], repeats: int = 21, device: Any = None) -> dict[str, Any]:
    """{host_ms, device_ms, host_bytes, device_bytes, identical} for preprocessing -> the model (its first input
    fp32; TosaError otherwise)."""
    from ...session import load
    from ...vulkan import Device

    dev = device if isinstance(device, Device) else Device(device)
    models = []
    try:
        model = load(source, backend="vulkan", device=dev)
        models.append(model)
        name, shape = first_fp32_input(model)
        pre = load(preprocessing(name, shape), backend="vulkan", device=dev)
        models.append(pre)
        rest = {k: v for k, v in feeds.items() if k != name}

        def through_host() -> tuple[dict, int]:
            mid = pre.run({name: feeds[name]})["preprocessed"]
            moved = sum(pre.transferred.values())
            out = model.run({name: mid, **rest})
            return out, moved + model.transferred["to_device"]

        def on_device() -> tuple[dict, int]:
            mid = pre.run({name: feeds[name]}, device_outputs=True)["preprocessed"]
            moved = sum(pre.transferred.values())
            out = model.run({name: mid, **rest})
            mid.release()
            return out, moved + model.transferred["to_device"]

        ways = {"host": through_host, "device": on_device}
        times: dict[str, list[float]] = {k: [] for k in ways}
        outs, moved = {}, {}
        for way in ways.values():  # warm
            way()
        order = list(ways)
        for i in range(repeats):
            for key in order[i % 2 :] + order[: i % 2]:
                start = time.perf_counter()
                outs[key], moved[key] = ways[key]()
                times[key].append(time.perf_counter() - start)
        identical = all(np.array_equal(outs["host"][k], outs["device"][k]) for k in outs["host"])
        return {
            "host_ms": _median(times["host"]) * 1e3,
            "device_ms": _median(times["device"]) * 1e3,
            # host <-> device bytes of the whole pipeline but the final outputs: the input, the intermediate
            "host_bytes": moved["host"],
            "device_bytes": moved["device"],
            "identical": identical,
            "repeats": repeats,
        }
    finally:
        for m in models:
            m.close()
        if dev is not device:
            dev.close()


def markdown(rows: dict[str, list[dict]], pipes: dict[str, dict]) -> str:
    """The tables `tosa-vk bench --in-flight` prints."""
    lines = [
        "| model | in flight | latency (ms, median) | throughput (runs/s, median) | same outputs |",
        "|---|---|---|---|---|",
    ]
    for model, found in rows.items():
        for r in found:
            lines.append(
                f"| {model} | {r['in_flight']} | {r['latency_ms']:.2f} | {r['runs_per_s']:.1f} | "
                f"{'yes' if r['ok'] else 'NO'} |"
            )
    if pipes:
        lines += [
            "",
            "| pipeline (preprocess -> model) | through the host (ms) | device tensors (ms) | host bytes (host / "
            "device tensors) | bit-identical |",
            "|---|---|---|---|---|",
        ]
        for model, p in pipes.items():
            if "error" in p:
                lines.append(f"| {model} | - | - | - | {p['error']} |")
                continue
            lines.append(
                f"| {model} | {p['host_ms']:.2f} | {p['device_ms']:.2f} | {p['host_bytes']} / {p['device_bytes']} | "
                f"{'yes' if p['identical'] else 'NO'} |"
            )
    return "\n".join(lines)

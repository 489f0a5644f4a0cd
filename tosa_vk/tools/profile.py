"""`tosa-vk profile`: a model's per-kernel times over several runs, as a table and as a Chrome / Perfetto trace.

The times are the backends' own `Model.profile()` records (microseconds): Vulkan kernels from GPU timestamp
queries (load with timestamps=True) and host steps by wall clock; the reference backend's operators by wall clock.
The table and the totals are in milliseconds, medians over the measured runs.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.model import Model, Timing
from ..store.files import write_atomic

# A fused kernel's label joins its operators' labels with " + " ("CONV2D #58 'x' + RESCALE #63 'y'"); a split
# needs an operator label after it ("REGION::OP #index"), since a tensor name may hold " + " too.
_JOIN = re.compile(r" \+ (?=(?:\S+::)?[A-Z][A-Z0-9_]* #\d+)")


def operators(label: str) -> list[str]:
    """The TOSA operators a kernel label names, in order (one for an unfused kernel or a host step)."""
    return _JOIN.split(label)


@dataclass
class Run:
    """One measured run: its index (1-based), host-clock start (time.perf_counter s) and wall seconds, its
    kernels' Timing records and their start times on the same clock; `measured` says whether those starts came
    from the backend (Vulkan: timestamp queries) or the kernels were laid end to end from the run's start."""

    index: int
    start: float
    wall: float
    timings: list[Timing]
    starts: list[float]
    measured: bool


def measure(model: Model, feeds: dict, runs: int, warmup: int = 1) -> list[Run]:
    """`warmup` untimed runs (lavapipe compiles each pipeline at its first dispatch, which a first run would time:
    a 0.8 ms kernel read 1.8 s without lavapipe's shader cache), then `runs` timed runs of the same feeds."""
    for _ in range(warmup):
        model.run(feeds)
    done = []
    for index in range(1, runs + 1):
        start = time.perf_counter()
        model.run(feeds)
        wall = time.perf_counter() - start
        with warnings.catch_warnings():  # --warmup 0's first run: the header says it includes compilation
            warnings.simplefilter("ignore", RuntimeWarning)
            timings = model.profile()
        starts = _measured_starts(model, timings)
        measured = starts is not None
        if starts is None:  # no start times from the backend: end to end from the run's start
            starts = _end_to_end(start, timings)
        done.append(Run(index, start, wall, timings, starts, measured))
    return done


def warmups(n: int) -> str:
    """How the output says what came before the timed runs."""
    if n == 0:
        return "no warm-up (the first run's times include pipeline compilation)"
    return f"{n} warm-up run{'s' if n > 1 else ''} (untimed)"


def _measured_starts(model: Model, timings: list[Timing]) -> list[float] | None:
    """Each kernel's start on the host clock where the backend knows it: the Vulkan runtime's spans (timestamp
    queries placed at each segment's submit, Runtime.spans). None for a backend without them."""
    using = getattr(model, "using", None)  # OnDevice models hold a Vulkan Runtime
    if using is None:
        return None
    with using() as runtime:
        spans = runtime.spans()
    if [s.op for s in spans] != [t.op for t in timings]:
        return None
    return [s.start for s in spans]


def _end_to_end(start: float, timings: list[Timing]) -> list[float]:
    starts, at = [], start
    for t in timings:
        starts.append(at)
        at += t.microseconds * 1e-6
    return starts


@dataclass
class Row:
    """One kernel (or host step) of the table: its position in a run, label, where it ran, and its microseconds
    in each measured run."""

    index: int
    op: str
    where: str
    times: list[float]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times) / 1000


def rows(runs: list[Run]) -> list[Row]:
    """Per kernel, its times across the runs. Kernels are matched by (label, where, occurrence): a label repeats
    when an operator lowers to several kernels or a reference-backend loop runs an operator again."""
    found: dict[tuple[str, str, int], Row] = {}
    for run in runs:
        seen: dict[tuple[str, str], int] = {}
        for t in run.timings:
            n = seen[t.op, t.where] = seen.get((t.op, t.where), 0) + 1
            row = found.get((t.op, t.where, n))
            if row is None:
                row = found[t.op, t.where, n] = Row(len(found) + 1, t.op, t.where, [])
            row.times.append(t.microseconds)
    return list(found.values())


def shorten(label: str, width: int) -> str:
    """A kernel label in `width` characters: whole operators then "+ N more", else the first one cut."""
    if len(label) <= width:
        return label
    ops = operators(label)
    for keep in range(len(ops) - 1, 0, -1):
        text = " + ".join(ops[:keep]) + f" + {len(ops) - keep} more"
        if len(text) <= width:
            return text
    more = f" + {len(ops) - 1} more" if len(ops) > 1 else ""
    return ops[0][: max(width - len(more) - 3, 1)] + "..." + more


HEADER = f"{'#':>4} {'median ms':>10} {'%':>6} {'ops':>4}  {'where':<6}  operators"


def table(found: list[Row], sort: str = "order", width: int | None = None) -> list[str]:
    """The per-kernel lines: index, median ms, share of the summed kernel medians, operators covered, where, and
    the label cut to the terminal (`width` columns; default the terminal's, else 100 for the label)."""
    prefix = len(HEADER) - len("operators")
    width = width or shutil.get_terminal_size((prefix + 100, 24)).columns
    total = sum(r.median_ms for r in found) or 1.0
    ordered = sorted(found, key=lambda r: -r.median_ms) if sort == "time" else found
    lines = [HEADER]
    for r in ordered:
        label = shorten(r.op, max(width - prefix, 30))
        lines.append(
            f"{r.index:>4} {r.median_ms:>10.3f} {100 * r.median_ms / total:>6.1f} {len(operators(r.op)):>4}  "
            f"{r.where:<6}  {label}"
        )
    return lines


def totals(found: list[Row], runs: list[Run]) -> list[str]:
    """Summed kernel medians (device and host), the median wall time of a run, kernels and operators covered."""
    device = sum(r.median_ms for r in found if r.where == "device")
    host = sum(r.median_ms for r in found if r.where != "device")
    wall = statistics.median(run.wall for run in runs) * 1000
    covered = {op for r in found for op in operators(r.op)}
    return [
        f"kernel time   {device + host:.3f} ms (device {device:.3f} ms, host {host:.3f} ms)",
        f"wall time     {wall:.3f} ms per run (median of {len(runs)})",
        f"kernels       {len(found)}, covering {len(covered)} TOSA operators",
    ]


def trace(runs: list[Run], title: str) -> dict[str, Any]:
    """A Chrome / Perfetto trace (the JSON object format): one complete ("X") event per kernel per run, in
    microseconds from the first run's start, device kernels and host steps on two named threads. Start times are
    the backend's where `Run.measured` (Vulkan), else the kernels are laid end to end from the run's start."""
    origin = runs[0].start if runs else 0.0
    threads = {"device": 1, "host": 2}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": title}},
        *(
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": where}}
            for where, tid in threads.items()
        ),
    ]
    for run in runs:
        for t, start in zip(run.timings, run.starts):
            ops = operators(t.op)
            events.append(
                {
                    "name": ops[0] + (f" +{len(ops) - 1}" if len(ops) > 1 else ""),
                    "cat": t.where,
                    "ph": "X",
                    "ts": round((start - origin) * 1e6, 3),
                    "dur": round(t.microseconds, 3),
                    "pid": 1,
                    "tid": threads.get(t.where, threads["host"]),
                    "args": {"operators": ops, "where": t.where, "run": run.index, "measured_start": run.measured},
                }
            )
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def write_trace(path: Path, runs: list[Run], title: str, *, overwrite: bool = True) -> int:
    """Writes the trace (files.write_atomic); returns its number of kernel events."""
    data = trace(runs, title)
    write_atomic(path, json.dumps(data, indent=None).encode(), overwrite=overwrite, what="the trace")
    return sum(e["ph"] == "X" for e in data["traceEvents"])

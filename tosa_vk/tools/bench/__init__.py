"""The benchmark engine behind `tosa-vk bench` and the presets in benchmarks/.

    tosa-vk bench --suite ops --quick            # a small subset (minutes)
    tosa-vk bench model.tosa other.tosa          # any graphs; inputs from a desc.json next to them, else random
    tosa-vk bench --device 1 --out results/      # another Vulkan device; JSON, markdown and PNG into results/
    tosa-vk bench model.pte --random 0 --runs 50 # one model, the harness: latency percentiles, runs/s, device time

The harness (harness.py, inputs.py) is chosen by its own options: one model file with --input, --random or --json
(or --runs without --in-flight N,N,...); the suites run otherwise, as before.

Per case every available backend is loaded (first run = load + compile + first run, timed), warmed up, then run
`repeats` times interleaved; a missing backend, or one that cannot run a case, is skipped with a note.
  cases.py    the op suite and model files with their inputs
  runners.py  one runner per backend (tosa_vk Vulkan / reference, Arm's reference model, numpy, Arm SDK)
  stats.py    one case: interleaved runs, medians, correctness against the reference backend
  report.py   environment header, JSON / markdown / PNG
  harness.py  one model with synthetic inputs: percentiles (inputs.py: the --input splats and --random)
  anchors/    third-party runtimes: Arm's ML SDK for Vulkan (out of process), IREE (in-process, Vulkan and llvm-cpu)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Protocol

from ...store.files import write_atomic
from .cases import Case, build_op, default_models, model_cases, op_cases, select_cases
from .harness import bench_model
from .report import cell, environment, markdown, plot, write
from .runners import BACKENDS, LABELS, RUNNERS, Skip, arm_sdk_unavailable, warm_process
from .stats import bench_case, compare, summary

__all__ = [
    "BACKENDS",
    "LABELS",
    "RUNNERS",
    "Case",
    "Skip",
    "add_arguments",
    "bench_case",
    "bench_model",
    "build_op",
    "compare",
    "default_models",
    "environment",
    "main",
    "main_from_args",
    "markdown",
    "model_cases",
    "op_cases",
    "plot",
    "run",
    "select_cases",
    "summary",
    "write",
]


class ProgressFn(Protocol):
    """Where run() reports: a line per step, done=True once a case has finished (Progress below is one)."""

    def __call__(self, text: str, done: bool = False) -> None: ...


def run(
    cases: list[Case],
    backends=BACKENDS,
    repeats: int = 7,
    warmup: int = 1,
    device=None,
    cold: bool = True,
    progress: ProgressFn | None = None,
    batch: int = 1,
) -> dict[str, Any]:
    """Runs every case; the report dict (settings, environment, notes, cases with every sample)."""
    backends = [b for b in backends if b in BACKENDS]
    notes: list[str] = []
    settings: dict[str, Any] = {
        "repeats": repeats,
        "batch": batch,
        "warmup": warmup,
        "device": device,
        "cold": cold,
        "backends": backends,
    }
    if isinstance(device, str) and device.isdigit():
        device = int(device)
    arm_note = None
    if "arm_sdk" in backends:
        arm_note = arm_sdk_unavailable()
        if arm_note:
            notes.append(f"Arm SDK anchor skipped: {arm_note}")
        elif device is not None:
            notes.append(
                "Arm SDK anchor runs on the loader's first device (set VK_ICD_FILENAMES to pin it); "
                "--device applies to tosa_vk only"
            )
    env = environment(device)
    if device is not None and "error" in env["device"]:  # a device asked for by name / index must exist
        from ...errors import TosaError

        raise TosaError(f"--device {device}: {env['device']['error']}")
    report: dict[str, Any] = {
        "schema": "tosa_vk.bench/1",
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "settings": settings,
        "environment": env,
        "notes": notes,
        "cases": [],
    }
    ctx = {**settings, "device": device, "arm_sdk_note": arm_note}
    warm_process(backends, ctx)
    start = time.perf_counter()
    for i, case in enumerate(cases):
        say = (lambda text, i=i: progress(f"[{i + 1}/{len(cases)}] {text}")) if progress else None
        row = bench_case(case, backends, ctx, say)
        report["cases"].append(row)
        if progress:
            vk = row["results"].get("vulkan", {})
            progress(
                f"[{i + 1}/{len(cases)}] {case.name}: Vulkan {cell(vk)} ms, "
                f"{time.perf_counter() - start:.0f} s elapsed",
                done=True,
            )
    report["wall_seconds"] = time.perf_counter() - start
    return report


class Progress:
    """One line on stderr, rewritten in place on a terminal; only finished cases otherwise."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.tty = stream, stream.isatty()

    def __call__(self, text: str, done: bool = False) -> None:
        if self.tty:
            end = "\n" if done else ""
            self.stream.write("\r\033[K" + text[:150] + end)
        elif done:
            self.stream.write(text + "\n")
        self.stream.flush()


def add_arguments(p) -> None:
    p.add_argument(
        "models",
        nargs="*",
        help=".tosa files for the model suite (default: resources/models/*); the harness: one .tosa, .vgf or .pte",
    )
    p.add_argument("--suite", choices=("ops", "models", "all"), help="default: models if files are given, else all")
    p.add_argument(
        "--quick", action="store_true", help="a small subset: seconds, not minutes (--suite ops ~15 s on 2 CPU cores)"
    )
    p.add_argument("--filter", help="only cases whose name contains this (case-insensitive)")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per backend and case")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs after the first one")
    p.add_argument(
        "--batch",
        type=int,
        default=1,
        help="runs per backend in a row each round (default 1); with N > 1 the report gives each backend's steady-time "
        "spread: max / min of the rounds' medians",
    )
    p.add_argument("--device", help="Vulkan device for tosa_vk: index or name substring (tosa-vk devices)")
    p.add_argument(
        "--backends",
        help=f"comma list from {','.join(BACKENDS)} (default: all); the harness: one of vulkan, reference (default: "
        "vulkan when a Vulkan device exists)",
    )
    p.add_argument("--no-cold", action="store_true", help="skip the cold (empty SPIR-V cache) first run")
    p.add_argument("--out", default="bench_results", help="folder for results.json / .md / .png")
    p.add_argument(
        "--built",
        action="store_true",
        help="also the Builder-made model graphs (transformer blocks fp32 / int8, GRU, int8 LSTM, ResNet fp32; "
        "tosa_vk/tools/bench/graphs.py), written as .tosa under OUT/graphs",
    )
    p.add_argument(
        "--in-flight",
        metavar="N[,N...]",
        help="the harness: runs kept going at once (one N, default 1); the suites: throughput instead: per model "
        "and N, one run's latency and the runs/s of --runs submitted runs with load(max_in_flight=N), "
        "interleaved; and the pipeline case (a preprocessing model chained to the model through the host and "
        "with device tensors); Vulkan only (tosa_vk/tools/bench/flight.py)",
    )
    p.add_argument(
        "--runs",
        type=int,
        help="the harness: timed runs (default 50); with an --in-flight list: runs submitted per throughput sample "
        "(default 32)",
    )
    p.add_argument(
        "-i",
        "--input",
        action="append",
        metavar="SPEC",
        help="the harness's input: name=SHAPExTYPE=VALUE (x=1x8x8x3xf32=0.5, IREE's form: a splat), SHAPExTYPE=VALUE "
        "for a model of one input, name=VALUE (the declared shape and type), name=file.npy; repeat for each input",
    )
    p.add_argument(
        "--random",
        type=int,
        metavar="SEED",
        help="the harness: every input not given by --input seeded random in its type's range (floats in [-1, 1), "
        "int8 / int16 their whole range, wider ints in [0, 16), bool)",
    )
    p.add_argument("--json", metavar="FILE", help="the harness: also write the report (every sample) as JSON here")


def harness_chosen(args) -> bool:
    """One model with the harness's own options (--input, --random, --json, or --runs without an --in-flight list):
    the harness, not the suites."""
    given = bool(args.input) or args.random is not None or bool(args.json)
    return given or (args.runs is not None and not args.in_flight)


def main_from_args(args, cases: list[Case] | None = None) -> int:
    if cases is None and harness_chosen(args):
        return _harness_from_args(args)
    if cases is None:
        cases = select_cases(args.suite, args.models, args.quick)
    if getattr(args, "built", False):
        from .graphs import write as write_graphs

        cases += model_cases(write_graphs(Path(args.out) / "graphs"))
    if args.filter:
        cases = [c for c in cases if args.filter.lower() in c.name.lower()]
    if not cases:
        print("tosa-vk bench: no cases selected", file=sys.stderr)
        return 2
    if getattr(args, "in_flight", None):
        return _in_flight_from_args(args, [c for c in cases if c.suite == "models"])
    backends = [b.strip() for b in (args.backends or ",".join(BACKENDS)).split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        print(f"tosa-vk bench: unknown backend(s) {unknown}; choose from {', '.join(BACKENDS)}", file=sys.stderr)
        return 2
    if args.batch < 1:
        print("tosa-vk bench: --batch takes a positive integer", file=sys.stderr)
        return 2
    report = run(cases, backends, args.repeats, args.warmup, args.device, not args.no_cold, Progress(), args.batch)
    skipped = write(report, Path(args.out))
    print(markdown(report))
    plotted = "" if skipped else " and plot"
    print(
        f"{len(cases)} cases in {report['wall_seconds']:.0f} s; JSON, markdown{plotted} in {args.out}/", file=sys.stderr
    )
    return 0


def _harness_from_args(args) -> int:
    """The harness's options checked against the suites' (exit 2 with a sentence), then harness.main."""
    from . import harness

    clash = [f for f, on in (("--suite", args.suite), ("--quick", args.quick), ("--filter", args.filter),
                             ("--built", getattr(args, "built", False))) if on]  # fmt: skip
    problem = ""
    if len(args.models) != 1:
        problem = f"takes one model file, got {len(args.models)}"
    elif clash:
        problem = f"benchmarks one model; {clash[0]} selects suite cases"
    elif args.in_flight and not str(args.in_flight).strip().isdigit():
        problem = f"takes one --in-flight N (a number of runs kept going at once), got {args.in_flight!r}"
    if problem:
        print(f"tosa-vk bench: the harness (--input / --random / --json) {problem}", file=sys.stderr)
        return 2
    return harness.main(args, args.models[0])


def _in_flight_from_args(args, cases: list[Case]) -> int:
    """`--in-flight`: the throughput and pipeline tables (markdown on stdout, in_flight.json in --out)."""
    import json

    from . import flight

    try:
        levels = [int(n) for n in str(args.in_flight).split(",") if n.strip()]
    except ValueError:
        levels = []
    if args.runs is None:
        args.runs = 32
    if not levels or min(levels) < 1 or args.runs < 1 or args.repeats < 1:
        print("tosa-vk bench: --in-flight takes positive integers (1,2,4); --runs and --repeats too", file=sys.stderr)
        return 2
    if not cases:
        print("tosa-vk bench: --in-flight measures model cases; none selected", file=sys.stderr)
        return 2
    device = int(args.device) if args.device and str(args.device).isdigit() else args.device
    rows, pipes = {}, {}
    for case in cases:
        graph, feeds, _, path = case.make()
        source = path or graph
        print(f"{case.name}: in flight {levels} ...", file=sys.stderr)
        rows[case.name] = flight.in_flight(source, feeds, levels, args.runs, args.repeats, device)
        try:
            pipes[case.name] = flight.pipeline(source, feeds, 3 * args.repeats, device)
        except Exception as err:  # noqa: BLE001 - a model the pipeline case does not fit is noted, not fatal
            pipes[case.name] = {"error": str(err).splitlines()[0][:120]}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"schema": "tosa_vk.bench.in_flight/1", "environment": environment(device), "in_flight": rows}
    text = json.dumps({**report, "pipeline": pipes}, indent=1, default=str)
    write_atomic(out / "in_flight.json", text.encode(), overwrite=True)
    print(flight.markdown(rows, pipes))
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="benchmarks/run.py", description="tosa_vk benchmark suite (= tosa-vk bench)")
    add_arguments(p)
    return main_from_args(p.parse_args(argv))

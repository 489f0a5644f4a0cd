"""`tosa-vk conformance / plan / bench`: Arm's conformance tests, the compiled plan, the benchmark engine."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ...errors import TosaError
from .common import print_progress
from .options import plan_target


def cmd_conformance(args) -> int:
    from dataclasses import replace

    from ..conformance.generate import (
        FFT_SELECTION,
        VERSION_OPS,
        Selection,
        operator_names,
        selected_tests,
        test_operator,
    )
    from ..conformance.run import run_tests, table

    version = args.tosa_version
    ops = operator_names(args.ops, version) if args.ops else VERSION_OPS[version]
    if args.dir:
        tests = sorted(p for p in Path(args.dir).iterdir() if (p / "desc.json").exists())
        tests = [t for t in tests if test_operator(t.name) in ops]
    else:  # generate (on first use) only the selected operators' tests
        kind = "negative" if args.negative else "positive"
        tests = selected_tests(Selection(ops, 2 if args.full else 1, kind, tosa_version=version))
        fft = tuple(op for op in FFT_SELECTION.ops if op in ops)
        if kind == "positive" and fft and version == "1.0":
            tests += selected_tests(replace(FFT_SELECTION, ops=fft), superset=FFT_SELECTION)
    cli = args.main if args.via_cli else None
    backend, target, strict = _conformance_class(args)
    results = run_tests(tests, backend, jobs=args.jobs, progress=print_progress, strict=strict, cli=cli, target=target)
    print(table(results))
    failed = [r for r in results if r.status != "pass"]
    for r in failed[: args.show]:
        print(f"{r.status.upper()} {r.test}: {r.detail}")
    return 1 if failed else 0


def _conformance_class(args) -> tuple[str, str | None, bool]:
    """`conformance`'s backend, device class and strictness: --target NAME (or TOSA_VK_TARGET) forces a class of
    tosa-vk targets, which implies the Vulkan backend and strict placement (a class's kernels, none on the host);
    TOSA_VK_TARGET is left alone by an explicit --backend reference."""
    from ...device_class import forced

    target = forced(args.target) if args.target or args.backend != "reference" else None
    if target is None:
        return args.backend or "reference", None, args.strict
    if args.backend == "reference":
        raise TosaError(f"conformance --target {target}: a device class needs --backend vulkan")
    return "vulkan", target, True


def cmd_plan(args) -> int:
    from ...ir import load_graph
    from ...stages.compiler import compile

    target, chosen = plan_target(args.target)
    alignment = args.alignment or target.alignment
    program = compile(load_graph(args.model), target, alignment=args.alignment, file=args.model)
    rows: list[dict[str, Any]] = []
    for name, buf in program.buffers.items():
        res = program.resources[name]
        rows.append(
            {
                "tensor": name,
                "kind": buf.kind,
                "descriptor": res.descriptor,
                "format": res.format,
                "shape": list(buf.shape),
                "offset": buf.offset,
                "bytes": buf.nbytes,
                "live": list(buf.live),
                "alias_group": res.alias_group,
            }
        )
    summary = {
        "file": args.model,
        "target": target.as_dict(),
        "target_chosen": chosen,
        "alignment": alignment,
        "memory": program.memory,
        "tensors": rows,
        "placement": [p._asdict() for p in program.placement],
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"target {target.name} ({chosen}), tensors aligned to {alignment} B")
    print(
        f"{'tensor':<40} {'kind':<12} {'descriptor':<18} {'format':<30} {'shape':<18} {'offset':>9} "
        f"{'bytes':>9} {'live':>11} alias"
    )
    for r in sorted(rows, key=lambda r: (r["offset"], r["tensor"])):
        live = (
            "always"
            if r["live"][0] == -1 and r["kind"] in ("constant", "variable")
            else f"{r['live'][0]}..{r['live'][1]}"
        )
        print(
            f"{r['tensor'][:40]:<40} {r['kind']:<12} {r['descriptor'].removeprefix('VK_DESCRIPTOR_TYPE_'):<18} "
            f"{r['format'].removeprefix('VK_FORMAT_'):<30} {str(r['shape']):<18} {r['offset']:>9} "
            f"{r['bytes']:>9} {live:>11} {'' if r['alias_group'] is None else r['alias_group']}"
        )
    m = program.memory
    hosted = [p for p in program.placement if p.where == "host"]
    for p in hosted:
        print(f"host: {p.op}: {p.reason}")
    from ...program import Kernel, walk

    kernels = [k for k in walk(program.steps) if isinstance(k, Kernel)]
    for label in dict.fromkeys(k.op for k in kernels if " + " in k.op):
        print(f"fused: {label}")
    fused = sum(p.where == "fused" for p in program.placement)
    print(
        f"target {target.name}: {len(program.placement) - len(hosted)} operators on Vulkan ({fused} of them fused "
        f"into another's kernel), {len(hosted)} on the host; {len(kernels)} kernels"
    )
    print(
        f"arena {m['arena_bytes']} B = constants / variables {m['static_bytes']} B + packed {m['dynamic_bytes']} B "
        f"(lower bound {m['dynamic_lower_bound_bytes']} B, without reuse {m['dynamic_naive_bytes']} B)"
    )
    return 0


def cmd_bench(args) -> int:
    from ..bench import main_from_args

    return main_from_args(args)


def conformance_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("reference", "vulkan"), help="the backend to test (default: reference)")
    p.add_argument(
        "--target",
        metavar="CLASS",
        help="Vulkan: compile for this device class (tosa-vk targets) on any device, strict placement implied "
        "(default: TOSA_VK_TARGET, else the device's own)",
    )
    p.add_argument(
        "--ops",
        nargs="*",
        metavar="OP",
        help="operators (spec names, any case); only their tests are generated (default: all of the version)",
    )
    p.add_argument(
        "--tosa-version",
        choices=("1.0", "1.1"),
        default="1.0",
        help="1.0: the TOSA 1.0 selection (70 operators); 1.1: what the TOSA 1.1 draft adds (25 new operators, "
        "and 1.0 operators' INT64 / MX / mixed-precision rows)",
    )
    p.add_argument("--negative", action="store_true", help="the ERROR_IF tests instead of the positive ones")
    p.add_argument("--full", action="store_true", help="two tests per class instead of one")
    p.add_argument("--strict", action="store_true", help="Vulkan: fail tests whose operators run on the host")
    p.add_argument(
        "--via-cli",
        action="store_true",
        help="run each test as `tosa-vk run --test-desc desc.json --output-dir DIR` (the tosa_reference_model "
        "drop-in, in this process) and judge the files it writes with tosa_verify",
    )
    p.add_argument("--dir", help="a folder of generated tests to run instead of the cached selection")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    p.add_argument("--show", type=int, default=50, help="how many failures to list")


def plan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tosa file")
    p.add_argument(
        "--target",
        help="a named target (lavapipe, minimum) or 'device' to query the Vulkan device (TOSA_VK_DEVICE picks one); "
        "default: the Vulkan device where there is one, else lavapipe",
    )
    p.add_argument("--alignment", type=int, help="buffer offset alignment in bytes (default: the target's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def bench_arguments(p: argparse.ArgumentParser) -> None:
    from ..bench import add_arguments as add_bench_arguments

    add_bench_arguments(p)

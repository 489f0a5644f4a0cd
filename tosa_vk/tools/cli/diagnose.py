"""`tosa-vk compare / profile / placement`: a model's tensors against the reference backend, its kernel
times, where each operator runs and why."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from ...errors import TosaError
from .common import Writes, backend_or_default, desc_inputs, graph_io, model_and_feeds, node_data_files, synthetic
from .options import (
    explorer_hint,
    host_arguments,
    host_options,
    model_arguments,
    node_data_argument,
    overwrite_argument,
    plan_target,
    timeout_options,
)


def cmd_compare(args) -> int:
    """Vulkan against the reference backend, tensor by tensor (tosa_vk/tools/compare.py): a TOSA graph's tensors, or a
    .pte's host values and its delegates' tensors in plan order; exit 1 if one is out of bounds."""
    from ...backends.model import GraphModel
    from ...backends.pte import PteModel
    from ...session import load
    from ..compare import compare, first_failure, report

    model_path, feeds, _, _ = model_and_feeds(args)
    vulkan = load(model_path, backend="vulkan", **host_options(args), **timeout_options(args))
    with vulkan:
        files = node_data_files(vulkan, args, Writes(args.overwrite))  # before the runs: a refusal comes first
        feeds = synthetic(args, vulkan, feeds)
        if not isinstance(vulkan, (GraphModel, PteModel)):
            raise TosaError("compare needs a TOSA graph: this .vgf has COMPUTE segments only", file=str(model_path))
        expected: Any = model_path  # a .pte: the program again, on the reference backend
        if isinstance(vulkan, GraphModel):
            feeds = desc_inputs(args, graph_io(vulkan), feeds)
            expected = vulkan.graph
        with load(expected, backend="reference", **timeout_options(args)) as reference:
            rows = compare(vulkan, reference, feeds, tolerance=args.tolerance, cast=args.cast)
    for line in report(rows, width=shutil.get_terminal_size((120, 24)).columns):
        print(line)
    from .. import node_data

    for f in files:
        nodes = node_data.write(f.path, node_data.errors(f.graph, rows, f.delegate), overwrite=args.overwrite)
        print(
            f"node data: {f.path} (error / bound of {nodes} operators); {explorer_hint(model_path, f.path, f.delegate)}"
        )
    return 0 if first_failure(rows) is None else 1


def cmd_placement(args) -> int:
    """Every operator's place (vulkan, fused, host, alias, constant) and why, as compiled for the target; or every
    operator as an NNAdapter rule line, a partition file that puts them all on the host (tosa_vk/stages/host_rules.py) —
    with --host-ops / --partition, only the operators those rules put there (the others commented out)."""
    from ...ir import load_graph
    from ...stages import fuse_enabled, passes
    from ...stages.compiler import compile
    from ...stages.host_rules import collect, rule_line, writable
    from ...stages.partition import STRUCTURAL
    from ...vulkan.builtin import shipped_only

    target, chosen = plan_target(args.target)
    graph = load_graph(args.model)
    options = host_options(args)
    program = compile(graph, target, kernels=shipped_only(), file=args.model, **options)
    if args.format == "rules":  # the operators the partition saw: the graph after the compile's passes
        from ...reference import host_kernels

        rules = collect(**options)
        if rules:
            print(f"# {args.model}: the operators the --host-ops / --partition rules put on the host, as NNAdapter")
            print("# rules OP:inputs:outputs: a partition file (--partition FILE) that does the same.")
            print("# Commented out: the operators no rule names, and those that cannot run on the host.")
        else:
            print(f"# {args.model}: every operator as an NNAdapter rule OP:inputs:outputs, a partition file that puts")
            print("# them all on the host (--partition FILE); delete a line to run its operator on Vulkan again.")
            print("# Commented out: the operators that cannot run on the host.")
        for region in passes.run(graph, batch=fuse_enabled(None)).regions:
            for op in region.blocks[0].operators:
                line = rule_line(op)
                if rules and not any(r.matches(op) for r in rules):
                    print(f"# {line}  # on Vulkan: no rule names it")
                elif op.op in STRUCTURAL:
                    print(f"# {line}  # {STRUCTURAL[op.op]}")
                elif not host_kernels.available(op.op):
                    print(f"# {line}  # no host kernel for {op.op}")
                elif not writable(op):
                    print(f"# {line}  # a tensor name with ',', ':' or '#' cannot be written in a rule")
                else:
                    print(line)
        return 0
    rows = [(p.op, p.where, p.reason) for p in program.placement]
    width = min(max((len(r[0]) for r in rows), default=8), 60)
    print(f"{args.model}: target {target.name} ({chosen})")
    print(f"{'operator':<{width}}  {'place':<8}  reason")
    for label, where, reason in rows:
        print(f"{label:<{width}}  {where:<8}  {reason}")
    counts = {w: sum(r[1] == w for r in rows) for w in ("vulkan", "fused", "host", "alias", "constant")}
    print(", ".join(f"{n} {w}" for w, n in counts.items() if n or w in ("vulkan", "host")))
    return 0


def cmd_profile(args) -> int:
    from ...session import load
    from .. import profile

    if args.runs < 1:
        raise TosaError(f"--runs takes 1 or more, got {args.runs}")
    model_path, feeds, _, _ = model_and_feeds(args)
    backend = args.backend or backend_or_default()
    options: dict[str, Any] = {"timestamps": True} if backend == "vulkan" else {}
    if args.warmup < 0:
        raise TosaError(f"--warmup takes 0 or more, got {args.warmup}")
    writes = Writes(args.overwrite)
    if args.trace:  # before the runs: a refusal comes before any work
        writes.plan(Path(args.trace), "the trace")
    with load(model_path, backend=backend, **options, **timeout_options(args)) as model:
        files = node_data_files(model, args, writes)
        feeds = desc_inputs(args, graph_io(model), feeds)
        feeds = synthetic(args, model, feeds)
        runs = profile.measure(model, feeds, args.runs, warmup=args.warmup)
        info = getattr(getattr(model, "device", None), "info", None)
    on = f"{backend} ({info.name})" if info is not None else backend
    found = profile.rows(runs)
    per = "operator" if backend == "reference" else "kernel"
    print(f"{model_path} on {on}: median of {args.runs} runs after {profile.warmups(args.warmup)}, per {per}")
    print("\n".join(profile.table(found, args.sort)))
    print("\n".join(profile.totals(found, runs)))
    if args.trace:
        events = profile.write_trace(Path(args.trace), runs, f"{model_path.name} on {on}", overwrite=args.overwrite)
        print(f"trace: {args.trace} ({events} kernel events; open in https://ui.perfetto.dev)")
    from .. import node_data

    for f in files:
        data = node_data.times(f.graph, found, args.runs, f.delegate)
        nodes = node_data.write(f.path, data, overwrite=args.overwrite)
        print(f"node data: {f.path} (ms of {nodes} operators); {explorer_hint(model_path, f.path, f.delegate)}")
    return 0


def compare_arguments(p: argparse.ArgumentParser) -> None:
    model_arguments(
        p,
        "a .tosa or TOSA MLIR file, a .vgf with GRAPH segments, or a .pte (its delegates' tensors, delegate_N/...)",
        "the model and inputs",
    )
    p.add_argument("--cast", action="store_true", help="convert inputs of another dtype kind instead of refusing")
    p.add_argument(
        "--tolerance",
        type=float,
        help="largest |diff| accepted for every tensor (default: integers and bools exact, floats within k x eps x "
        "(|want| + max |want|) per dtype)",
    )
    host_arguments(p)
    node_data_argument(p, "the error / bound ratio (the first divergence marked)")
    overwrite_argument(p)


def profile_arguments(p: argparse.ArgumentParser) -> None:
    model_arguments(p, "a .tosa, .vgf or .pte file", "the model and inputs")
    p.add_argument(
        "--backend",
        choices=("vulkan", "reference"),
        help="default: vulkan when a Vulkan device exists (tosa-vk devices), else reference",
    )
    p.add_argument("--runs", type=int, default=5, help="timed runs after the warm-up; the table shows medians")
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed runs first (default 1: a first run compiles each pipeline at its first dispatch; 0 times that)",
    )
    p.add_argument(
        "--sort",
        choices=("order", "time"),
        default="order",
        help="order: kernels in execution order; time: slowest first",
    )
    p.add_argument("--trace", help="also write a Chrome / Perfetto trace (JSON) of every timed run here")
    node_data_argument(p, "the median ms")
    overwrite_argument(p)


def placement_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tosa file")
    p.add_argument(
        "--target",
        help="a named target (lavapipe, minimum) or 'device' to query the Vulkan device; default: as tosa-vk plan "
        "(the Vulkan device where there is one, else lavapipe)",
    )
    host_arguments(p)
    p.add_argument(
        "--format",
        choices=("table", "rules"),
        default="table",
        help="table: each operator's place and reason; rules: each operator as an NNAdapter rule line "
        "OP:inputs:outputs, a partition file for --partition",
    )

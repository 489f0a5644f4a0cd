"""`tosa-vk info / devices / targets / inspect / cache`: what a model, the machine or the caches hold."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ...errors import TosaError, TosaFormatError
from .common import read_vgf_file


def _summary(path: str) -> dict:
    from ...ir import load_graph, ops, validate

    if Path(path).suffix.lower() == ".vgf":
        raise TosaFormatError(
            "a VGF container, not a .tosa file: `tosa-vk inspect` prints it, `tosa-vk vgf2tosa` writes the TOSA graph "
            "its GRAPH segments hold",
            file=path,
        )
    graph = load_graph(path)
    problem = None
    try:
        validate(graph, file=path)
    except TosaError as err:
        problem = str(err)
    profiles, extensions = ops.requirements(graph)
    dtypes: dict[str, int] = {}
    const_bytes = 0
    for _, block in graph.blocks():
        for t in block.tensors.values():
            dtypes[t.dtype.name] = dtypes.get(t.dtype.name, 0) + 1
            const_bytes += t.data.nbytes if t.data is not None else 0
    major, minor, patch, draft = graph.version

    def described(names: list[str]) -> list[dict]:
        """The main block's inputs / outputs; a name that is no tensor of the block (an invalid graph, which the
        validation line names) is listed with no shape or dtype."""
        tensors = graph.main.tensors
        return [
            {"name": n, "shape": list(tensors[n].shape), "dtype": tensors[n].dtype.name}
            if n in tensors
            else {"name": n, "shape": None, "dtype": None}
            for n in names
        ]

    return {
        "file": path,
        "tosa_version": f"{major}.{minor}.{patch}" + ("-draft" if draft else ""),
        "regions": [r.name for r in graph.regions],
        "inputs": described(graph.main.inputs),
        "outputs": described(graph.main.outputs),
        "num_operators": sum(graph.op_counts().values()),
        "op_counts": graph.op_counts(),
        "tensor_dtypes": dict(sorted(dtypes.items())),
        "const_bytes": const_bytes,
        "profiles": profiles,
        "extensions": extensions,
        "valid": problem is None,
        "validation_error": problem,
    }


def _print_summary(s: dict) -> None:
    def tensors(items):
        return ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" if t["dtype"] else f"{t['name']} (no such tensor)"
                         for t in items)  # fmt: skip

    print(f"{s['file']}: TOSA {s['tosa_version']}, regions: {', '.join(s['regions'])}")
    print(f"  inputs:     {tensors(s['inputs'])}")
    print(f"  outputs:    {tensors(s['outputs'])}")
    print(f"  operators:  {s['num_operators']}")
    for name, n in s["op_counts"].items():
        print(f"    {name:<24}{n:>6}")
    print("  dtypes:     " + ", ".join(f"{k} x{v}" for k, v in s["tensor_dtypes"].items()))
    print(f"  constants:  {s['const_bytes']} bytes")
    print("  needs:      " + " ".join(s["profiles"] + s["extensions"]))
    print("  validation: " + ("ok" if s["valid"] else s["validation_error"]))


def cmd_info(args) -> int:
    from ...session import is_pte

    if is_pte(args.model):
        return _info_pte(args)
    summary = _summary(args.model)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        _print_summary(summary)
    return 0 if summary["valid"] else 1


def cmd_devices(args) -> int:
    from ...vulkan import enumerate_devices, select

    devices = enumerate_devices()
    try:
        chosen = select(devices).index if devices else None
    except TosaError as e:  # TOSA_VK_DEVICE names none of them: list them anyway
        print(f"tosa-vk: warning: TOSA_VK_DEVICE: {e}", file=sys.stderr)
        chosen = None
    if args.json:
        print(json.dumps([d.as_dict() for d in devices], indent=1))
        return 0
    for d in devices:
        mark = "*" if d.index == chosen else " "
        feats = " ".join(k for k, v in d.features.items() if v)
        print(
            f"{mark} #{d.index} {d.name} ({d.kind}, Vulkan {d.api_version}, subgroup {d.subgroup_size}, "
            f"class {d.device_class})"
        )
        print(f"      uuid {d.uuid}, driver {d.driver}")
        print(f"      features: {feats}")
        print(
            f"      maxStorageBufferRange {d.limits['maxStorageBufferRange']}, "
            f"maxComputeWorkGroupCount {d.limits['maxComputeWorkGroupCount']}"
        )
    if not devices:
        print("no Vulkan devices")
    return 0


def cmd_targets(args) -> int:
    from ... import device_class
    from ...target import NAMED

    if args.json:
        rows = [
            {
                "name": c.name,
                "summary": c.summary,
                "vendor_ids": [f"0x{v:04x}" for v in c.vendor_ids],
                "families": {op: list(f) for op, f in c.families.items()},
                "features": sorted(c.uses),
                "matmul_tile": c.matmul_tile.__dict__,
                "conv_tile": c.conv_tile.__dict__,
                "reduce_workgroup": c.reduce_workgroup,
                "named_target": c.name in NAMED,
            }
            for c in device_class.CLASSES.values()
        ]
        print(json.dumps(rows, indent=1))
        return 0
    for c in device_class.CLASSES.values():
        print(c.describe())
    print(
        f"(load(..., target=NAME) or {device_class.ENV_TARGET}=NAME compiles for a class on any device; "
        f"{device_class.ENV_DISABLE}={','.join(device_class.FEATURES)} switches kernel features off)"
    )
    return 0


def _info_pte(args) -> int:
    """`tosa-vk info model.pte`: each method's inputs and outputs, its instructions (host operators, delegates
    with their TOSA operator counts) in order; a host operator with a TOSA equivalent says what load() lowers it to
    (tosa_vk/formats/pte/lower.py), one without why it stays on the host."""
    from ...backends.pte import value_spec
    from ...formats.pte import Kernel, load_program, lower
    from ...ir.flatbuffer import read_graph

    plans = load_program(args.model)  # the reader `load` uses: every index checked
    methods: list[dict[str, Any]] = []
    for plan in plans:
        steps = []
        counts: dict[int, dict[str, int]] = {}  # each delegate parsed once, however often the plan calls it
        for ins, low in zip(plan.instructions, lower.lower_all(plan)):
            if isinstance(ins, Kernel):
                how = {"stays": low} if isinstance(low, str) else {"lowered_with": low} if isinstance(low, int) else {}
                steps.append({"host": ins.name, **(how or {"lowered": getattr(low, "ops", "")})})
                continue
            d = plan.delegates[ins.index]
            step: dict[str, Any] = {"delegate": ins.index, "backend": d.backend, "bytes": len(d.processed)}
            if d.backend == "TOSABackend":
                if ins.index not in counts:
                    where = f"{args.model} (delegate {ins.index})"
                    counts[ins.index] = read_graph(d.processed, file=where).op_counts()
                step["tosa_operators"] = counts[ins.index]
            steps.append(step)

        # dtypes by TOSA's names (FP32, INT64), as Model.inputs and a .tosa's info give them
        inputs, outputs = ([{"name": f"{what}_{i}", "shape": list(spec.shape), "dtype": spec.dtype}
                            for i, spec in enumerate(value_spec(plan.values[v]) for v in indices)]
                           for what, indices in (("input", plan.inputs), ("output", plan.outputs)))  # fmt: skip
        methods.append({"name": plan.name, "inputs": inputs, "outputs": outputs, "instructions": steps})
    summary = {"file": args.model, "kind": "ExecuTorch program", "methods": methods}
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{args.model}: ExecuTorch program, {len(methods)} method(s)")
    for m in methods:
        print(f"  method {m['name']}")
        for key in ("inputs", "outputs"):
            print(f"    {key + ':':<9}" + ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in m[key]))
        for i, step in enumerate(m["instructions"]):
            if "host" in step:
                text = (f"lowered to TOSA {step['lowered']}" if "lowered" in step
                       else f"lowered to TOSA with #{step['lowered_with']}" if "lowered_with" in step
                       else f"on the host: {step['stays']}")  # fmt: skip
                print(f"    #{i:<3} host      {step['host']} ({text})")
            else:
                ops = step.get("tosa_operators", {})
                detail = f"{sum(ops.values())} TOSA operators ({', '.join(ops)})" if ops else f"{step['bytes']} bytes"
                print(f"    #{i:<3} delegate  {step['delegate']} {step['backend']}: {detail}")
    return 0


def cmd_inspect(args) -> int:
    from vgf.inspect import describe, summary

    vgf = read_vgf_file(args.model)
    if args.json:
        print(json.dumps(summary(vgf), indent=1))
    else:
        print(describe(vgf, args.model))
    return 0


def cmd_cache(args) -> int:
    """The program cache (compiled models) and the SPIR-V cache under $TOSA_VK_CACHE: what is there, or empty them."""
    from ...store.program_cache import ProgramCache
    from ...vulkan.shaders import ShaderCache

    programs, shaders = ProgramCache(args.dir), ShaderCache()
    if args.action == "clear":
        removed = programs.clear()
        print(f"removed {removed} compiled models from {programs.dir} and {shaders.clear()} SPIR-V modules from "
              f"{shaders.dir}")  # fmt: skip
        return 0
    info = programs.info()
    modules = shaders.modules()
    info["spirv"] = {
        "directory": str(shaders.dir),
        "modules": len(modules),
        "bytes": sum(p.stat().st_size for p in modules),
    }
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        print(f"compiled models: {info['entries']} in {info['directory']} ({info['bytes'] / 2**20:.1f} MiB of "
              f"{info['budget'] / 2**20:.0f} MiB)")  # fmt: skip
        print(f"SPIR-V modules:  {len(modules)} in {shaders.dir} ({info['spirv']['bytes'] / 2**20:.1f} MiB)")
    return 0


# Each command's options, in `tosa-vk --help` order.
def info_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model", help="a .tosa file, TOSA MLIR (.mlir text, .mlirbc bytecode) or an ExecuTorch program (.pte)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def inspect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .vgf file")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def devices_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def targets_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def cache_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["info", "clear"], help="info: what is there; clear: empty both")
    p.add_argument("--dir", help="the program cache folder (default: $TOSA_VK_CACHE/programs)")
    p.add_argument("--json", action="store_true", help="machine-readable output (info)")

"""The `tosa-vk` command line. Errors are one line on stderr (`tosa-vk: error: ...`) and exit code 2."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from vgf import VGFError, load_vgf

from .errors import TosaError


def _summary(path: str) -> dict:
    from .ir import load_graph, ops, validate

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
    return {
        "file": path,
        "tosa_version": f"{major}.{minor}.{patch}" + ("-draft" if draft else ""),
        "regions": [r.name for r in graph.regions],
        "inputs": [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype.name} for t in graph.inputs],
        "outputs": [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype.name} for t in graph.outputs],
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
        return ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in items)

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
    summary = _summary(args.model)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        _print_summary(summary)
    return 0 if summary["valid"] else 1


def cmd_devices(args) -> int:
    from .vulkan import enumerate_devices, select

    devices = enumerate_devices()
    chosen = select(devices).index if devices else None
    if args.json:
        print(json.dumps([d.as_dict() for d in devices], indent=1))
        return 0
    for d in devices:
        mark = "*" if d.index == chosen else " "
        feats = " ".join(k for k, v in d.features.items() if v)
        print(f"{mark} #{d.index} {d.name} ({d.type}, Vulkan {d.api_version}, subgroup {d.subgroup_size})")
        print(f"      features: {feats}")
        print(
            f"      maxStorageBufferRange {d.limits['maxStorageBufferRange']}, "
            f"maxComputeWorkGroupCount {d.limits['maxComputeWorkGroupCount']}"
        )
    if not devices:
        print("no Vulkan devices")
    return 0


def _feeds_from_desc(desc_path: Path) -> tuple[Path, dict, dict]:
    """A conformance-style desc.json -> (model path, feeds, output files by name); every defect a TosaError naming
    the file and the key."""
    where = str(desc_path)
    try:
        desc = json.loads(desc_path.read_text())
    except OSError as err:
        raise TosaError(f"cannot read: {err.strerror}", file=where) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TosaError(f"not JSON ({err})", file=where) from None
    if not isinstance(desc, dict):
        raise TosaError(f"a desc.json is a JSON object, got {type(desc).__name__}", file=where)
    if not isinstance(desc.get("tosa_file"), str):
        raise TosaError("'tosa_file' must name the model file (a string)", file=where)
    lists = {}
    for key in ("ifm_name", "ifm_file", "ofm_name", "ofm_file"):
        value = desc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TosaError(f"'{key}' must be a list of strings, got {value!r}", file=where)
        lists[key] = value
    for kind in ("ifm", "ofm"):
        if len(lists[f"{kind}_name"]) != len(lists[f"{kind}_file"]):
            raise TosaError(
                f"'{kind}_name' has {len(lists[f'{kind}_name'])} entries, '{kind}_file' {len(lists[f'{kind}_file'])}",
                file=where,
            )
    folder = desc_path.parent
    feeds = {name: _load_npy(folder / f) for name, f in zip(lists["ifm_name"], lists["ifm_file"])}
    return folder / desc["tosa_file"], feeds, dict(zip(lists["ofm_name"], lists["ofm_file"]))


def _load_npy(path: Path) -> np.ndarray:
    """An input array from a .npy file (never unpickled: a model's inputs are untrusted too)."""
    try:
        return np.load(path, allow_pickle=False)
    except OSError as err:
        raise TosaError(f"cannot read input: {err.strerror or err}", file=str(path)) from None
    except ValueError as err:
        raise TosaError(f"not a readable .npy array ({err})", file=str(path)) from None


def safe_name(name: str) -> str:
    """A tensor name as a file name: path separators and other characters outside [A-Za-z0-9._-] become "_", and a
    leading dot too (model files are untrusted: a name must not climb out of the output folder)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return "_" + name[1:] if name.startswith(".") else name or "_"


def confined(folder: Path, relative: str) -> Path:
    """`folder / relative`, refused when it would leave the folder (an absolute path, `..`, or a symlink out)."""
    path = Path(relative)
    if path.is_absolute() or ".." in path.parts:
        raise TosaError(f"output file {relative!r} would be written outside the output folder {str(folder)!r}")
    target = folder / path
    if target.is_symlink() or not target.resolve().is_relative_to(folder.resolve()):
        raise TosaError(f"output file {relative!r} resolves outside the output folder {str(folder)!r}")
    return target


def _default_backend() -> str:
    """`tosa-vk run` without --backend: tosa_vk.load's default (session.default_backend: vulkan when there is a
    Vulkan device, else reference), with a note on stderr in place of load()'s warning."""
    from .session import default_backend

    backend = default_backend()
    if backend == "reference":
        print("tosa-vk: no Vulkan device, running on the reference backend (--backend chooses)", file=sys.stderr)
    return backend


def _model_and_feeds(args) -> tuple[Path, dict, dict]:
    """`run` / `profile`'s model and inputs: (model path, feeds, output files by name) from --test-desc desc.json,
    else the model argument and its -i name=file.npy inputs."""
    if args.test_desc:
        return _feeds_from_desc(Path(args.test_desc))
    if not args.model:
        raise TosaError("give a model file or --test-desc desc.json")
    feeds = {}
    for item in args.input or []:
        name, _, file = item.partition("=")
        if not file:
            raise TosaError(f"-i takes name=file.npy, got {item!r}")
        feeds[name] = _load_npy(Path(file))
    return Path(args.model), feeds, {}


def cmd_run(args) -> int:
    from .compare import judge
    from .ir.dtype import from_npy, to_npy
    from .session import GraphModel, load

    expected_dir = None
    if args.compare and not args.test_desc:
        raise TosaError(
            "--compare compares with the ofm_file outputs a desc.json names: give --test-desc desc.json "
            "(--check compares with the reference backend)"
        )
    model_path, feeds, out_files = _model_and_feeds(args)
    if args.test_desc:
        expected_dir = Path(args.test_desc).parent
    expected = {}
    if args.compare:  # read before anything is written (an output folder may be the desc's own)
        assert expected_dir is not None
        for name, f in out_files.items():
            if (expected_dir / f).is_file():
                expected[name] = _load_npy(expected_dir / f)
    backend = args.backend or _default_backend()
    placing = _host_options(args)
    if placing and backend != "vulkan":
        raise TosaError(f"--host-ops / --partition move operators of the vulkan backend to the host; the {backend} "
                        "backend runs every operator on the host already")  # fmt: skip
    start = time.perf_counter()
    model = load(model_path, backend=backend, **placing)
    if not isinstance(model, GraphModel):  # a VGF of compute segments only: run as it is
        return _run_vgf(model_path, model, feeds, args, start)
    if args.dump_intermediates:  # every tensor kept and returned (tosa_vk/capture.py)
        outputs = model.run(feeds, cast=args.cast, capture="all")
        _dump(outputs, model.graph, Path(args.dump_intermediates))
        outputs = {name: outputs[name] for name in model.outputs}
    else:
        outputs = model.run(feeds, cast=args.cast)
    seconds = time.perf_counter() - start
    graph = model.graph
    checked = load(graph, backend="reference").run(feeds, cast=args.cast) if args.check else {}
    # Like tosa_reference_model: a desc.json's outputs go next to it unless told otherwise (not with --compare,
    # which reads the expected results from those very files)
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir is None and args.test_desc and not args.compare:
        out_dir = expected_dir
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    dtypes = {t.name: t.dtype for t in graph.outputs}
    failed = False
    for name, value in outputs.items():
        line = f"{name}: {list(value.shape)} {dtypes[name].name}"
        if out_dir:
            target = confined(out_dir, out_files.get(name) or f"{safe_name(name)}.npy")
            np.save(target, to_npy(value, dtypes[name]))
            line += f" -> {target}"
        verdicts = []
        if args.compare:
            if name in expected:
                want = from_npy(expected[name], dtypes[name])
                ok, _, _, how = judge(value, want, dtypes[name], args.tolerance)
                verdicts.append((ok, f"vs {out_files[name]}: {how}"))
            else:
                verdicts.append((False, f"no expected result {out_files.get(name) or '(not in desc.json)'}"))
        if name in checked:
            ok, _, _, how = judge(value, checked[name], dtypes[name], args.tolerance)
            verdicts.append((ok, f"vs reference backend: {how}"))
        for ok, how in verdicts:
            failed |= not ok
            line += f"; {'PASS' if ok else 'FAIL'} {how}"
        print(line)
    if backend == "vulkan":
        where = [p.where for p in model.placement]
        print(
            f"placement: {where.count('vulkan')} operators as Vulkan kernels, {where.count('fused')} fused into "
            f"them, {where.count('host')} on the host, {where.count('alias')} free aliases"
        )
        for p in model.placement if placing else ():
            if p.where == "host":
                print(f"host: {p.op}: {p.reason}")
    print(f"{model_path}: ran on {backend} in {seconds * 1000:.1f} ms (load + first run)")
    return 1 if failed else 0


def _dump(tensors: dict[str, np.ndarray], graph, folder: Path) -> None:
    """--dump-intermediates: one .npy per tensor (the .npy dtype tosa_reference_model writes for its type) and
    index.json: the tensors in execution order with their file, producer, shape and dtype."""
    from .capture import capturable, producers
    from .ir.dtype import to_npy

    folder.mkdir(parents=True, exist_ok=True)
    main = graph.main
    producer = producers(graph)
    index: list[dict] = []
    for name in capturable(graph):
        t = main.tensors[name]
        target = confined(folder, f"{len(index):04d}_{safe_name(name)}.npy")
        np.save(target, to_npy(tensors[name], t.dtype))
        index.append(
            {"tensor": name, "file": target.name, "producer": producer.get(name, "input"),
             "shape": list(t.shape), "dtype": t.dtype.name}
        )  # fmt: skip
    (folder / "index.json").write_text(json.dumps(index, indent=1))
    print(f"{len(index)} tensors written to {folder} (index.json lists them in execution order)")


def cmd_compare(args) -> int:
    """Vulkan against the reference backend, tensor by tensor (tosa_vk/compare.py); exit 1 if one is out of bounds."""
    from .compare import compare, first_failure, report
    from .session import GraphModel, load

    model_path, feeds, _ = _model_and_feeds(args)
    vulkan = load(model_path, backend="vulkan", **_host_options(args))
    if not isinstance(vulkan, GraphModel):
        raise TosaError("compare needs a TOSA graph: this .vgf has COMPUTE segments only", file=str(model_path))
    with vulkan, load(vulkan.graph, backend="reference") as reference:
        rows = compare(vulkan, reference, feeds, tolerance=args.tolerance, cast=args.cast)
    for line in report(rows, width=shutil.get_terminal_size((120, 24)).columns):
        print(line)
    return 0 if first_failure(rows) is None else 1


def _host_options(args) -> dict[str, Any]:
    """load()'s host_ops / partition options from --host-ops / --partition (only those given)."""
    options: dict[str, Any] = {}
    if args.host_ops:
        options["host_ops"] = list(args.host_ops)
    if args.partition:
        options["partition"] = args.partition
    return options


def cmd_placement(args) -> int:
    """Every operator's place (vulkan, fused, host, alias, constant) and why, as compiled for the target; or every
    operator as an NNAdapter rule line, a partition file that puts them all on the host (tosa_vk/host_rules.py)."""
    from . import passes
    from .compiler import compile
    from .fuse import enabled as fuse_enabled
    from .host_rules import rule_line, writable
    from .ir import load_graph
    from .partition import STRUCTURAL
    from .vulkan.builtin import shipped_only

    target, chosen = _plan_target(args.target)
    graph = load_graph(args.model)
    options = _host_options(args)
    program = compile(graph, target, kernels=shipped_only(), file=args.model, **options)
    if args.format == "rules":  # the operators the partition saw: the graph after the compile's passes
        from . import host_kernels

        print(f"# {args.model}: every operator as an NNAdapter rule OP:inputs:outputs, a partition file that puts")
        print("# them all on the host (--partition FILE); delete a line to run its operator on Vulkan again.")
        print("# Commented out: the operators that cannot run on the host.")
        for region in passes.run(graph, batch=fuse_enabled(None)).regions:
            for op in region.blocks[0].operators:
                line = rule_line(op)
                if op.op in STRUCTURAL:
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


def _run_vgf(path: Path, model, feeds: dict, args, start: float) -> int:
    """`tosa-vk run model.vgf` of COMPUTE segments only: run as they are on our Vulkan runtime (tosa_vk/vgf_run.py)."""
    with model:
        outputs = model.run(feeds, cast=args.cast)
    seconds = time.perf_counter() - start
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    for name, value in outputs.items():
        line = f"{name}: {list(value.shape)} {value.dtype}"
        if out_dir:
            target = confined(out_dir, f"{safe_name(name)}.npy")
            np.save(target, value)
            line += f" -> {target}"
        print(line)
    print(f"{path}: ran on vulkan in {seconds * 1000:.1f} ms (load + first run)")
    return 0


def cmd_profile(args) -> int:
    from . import profile
    from .session import load

    if args.runs < 1:
        raise TosaError(f"--runs takes 1 or more, got {args.runs}")
    model_path, feeds, _ = _model_and_feeds(args)
    backend = args.backend or _default_backend()
    options = {"timestamps": True} if backend == "vulkan" else {}
    with load(model_path, backend=backend, **options) as model:
        runs = profile.measure(model, feeds, args.runs)
        info = getattr(getattr(model, "device", None), "info", None)
    on = f"{backend} ({info.name})" if info is not None else backend
    found = profile.rows(runs)
    per = "operator" if backend == "reference" else "kernel"
    print(f"{model_path} on {on}: median of {args.runs} runs after 1 warm-up, per {per}")
    print("\n".join(profile.table(found, args.sort)))
    print("\n".join(profile.totals(found, runs)))
    if args.trace:
        events = profile.write_trace(Path(args.trace), runs, f"{model_path.name} on {on}")
        print(f"trace: {args.trace} ({events} kernel events; open in https://ui.perfetto.dev)")
    return 0


def cmd_export(args) -> int:
    out = Path(args.output or Path(args.model).with_suffix(".vgf"))
    if args.segments == "graph":
        from .ir import load_graph
        from .vgf_graph import export

        vgf = export(load_graph(args.model), out, file=args.model)
    else:
        from .session import load

        with load(args.model, backend="vulkan", strict=True) as model:
            vgf = model.export_vgf(out)
    kinds = [s.type for s in vgf.segments]
    print(
        f"{out}: {out.stat().st_size} bytes, {kinds.count('GRAPH')} graph and {kinds.count('COMPUTE')} compute "
        f"segments, {len(vgf.modules)} modules, {len(vgf.resources)} resources, {len(vgf.constants)} constants"
    )
    return 0


def cmd_vgf2tosa(args) -> int:
    from .ir.flatbuffer import save_graph
    from .vgf_graph import to_graph

    out = Path(args.output or Path(args.model).with_suffix(".tosa"))
    graph = to_graph(load_vgf(args.model), file=args.model)
    save_graph(graph, out)
    counts = graph.op_counts()
    print(f"{out}: {sum(counts.values())} operators ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    return 0


def cmd_inspect(args) -> int:
    from vgf import read_vgf
    from vgf.inspect import describe, summary

    vgf = read_vgf(args.model)
    if args.json:
        print(json.dumps(summary(vgf), indent=1))
    else:
        print(describe(vgf, args.model))
    return 0


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty() or done == total:
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done == total else "\r"
        print(f"  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end, file=sys.stderr, flush=True)


def cmd_conformance(args) -> int:
    from dataclasses import replace

    from .conformance.generate import (
        FFT_SELECTION,
        VERSION_OPS,
        Selection,
        operator_names,
        selected_tests,
        test_operator,
    )
    from .conformance.run import run_tests, table

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
    results = run_tests(tests, args.backend, jobs=args.jobs, progress=_progress, strict=args.strict)
    print(table(results))
    failed = [r for r in results if r.status != "pass"]
    for r in failed[: args.show]:
        print(f"{r.status.upper()} {r.test}: {r.detail}")
    return 1 if failed else 0


def _plan_target(name: str | None):
    """`tosa-vk plan`'s target and how it was chosen: --target NAME a named one, --target device the Vulkan device
    (TOSA_VK_DEVICE picks one; an error without a device), no --target the device where there is one, else the
    named target lavapipe."""
    from .session import vulkan_devices
    from .target import named

    if name not in (None, "device"):
        return named(name), "named target"
    devices = list(vulkan_devices())
    if devices or name == "device":
        from .vulkan import select

        info = select(devices)
        return info.target, f"Vulkan device #{info.index}"
    return named("lavapipe"), "named target: no Vulkan device found (--target chooses)"


def cmd_plan(args) -> int:
    from .compiler import compile
    from .ir import load_graph

    target, chosen = _plan_target(args.target)
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
    from .program import Kernel, walk

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
    from .bench import main_from_args

    return main_from_args(args)


def cmd_cache(args) -> int:
    """The program cache (compiled models) and the SPIR-V cache under $TOSA_VK_CACHE: what is there, or empty them."""
    from .program_cache import ProgramCache
    from .vulkan.shaders import ShaderCache

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


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: ...)" after an option's help, unless the default is None / False (their help says what
    happens without the option) or the help already names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _model_arguments(p: argparse.ArgumentParser, model: str, desc: str) -> None:
    """The model and its inputs, for `run`, `profile` and `compare` (read by _model_and_feeds)."""
    p.add_argument("model", nargs="?", help=f"{model} (with -i name=file.npy inputs)")
    p.add_argument("--test-desc", "--test_desc", dest="test_desc", help=f"a conformance-style desc.json naming {desc}")
    p.add_argument("-i", "--input", action="append", help="graph input as name=file.npy (repeat for each input)")


def _host_arguments(p: argparse.ArgumentParser) -> None:
    """--host-ops and --partition (tosa_vk/host_rules.py), for `run` and `placement`."""
    p.add_argument(
        "--host-ops",
        nargs="+",
        action="extend",
        metavar="RULE",
        help="run these operators on the host (vulkan backend): operator names (any case), output tensor names, "
        "or NNAdapter rules OP:in1,in2:out1,out2; a rule that matches no operator is an error (give the model "
        "before this option)",
    )
    p.add_argument(
        "--partition",
        metavar="FILE",
        help="a file of such rules, one per line ('#' comments; `tosa-vk placement --format rules` writes one)",
    )


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    ap = argparse.ArgumentParser(
        prog="tosa-vk", description="Run TOSA 1.0 graphs on Vulkan.", formatter_class=_HelpFormatter
    )
    ap.add_argument("--version", action="version", version=f"tosa-vk {__version__}")
    ap.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, **options) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=summary, formatter_class=_HelpFormatter, **options)

    p = command("info", "inputs, outputs, op counts, dtypes and profiles of a .tosa file")
    p.add_argument("model", help="a .tosa file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)
    p = command("run", "run a graph (drop-in for tosa_reference_model --test_desc)")
    _model_arguments(p, "a .tosa or .vgf file", "the model, inputs and output files")
    p.add_argument(
        "-o",
        "--output-dir",
        "--output_dir",
        dest="output_dir",
        help="write each output here as desc.json's ofm_file, else <name>.npy (default: the folder of desc.json, "
        "as tosa_reference_model does, except with --compare; without a desc.json: not written)",
    )
    p.add_argument(
        "--backend",
        choices=("vulkan", "reference"),
        help="default: vulkan when a Vulkan device exists (tosa-vk devices), else reference",
    )
    p.add_argument(
        "--compare", action="store_true", help="compare with the ofm_files next to desc.json (needs --test-desc)"
    )
    p.add_argument("--check", action="store_true", help="also run the reference backend and compare with it")
    p.add_argument(
        "--cast",
        action="store_true",
        help="convert inputs of another dtype kind (e.g. float into int8) instead of refusing",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        help="largest |diff| --compare / --check accept (default: integers and bools exact, floats within "
        "k x eps x (|want| + max |want|) per dtype: fp32 k=1024, fp16 8, bf16 4, fp8 2)",
    )
    p.add_argument(
        "--dump-intermediates",
        metavar="DIR",
        help="also write every intermediate tensor to DIR as NNNN_<name>.npy in execution order, with index.json",
    )
    _host_arguments(p)
    p.set_defaults(func=cmd_run)
    p = command(
        "compare",
        "run on Vulkan and on the reference backend, judge every tensor in execution order; exit 1 if one is out "
        "of bounds",
    )
    _model_arguments(p, "a .tosa file, or a .vgf with GRAPH segments", "the model and inputs")
    p.add_argument("--cast", action="store_true", help="convert inputs of another dtype kind instead of refusing")
    p.add_argument(
        "--tolerance",
        type=float,
        help="largest |diff| accepted for every tensor (default: integers and bools exact, floats within k x eps x "
        "(|want| + max |want|) per dtype)",
    )
    _host_arguments(p)
    p.set_defaults(func=cmd_compare)
    p = command("profile", "time each kernel of a graph over several runs: a table in ms, and a Perfetto trace")
    _model_arguments(p, "a .tosa or .vgf file", "the model and inputs")
    p.add_argument(
        "--backend",
        choices=("vulkan", "reference"),
        help="default: vulkan when a Vulkan device exists (tosa-vk devices), else reference",
    )
    p.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up; the table shows medians")
    p.add_argument(
        "--sort",
        choices=("order", "time"),
        default="order",
        help="order: kernels in execution order; time: slowest first",
    )
    p.add_argument("--trace", help="also write a Chrome / Perfetto trace (JSON) of every timed run here")
    p.set_defaults(func=cmd_profile)
    p = command("conformance", "run Arm's conformance tests on a backend, judged by tosa_verify")
    p.add_argument("--backend", choices=("reference", "vulkan"), default="reference", help="the backend to test")
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
    p.add_argument("--dir", help="a folder of generated tests to run instead of the cached selection")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    p.add_argument("--show", type=int, default=50, help="how many failures to list")
    p.set_defaults(func=cmd_conformance)
    p = command("export", "write a .tosa graph as a VGF container for Arm's ML SDK")
    p.add_argument("model", help="a .tosa file")
    p.add_argument("-o", "--output", help="the .vgf to write (default: the model's name with .vgf)")
    p.add_argument(
        "--segments",
        choices=("graph", "compute"),
        default="graph",
        help="graph: TOSA operators as SPIR-V graphs, as Arm's model-converter writes them (for VK_ARM_data_graph "
        "drivers, ExecuTorch's VGF runtime, the ML emulation layer); compute: tosa_vk's own compiled kernels "
        "(any Vulkan device, no ML extensions)",
    )
    p.set_defaults(func=cmd_export)
    p = command("vgf2tosa", "the TOSA graph a .vgf holds (GRAPH segments decoded), as a .tosa file")
    p.add_argument("model", help="a .vgf file")
    p.add_argument("-o", "--output", help="the .tosa to write (default: the model's name with .tosa)")
    p.set_defaults(func=cmd_vgf2tosa)
    p = command("inspect", "print a .vgf container: modules, segments, resources, constants")
    p.add_argument("model", help="a .vgf file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inspect)
    p = command("plan", "where every tensor lives: descriptor, format, offset, live range, aliases")
    p.add_argument("model", help="a .tosa file")
    p.add_argument(
        "--target",
        help="a named target (lavapipe, minimum) or 'device' to query the Vulkan device (TOSA_VK_DEVICE picks one); "
        "default: the Vulkan device where there is one, else lavapipe",
    )
    p.add_argument("--alignment", type=int, help="buffer offset alignment in bytes (default: the target's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plan)
    p = command("placement", "where every operator runs (Vulkan, fused, host, alias, constant) and why")
    p.add_argument("model", help="a .tosa file")
    p.add_argument(
        "--target",
        help="a named target (lavapipe, minimum) or 'device' to query the Vulkan device; default: as tosa-vk plan "
        "(the Vulkan device where there is one, else lavapipe)",
    )
    _host_arguments(p)
    p.add_argument(
        "--format",
        choices=("table", "rules"),
        default="table",
        help="table: each operator's place and reason; rules: each operator as an NNAdapter rule line "
        "OP:inputs:outputs, a partition file for --partition",
    )
    p.set_defaults(func=cmd_placement)
    p = command("devices", "list Vulkan devices (* marks the default)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_devices)
    p = command("cache", "the compiled-model and SPIR-V caches ($TOSA_VK_CACHE): info or clear")
    p.add_argument("action", choices=["info", "clear"], help="info: what is there; clear: empty both")
    p.add_argument("--dir", help="the program cache folder (default: $TOSA_VK_CACHE/programs)")
    p.add_argument("--json", action="store_true", help="machine-readable output (info)")
    p.set_defaults(func=cmd_cache)
    p = command("bench", "benchmark ops and models on every installed backend (JSON, table, plot)")
    from .bench import add_arguments as add_bench_arguments

    add_bench_arguments(p)
    p.set_defaults(func=cmd_bench)
    return ap


# How long the main thread has to act on Ctrl-C before the process ends without it.
INTERRUPT_GRACE_S = 2.0


def _interrupted() -> NoReturn:
    """Leaves at once: the device may still run the interrupted work, and the interpreter's teardown would wait
    for it (the operating system frees the device's memory)."""
    print("tosa-vk: interrupted", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(130)


def _watch_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt in the main thread, between two bytecodes: a main thread inside a long C call
    (a driver compiling a pipeline, a Vulkan wait) acts on it only when the call returns, and one that gets it inside
    a finalizer or a C callback loses it (Python prints it and goes on), so a runaway shader would keep the process.
    The signal also wakes this thread (signal.set_wakeup_fd), which ends the process if the main thread has not
    within INTERRUPT_GRACE_S. Set up by the command's entry point, not by main(), which callers may run in-process."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def watch() -> None:
        while signal.SIGINT not in os.read(read, 64):
            pass
        time.sleep(INTERRUPT_GRACE_S)
        _interrupted()

    threading.Thread(target=watch, name="tosa-vk-interrupt", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (TosaError, VGFError) as err:
        print(f"tosa-vk: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _interrupted()
    except Exception as err:  # anything else: one line, not a traceback (--debug shows it)
        if args.debug:
            raise
        from .vulkan import VulkanError

        kind = "" if isinstance(err, (VulkanError, OSError)) else f"{type(err).__name__}: "
        print(f"tosa-vk: error: {kind}{err} (--debug shows the traceback)", file=sys.stderr)
        return 2


def entry() -> int:
    """The `tosa-vk` command (and `python -m tosa_vk.cli`): main() in a process of its own."""
    _watch_interrupts()
    return main()


if __name__ == "__main__":
    sys.exit(entry())

"""`tosa-vk run`: a model on a backend with feeds from files, a desc.json or synthetic inputs; outputs, dumps
and the comparison against expected results (.tosa, .vgf, .pte)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ...errors import TosaError
from ...store.serial import load_npy as _load_npy
from .common import (
    FILE_NAMES,
    Writes,
    backend_or_default,
    confined,
    dequantized_npy,
    desc_inputs,
    expected_scales,
    graph_io,
    is_pte_model,
    model_and_feeds,
    output_files,
    output_folder,
    print_values,
    pte_bound,
    safe_name,
    synthetic,
)
from .options import (
    host_arguments,
    host_options,
    model_arguments,
    overwrite_argument,
    qparams_arguments,
    qparams_options,
    timeout_options,
)


def cmd_run(args) -> int:
    from ...backends.model import GraphModel
    from ...ir import DType
    from ...ir.dtype import from_npy, to_npy
    from ...session import load
    from ..compare import judge

    expected_dir = None
    if args.compare and not args.test_desc:
        raise TosaError(
            "--compare compares with the ofm_file outputs a desc.json names: give --test-desc desc.json "
            "(--check compares with the reference backend)"
        )
    model_path, feeds, out_files, expected_files = model_and_feeds(args)
    if args.test_desc:
        expected_dir = Path(args.test_desc).parent
    expected = {}
    if args.compare:  # read before anything is written (an output folder may be the desc's own)
        assert expected_dir is not None
        for name, f in expected_files.items():
            if (expected_dir / f).is_file():
                expected[name] = _load_npy(expected_dir / f)
    backend = args.backend or backend_or_default()
    placing = host_options(args)
    if placing and backend != "vulkan":
        raise TosaError(f"--host-ops / --partition move operators of the vulkan backend to the host; the {backend} "
                        "backend runs every operator on the host already")  # fmt: skip
    # Like tosa_reference_model: a desc.json's outputs go next to it (its ofm_files) unless told otherwise; not
    # with --compare, whose expected results may be those very files (a desc.json without expected_result_file)
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir is None and args.test_desc and not args.compare:
        out_dir = expected_dir
    start = time.perf_counter()
    quantized = qparams_options(args)
    model = load(model_path, backend=backend, **quantized, **placing, **timeout_options(args))
    feeds = synthetic(args, model, feeds)
    writes = Writes(args.overwrite)
    targets = {}  # output name -> its file, planned before the run: a refusal comes before any work
    io = graph_io(model)  # (a program-cache hit: from the Program, the .tosa not parsed)
    if out_dir:
        for name, file in output_files(model, io, out_files).items():
            targets[name] = writes.plan(confined(out_dir, file), name)
            output_folder(targets[name].parent)
    feeds = desc_inputs(args, io, feeds)
    if args.compare and io is not None and expected_dir is not None:
        expected_scales(io, expected_dir, expected_files, expected)
    if is_pte_model(model):  # an ExecuTorch program: delegates and host operators
        return _run_pte(model, feeds, args, start, targets, writes, expected, expected_files)
    if not isinstance(model, GraphModel):  # a VGF of compute segments only: run as it is
        return _run_vgf(model_path, model, feeds, args, start, out_dir, writes, targets)
    outputs = _outputs(model, feeds, args, writes)
    seconds = time.perf_counter() - start
    checked = load(model.graph, backend="reference", **quantized).run(feeds, cast=args.cast) if args.check else {}
    dtypes = {name: DType.of(spec.dtype) for name, spec in model.outputs.items()}  # a block-scaled one's scales too
    for name, qparams in model.output_qparams.items():  # dequantized: written and judged as float32
        if name in expected:
            expected[name] = dequantized_npy(expected[name], dtypes[name], qparams)
        dtypes[name] = DType.FP32
    failed = False
    for name, value in outputs.items():
        line = f"{name}: {list(value.shape)} {dtypes[name].name}"
        if name in targets:
            target = targets[name]
            writes.save(target, to_npy(value, dtypes[name]))
            line += f" -> {target}"
        verdicts = []
        if args.compare:
            if name in expected:
                want = from_npy(expected[name], dtypes[name])
                ok, _, _, how = judge(value, want, dtypes[name], args.tolerance)
                verdicts.append((ok, f"vs {expected_files[name]}: {how}"))
            else:
                verdicts.append((False, f"no expected result {expected_files.get(name) or '(not in desc.json)'}"))
        if name in checked:
            ok, _, _, how = judge(value, checked[name], dtypes[name], args.tolerance)
            verdicts.append((ok, f"vs reference backend: {how}"))
        for ok, how in verdicts:
            failed |= not ok
            line += f"; {'PASS' if ok else 'FAIL'} {how}"
        print(line)
        print_values(args, value)
    if backend == "vulkan":
        where = [p.where for p in model.placement]
        print(
            f"placement: {where.count('vulkan')} operators as Vulkan kernels, {where.count('fused')} fused into "
            f"them, {where.count('host')} on the host, {where.count('alias')} free aliases"
        )
        for p in model.placement if placing else ():
            if p.where == "host":
                print(f"host: {p.op}: {p.reason}")
    ran_on = backend
    if backend == "vulkan" and not any(p.where in ("vulkan", "fused") for p in model.placement):
        ran_on = "the host (vulkan backend, no operator placed on Vulkan)"
    print(f"{model_path}: ran on {ran_on} in {seconds * 1000:.1f} ms (load + first run)")
    return 1 if failed else 0


def _plan_dump(model, folder: Path, writes: Writes) -> dict[str, Path]:
    """--dump-intermediates' files, planned before the run: tensor name -> NNNN_<name>.npy (Model.capturable, in
    execution order: a .pte's delegate tensors "delegate_0/x" as NNNN_delegate_0%2Fx.npy), and index.json."""
    output_folder(folder)
    names = [t.name for t in model.capturable]
    files = {name: confined(folder, f"{i:04d}_{safe_name(name)}.npy") for i, name in enumerate(names)}
    for name, path in files.items():
        writes.plan(path, f"intermediate tensor {name!r}")
    writes.plan(confined(folder, "index.json"), "the intermediate tensors' index")
    return files


def _dump(tensors: dict[str, np.ndarray], model, folder: Path, files: dict[str, Path], writes: Writes) -> None:
    """--dump-intermediates: one .npy per tensor (the .npy dtype tosa_reference_model writes for its type; a .pte's
    host value as it is) and index.json: the tensors in execution order with their file, producer, shape and
    dtype."""
    from ...ir.dtype import to_npy

    index: list[dict] = []
    for t in model.capturable:
        target, value = files[t.name], np.asarray(tensors[t.name])
        writes.save(target, to_npy(value, t.dtype) if value.dtype == t.dtype.numpy else value)
        index.append(
            {"tensor": t.name, "file": target.name, "producer": t.producer,
             "shape": list(t.shape), "dtype": t.dtype.name}
        )  # fmt: skip
    writes.write(confined(folder, "index.json"), json.dumps(index, indent=1).encode())
    print(f"{len(index)} tensors written to {folder} (index.json lists them in execution order)")


def _outputs(model, feeds: dict, args, writes: Writes) -> dict:
    """One run's outputs; with --dump-intermediates every tensor is kept, returned and written (a graph's:
    tosa_vk/stages/capture.py; a .pte's: its host values and every delegate's tensors, PteModel.capturable)."""
    if not args.dump_intermediates:
        return model.run(feeds, cast=args.cast)
    dump = _plan_dump(model, Path(args.dump_intermediates), writes)
    outputs = model.run(feeds, cast=args.cast, capture="all")
    _dump(outputs, model, Path(args.dump_intermediates), dump, writes)
    return {name: outputs[name] for name in model.outputs}


def _run_pte(model, feeds: dict, args, start: float, targets: dict, writes: Writes, expected: dict,
             expected_files: dict) -> int:  # fmt: skip
    """`tosa-vk run model.pte`: the method's outputs (floats where the module returns floats), --compare against
    the desc.json's expected files (PyTorch eager's, from tosa_vk.from_torch(save=...)), --check against the
    reference backend; the placement: delegates' operators on the backend, host operators on the host."""
    from ...session import load

    with model:
        outputs = _outputs(model, feeds, args, writes)
        seconds = time.perf_counter() - start
        placement = model.placement
        checked = {}
        if args.check:
            with load(model.file, backend="reference") as reference:
                checked = reference.run(feeds, cast=args.cast)
        failed = False
        for name, value in outputs.items():
            line = f"{name}: {list(value.shape)} {value.dtype}"
            if name in targets:
                writes.save(targets[name], value)
                line += f" -> {targets[name]}"
            verdicts = []
            if args.compare:
                if name in expected:
                    want = np.asarray(expected[name])
                    bound, how = pte_bound(model, name, want, args.tolerance)
                    worst = (
                        float(np.max(np.abs(value.astype(np.float64) - want))) if want.shape == value.shape else None
                    )
                    ok = worst is not None and worst <= bound
                    text = f"max |diff| {worst:.3g}, {how}" if worst is not None else f"shape {list(want.shape)}"
                    verdicts.append((ok, f"vs {expected_files[name]}: {text}"))
                else:
                    verdicts.append((False, f"no expected result {expected_files.get(name) or '(not in desc.json)'}"))
            if name in checked:
                worst = float(np.max(np.abs(value.astype(np.float64) - checked[name])))
                bound, how = pte_bound(model, name, checked[name], args.tolerance)
                verdicts.append((worst <= bound, f"vs reference backend: max |diff| {worst:.3g}, {how}"))
            for ok, how in verdicts:
                failed |= not ok
                line += f"; {'PASS' if ok else 'FAIL'} {how}"
            print(line)
            print_values(args, value)
    where = [p.where for p in placement]
    host_ops = sum(p.reason.startswith("ExecuTorch host operator") for p in placement)
    print(
        f"placement: {len(model.delegates)} TOSA delegate(s) on {model.backend} ({where.count('vulkan')} Vulkan "
        f"kernels, {where.count('fused')} fused, {where.count('host') - host_ops} TOSA operators on the host), "
        f"{host_ops} ExecuTorch host operators on the host"
    )
    print(f"{model.file}: ran on {model.backend} in {seconds * 1000:.1f} ms (load + first run)")
    return 1 if failed else 0


def _run_vgf(
    path: Path, model, feeds: dict, args, start: float, out_dir: Path | None, writes: Writes, targets: dict
) -> int:
    """`tosa-vk run model.vgf` of COMPUTE segments only: run as they are on our Vulkan runtime
    (tosa_vk/formats/vgf_run.py).
    `targets`: each output's planned file (cmd_run). No graph: nothing for --check or --dump-intermediates."""
    given = [flag for flag, on in (("--check", args.check), ("--dump-intermediates", args.dump_intermediates)) if on]
    if given:
        model.close()
        raise TosaError(
            f"{given[0]} needs the TOSA graph, and a .vgf of COMPUTE segments only holds compiled kernels (a .vgf "
            "written with GRAPH segments, the default of `tosa-vk export`, has one)",
            file=str(path),
        )
    with model:
        outputs = model.run(feeds, cast=args.cast)
        dtypes = {name: dtype for name, (_, dtype) in model.outputs.items()}
    seconds = time.perf_counter() - start
    for name, value in outputs.items():
        line = f"{name}: {list(value.shape)} {dtypes[name]}"
        if name in targets:
            writes.save(targets[name], value)
            line += f" -> {targets[name]}"
        print(line)
        print_values(args, value)
    print(f"{path}: ran on vulkan in {seconds * 1000:.1f} ms (load + first run)")
    return 0


def run_arguments(p: argparse.ArgumentParser) -> None:
    model_arguments(p, "a .tosa, TOSA MLIR (.mlir / .mlirbc), .vgf or .pte file", "the model, inputs and output files")
    p.add_argument(
        "-o",
        "--output-dir",
        "--output_dir",
        dest="output_dir",
        help="write each output here as desc.json's ofm_file, else <name>.npy (default: the folder of desc.json, "
        "as tosa_reference_model does, except with --compare; without a desc.json: not written); " + FILE_NAMES,
    )
    overwrite_argument(p)
    p.add_argument(
        "--backend",
        choices=("vulkan", "reference"),
        help="default: vulkan when a Vulkan device exists (tosa-vk devices), else reference",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="compare with the expected results next to desc.json: its expected_result_file, else its ofm_file "
        "(needs --test-desc; read before anything is written)",
    )
    p.add_argument("--check", action="store_true", help="also run the reference backend and compare with it")
    p.add_argument(
        "--cast",
        action="store_true",
        help="convert inputs of another dtype kind instead of refusing (float into an integer input truncates: "
        "give --input-qparams to quantize)",
    )
    qparams_arguments(p)
    p.add_argument(
        "--tolerance",
        type=float,
        help="largest |diff| --compare / --check accept (default: integers and bools exact, floats within "
        "k x eps x (|want| + max |want|) per dtype: fp32 k=1024, fp16 8, bf16 4, fp8 2)",
    )
    p.add_argument(
        "--dump-intermediates",
        metavar="DIR",
        help="also write every intermediate tensor to DIR as NNNN_<name>.npy in execution order, with index.json "
        "(names as for outputs; a .pte: its host values and its delegates' tensors, delegate_N/<name>)",
    )
    host_arguments(p)

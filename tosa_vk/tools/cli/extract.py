"""`tosa-vk extract`: an ExecuTorch program's delegates as .tosa files, each with a desc.json in Arm's conformance
layout and, given the program's inputs, what the delegate received and produced in a run of the program.

For delegate N of model.pte, in the output folder:
    delegate_N.tosa                 the delegate's TOSA flatbuffer as the program stores it (a VGF delegate's GRAPH
                                    segments decoded and serialized)
    delegate_N.desc.json            tosa_file, ifm_name / ifm_file (its graph's inputs), ofm_name / ofm_file (where a
                                    run writes its outputs) and, after a run, expected_result_file
    delegate_N.input-K.npy          (with inputs) input K as the delegate received it in the program's run
    delegate_N.ref-result-K.npy     (with inputs) output K as the delegate produced it in that run
so `tosa-vk run --test-desc DIR/delegate_N.desc.json --compare` checks the delegate alone against its part of the
program's run. Every file is planned before the run: one that is there already is refused (unless --overwrite).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ...errors import TosaError
from .common import Writes, backend_or_default, confined, model_and_feeds, output_folder, synthetic
from .options import model_arguments, overwrite_argument, timeout_options

WHAT = {"tosa": "TOSA graph", "desc": "desc.json", "ifm": "input K", "expected": "result K in the program's run"}


def delegate_files(name: str, inputs: int, outputs: int) -> dict[str, list[str]]:
    """The files of delegate `name` (delegate_0): its .tosa, desc.json, inputs, results and expected results."""
    return {
        "tosa": [f"{name}.tosa"],
        "desc": [f"{name}.desc.json"],
        "ifm": [f"{name}.input-{k}.npy" for k in range(inputs)],
        "ofm": [f"{name}.result-{k}.npy" for k in range(outputs)],
        "expected": [f"{name}.ref-result-{k}.npy" for k in range(outputs)],
    }


def cmd_extract(args) -> int:
    from ...backends.pte import PteModel, delegate_name
    from ...ir.dtype import to_npy
    from ...session import load

    model_path, feeds, _, _ = model_and_feeds(args)
    backend = args.backend or backend_or_default()
    folder = Path(args.output_dir)
    with load(model_path, backend=backend, **timeout_options(args)) as model:
        if not isinstance(model, PteModel):
            raise TosaError(
                f"extract takes an ExecuTorch program (.pte), whose delegates it writes as .tosa files; this is a "
                f"{model.source_kind}",
                file=str(model_path),
            )
        feeds = synthetic(args, model, feeds)
        ran = bool(feeds)  # without inputs: the graphs and desc.json files only
        writes = Writes(args.overwrite)
        output_folder(folder)
        plans = []
        for i, delegate in enumerate(model.delegates):
            name = delegate_name(i)
            files = delegate_files(name, len(delegate.graph.inputs), len(delegate.graph.outputs))
            kinds = ("tosa", "desc", "ifm", "expected") if ran else ("tosa", "desc")
            for kind in kinds:
                for k, f in enumerate(files[kind]):
                    writes.plan(confined(folder, f), f"{name}'s {WHAT[kind]}".replace("K", str(k)))
            plans.append((name, delegate, files))
        captured = {}
        if ran:  # each delegate's inputs and outputs as it met them (no twin program: the run's own values)
            keep = [f"{name}/{t.name}" for name, d, _ in plans for t in (*d.graph.inputs, *d.graph.outputs)]
            captured = model.run(feeds, cast=args.cast, capture=keep)
        for i, (name, delegate, files) in enumerate(plans):
            writes.write(confined(folder, files["tosa"][0]), model.delegate_tosa(i))
            graph = delegate.graph
            desc = {
                "tosa_file": files["tosa"][0],
                "ifm_name": [t.name for t in graph.inputs],
                "ifm_file": files["ifm"],
                "ofm_name": [t.name for t in graph.outputs],
                "ofm_file": files["ofm"],
            }
            if ran:
                desc["expected_result_file"] = files["expected"]
                for tensors, kind in ((graph.inputs, "ifm"), (graph.outputs, "expected")):
                    for t, f in zip(tensors, files[kind]):
                        writes.save(confined(folder, f), to_npy(captured[f"{name}/{t.name}"], t.dtype))
            writes.write(confined(folder, files["desc"][0]), (json.dumps(desc, indent=1) + "\n").encode())
            signature = ", ".join(f"{t.name} {list(t.shape)} {t.dtype.name}" for t in graph.inputs)
            print(f"{folder / files['tosa'][0]}: {len(graph.main.operators)} operators; inputs {signature}")
    if not plans:
        print(f"{model_path}: no delegates (every operator runs on the host)")
    elif ran:
        print(f"each delegate's inputs and results in the program's run on {backend}: check one with")
        print(f"  tosa-vk run --test-desc {folder / plans[0][2]['desc'][0]} --compare")
    else:
        print("no inputs given (-i / --random / --test-desc): the desc.json files name input files not written")
    return 0


def extract_arguments(p: argparse.ArgumentParser) -> None:
    model_arguments(p, "an ExecuTorch program (.pte)", "the program and its inputs")
    p.add_argument("-o", "--output-dir", required=True, help="the folder to write the delegates' files to")
    p.add_argument(
        "--backend",
        choices=("vulkan", "reference"),
        help="the backend the program runs on for the delegates' inputs and results (default: vulkan when a Vulkan "
        "device exists, else reference)",
    )
    p.add_argument("--cast", action="store_true", help="convert inputs of another dtype kind instead of refusing")
    overwrite_argument(p)

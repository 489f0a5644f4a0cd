"""`tosa-vk export / vgf2tosa / import`: a model into a VGF file, a VGF's graph back to .tosa, a .tflite to .tosa."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ...store.files import write_atomic
from .common import Writes, read_vgf_file
from .options import overwrite_argument


def cmd_export(args) -> int:
    out = Path(args.output or Path(args.model).with_suffix(".vgf"))
    Writes(args.overwrite).plan(out, "the VGF")
    if args.segments == "graph":
        from ...formats.vgf_graph import export
        from ...ir import load_graph

        vgf = export(load_graph(args.model), file=args.model)
    else:
        from ...session import load

        with load(args.model, backend="vulkan", strict=True) as model:
            vgf = model.export_vgf()
    from vgf import write_vgf

    write_atomic(out, write_vgf(vgf), overwrite=args.overwrite, what="the VGF")
    kinds = [s.type for s in vgf.segments]
    print(
        f"{out}: {out.stat().st_size} bytes, {kinds.count('GRAPH')} graph and {kinds.count('COMPUTE')} compute "
        f"segments, {len(vgf.modules)} modules, {len(vgf.resources)} resources, {len(vgf.constants)} constants"
    )
    return 0


def cmd_vgf2tosa(args) -> int:
    from ...formats.vgf_graph import to_graph
    from ...ir.flatbuffer import save_graph

    out = Path(args.output or Path(args.model).with_suffix(".tosa"))
    Writes(args.overwrite).plan(out, "the TOSA graph")  # e.g. the .tosa this .vgf was exported from
    graph = to_graph(read_vgf_file(args.model), file=args.model)
    save_graph(graph, out, overwrite=args.overwrite)
    counts = graph.op_counts()
    print(f"{out}: {sum(counts.values())} operators ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    return 0


def cmd_import(args) -> int:
    """A TFLite model (or TOSA MLIR) as a .tosa file (tosa_vk/formats/tflite_import.py)."""
    from ...formats.tflite_import import TFLITE_IDENTIFIER, import_model, qparams_flags, tflite_qparams
    from ...ir import save_graph

    out = Path(args.output or Path(args.model).with_suffix(".tosa"))
    Writes(args.overwrite).plan(out, "the TOSA graph")
    start = time.perf_counter()
    graph = import_model(args.model, verbose=args.verbose)
    save_graph(graph, out, overwrite=args.overwrite)

    def signature(tensors) -> str:
        return ", ".join(f"{t.name} {list(t.shape)} {t.dtype.name}" for t in tensors)

    print(f"inputs: {signature(graph.inputs)}")
    print(f"outputs: {signature(graph.outputs)}")
    print(f"{args.model} -> {out}: {len(graph.main.operators)} operators in {time.perf_counter() - start:.2f} s")
    with open(args.model, "rb") as f:
        tflite = f.read(8)[4:8] == TFLITE_IDENTIFIER
    if tflite and any(t.dtype.name.startswith("INT") for t in graph.inputs + graph.outputs):
        flags = qparams_flags(*tflite_qparams(args.model))
        if flags:  # the TOSA graph does not carry them
            print(f"quantized I/O, float data in and out: tosa-vk run {out} {' '.join(flags)}")
    return 0


def import_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tflite file (or TOSA MLIR text .mlir / bytecode .mlirbc)")
    p.add_argument("-o", "--output", help="the .tosa to write (default: the model's name with .tosa)")
    overwrite_argument(p)
    p.add_argument("--verbose", action="store_true", help="show the converter's and tosa-opt's own messages")


def export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tosa file")
    p.add_argument("-o", "--output", help="the .vgf to write (default: the model's name with .vgf)")
    overwrite_argument(p)
    p.add_argument(
        "--segments",
        choices=("graph", "compute"),
        default="graph",
        help="graph: TOSA operators as SPIR-V graphs, as Arm's model-converter writes them (for VK_ARM_data_graph "
        "drivers, ExecuTorch's VGF runtime, the ML emulation layer); compute: tosa_vk's own compiled kernels "
        "(any Vulkan device, no ML extensions)",
    )


def vgf2tosa_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .vgf file")
    p.add_argument("-o", "--output", help="the .tosa to write (default: the model's name with .tosa)")
    overwrite_argument(p)

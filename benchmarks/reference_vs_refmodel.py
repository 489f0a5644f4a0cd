"""tosa_vk's numpy reference backend against Arm's C++ reference model (tosa-tools, in-process), same inputs,
interleaved runs, medians. Prints a markdown table of times and ratios; --json writes every sample.

    python benchmarks/reference_vs_refmodel.py [--repeats 7] [--json out.json]

Both sides are timed per run on an already-loaded graph where the API allows it: ours `Model.run` (the graph is
validated once at load), the reference model's `run(tosa_binary, inputs)`, which parses the flatbuffer each call
(its only API). Our load + first run is reported too.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tosa_vk  # noqa: E402
from tosa_vk.ir import write_graph  # noqa: E402
from tosa_vk.ir.dtype import from_npy  # noqa: E402


def conv2d_case():
    """CONV2D 1x64x64x32 -> 32, 3x3, pad 1, fp32."""
    rng = np.random.default_rng(0)
    b = tosa_vk.Builder()
    x = b.input("x", (1, 64, 64, 32), "fp32")
    w = rng.standard_normal((32, 3, 3, 32)).astype(np.float32)
    b.output(b.conv2d(x, w, np.zeros(32, np.float32), pad=(1, 1, 1, 1), name="y"))
    return "CONV2D 1x64x64x32->32 3x3 fp32", b.build(), {"x": rng.standard_normal((1, 64, 64, 32)).astype(np.float32)}


def model_cases():
    for folder in sorted((ROOT / "resources" / "models").iterdir()):
        desc = json.loads((folder / "desc.json").read_text())
        graph = tosa_vk.load_graph(folder / desc["tosa_file"])
        feeds = {n: from_npy(np.load(folder / f), graph.main.tensors[n].dtype)
                 for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
        yield folder.name, graph, feeds


def bench(name, graph, feeds, repeats):
    import tosa_reference_model as refmodel
    binary = write_graph(graph)
    ordered = [feeds[n] for n in graph.main.inputs]
    start = time.perf_counter()
    model = tosa_vk.load(graph, backend="reference")
    model.run(feeds)
    first = time.perf_counter() - start
    refmodel.run(binary, ordered)  # warm-up
    ours, theirs = [], []
    for _ in range(repeats):  # interleaved, so drift on a shared machine hits both alike
        t = time.perf_counter()
        model.run(feeds)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        _, status = refmodel.run(binary, ordered)
        theirs.append(time.perf_counter() - t)
    return {"case": name, "ours_s": ours, "refmodel_s": theirs, "ours_first_run_s": first,
            "refmodel_status": str(status)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", help="write all samples here")
    args = ap.parse_args(argv)
    results = [bench(*case, args.repeats) for case in [conv2d_case(), *model_cases()]]
    print(f"tosa_vk reference backend vs tosa_reference_model (tosa-tools), {platform.processor() or platform.machine()},"
          f" {time.strftime('%Y-%m-%d')}, median of {args.repeats}")
    print("| case | tosa_vk reference | tosa_reference_model | speed-up | tosa_vk load + first run |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        ours, theirs = statistics.median(r["ours_s"]), statistics.median(r["refmodel_s"])
        print(f"| {r['case']} | {ours * 1e3:.1f} ms | {theirs * 1e3:.1f} ms | {theirs / ours:.2f}x | "
              f"{r['ours_first_run_s'] * 1e3:.0f} ms |")
    if args.json:
        Path(args.json).write_text(json.dumps({"python": sys.version, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

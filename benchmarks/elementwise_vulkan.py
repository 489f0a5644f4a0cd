"""Element-wise and data-layout operators on tosa_vk's Vulkan backend against numpy, host memcpy bandwidth and
(when installed) Arm's ML SDK pipeline with the emulation layer — all measured in the same run, interleaved.

    python benchmarks/elementwise_vulkan.py [--repeats 9] [--device lavapipe] [--json out.json]

Reported per case: tosa_vk wall time per run (submit + wait, inputs written in place), its GPU time from timestamp
queries, numpy's time, the anchor's time, and the GPU bandwidth as a fraction of host memcpy bandwidth for the
same bytes (reads + writes).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tosa_vk  # noqa: E402

SHAPES = {"1x64x64x32": (1, 64, 64, 32), "16M": (16, 1024, 1024)}


def cases():
    for label, shape in SHAPES.items():
        for op in ("ADD", "MUL", "CLAMP", "TRANSPOSE"):
            b = tosa_vk.Builder()
            x = b.input("x", shape, "fp32")
            if op == "ADD":
                y = b.input("y", shape, "fp32")
                out, numpy_fn, inputs = b.add(x, y, name="z"), lambda f: f["x"] + f["y"], 2
            elif op == "MUL":
                y = b.input("y", shape, "fp32")
                out, numpy_fn, inputs = b.mul(x, y, np.array([0], np.int8), name="z"), lambda f: f["x"] * f["y"], 2
            elif op == "CLAMP":
                out, numpy_fn, inputs = b.clamp(x, min_val=-1.0, max_val=1.0, name="z"), \
                    lambda f: np.clip(f["x"], -1.0, 1.0), 1
            else:
                perms = tuple(reversed(range(len(shape))))
                out, numpy_fn, inputs = b.transpose(x, perms=perms, name="z"), \
                    lambda f, p=perms: np.ascontiguousarray(f["x"].transpose(p)), 1
            b.output(out)
            rng = np.random.default_rng(0)
            feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in ["x", "y"][:inputs]}
            nbytes = (inputs + 1) * int(np.prod(shape)) * 4
            yield f"{op} {label} fp32", b.build(), feeds, numpy_fn, nbytes


def memcpy_seconds(nbytes: int, repeats: int) -> float:
    src = np.ones(nbytes // 2, np.uint8)  # a copy reads half and writes half of the bytes moved
    dst = np.empty_like(src)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--device", default=None)
    ap.add_argument("--json")
    ap.add_argument("--no-anchor", action="store_true", help="skip Arm's SDK pipeline")
    args = ap.parse_args(argv)
    anchor_mod = None
    if not args.no_anchor:
        try:
            from benchmarks.anchors import arm_sdk as anchor_mod
            if anchor_mod.available() is not None:
                print(f"note: Arm SDK anchor skipped: {anchor_mod.available()}")
                anchor_mod = None
        except ImportError as err:
            print(f"note: Arm SDK anchor skipped: {err}")
    rows = []
    for name, graph, feeds, numpy_fn, nbytes in cases():
        model = tosa_vk.load(graph, backend="vulkan", device=args.device, strict=True, timestamps=True)
        anchor = None
        if anchor_mod is not None:
            import tempfile
            path = Path(tempfile.mkdtemp()) / "g.tosa"
            tosa_vk.save_graph(graph, path)
            anchor = anchor_mod.ArmSdkAnchor(path)
        model.run(feeds)
        numpy_fn(feeds)
        wall, gpu, ref, arm = [], [], [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            model.run(feeds)
            wall.append(time.perf_counter() - t)
            gpu.append(sum(s for _, s in model.profile()))
            t = time.perf_counter()
            numpy_fn(feeds)
            ref.append(time.perf_counter() - t)
            if anchor is not None:
                arm.extend(anchor.run(feeds)[1])
        model.close()
        if anchor is not None:
            anchor.close()
        copy = memcpy_seconds(nbytes, args.repeats)
        row = {"case": name, "wall_s": wall, "gpu_s": gpu, "numpy_s": ref, "arm_sdk_s": arm, "memcpy_s": copy,
               "bytes": nbytes}
        rows.append(row)
    print(f"tosa_vk Vulkan element-wise benchmark, {time.strftime('%Y-%m-%d')}, median of {args.repeats}")
    print("| case | tosa_vk wall | tosa_vk GPU | numpy | Arm SDK + emulation | vs Arm | GPU bandwidth / memcpy |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        wall, gpu, ref = (statistics.median(r[k]) for k in ("wall_s", "gpu_s", "numpy_s"))
        arm = statistics.median(r["arm_sdk_s"]) if r["arm_sdk_s"] else None
        arm_txt = f"{arm * 1e3:.2f} ms" if arm else "n/a"
        ratio = f"{arm / wall:.1f}x faster" if arm else "n/a"
        print(f"| {r['case']} | {wall * 1e3:.2f} ms | {gpu * 1e3:.2f} ms | {ref * 1e3:.2f} ms | {arm_txt} | {ratio} | "
              f"{r['memcpy_s'] / gpu:.0%} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Element-wise and data-layout operators on tosa_vk's Vulkan backend against numpy and Arm's ML SDK pipeline.
A preset of the benchmark engine (the installed package tosa_vk.tools.bench, `tosa-vk bench`); extra arguments are
passed on.

    .venv/bin/python benchmarks/elementwise_vulkan.py [--repeats 9] [--device lavapipe] [--out results/]
"""

from __future__ import annotations

import argparse
import sys

from tosa_vk.tools import bench

OPS = ("ADD", "MUL", "CLAMP", "SIGMOID", "TRANSPOSE", "CONCAT", "PAD")

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.add_arguments(ap)
    ap.set_defaults(suite="ops", backends="vulkan,numpy,arm_sdk")
    args = ap.parse_args()
    keep = [c for c in bench.op_cases(args.quick) if c.info["op"] in OPS]
    sys.exit(bench.main_from_args(args, cases=keep))

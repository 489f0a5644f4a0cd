"""tosa_vk's numpy reference backend against Arm's C++ reference model (tosa-tools, in-process), same inputs,
interleaved runs. A preset of the benchmark engine (the installed package tosa_vk.tools.bench, `tosa-vk bench`): the
CONV2D cases and the shipped models on backends reference and refmodel; the table's "ref x refmodel" column is the
speed-up.

    .venv/bin/python benchmarks/reference_vs_refmodel.py [--repeats 7] [--out results/]
"""

from __future__ import annotations

import argparse
import sys

from tosa_vk.tools import bench

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.add_arguments(ap)
    ap.set_defaults(backends="reference,refmodel")
    args = ap.parse_args()
    cases = [c for c in bench.op_cases(args.quick) if c.info["op"] == "CONV2D"]
    sys.exit(bench.main_from_args(args, cases=cases + bench.model_cases(args.models or bench.default_models())))

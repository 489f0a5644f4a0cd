"""What GPU-tool labels cost (issue 39): each shipped model loaded twice in one process, with VK_EXT_debug_utils
labels and names (the default) and with TOSA_VK_DEBUG_LABELS=0; steady runs interleaved run by run (which goes
first swapped every round): medians of the per-run times and of the ratios of adjacent pairs (what a busy machine's
noise disturbs least); loads interleaved too; outputs compared byte for byte.

    .venv/bin/python benchmarks/debug_labels.py [--rounds 5] [--runs 20] [--json] [models ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["mobilenetv2_fp32", "resnet_int8", "lstm_unrolled_fp32"]


def _load(folder: Path, labels: bool | None):  # labels=None: off too (the A/A control's second model)
    import tosa_vk
    from tosa_vk.vulkan import labels as debug_labels

    os.environ[debug_labels.ENV] = "1" if labels else "0"
    labels = bool(labels)
    start = time.perf_counter()
    model = tosa_vk.load(str(folder / "model.tosa"), backend="vulkan")
    seconds = time.perf_counter() - start
    assert (getattr(model, "device").labels is not None) == labels  # noqa: B009 - the Vulkan backend's
    return model, seconds


def measure(name: str, rounds: int, runs: int, control: bool = False) -> dict:
    """`control`: both models without labels (an A/A run: the ratios then show the machine's noise)."""
    folder = ROOT / "resources" / "models" / name
    desc = json.loads((folder / "desc.json").read_text())
    feeds = {n: np.load(folder / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
    loads: dict[bool, list[float]] = {True: [], False: []}
    times: dict[bool, list[float]] = {True: [], False: []}
    outputs: dict[bool, dict] = {}
    models: dict[bool, Any] = {}
    for _ in range(2):  # loads interleaved (the second pair finds Mesa's shader cache warm)
        for labels in (True, False):
            if labels in models:
                models[labels].close()
            models[labels], seconds = _load(folder, None if control and labels else labels)
            loads[labels].append(seconds)
    try:
        for labels, model in models.items():
            outputs[labels] = model.run(**feeds)
            for _ in range(3):  # warm
                model.run(**feeds)
        for r in range(rounds):  # run by run, alternating, the first of each pair swapped every round
            order = (True, False) if r % 2 == 0 else (False, True)
            for _ in range(runs):
                for labels in order:
                    start = time.perf_counter()
                    models[labels].run(**feeds)
                    times[labels].append(time.perf_counter() - start)
        kernels = sum(len(seg.dispatches) for seg in models[True].runtime.segments)
    finally:
        for model in models.values():
            model.close()
    same = outputs[True].keys() == outputs[False].keys() and all(
        outputs[True][k].tobytes() == outputs[False][k].tobytes() for k in outputs[True]
    )
    on, off = statistics.median(times[True]) * 1e3, statistics.median(times[False]) * 1e3
    paired = statistics.median(a / b for a, b in zip(times[True], times[False]))
    return {
        "model": name + (" (A/A control)" if control else ""),
        "kernels": kernels,
        "run_ms_labels": round(on, 3),
        "run_ms_off": round(off, 3),
        "ratio": round(on / off, 3),
        "paired_ratio": round(paired, 3),
        "warm_load_s_labels": round(loads[True][-1], 3),
        "warm_load_s_off": round(loads[False][-1], 3),
        "bit_identical": same,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--control", action="store_true", help="also an A/A run per model: both without labels")
    args = parser.parse_args()
    rows = [
        measure(m, args.rounds, args.runs, control)
        for m in args.models
        for control in ((False, True) if args.control else (False,))
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        "| model | kernels | run ms, labels | run ms, off | ratio | paired ratio | load s, labels / off | identical |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['kernels']} | {r['run_ms_labels']} | {r['run_ms_off']} | {r['ratio']} | "
            f"{r['paired_ratio']} | "
            f"{r['warm_load_s_labels']} / {r['warm_load_s_off']} | {r['bit_identical']} |"
        )


if __name__ == "__main__":
    main()

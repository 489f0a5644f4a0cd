"""A stateful RNN cell: h_t = tanh(x_t W + h_(t-1) U + b), whose hidden state h is a TOSA variable (EXT-VARIABLE)
that persists across run() calls of one session: on Vulkan it stays in device memory, so each step moves only
x_t in and h_t out.

    python resources/examples/rnn_cell.py [--steps 100] [--save rnn_cell.tosa]

runs the cell on Vulkan and on the reference backend side by side and prints the largest difference and the bytes
that crossed between host and device per step.
"""

from __future__ import annotations

import argparse

import numpy as np

import tosa_vk
from tosa_vk.ir import Graph

INPUTS, HIDDEN = 16, 32


def build(seed: int = 0) -> Graph:
    rng = np.random.default_rng(seed)
    b = tosa_vk.Builder()
    x = b.input("x", (1, 1, INPUTS), "fp32")
    h = b.variable("h", (1, 1, HIDDEN), "fp32", np.zeros((1, 1, HIDDEN), np.float32))
    w = b.const((rng.standard_normal((1, INPUTS, HIDDEN)) / np.sqrt(INPUTS)).astype(np.float32), name="W")
    u = b.const((rng.standard_normal((1, HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32), name="U")
    bias = b.const((0.1 * rng.standard_normal((1, 1, HIDDEN))).astype(np.float32), name="b")
    pre = b.add(b.add(b.matmul(x, w), b.matmul(b.variable_read(h), u)), bias)
    h_next = b.tanh(pre, name="h_next")
    b.variable_write(h, h_next)
    b.output(h_next)
    return b.build()


def compare(steps: int = 100, seed: int = 0, **vulkan_options) -> dict:
    """Runs `steps` steps on both backends; returns the largest difference and the bytes per Vulkan step."""
    graph = build()
    xs = np.random.default_rng(seed + 1).standard_normal((steps, 1, 1, INPUTS)).astype(np.float32)
    reference = tosa_vk.load(graph, backend="reference")
    worst, moved = 0.0, []
    with tosa_vk.load(graph, backend="vulkan", **vulkan_options) as model:
        for x in xs:
            got, want = model.run(x=x)["h_next"], reference.run(x=x)["h_next"]
            worst = max(worst, float(np.max(np.abs(got - want))))
            moved.append(model.transferred)
        final = model.variables["h"]
    return {
        "steps": steps,
        "max_abs_diff": worst,
        "bytes_per_step": moved,
        "final_state": final,
        "reference_state": reference.variables["h"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--save", help="also write the graph as a .tosa file")
    args = parser.parse_args()
    if args.save:
        from tosa_vk.ir.flatbuffer import save_graph

        save_graph(build(), args.save)
    result = compare(args.steps)
    per_step = result["bytes_per_step"][-1]
    print(
        f"{result['steps']} steps: max |vulkan - reference| = {result['max_abs_diff']:.3g}; "
        f"per step {per_step['to_device']} bytes to the device, {per_step['from_device']} bytes back "
        f"(x is {INPUTS * 4} bytes, h {HIDDEN * 4} bytes)"
    )


if __name__ == "__main__":
    main()

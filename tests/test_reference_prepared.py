"""The reference backend's prepared operators (tosa_vk/reference/prepared.py) compute exactly what the chapter
functions compute: bit-identical results with and without them, special values included."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder
from tosa_vk.reference.executor import Interpreter
from tosa_vk.reference.prepared import PREPARED

MODELS = Path(__file__).parent.parent / "resources" / "models"
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-40, 3.4e38, -3.4e38, 88.7, -104.0], np.float32)


def special_values(rng, shape) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32) * 4
    flat = x.reshape(-1)
    flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return x


def run(graph, feeds, prepare: bool) -> tuple[dict[str, np.ndarray], list[str]]:
    interpreter = Interpreter(graph, prepare=prepare)
    out = interpreter.run(feeds)
    prepared = [s.label for s in interpreter._prepared(graph.main)[1] if s.run is not None]
    return out, prepared


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def every_prepared_operator(rng, nan_mode="PROPAGATE"):
    b = Builder()
    x = b.input("x", (2, 3, 4, 8), "fp32")
    y = b.input("y", (2, 1, 4, 8), "fp32")
    outs = [b.add(x, y), b.sub(y, x), b.mul(x, y), b.sigmoid(x), b.tanh(y)]
    outs += [b.maximum(x, y, nan_mode=nan_mode), b.minimum(y, x, nan_mode=nan_mode)]
    s = b.slice(x, [1, 0, 1, 2], [1, 3, 2, 5])
    outs += [s, b.concat([x, b.reshape(b.tanh(x), [2, 3, 4, 8])], axis=3)]
    w = rng.standard_normal((6, 1, 1, 8)).astype(np.float32)
    outs.append(b.conv2d(x, w, rng.standard_normal(6).astype(np.float32), np.float32(0), np.float32(0)))
    b.output(*outs)
    return b.build(), {"x": special_values(rng, (2, 3, 4, 8)), "y": special_values(rng, (2, 1, 4, 8))}


@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_prepared_operators_are_bit_identical(nan_mode):
    graph, feeds = every_prepared_operator(np.random.default_rng(4), nan_mode)
    fast, done = run(graph, feeds, True)
    slow, none = run(graph, feeds, False)
    assert not none and {label.split()[0] for label in done} == set(PREPARED), done
    for name in slow:
        assert same_bits(fast[name], slow[name]), name


def test_what_is_not_static_runs_the_chapter_function():
    """A MUL shift or CONV2D weights given at run time, int32 operands: no prepared closure."""
    b = Builder()
    x = b.input("x", (1, 2, 2, 4), "fp32")
    w = b.input("w", (3, 1, 1, 4), "fp32")
    q = b.input("q", (1, 2, 2, 4), "int32")
    b.output(b.conv2d(x, w, np.zeros(3, np.float32), np.float32(0), np.float32(0)), b.add(q, q))
    rng = np.random.default_rng(1)
    feeds = {"x": special_values(rng, (1, 2, 2, 4)), "w": rng.standard_normal((3, 1, 1, 4)).astype(np.float32),
             "q": rng.integers(-50, 50, (1, 2, 2, 4)).astype(np.int32)}  # fmt: skip
    (fast, done), (slow, _) = run(b.build(), feeds, True), run(b.build(), feeds, False)
    assert done == []
    for name in slow:
        assert same_bits(fast[name], slow[name]), name


@pytest.mark.parametrize("model", ["lstm_unrolled_fp32", "mobilenetv2_fp32"])
def test_shipped_models_bit_identical(model):
    folder = MODELS / model
    desc = json.loads((folder / "desc.json").read_text())
    feeds = {n: np.load(folder / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
    graph = tosa_vk.load_graph(folder / "model.tosa")
    (fast, done), (slow, _) = run(graph, feeds, True), run(graph, feeds, False)
    assert done
    for name in slow:
        assert same_bits(fast[name], slow[name]), name

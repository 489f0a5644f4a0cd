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


def integer_operators(rng, double_round=False):
    """int8 / int32 operators as quantized graphs have them: RESCALE (per channel, to int8 / int16 / int32), TABLE,
    int32 arithmetic, an int8 fully connected CONV2D, TRANSPOSE."""
    b = Builder()
    x = b.input("x", (2, 3, 8), "int8")
    y = b.input("y", (2, 3, 8), "int32")

    def rescale(v, out, per_channel, zp=0):
        n = 8 if per_channel else 1
        m = rng.integers(1 << 29, 1 << 31, n).astype(np.int32)
        zps = {"int8": np.int8, "int16": np.int16, "int32": np.int32}
        in_zp = np.array([rng.integers(-9, 9) if v.dtype.name == "INT8" else 0], zps[v.dtype.name.lower()])
        return b.rescale(v, m, rng.integers(30, 40, n).astype(np.int8), b.const(in_zp),
                         b.const(np.array([zp], zps[out])), scale32=True, per_channel=per_channel, out_dtype=out,
                         rounding_mode="DOUBLE_ROUND" if double_round else "SINGLE_ROUND")  # fmt: skip

    wide = rescale(x, "int32", True)
    outs = [b.add(wide, y), b.sub(y, wide), b.mul(wide, y), b.maximum(wide, y), b.minimum(y, wide)]
    outs += [
        rescale(y, "int8", True, 5),
        rescale(y, "int16", False),
        b.table(x, _i8(rng, 256)),
        b.transpose(x, perms=[2, 0, 1]),
    ]
    w = _i8(rng, 6, 1, 1, 8)
    c = b.conv2d(b.reshape(x, [1, 6, 1, 8]), w, rng.integers(-999, 999, 6).astype(np.int32), np.int8(3), np.int8(0))
    outs.append(c)
    b.output(*outs)
    return b.build(), {"x": _i8(rng, 2, 3, 8), "y": rng.integers(-30000, 30000, (2, 3, 8)).astype(np.int32)}


def _i8(rng, *shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_prepared_operators_are_bit_identical(nan_mode):
    rng = np.random.default_rng(4)
    covered = set()
    for graph, feeds in (every_prepared_operator(rng, nan_mode), integer_operators(rng, nan_mode == "IGNORE")):
        fast, done = run(graph, feeds, True)
        slow, none = run(graph, feeds, False)
        assert not none
        covered |= {label.split()[0] for label in done}
        for name in slow:
            assert same_bits(fast[name], slow[name]), name
    assert covered == set(PREPARED)


def test_a_require_that_fails_is_reported_as_before():
    """An int32 ADD overflowing: the prepared closure hands it to the chapter function, same error."""
    b = Builder()
    x = b.input("x", (4,), "int32")
    b.output(b.add(x, x))
    feeds = {"x": np.array([1, 2, 2**30, 2**31 - 1], np.int32)}
    messages = []
    for prepare in (True, False):
        with pytest.raises(tosa_vk.TosaError) as err:
            Interpreter(b.build(), prepare=prepare).run(feeds)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "REQUIRE" in messages[0]


def test_what_is_not_static_runs_the_chapter_function():
    """CONV2D weights given at run time, an int32 MUL with a shift: no prepared closure."""
    b = Builder()
    x = b.input("x", (1, 2, 2, 4), "fp32")
    w = b.input("w", (3, 1, 1, 4), "fp32")
    q = b.input("q", (1, 2, 2, 4), "int32")
    b.output(b.conv2d(x, w, np.zeros(3, np.float32), np.float32(0), np.float32(0)), b.mul(q, q, np.array([2], np.int8)))
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

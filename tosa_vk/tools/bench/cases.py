"""The benchmark cases: the op suite (one operator per graph, built with tosa_vk.Builder, with a numpy equivalent
where one line of numpy does it) and model files (inputs from a conformance-style desc.json next to them, else
seeded random)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

# The shipped example models of a source checkout (resources/ is not part of the wheel).
MODELS_DIR = Path(__file__).resolve().parents[3] / "resources" / "models"

# The op suite: (op, dtype, input shape, options, in --quick). Built by build_op below.
S, L = (1, 64, 64, 32), (1, 256, 256, 64)  # 131k and 4M elements
OP_CASES = [
    ("ADD", "fp32", S, {}, True),
    ("ADD", "fp32", L, {}, False),
    ("ADD", "fp16", S, {}, False),
    ("ADD", "int32", S, {}, False),
    ("MUL", "fp32", S, {}, False),
    ("MUL", "fp32", L, {}, False),
    ("CLAMP", "fp32", S, {}, False),
    ("CLAMP", "int8", S, {}, False),
    ("CLAMP", "fp16", L, {}, False),
    ("SIGMOID", "fp32", S, {}, True),
    ("SIGMOID", "fp16", S, {}, False),
    ("SIGMOID", "fp32", L, {}, False),
    ("REDUCE_SUM", "fp32", S, {"axis": 3}, True),
    ("REDUCE_SUM", "int32", S, {"axis": 1}, False),
    ("REDUCE_SUM", "fp32", L, {"axis": 3}, False),
    ("TRANSPOSE", "fp32", S, {}, True),
    ("TRANSPOSE", "int8", L, {}, False),
    ("CONCAT", "fp32", S, {}, False),
    ("CONCAT", "int8", S, {}, False),
    ("PAD", "fp32", S, {}, False),
    ("PAD", "int8", S, {}, False),
    ("CONV2D", "fp32", (1, 32, 32, 16), {"oc": 16, "k": 3}, True),
    ("CONV2D", "fp32", S, {"oc": 32, "k": 3}, False),
    ("CONV2D", "fp16", (1, 32, 32, 16), {"oc": 16, "k": 3}, False),
    ("CONV2D", "int8", (1, 32, 32, 16), {"oc": 16, "k": 3}, True),
    ("CONV2D", "int8", S, {"oc": 32, "k": 3}, False),
    ("DEPTHWISE_CONV2D", "fp32", S, {"k": 3}, False),
    ("DEPTHWISE_CONV2D", "int8", S, {"k": 3}, False),
    ("TRANSPOSE_CONV2D", "fp32", (1, 16, 16, 16), {"oc": 16, "k": 3}, False),
    ("TRANSPOSE_CONV2D", "int8", (1, 16, 16, 16), {"oc": 16, "k": 3}, False),
    ("MATMUL", "fp32", (1, 128, 128), {}, True),
    ("MATMUL", "fp32", (1, 256, 256), {}, False),
    ("MATMUL", "fp16", (1, 128, 128), {}, False),
    ("MATMUL", "int8", (1, 128, 128), {}, False),
    ("AVG_POOL2D", "fp32", S, {}, False),
    ("AVG_POOL2D", "int8", S, {}, False),
    ("MAX_POOL2D", "fp32", S, {}, True),
    ("MAX_POOL2D", "int8", S, {}, False),
]


@dataclass
class Case:
    name: str
    suite: str  # "ops" | "models"
    make: Callable[[], tuple]  # -> (Graph, feeds, numpy_fn or None, tosa path or None)
    info: dict = field(default_factory=dict)


def _random(rng, shape, dtype: str) -> np.ndarray:
    if dtype.startswith(("int", "uint")):
        lo, hi = {"int8": (-128, 128), "int16": (-1000, 1000), "int32": (-100000, 100000)}[dtype]
        return rng.integers(lo, hi, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype({"fp32": np.float32, "fp16": np.float16}[dtype])


def _windows(x, k, stride=1, pad=0):
    """NHWC -> (N, OH, OW, C, k, k) sliding windows (a view), for numpy pooling / convolution."""
    if pad:
        x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))[:, ::stride, ::stride]


def build_op(op: str, dtype: str, shape: tuple, opts: dict):
    """One operator as a graph: (Graph, feeds, numpy equivalent of feeds -> output or None, None)."""
    from ...builder import Builder

    rng = np.random.default_rng(0)
    b, feeds = Builder(), {}

    def inp(name, shp, dt=dtype):
        feeds[name] = _random(rng, shp, dt)
        return b.input(name, shp, dt)

    def const(shp, dt):
        return _random(rng, shp, dt)

    acc = "int32" if dtype == "int8" else dtype
    x = inp("x", shape)
    fn = None
    if op in ("ADD", "MUL"):
        y = inp("y", shape)
        out = b.add(x, y) if op == "ADD" else b.mul(x, y)
        fn = (lambda f: f["x"] + f["y"]) if op == "ADD" else (lambda f: f["x"] * f["y"])
    elif op == "CLAMP":
        lo, hi = (-50, 50) if dtype == "int8" else (-1.0, 1.0)
        out, fn = b.clamp(x, min_val=lo, max_val=hi), lambda f: np.clip(f["x"], lo, hi)
    elif op == "SIGMOID":
        out, fn = b.sigmoid(x), lambda f: (1 / (1 + np.exp(-f["x"].astype(np.float32)))).astype(f["x"].dtype)
    elif op == "REDUCE_SUM":
        axis = opts["axis"]
        out, fn = b.reduce_sum(x, axis=axis), lambda f: f["x"].sum(axis=axis, keepdims=True, dtype=f["x"].dtype)
    elif op == "TRANSPOSE":
        perms = (0, 3, 1, 2)
        out, fn = b.transpose(x, perms=perms), lambda f: np.ascontiguousarray(f["x"].transpose(perms))
    elif op == "CONCAT":
        y = inp("y", shape)
        out, fn = b.concat([x, y], axis=3), lambda f: np.concatenate([f["x"], f["y"]], axis=3)
    elif op == "PAD":
        out = b.pad(x, [0, 0, 1, 1, 1, 1, 0, 0])
        fn = lambda f: np.pad(f["x"], ((0, 0), (1, 1), (1, 1), (0, 0)))  # noqa: E731
    elif op == "CONV2D":
        k, w, bias = opts["k"], const((opts["oc"], opts["k"], opts["k"], shape[3]), dtype), const((opts["oc"],), acc)
        out = b.conv2d(x, w, bias, pad=(k // 2,) * 4)
        wide = np.int32 if dtype == "int8" else np.float32

        def fn(f):
            return (
                np.tensordot(
                    _windows(f["x"].astype(wide), k, pad=k // 2),
                    w.astype(wide),
                    axes=([3, 4, 5], [3, 1, 2]),
                )
                + bias
            ).astype(bias.dtype)
    elif op == "DEPTHWISE_CONV2D":
        k, w, bias = opts["k"], const((opts["k"], opts["k"], shape[3], 1), dtype), const((shape[3],), acc)
        out = b.depthwise_conv2d(x, w, bias, pad=(k // 2,) * 4)
        wide = np.int32 if dtype == "int8" else np.float32

        def fn(f):
            return (
                np.einsum(
                    "nhwcij,ijc->nhwc",
                    _windows(f["x"].astype(wide), k, pad=k // 2),
                    w[..., 0].astype(wide),
                )
                + bias
            ).astype(bias.dtype)
    elif op == "TRANSPOSE_CONV2D":
        w, bias = const((opts["oc"], opts["k"], opts["k"], shape[3]), dtype), const((opts["oc"],), acc)
        out = b.transpose_conv2d(x, w, bias, stride=(2, 2))
    elif op == "MATMUL":
        n, h, c = shape
        y = inp("y", (n, c, h))
        out = b.matmul(x, y)
        wide = np.int32 if dtype == "int8" else np.float32
        fn = lambda f: (f["x"].astype(wide) @ f["y"].astype(wide)).astype(  # noqa: E731
            np.int32 if dtype == "int8" else f["x"].dtype
        )
    elif op == "AVG_POOL2D":
        out = b.avg_pool2d(x, kernel=(2, 2), stride=(2, 2))
        if dtype != "int8":  # int8 average pooling rounds as the spec says; no one-line numpy equivalent
            fn = lambda f: _windows(f["x"], 2, 2).mean(axis=(-2, -1), dtype=np.float32).astype(f["x"].dtype)  # noqa
    elif op == "MAX_POOL2D":
        out, fn = b.max_pool2d(x, kernel=(2, 2), stride=(2, 2)), lambda f: _windows(f["x"], 2, 2).max(axis=(-2, -1))
    else:
        raise ValueError(f"no benchmark builder for {op}")
    b.output(out)
    return b.build(), feeds, fn, None


def op_cases(quick: bool = False) -> list[Case]:
    cases = []
    for op, dtype, shape, opts, in_quick in OP_CASES:
        if quick and not in_quick:
            continue
        extra = "".join(f" {k}{v}" for k, v in opts.items())
        name = f"{op} {'x'.join(map(str, shape))}{extra} {dtype}"
        cases.append(
            Case(
                name,
                "ops",
                partial(build_op, op, dtype, shape, opts),
                {"op": op, "dtype": dtype, "shape": list(shape), **opts},
            )
        )
    return cases


def default_models() -> list[Path]:
    return sorted(MODELS_DIR.glob("*/model.tosa"))


def model_cases(paths: Sequence[str | Path]) -> list[Case]:
    return [Case(_model_name(Path(p)), "models", partial(_load_model, Path(p)), {"file": str(p)}) for p in paths]


def _model_name(path: Path) -> str:
    return path.parent.name if path.stem == "model" else path.stem


def _load_model(path: Path):
    """The graph with the inputs of a desc.json next to it (conformance layout), else seeded random inputs. An
    ExecuTorch program (.pte) is passed on as its path (tosa_vk.load runs it) with its desc.json's inputs."""
    from ...ir import load_graph
    from ...ir.dtype import from_npy
    from ...session import is_pte

    if is_pte(path):
        return str(path), _pte_feeds(path), None, path

    graph = load_graph(path)
    desc_path = path.parent / "desc.json"
    desc = json.loads(desc_path.read_text()) if desc_path.is_file() else {}
    if desc.get("tosa_file") == path.name:
        feeds = {
            n: from_npy(np.load(path.parent / f), graph.main.tensors[n].dtype)
            for n, f in zip(desc["ifm_name"], desc["ifm_file"])
        }
    else:
        rng = np.random.default_rng(0)
        feeds = {t.name: _random(rng, t.shape, t.dtype.name.lower()) for t in graph.inputs}
    return graph, feeds, None, path


def _pte_feeds(path: Path) -> dict[str, np.ndarray]:
    """A .pte's inputs: a desc.json's next to it, else seeded random floats in the method's shapes."""
    desc_path = path.parent / "desc.json"
    desc = json.loads(desc_path.read_text()) if desc_path.is_file() else {}
    if desc.get("tosa_file") == path.name:
        return {n: np.load(path.parent / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
    from ...formats.pte import load_program
    from ...formats.pte.program import TensorValue

    plan = load_program(path)[0]
    rng = np.random.default_rng(0)
    values = [plan.values[i] for i in plan.inputs]
    # tensors only: an int / float / bool input takes the value the program was exported with (Model.run fills it)
    return {
        f"input_{i}": rng.standard_normal(v.sizes).astype(v.dtype)
        for i, v in enumerate(values)
        if isinstance(v, TensorValue)
    }


def select_cases(suite: str | None, models: list[str], quick: bool) -> list[Case]:
    """--suite ops | models | all; --quick: the marked op cases and the smallest shipped model."""
    suite = suite or ("models" if models else "all")
    cases = op_cases(quick) if suite in ("ops", "all") else []
    if suite in ("models", "all"):
        paths = [Path(m) for m in models] or default_models()
        if quick and not models:
            paths = sorted(paths, key=lambda p: p.stat().st_size)[:1]
        cases += model_cases(paths)
    return cases

"""Model graphs built with the Builder, for the model benchmarks beyond the shipped ExecuTorch exports (ExecuTorch
does not install here): the shapes and operator mixes its Arm backend produces for a transformer block (fp32 and
int8: RESCALE around every integer operator, TABLE for non-linearities), a GRU and a quantized LSTM unrolled over
time (1x1 CONV2D as the fully connected layers, SLICE per gate), and a ResNet in fp32. Weights and inputs are
seeded random values scaled to keep activations in range; `write(folder)` saves each as <name>/model.tosa for
`tosa-vk bench`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...builder import Builder, Value
from ...ir.graph import Graph

Feeds = dict[str, np.ndarray]


def _f32(rng, *shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _i8(rng, *shape) -> np.ndarray:
    return rng.integers(-127, 128, shape).astype(np.int8)


def _fc(b: Builder, rng, x: Value, cin: int, cout: int, shape) -> Value:
    """x [..., cin] -> [..., cout] as ExecuTorch writes a linear layer: RESHAPE to NHWC, 1x1 CONV2D, RESHAPE."""
    rows = int(np.prod(shape[:-1]))
    y = b.conv2d(b.reshape(x, [1, rows, 1, cin]), _f32(rng, cout, 1, 1, cin, scale=cin**-0.5), _f32(rng, cout),
                 np.float32(0), np.float32(0))  # fmt: skip
    return b.reshape(y, [*shape[:-1], cout])


def _layer_norm(b: Builder, x: Value, dim: int) -> Value:
    mean = b.mul(b.reduce_sum(x, axis=2), np.full((1, 1, 1), 1 / dim, np.float32))
    centered = b.sub(x, mean)
    var = b.mul(b.reduce_sum(b.mul(centered, centered), axis=2), np.full((1, 1, 1), 1 / dim, np.float32))
    return b.mul(centered, b.rsqrt(b.add(var, np.full((1, 1, 1), 1e-5, np.float32))))


def transformer_fp32(rng) -> tuple[Graph, Feeds]:
    """A pre-norm transformer encoder block: seq 32, dim 64, 4 heads, FFN 128 (GELU as x * sigmoid(1.702 x))."""
    s, d, h, f = 32, 64, 4, 128
    hd = d // h
    b = Builder()
    x = b.input("x", (1, s, d), "fp32")
    n = _layer_norm(b, x, d)
    q, k, v = (b.transpose(b.reshape(_fc(b, rng, n, d, d, (1, s, d)), [s, h, hd]), perms=[1, 0, 2]) for _ in "qkv")
    scores = b.mul(b.matmul(q, b.transpose(k, perms=[0, 2, 1]), np.float32(0), np.float32(0)),
                   np.full((1, 1, 1), hd**-0.5, np.float32))  # fmt: skip
    e = b.exp(b.sub(scores, b.reduce_max(scores, axis=2)))
    attn = b.mul(e, b.reciprocal(b.reduce_sum(e, axis=2)))
    ctx = b.reshape(b.transpose(b.matmul(attn, v, np.float32(0), np.float32(0)), perms=[1, 0, 2]), [1, s, d])
    x = b.add(x, _fc(b, rng, ctx, d, d, (1, s, d)))
    u = _fc(b, rng, _layer_norm(b, x, d), d, f, (1, s, f))
    u = b.mul(u, b.sigmoid(b.mul(u, np.full((1, 1, 1), 1.702, np.float32))))
    b.output(b.add(x, _fc(b, rng, u, f, d, (1, s, d))))
    return b.build(), {"x": _f32(rng, 1, s, d)}


_ZP = {"int8": np.int8, "int16": np.int16, "int32": np.int32}  # a RESCALE's zero points are of its types


class _Quant:
    """int8 helpers in the shape ExecuTorch's Arm backend writes them: RESCALE int8 -> int32 before integer
    arithmetic, RESCALE int32 -> int8 after, TABLE for non-linear functions."""

    def __init__(self, b: Builder, rng):
        self.b, self.rng = b, rng

    def rescale(self, x: Value, scale: float, out: str, izp: int = 0, ozp: int = 0) -> Value:
        shift = 30
        multiplier = np.array([int(round(scale * (1 << shift)))], np.int32)
        in_zp = np.array([izp], _ZP[x.dtype.name.lower()])
        out_zp = np.array([ozp], _ZP[out])
        return self.b.rescale(x, multiplier, np.array([shift], np.int8), self.b.const(in_zp), self.b.const(out_zp),
                              scale32=True, rounding_mode="SINGLE_ROUND", per_channel=False, out_dtype=out)  # fmt: skip

    def fc(self, x: Value, cin: int, cout: int, shape) -> Value:
        """int8 linear layer: 1x1 CONV2D with int32 bias, then a per-channel RESCALE back to int8."""
        b, rows = self.b, int(np.prod(shape[:-1]))
        y = b.conv2d(b.reshape(x, [1, rows, 1, cin]), _i8(self.rng, cout, 1, 1, cin),
                     self.rng.integers(-500, 500, cout).astype(np.int32), np.int8(0), np.int8(0))  # fmt: skip
        multiplier = self.rng.integers(1 << 29, 1 << 30, cout).astype(np.int32)
        shift = np.full(cout, 37 + int(np.ceil(np.log2(cin) / 2)), np.int8)  # outputs' spread ~ 40
        y = b.rescale(y, multiplier, shift, b.const(np.array([0], np.int32)), b.const(np.array([0], np.int8)),
                      scale32=True, rounding_mode="DOUBLE_ROUND", per_channel=True, out_dtype="int8")  # fmt: skip
        return b.reshape(y, [*shape[:-1], cout])

    def add(self, x: Value, y: Value) -> Value:
        return self.rescale(self.b.add(self.rescale(x, 0.5, "int32"), self.rescale(y, 0.5, "int32")), 1.0, "int8")

    def table(self, x: Value, fn: Callable[[np.ndarray], np.ndarray]) -> Value:
        grid = np.arange(-128, 128) / 32.0
        return self.b.table(x, np.clip(np.round(fn(grid) * 127), -128, 127).astype(np.int8))


def transformer_int8(rng) -> tuple[Graph, Feeds]:
    """transformer_fp32's block quantized: int8 activations and weights, int32 accumulators and sums."""
    s, d, h, f = 32, 64, 4, 128
    hd = d // h
    b = Builder()
    qz = _Quant(b, rng)
    x = b.input("x", (1, s, d), "int8")
    wide = qz.rescale(x, 1.0, "int32")
    mean = b.reduce_sum(wide, axis=2)
    n = qz.rescale(b.sub(wide, qz.rescale(qz.rescale(mean, 1 / d, "int8"), 1.0, "int32")), 1.0, "int8")
    q, k, v = (b.transpose(b.reshape(qz.fc(n, d, d, (1, s, d)), [s, h, hd]), perms=[1, 0, 2]) for _ in "qkv")
    scores = qz.rescale(b.matmul(q, b.transpose(k, perms=[0, 2, 1]), np.int8(0), np.int8(0)), 1 / 512, "int8")
    e = qz.table(scores, lambda t: np.exp(np.minimum(t, 0)))
    total = b.reduce_sum(qz.rescale(e, 1.0, "int32"), axis=2)
    inv = qz.table(qz.rescale(total, 1 / 64, "int8"), lambda t: 1 / (1 + np.abs(t)))
    attn = qz.rescale(b.mul(qz.rescale(e, 1.0, "int32"), qz.rescale(inv, 1.0, "int32")), 1 / 128, "int8")
    ctx = qz.rescale(b.matmul(attn, v, np.int8(0), np.int8(0)), 1 / 1024, "int8")
    x = qz.add(x, qz.fc(b.reshape(b.transpose(ctx, perms=[1, 0, 2]), [1, s, d]), d, d, (1, s, d)))
    u = qz.table(qz.fc(x, d, f, (1, s, f)), lambda t: t / (1 + np.exp(-1.702 * t)) / 4)
    b.output(qz.add(x, qz.fc(u, f, d, (1, s, d))))
    return b.build(), {"x": _i8(rng, 1, s, d)}


def _gates(b: Builder, z: Value, hidden: int, count: int) -> list[Value]:
    return [b.slice(z, [0, g * hidden], [1, hidden]) for g in range(count)]


def gru_fp32(rng, steps: int = 6, inputs: int = 16, hidden: int = 32) -> tuple[Graph, Feeds]:
    """A GRU unrolled over `steps` (PyTorch's gate order r, z, n) with a linear head per step."""
    b = Builder()
    x = b.input("x", (1, steps, inputs), "fp32")
    xs = b.reshape(x, [1, steps, 1, inputs])
    h = None
    outs = []
    for t in range(steps):
        xt = b.reshape(b.slice(xs, [0, t, 0, 0], [1, 1, 1, inputs]), [1, inputs])
        gi = _fc(b, rng, xt, inputs, 3 * hidden, (1, 3 * hidden))
        ir, iz, in_ = _gates(b, gi, hidden, 3)
        if h is None:
            r, z, n = b.sigmoid(ir), b.sigmoid(iz), b.tanh(in_)
            h = b.sub(n, b.mul(b.sigmoid(iz), n))
        else:
            hr, hz, hn = _gates(b, _fc(b, rng, h, hidden, 3 * hidden, (1, 3 * hidden)), hidden, 3)
            r, z = b.sigmoid(b.add(ir, hr)), b.sigmoid(b.add(iz, hz))
            n = b.tanh(b.add(in_, b.mul(r, hn)))
            h = b.add(n, b.mul(z, b.sub(h, n)))  # (1 - z) * n + z * h
        outs.append(b.reshape(_fc(b, rng, h, hidden, 8, (1, 8)), [1, 1, 8]))
    b.output(b.concat(outs, axis=1))
    return b.build(), {"x": _f32(rng, 1, steps, inputs)}


def lstm_int8(rng, steps: int = 6, inputs: int = 16, hidden: int = 32) -> tuple[Graph, Feeds]:
    """An int8 LSTM unrolled over `steps`: int8 fully connected gates, TABLE sigmoid / tanh, int16 cell state."""
    b = Builder()
    qz = _Quant(b, rng)
    x = b.input("x", (1, steps, inputs), "int8")
    xs = b.reshape(x, [1, steps, 1, inputs])
    h = c = None
    outs = []
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(steps):
        xt = b.reshape(b.slice(xs, [0, t, 0, 0], [1, 1, 1, inputs]), [1, inputs])
        z = qz.fc(xt, inputs, 4 * hidden, (1, 4 * hidden))
        if h is not None:
            z = qz.add(z, qz.fc(h, hidden, 4 * hidden, (1, 4 * hidden)))
        i, f, g, o = _gates(b, z, hidden, 4)
        i, f, o = (qz.rescale(qz.table(v, sigmoid), 1.0, "int32") for v in (i, f, o))
        g = qz.rescale(qz.table(g, np.tanh), 1.0, "int32")
        ig = b.mul(i, g)
        c = ig if c is None else b.add(b.mul(f, c), ig)
        c = qz.rescale(qz.rescale(c, 1 / 64, "int16"), 1.0, "int32")  # the cell state saturates at int16
        tc = qz.rescale(qz.table(qz.rescale(c, 1 / 4, "int8"), np.tanh), 1.0, "int32")
        h = qz.rescale(b.mul(o, tc), 1 / 128, "int8")
        outs.append(b.reshape(qz.fc(h, hidden, 8, (1, 8)), [1, 1, 8]))
    b.output(b.concat(outs, axis=1))
    return b.build(), {"x": _i8(rng, 1, steps, inputs)}


def resnet_fp32(rng, size: int = 32) -> tuple[Graph, Feeds]:
    """A small ResNet: a 3x3 stem, three stages of two residual blocks (16, 32, 64 channels; stride 2 between
    stages, 1x1 projections), global average pool, a linear head: 16 convolutions."""
    b = Builder()
    x = b.input("x", (1, size, size, 3), "fp32")

    def conv(v, cin, cout, k, stride=1):
        """PyTorch's padding k // 2; with stride 2 TOSA wants the window to fit exactly, as ExecuTorch writes it:
        the bottom / right padding dropped (3x3), the last row / column sliced off (1x1)."""
        w = _f32(rng, cout, k, k, cin, scale=(k * k * cin) ** -0.5)
        pad = [k // 2] * 4 if stride == 1 else [1, 0, 1, 0] if k == 3 else [0] * 4
        if stride == 2 and k == 1:
            size = v.shape[1] - 1
            v = b.slice(v, [0, 0, 0, 0], [1, size, size, cin])
        return b.conv2d(v, w, _f32(rng, cout, scale=0.1), np.float32(0), np.float32(0), pad=pad,
                        stride=[stride, stride])  # fmt: skip

    relu = lambda v: b.clamp(v, min_val=np.float32(0), max_val=np.float32(np.finfo(np.float32).max))  # noqa: E731
    v, c = relu(conv(x, 3, 16, 3)), 16
    for cout in (16, 32, 64):
        for block in range(2):
            stride = 2 if block == 0 and cout != 16 else 1
            y = conv(relu(conv(v, c, cout, 3, stride)), cout, cout, 3)
            v, c = relu(b.add(y, v if stride == 1 and c == cout else conv(v, c, cout, 1, stride))), cout
    pooled = b.avg_pool2d(v, np.float32(0), np.float32(0), kernel=[size // 4] * 2, stride=[size // 4] * 2)
    b.output(b.reshape(conv(pooled, c, 10, 1), [1, 10]))
    return b.build(), {"x": _f32(rng, 1, size, size, 3)}


GRAPHS: dict[str, Callable] = {
    "transformer_fp32": transformer_fp32,
    "transformer_int8": transformer_int8,
    "gru_fp32": gru_fp32,
    "lstm_int8": lstm_int8,
    "resnet_fp32": resnet_fp32,
}


def build(name: str) -> tuple[Graph, Feeds]:
    return GRAPHS[name](np.random.default_rng(sorted(GRAPHS).index(name)))


def write(folder: str | Path) -> list[Path]:
    """Every graph as <folder>/<name>/model.tosa with its input as input-0.npy and a desc.json (conformance
    layout, as the shipped models); returns the .tosa paths."""
    import json

    from ...ir.flatbuffer import save_graph

    paths = []
    for name in GRAPHS:
        graph, feeds = build(name)
        out = Path(folder) / name
        out.mkdir(parents=True, exist_ok=True)
        save_graph(graph, out / "model.tosa")
        files = []
        for i, value in enumerate(feeds.values()):
            np.save(out / f"input-{i}.npy", value)
            files.append(f"input-{i}.npy")
        desc = {"tosa_file": "model.tosa", "ifm_name": list(feeds), "ifm_file": files}
        (out / "desc.json").write_text(json.dumps(desc, indent=1))
        paths.append(out / "model.tosa")
    return paths

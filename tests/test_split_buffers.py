"""Tensors past maxStorageBufferRange (issue 50): a constant MATMUL B, CONV2D weight or GATHER table over the
target's limit runs as pieces under it (tosa_vk/stages/passes/split.py); any other tensor over it is a TosaError
naming it. Small graphs on a target with a small limit check the pieces against the reference backend; the two
large tests run the sizes of the issue (a 256 MiB weight, a 160 MiB table) on the device's own limit."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from helpers import assert_same, compare, graph_of, shrink_target

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.program import Kernel, walk
from tosa_vk.stages.passes.split import split_oversized

pytestmark = pytest.mark.vulkan

LIMIT = 1 << 20  # a 1 MiB maxStorageBufferRange: every constant below is over it


def _kernels(device, graph) -> list[str]:
    """The program's kernels, after checking that none binds a tensor over LIMIT."""
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        kernels = [step for step in walk(model.program.steps) if isinstance(step, Kernel)]
        sizes = {n: model.program.buffer(n).nbytes for k in kernels for n in k.bindings}
    assert max(sizes.values()) <= LIMIT, sizes
    return [k.op for k in kernels]


def _split_compare(device, build, feeds, **tolerance) -> list[str]:
    """The graph's kernels all bind tensors under LIMIT, and its results are the reference backend's; its kernels."""
    graph = graph_of(build)
    kernels = _kernels(device, graph)
    compare(device, graph, feeds, **tolerance)
    return kernels


def _unsplit(device, graph, feeds) -> list[np.ndarray]:
    """The graph's results on the device's own target (no split at these sizes)."""
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        return list(model.run(feeds).values())


def _strided(device, monkeypatch, graph, feeds, pieces: int, op: str, **tolerance) -> None:
    """Split under LIMIT: `pieces` kernels of `op`, nothing else (each stores its channels of every row into the
    whole result: no CONCAT copy), results the reference backend's and, bit for bit, the unsplit program's (the same
    sums in the same order)."""
    whole = _unsplit(device, graph, feeds)
    shrink_target(monkeypatch, device, max_storage_buffer_range=LIMIT)
    kernels = _kernels(device, graph)
    assert len(kernels) == pieces and all(k.startswith(op) for k in kernels), kernels
    got, _ = compare(device, graph, feeds, **tolerance)
    for g, w in zip(got if isinstance(got, list) else [got], whole):
        assert_same(g, w, bits=True)


def test_matmul_weight_splits_fp32_and_int8(device, monkeypatch):
    """MATMUL's B (1.5 MiB fp32, 1.25 MiB int8) in pieces along W, H > 1 and N = 2: each piece's kernel stores
    into its columns of every row of the result (no copy); fp32 the unsplit program's bits, int8 bit-exact."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((1, 256, 1536)).astype(np.float32)
    a = rng.standard_normal((1, 5, 256)).astype(np.float32)
    graph = graph_of(lambda b: b.matmul(b.input("a", a.shape, "fp32"), w))
    _strided(device, monkeypatch, graph, {"a": a}, 2, "MATMUL", atol=1e-4, rtol=1e-4)
    wi = rng.integers(-128, 128, (2, 128, 5120)).astype(np.int8)
    ai = rng.integers(-128, 128, (2, 3, 128)).astype(np.int8)
    graph = graph_of(lambda b: b.matmul(b.input("a", ai.shape, "int8"), wi, 3, -7))
    _strided(device, monkeypatch, graph, {"a": ai}, 2, "MATMUL")


@pytest.mark.parametrize(
    "c, w, dtype",
    [
        (64, 4099, "fp32"),  # W prime: a piece of 2056 columns (vector stores) and a ragged last one (scalar)
        (96, 2731, "fp32"),  # odd W, C not a multiple of 8: matmul.comp
        (40, 1000, "fp16"),  # fp16 (B repeated past the limit: 14000 columns of 80 bytes)
        (300, 3500, "int8"),  # int8 zero points, W not a multiple of 8
    ],
)
def test_matmul_pieces_not_dividing_the_columns(device, monkeypatch, c, w, dtype):
    """Adversarial widths: pieces that do not divide W (a shorter last piece, odd widths, channel offsets that are
    no multiple of 4): every column lands in its place."""
    rng = np.random.default_rng(c + w)
    np_t = {"fp32": np.float32, "fp16": np.float16, "int8": np.int8}[dtype]
    if dtype == "int8":
        wb = rng.integers(-128, 128, (1, c, w)).astype(np.int8)
        a = rng.integers(-128, 128, (1, 7, c)).astype(np.int8)
        zps: tuple = (-5, 9)
    else:
        wb = rng.standard_normal((1, c, w)).astype(np_t)
        a = rng.standard_normal((1, 7, c)).astype(np_t)
        zps = ()
    if wb.nbytes <= LIMIT:
        wb = np.concatenate([wb] * (LIMIT // wb.nbytes + 1), axis=2)[:, :, : w * (LIMIT // wb.nbytes + 1)]
    graph = graph_of(lambda b: b.matmul(b.input("a", a.shape, dtype), wb, *zps))
    pieces = -(-wb.nbytes // LIMIT)
    _strided(device, monkeypatch, graph, {"a": a}, pieces, "MATMUL", atol=1e-2, rtol=1e-2)


def test_matrix_vector_pieces_write_in_place(device, monkeypatch):
    """H == 1 (one token's projection): each piece's result is one run of the output, so the CONCAT is a view and
    the only kernels are the pieces' MATMULs."""
    shrink_target(monkeypatch, device, max_storage_buffer_range=LIMIT)
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (1, 512, 5000)).astype(np.int8)  # 2.4 MiB: three pieces
    a = rng.integers(-128, 128, (1, 1, 512)).astype(np.int8)
    graph = graph_of(lambda b: b.matmul(b.input("a", a.shape, "int8"), w, -1, 2))
    kernels = _kernels(device, graph)
    assert len(kernels) == 3 and all(k.startswith("MATMUL") for k in kernels), kernels
    compare(device, graph, {"a": a})


def test_gather_table_splits(device, monkeypatch):
    """GATHER's values (2.5 MiB int32, 1.9 MiB fp16) in pieces along C: the gathered rows bit-exact."""
    shrink_target(monkeypatch, device, max_storage_buffer_range=LIMIT)
    rng = np.random.default_rng(2)
    for table in (
        rng.integers(-(2**31), 2**31, (1, 1000, 640), dtype=np.int64).astype(np.int32),
        rng.standard_normal((2, 500, 1000)).astype(np.float16),
    ):
        idx = rng.integers(0, table.shape[1], (table.shape[0], 7)).astype(np.int32)
        _split_compare(device, lambda b: b.gather(table, b.input("i", idx.shape, "int32")), {"i": idx}, bits=True)


@pytest.mark.parametrize(
    "shape, dtype, w",
    [
        ((1, 4000, 300), "int8", 9),  # pieces of 152 and 148 channels (a ragged last one): 4-byte units
        ((2, 700, 520), "fp32", 5),  # N = 2, three pieces of 176, 176 and 168 channels: 16-byte units
        ((3, 600, 301), "fp16", 4),  # N = 3, C odd: pieces of 152 and 149 channels stored element by element
        ((2, 300, 1000), "int32", 1),  # one index per batch (the rows are the batch's)
    ],
)
def test_gather_pieces_store_strided(device, monkeypatch, shape, dtype, w):
    """A split GATHER table whose result has leading dimensions past 1: each piece's kernel stores its channels of
    every row into the whole result (no CONCAT copy), so the kernels are the pieces only; the gathered rows are the
    reference backend's and the unsplit program's, bit for bit."""
    rng = np.random.default_rng(shape[2] + w)
    np_t = {"fp32": np.float32, "fp16": np.float16, "int8": np.int8, "int32": np.int32}[dtype]
    if dtype in ("int8", "int32"):
        info = np.iinfo(np_t)
        table = rng.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True).astype(np_t)
    else:
        table = rng.standard_normal(shape).astype(np_t)
    assert table.nbytes > LIMIT
    idx = rng.integers(0, shape[1], (shape[0], w)).astype(np.int32)
    idx[0, 0] = shape[1] - 1
    graph = graph_of(lambda b: b.gather(table, b.input("i", idx.shape, "int32")))
    _strided(device, monkeypatch, graph, {"i": idx}, -(-table.nbytes // LIMIT), "GATHER", bits=True)


def test_conv2d_weight_splits_with_its_bias(device, monkeypatch):
    """CONV2D's int8 weights (1.1 MiB) and per-channel bias in pieces along OC, over a 4x4 image (OH * OW > 1):
    each piece's kernel stores its channels of every pixel into the result; bit-exact."""
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (300, 3, 3, 440)).astype(np.int8)
    bias = rng.integers(-1000, 1000, 300).astype(np.int32)
    x = rng.integers(-128, 128, (1, 4, 4, 440)).astype(np.int8)

    def build(b: Builder):
        return b.conv2d(b.input("x", x.shape, "int8"), w, bias, 5, 0, pad=[1, 1, 1, 1], acc_type="int32")

    _strided(device, monkeypatch, graph_of(build), {"x": x}, 2, "CONV2D")


@pytest.mark.parametrize("klass", ["nvidia", "mali"])
def test_tiled_families_store_strided(device, monkeypatch, klass):
    """The tiled MATMUL and convolution families (a GPU class forced on lavapipe) store their pieces strided too."""
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    rng = np.random.default_rng(7)
    w = rng.integers(-128, 128, (1, 200, 6000)).astype(np.int8)
    a = rng.integers(-128, 128, (1, 9, 200)).astype(np.int8)
    graph = graph_of(lambda b: b.matmul(b.input("a", a.shape, "int8"), w, 1, -2))
    _strided(device, monkeypatch, graph, {"a": a}, 2, "MATMUL")
    wc = rng.standard_normal((130, 3, 3, 240)).astype(np.float32)
    x = rng.standard_normal((1, 6, 6, 240)).astype(np.float32)
    bias = np.zeros(130, np.float32)
    graph = graph_of(lambda b: b.conv2d(b.input("x", x.shape, "fp32"), wc, bias, pad=[1, 1, 1, 1], acc_type="fp32"))
    _strided(device, monkeypatch, graph, {"x": x}, 2, "CONV2D", atol=1e-3, rtol=1e-3)


def test_conv2d_fp32_pieces_batch_and_stride(device, monkeypatch):
    """fp32 CONV2D, batch 2, stride 2, 1x1 and 3x3 kernels (the 1x1 runs as matmul_fast.comp), OC = 150 in pieces
    that do not divide it: the unsplit program's bits."""
    rng = np.random.default_rng(6)
    for kh, ic in ((1, 2048), (3, 240)):
        w = rng.standard_normal((150, kh, kh, ic)).astype(np.float32)  # 1.2 / 1.2 MiB
        bias = rng.standard_normal(150).astype(np.float32)
        x = rng.standard_normal((2, 5, 5, ic)).astype(np.float32)

        def build(b: Builder, w=w, bias=bias, x=x):
            return b.conv2d(b.input("x", x.shape, "fp32"), w, bias, stride=[2, 2], acc_type="fp32")

        _strided(device, monkeypatch, graph_of(build), {"x": x}, 2, "CONV2D", atol=1e-3, rtol=1e-3)


def test_tensor_without_a_split_is_named():
    """An activation over the limit that no rule splits (a TRANSPOSE's, a reduction's along the rows) or a constant
    no rule splits is a TosaError naming the tensor and the limit."""
    b = Builder()
    x = b.input("x", (1024, 512), "fp32")  # 2 MiB
    b.output(b.transpose(x, perms=[1, 0]), name="big_t")
    with pytest.raises(TosaError, match=r"TRANSPOSE #\d+ 'big_t': tensor 'x' takes 2097152 bytes.*\(1048576\)"):
        split_oversized(b.build(), LIMIT, "model.tosa")
    b = Builder()
    x = b.input("x", (1 << 19,), "fp32")
    b.output(b.reduce_sum(x, axis=0), name="total")
    with pytest.raises(TosaError, match=r"REDUCE_SUM #\d+ 'total': tensor 'x' takes 2097152 bytes"):
        split_oversized(b.build(), LIMIT, "model.tosa")
    b = Builder()
    i = b.input("i", (1, 3), "int32")
    b.output(b.gather(np.zeros((1, 300_000, 2), np.float32), i))  # one column alone is 1.2 MB
    with pytest.raises(TosaError, match=r"GATHER #\d+ 'gather': tensor 'values': one output channel .* 1200000 bytes"):
        split_oversized(b.build(), LIMIT)


# ---- activations over the limit: pieces of rows, reading and writing views -----------------------------------------


def _views_only(device, monkeypatch, graph, feeds, kernels: int, **tolerance) -> None:
    """Split under LIMIT: `kernels` kernels, none a SLICE or CONCAT copy (every binding under LIMIT), results the
    reference backend's and the unsplit program's bits."""
    whole = _unsplit(device, graph, feeds)
    shrink_target(monkeypatch, device, max_storage_buffer_range=LIMIT)
    found = _kernels(device, graph)
    assert len(found) == kernels and not any(k.startswith(("SLICE", "CONCAT")) for k in found), found
    got, _ = compare(device, graph, feeds, **tolerance)
    for g, w in zip(got if isinstance(got, list) else [got], whole):
        assert_same(g, w, bits=True)


def test_elementwise_activation_runs_in_rows(device, monkeypatch):
    """An fp32 ADD of two 2.5 MiB activations (a per-channel operand broadcast): three pieces of rows, each
    reading and writing views of the whole tensors; bit-exact."""
    rng = np.random.default_rng(8)
    x, y = (rng.standard_normal((5, 256, 512)).astype(np.float32) for _ in range(2))
    scale = rng.standard_normal((1, 1, 512)).astype(np.float32)

    def build(b: Builder):
        s = b.add(b.input("x", x.shape, "fp32"), b.input("y", y.shape, "fp32"))
        return b.mul(s, scale)

    _views_only(device, monkeypatch, graph_of(build), {"x": x, "y": y}, 6, bits=True)
    monkeypatch.setenv("TOSA_VK_FUSE", "0")  # fusion off: the pieces' SLICEs and CONCATs are views even so
    assert len(_kernels(device, graph_of(build))) == 6


def test_activation_rows_adversarial(device, monkeypatch):
    """Batch 1 (the rows along the first axis longer than 1), a row count no piece size divides, int8 rows of 333
    bytes (pieces of a multiple of the alignment's rows), a RESCALE with per-channel parameters read whole, a
    reduction along the last axis and a SELECT: int bit-exact."""
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 128, (1, 7001, 333)).astype(np.int8)  # 2.2 MiB
    mask = rng.integers(0, 2, (1, 7001, 333)).astype(bool)

    def build(b: Builder):
        xi = b.input("x", x.shape, "int8")
        wide = b.cast(xi, out_dtype="int32")  # 8.9 MiB
        r = b.rescale(wide, np.full(333, 1 << 30, np.int32), np.full(333, 31, np.int8), 0, 0, per_channel=True,
                      scale32=True, out_dtype="int8")  # fmt: skip
        picked = b.select(b.input("m", mask.shape, "bool"), r, xi)
        return b.reduce_max(b.cast(picked, out_dtype="int32"), axis=2)

    graph = graph_of(build)
    shrink_target(monkeypatch, device, max_storage_buffer_range=LIMIT)
    found = _kernels(device, graph)
    assert not any(k.startswith(("SLICE", "CONCAT")) for k in found), found
    compare(device, graph, {"x": x, "m": mask})


# ---- the sizes on the device's own limit (128 MiB on lavapipe) -----------------------------------------------


def test_256mib_matmul_weight_runs(device):
    """A 256 MiB fp32 MATMUL weight (over lavapipe's 128 MiB range) runs to numpy's result."""
    limit = device.info.target.max_storage_buffer_range
    rng = np.random.default_rng(4)
    w = rng.standard_normal((1, 4096, 16384), dtype=np.float32)  # 256 MiB
    assert w.nbytes > limit
    a = rng.standard_normal((1, 2, 4096), dtype=np.float32)
    b = Builder()
    b.output(b.matmul(b.input("a", a.shape, "fp32"), w))
    graph = b.build()
    want = (a[0].astype(np.float64) @ w[0].astype(np.float64))[None]
    del w, b
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True, cache_dir=False) as model:
        got = next(iter(model.run({"a": a}).values()))
    del graph, model
    gc.collect()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_160mib_gather_table_runs(device):
    """A 160 MiB fp32 embedding table runs to numpy's result."""
    rng = np.random.default_rng(5)
    table = rng.standard_normal((1, 40960, 1024), dtype=np.float32)  # 160 MiB
    assert table.nbytes > device.info.target.max_storage_buffer_range
    idx = rng.integers(0, 40960, (1, 9)).astype(np.int32)
    idx[0, :2] = (0, 40959)
    b = Builder()
    b.output(b.gather(table, b.input("i", idx.shape, "int32")))
    graph = b.build()
    want = table[0][idx[0]][None]
    del table, b
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True, cache_dir=False) as model:
        got = next(iter(model.run({"i": idx}).values()))
    del graph, model
    gc.collect()
    np.testing.assert_array_equal(got, want)

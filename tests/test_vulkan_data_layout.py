"""Vulkan kernels of the data layout (spec 2.10) and scatter / gather (spec 2.11) operators, bit-exact against the
reference backend: every dtype, ranks 1..6, unit widening of the strided copy, negative strides (REVERSE), TILE's
wrap and broadcast, PAD with a runtime pad_const, CONCAT into slices, grids that spill into y."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from helpers import compare

from tosa_vk import Builder

DTYPES = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "fp16": np.float16,
    "fp32": np.float32,
    "bf16": ml_dtypes.bfloat16,
    "fp8e4m3": ml_dtypes.float8_e4m3fn,
    "fp8e5m2": ml_dtypes.float8_e5m2,
}
BIG = 65535 * 64 + 4097  # more invocations than one row of workgroups: the grid spills into y


def data(shape, dtype: str, seed: int = 0) -> np.ndarray:
    """Random values; floats as random bit patterns (NaN payloads, infinities, subnormals: copies are exact)."""
    rng = np.random.default_rng(seed)
    np_type = np.dtype(DTYPES[dtype])
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    bits = rng.integers(0, 256, (*shape, np_type.itemsize), dtype=np.uint8)
    return bits.view(np_type).reshape(shape)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_transpose_every_dtype(device, dtype):
    b = Builder()
    x = b.input("x", (3, 5, 7), dtype)
    b.output(b.transpose(x, perms=[2, 0, 1]), b.transpose(x, perms=[0, 2, 1]))
    compare(device, b.build(), {"x": data((3, 5, 7), dtype)}, bits=True)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_transpose_tiled(device, dtype):
    """Planes of at least 8 x 8 go through 32 x 32 shared-memory tiles (partial tiles at the edges)."""
    shape = (9, 40, 3, 33)
    b = Builder()
    x = b.input("x", shape, dtype)
    b.output(b.transpose(x, perms=[0, 3, 1, 2]), b.transpose(x, perms=[3, 2, 1, 0]), b.transpose(x, perms=[2, 3, 0, 1]))
    compare(device, b.build(), {"x": data(shape, dtype)}, bits=True)


@pytest.mark.parametrize("rank", range(1, 7))
def test_transpose_ranks(device, rank):
    shape = (2, 3, 4, 1, 5, 2)[:rank]
    b = Builder()
    x = b.input("x", shape, "int16")
    outs = [b.transpose(x, perms=list(p)) for p in list(itertools.permutations(range(rank)))[::7][:6]]
    b.output(*outs)
    compare(device, b.build(), {"x": data(shape, "int16", rank)}, bits=True)


@pytest.mark.parametrize("dtype", ["int8", "int16", "fp32"])
def test_slice_widens_aligned_rows(device, dtype):
    b = Builder()
    x = b.input("x", (6, 9, 32), dtype)
    b.output(
        b.slice(x, [1, 2, 0], [4, 5, 32]),  # whole rows: 16-byte units
        b.slice(x, [0, 0, 8], [6, 9, 16]),  # aligned inner run
        b.slice(x, [2, 3, 3], [3, 2, 7]),
    )  # unaligned: element units
    compare(device, b.build(), {"x": data((6, 9, 32), dtype)}, bits=True)


@pytest.mark.parametrize("dtype", ["bool", "int8", "bf16", "fp32"])
def test_reverse_each_axis(device, dtype):
    shape = (4, 3, 16)
    b = Builder()
    x = b.input("x", shape, dtype)
    b.output(*[b.reverse(x, axis=a) for a in range(3)])
    compare(device, b.build(), {"x": data(shape, dtype)}, bits=True)


@pytest.mark.parametrize("dtype", ["int8", "fp16", "fp8e5m2", "int32"])
def test_tile_wrap_and_broadcast(device, dtype):
    b = Builder()
    x = b.input("x", (1, 3, 8), dtype)
    b.output(b.tile(x, [4, 2, 3]), b.tile(x, [2, 1, 1]), b.tile(x, [1, 3, 1]))
    compare(device, b.build(), {"x": data((1, 3, 8), dtype)}, bits=True)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "fp32"])
def test_concat_axes(device, dtype):
    base = (2, 3, 5)
    for axis in range(3):
        b = Builder()
        xs, feeds = [], {}
        for i, size in enumerate((3, 1, 4)):
            s = tuple(size if d == axis else v for d, v in enumerate(base))
            xs.append(b.input(f"x{i}", s, dtype))
            feeds[f"x{i}"] = data(s, dtype, i)
        b.output(b.concat(xs, axis=axis))
        compare(device, b.build(), feeds, bits=True)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_pad(device, dtype):
    b = Builder()
    x = b.input("x", (3, 4, 5), dtype)
    pad_const = b.input("p", (1,), dtype)  # a runtime pad value
    b.output(
        b.pad(x, [1, 2, 0, 0, 3, 1], pad_const),
        b.pad(x, [0, 0, 0, 0, 0, 0], pad_const),
        b.pad(x, [2, 0, 1, 1, 0, 0], pad_const),
    )
    compare(device, b.build(), {"x": data((3, 4, 5), dtype), "p": data((1,), dtype, 7)}, bits=True)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_pad_wide_units(device, dtype):
    """Aligned innermost padding: the pad value is repeated over 4..16-byte units."""
    b = Builder()
    x = b.input("x", (2, 3, 16), dtype)
    pad_const = b.input("p", (1,), dtype)
    b.output(
        b.pad(x, [1, 0, 0, 2, 16, 0], pad_const),
        b.pad(x, [0, 0, 1, 1, 4, 4], pad_const),
        b.pad(x, [0, 1, 0, 0, 8, 8], pad_const),
    )
    compare(device, b.build(), {"x": data((2, 3, 16), dtype), "p": data((1,), dtype, 3)}, bits=True)


def test_pad_const_default_and_rank1(device):
    b = Builder()
    x = b.input("x", (7,), "int32")
    b.output(b.pad(x, [3, 5]), b.pad(x, [0, 1], np.array([-9], np.int32)))
    compare(device, b.build(), {"x": data((7,), "int32")}, bits=True)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "fp16", "bf16", "fp32", "fp8e4m3"])
@pytest.mark.parametrize("c", [1, 3, 16])
def test_gather_scatter(device, dtype, c):
    n, k, w = 2, 9, 5
    rng = np.random.default_rng(c)
    idx = np.stack([rng.permutation(k)[:w] for _ in range(n)]).astype(np.int32)  # no repeats within a batch
    b = Builder()
    values = b.input("values", (n, k, c), dtype)
    indices = b.input("indices", (n, w), "int32")
    rows = b.input("rows", (n, w, c), dtype)
    b.output(b.gather(values, indices), b.scatter(values, indices, rows))
    compare(
        device,
        b.build(),
        {"values": data((n, k, c), dtype), "indices": idx, "rows": data((n, w, c), dtype, 1)},
        bits=True,
    )


def test_big_transpose_spills_into_y(device):
    shape = (2051, BIG // 2051 + 1)
    b = Builder()
    x = b.input("x", shape, "int8")
    b.output(b.transpose(x, perms=[1, 0]))
    compare(device, b.build(), {"x": data(shape, "int8")}, bits=True)


def test_big_pad_and_gather(device):
    b = Builder()
    x = b.input("x", (BIG,), "int16")
    v = b.input("v", (1, 3, BIG), "int8")
    i = b.input("i", (1, 2), "int32")
    b.output(b.pad(x, [5, 3], np.array([7], np.int16)), b.gather(v, i))
    compare(
        device,
        b.build(),
        {"x": data((BIG,), "int16"), "v": data((1, 3, BIG), "int8"), "i": np.array([[2, 0]], np.int32)},
        bits=True,
    )

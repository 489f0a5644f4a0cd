"""Vulkan kernels of the type-conversion chapter (CAST, RESCALE) against the reference backend, bit-exactly:
every CAST row of the spec's type table on exhaustive 8/16-bit inputs and fp32 / int32 edge values, NaN / overflow /
saturation rules, RESCALE over its attribute combinations (scale32, rounding modes, per-channel, unsigned,
zero points, int48), and tensors large enough to spill the 1-D grid into y."""

from __future__ import annotations

import itertools
import zlib

import ml_dtypes
import numpy as np
import pytest
from helpers import compare, op_graph

import tosa_vk
from tosa_vk import Builder
from tosa_vk.ir.dtype import DType

NP = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int48": np.int64,
    "fp32": np.float32,
    "fp16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "fp8e4m3": ml_dtypes.float8_e4m3fn,
    "fp8e5m2": ml_dtypes.float8_e5m2,
}
BITS = {"fp32": np.uint32, "fp16": np.uint16, "bf16": np.uint16, "fp8e4m3": np.uint8, "fp8e5m2": np.uint8}
INTS = ("int8", "int16", "int32")

# The 46 rows of CAST's supported-types table (spec 2.13.1).
CAST_ROWS = [
    *[(i, o) for i, o in itertools.permutations(("bool", "int8", "int16", "int32"), 2) if "bool" != i or o != "bool"],
    *[(i, o) for i in INTS for o in ("fp16", "fp32", "bf16")],
    *[(i, o) for i in ("fp16", "fp32", "bf16") for o in INTS],
    ("fp16", "fp32"),
    ("fp32", "fp16"),
    ("bf16", "fp32"),
    ("fp32", "bf16"),
    *[(i, o) for i in ("fp16", "fp32", "bf16") for o in ("fp8e4m3", "fp8e5m2")],
    *[(i, o) for i in ("fp8e4m3", "fp8e5m2") for o in ("fp16", "fp32", "bf16")],
]
assert len(set(CAST_ROWS)) == 46


def cast_graph(shape, in_t: str, out_t: str):
    return op_graph("CAST", [shape], in_t, out_dtype=out_t)


def cast_inputs(dtype: str, rng) -> np.ndarray:
    """Every value of 8/16-bit types; edge values plus random bit patterns of fp32 / int32."""
    if dtype == "bool":
        return np.array([True, False, False, True])
    if dtype in ("int8", "int16"):
        info = np.iinfo(NP[dtype])
        return np.arange(info.min, info.max + 1).astype(NP[dtype])
    if dtype == "int32":
        edges = [
            -(2**31),
            2**31 - 1,
            0,
            1,
            -1,
            2**24 + 1,
            2**24 + 3,
            65504,
            65519,
            65520,
            65535,
            -65520,
            2**31 - 128,
            2**31 - 129,
            2**31 - 64,
            0x7FBFFFFF,
            0x1018000,
        ]  # ties of the fp32 / bf16 / fp16 grids
        return np.concatenate(
            [np.array(edges, np.int64), rng.integers(-(2**31), 2**31, 20000), rng.integers(-70000, 70000, 20000)]
        ).astype(np.int32)
    if dtype == "fp32":
        powers = np.float32(2.0) ** np.arange(-30, 20).astype(np.float32)
        grid = (powers[:, None] * (1 + np.arange(16) / 16)[None, :]).astype(np.float32).view(np.uint32)
        bits = np.concatenate(
            [
                (grid.reshape(-1).astype(np.int64)[:, None] + np.arange(-2, 3)[None, :]).reshape(-1).astype(np.uint32),
                rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32),
                np.arange(0x43E00000 - 64, 0x43F00000 + 64, 37, dtype=np.uint32),  # fp8e4m3 overflow (448 / 464)
                np.arange(0x47600000 - 64, 0x47800000 + 64, 37, dtype=np.uint32),  # fp8e5m2 / fp16 overflow
                np.arange(0, 0x00800000, 4099, dtype=np.uint32),  # fp32 subnormals
                np.array(
                    [
                        0x7F800000,
                        0x7FC00000,
                        0x7F800001,
                        0x7F7FFFFF,
                        0x4F000000,
                        0x4EFFFFFF,
                        0xCF000080,
                        0x477FEFFF,
                        0x477FF000,
                        0x3F000000,
                        0x3FC00000,
                        0x40200000,
                    ],
                    np.uint32,
                ),
            ]
        )
        return np.concatenate([bits, bits ^ np.uint32(0x80000000)]).view(np.float32)
    n = 1 << (8 * np.dtype(BITS[dtype]).itemsize)
    return np.arange(n, dtype=np.uint64).astype(BITS[dtype]).view(NP[dtype])


@pytest.mark.parametrize("in_t,out_t", CAST_ROWS, ids=[f"{i}-{o}" for i, o in CAST_ROWS])
def test_cast_matches_reference(device, in_t, out_t):
    x = cast_inputs(in_t, np.random.default_rng(0))
    nan_to_int = np.isnan(x.astype(np.float32)) if in_t in BITS and out_t in INTS else None  # unpredictable
    # bit-exact, except that any NaN matches any NaN
    compare(device, cast_graph(x.shape, in_t, out_t), {"x": x}, zero_sign=True, ignore=nan_to_int)


def test_cast_rounding_saturation_and_specials(device):
    x = np.array(
        [2.5, -2.5, 3.5, 0.5, -0.5, 1e10, -1e10, np.inf, -np.inf, 127.5, -128.5, 464.0, 470.0, 61439.0, 61440.0, 1e-30],
        np.float32,
    )
    graph = lambda out_t: cast_graph(x.shape, "fp32", out_t)  # noqa: E731
    with tosa_vk.load(graph("int8"), backend="vulkan", device=device, strict=True) as m:
        i8 = list(m.run(x=x).values())[0]
    assert i8.tolist() == [2, -2, 4, 0, 0, 127, -128, 127, -128, 127, -128, 127, 127, 127, 127, 0]
    with tosa_vk.load(graph("int32"), backend="vulkan", device=device, strict=True) as m:
        i32 = list(m.run(x=x).values())[0]
    assert i32[5:9].tolist() == [2**31 - 1, -(2**31), 2**31 - 1, -(2**31)]
    with tosa_vk.load(graph("fp8e4m3"), backend="vulkan", device=device, strict=True) as m:
        e4 = list(m.run(x=x).values())[0].astype(np.float32)
    assert e4[11] == 448.0 and np.isnan(e4[12]) and np.isnan(e4[7]) and np.isnan(e4[8])  # OCP non-saturating
    assert e4[15] == 0.0
    with tosa_vk.load(graph("fp8e5m2"), backend="vulkan", device=device, strict=True) as m:
        e5 = list(m.run(x=x).values())[0].astype(np.float32)
    assert e5[13] == 57344.0 and e5[14] == np.inf and e5[5] == np.inf and e5[6] == -np.inf
    nan = np.array([np.nan, -np.nan], np.float32)
    for out_t in ("fp16", "bf16", "fp8e4m3", "fp8e5m2"):
        with tosa_vk.load(cast_graph((2,), "fp32", out_t), backend="vulkan", device=device, strict=True) as m:
            assert np.isnan(list(m.run(x=nan).values())[0].astype(np.float32)).all()


def test_cast_large_tensor_spills_grid(device):
    n = 65535 * 64 + 1000
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32) * 300
    compare(device, cast_graph((n,), "fp32", "bf16"), {"x": x}, zero_sign=True)
    compare(device, cast_graph((n,), "fp32", "int8"), {"x": x})


# RESCALE ---------------------------------------------------------------------------------------------------------


def rescale_case(rng, in_t, out_t, shape, scale32, mode, per_channel, in_unsigned, out_unsigned):
    """A graph and input satisfying RESCALE's REQUIREs (value range for the shift, int32 result)."""
    nc = shape[-1] if per_channel else 1
    in_bits, out_bits = DType.of(in_t).bits, DType.of(out_t).bits
    mbits = 30 if scale32 else 14  # multiplier = (1 << mbits) * m for 1 <= m < 2 when normalized
    multiplier = rng.integers(1 << (mbits - 1), 1 << (mbits + 1), nc).astype(np.int32 if scale32 else np.int16)
    # scalings from up to 2^12 (less where the output would just saturate) down to a few output values
    low = max(2, mbits - 12, mbits + in_bits - out_bits - 3)
    high = min(62, mbits + max(2, in_bits - out_bits + 4))
    shift = rng.integers(low, high + 1, nc).astype(np.int8)
    if per_channel:
        multiplier[0], shift[0] = 1 << mbits, mbits  # scale 1.0 on channel 0
        if mode == "DOUBLE_ROUND" and nc > 1:
            shift[1] = 40
    in_zp = out_zp = 0
    if in_t == "int8":
        in_zp = int(rng.integers(0, 256) if in_unsigned else rng.integers(-128, 128))
    elif in_t == "int16" and in_unsigned:
        in_zp = 32768
    if out_t == "int8":
        out_zp = int(rng.integers(0, 256) if out_unsigned else rng.integers(-128, 128))
    elif out_t == "int16" and out_unsigned:
        out_zp = 32768
    # value = x - in_zp must satisfy |value| < 2^(shift-1) and |value * multiplier / 2^shift| < 2^30.
    m = multiplier.astype(np.int64) if per_channel else np.int64(multiplier[0])
    s = shift.astype(np.int64) if per_channel else np.int64(shift[0])
    out_span = np.int64(1) << np.int64(out_bits + 1)  # some results saturate, most don't
    bound = np.minimum(
        np.left_shift(np.int64(1), s - 1) - 1,
        np.left_shift(out_span, np.minimum(s, 62 - out_bits - 1)) // np.maximum(m, 1),
    )
    bound = np.minimum(bound, np.left_shift(np.int64(1), np.minimum(s + 29, 62)) // np.maximum(m, 1))
    bound = np.maximum(np.minimum(bound, 1 << min(in_bits, 47)), 1)
    u = rng.random(shape) * 2 - 1
    value = np.trunc(u * bound).astype(np.int64)
    if in_unsigned:
        lo, hi = 0, (1 << in_bits) - 1
    else:
        lo, hi = -(1 << (in_bits - 1)), (1 << (in_bits - 1)) - 1
    x = np.clip(value + in_zp, lo, hi)
    if shape:  # edge values on channel 0 (scale 1.0), within its REQUIRE range
        b0 = int(bound if np.ndim(bound) == 0 else bound.reshape(-1)[0])
        edges = np.clip([lo, hi, in_zp, in_zp + 1, in_zp - b0, in_zp + b0], max(lo, in_zp - b0), min(hi, in_zp + b0))
        x.reshape(-1, shape[-1])[:6, 0] = edges[: x.size // shape[-1]]
    x = x.astype(NP[in_t])  # unsigned values keep their bits
    wrap = lambda v, t: np.array([v]).astype(np.int64).astype(NP[t])  # noqa: E731  (uint zero points as bits)
    b = Builder()
    xi = b.input("x", shape, in_t)
    in_zp_v = b.const(wrap(in_zp, in_t), in_t)
    out_zp_v = b.const(wrap(out_zp, out_t), out_t)
    b.output(
        b.rescale(
            xi,
            multiplier,
            shift,
            in_zp_v,
            out_zp_v,
            scale32=scale32,
            rounding_mode=mode,
            per_channel=per_channel,
            input_unsigned=in_unsigned,
            output_unsigned=out_unsigned,
            out_dtype=out_t,
        )
    )
    return b.build(), x


def rescale_combos():
    for in_t, out_t in itertools.product(("int8", "int16", "int32", "int48"), INTS):
        for scale32, mode in (
            (True, "SINGLE_ROUND"),
            (True, "DOUBLE_ROUND"),
            (True, "INEXACT_ROUND"),
            (False, "SINGLE_ROUND"),
            (False, "INEXACT_ROUND"),
        ):
            if in_t == "int48" and scale32:
                continue
            for in_u, out_u in ((False, False), (True, False), (False, True)):
                if (in_u and (in_t in ("int32", "int48") or out_t == "int32")) or (
                    out_u and (out_t == "int32" or in_t in ("int32", "int48"))
                ):
                    continue
                yield in_t, out_t, scale32, mode, in_u, out_u


COMBOS = list(rescale_combos())


@pytest.mark.parametrize(
    "in_t,out_t,scale32,mode,in_u,out_u", COMBOS, ids=["-".join(str(v) for v in c) for c in COMBOS]
)
@pytest.mark.parametrize("per_channel", [False, True])
def test_rescale_matches_reference(device, in_t, out_t, scale32, mode, in_u, out_u, per_channel):
    rng = np.random.default_rng(zlib.crc32(repr((in_t, out_t, scale32, mode, in_u, out_u, per_channel)).encode()))
    graph, x = rescale_case(rng, in_t, out_t, (7, 5, 13), scale32, mode, per_channel, in_u, out_u)
    compare(device, graph, {"x": x})


def test_rescale_rank0_and_large_per_channel(device):
    rng = np.random.default_rng(7)
    graph, x = rescale_case(rng, "int32", "int8", (), True, "SINGLE_ROUND", False, False, False)
    compare(device, graph, {"x": x})
    graph, x = rescale_case(rng, "int16", "int8", (65535 * 64 // 31 + 500, 31), True, "DOUBLE_ROUND", True, False, True)
    compare(device, graph, {"x": x})

"""TOSA 1.1 (draft) format: the new element types, block-scaled tensors and the version rules of .tosa files."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tosa_vk.errors import TosaError, TosaFormatError
from tosa_vk.ir import dtype as dtypes
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.flatbuffer import read_graph, write_graph
from tosa_vk.ir.graph import Block, Graph, Operator, Region, Tensor
from tosa_vk.ir.validate import validate

PACKED = [DType.INT4, DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2]


@pytest.mark.parametrize("dtype", [*PACKED, DType.FP8UE8M0, DType.INT64, DType.MXINT8])
def test_constants_round_trip_in_their_encoding(dtype):
    rng = np.random.default_rng(int(dtype))
    if dtype == DType.INT64:
        values = rng.integers(-(2**63), 2**63 - 1, size=(3, 64), dtype=np.int64)
    else:
        codes = rng.integers(0, 1 << min(dtype.bits, 8), size=(3, 64)).astype(np.uint8)
        values = ((codes.astype(np.int8) << 4) >> 4) if dtype == DType.INT4 else codes.view(dtype.numpy)
    raw = dtypes.encode(dtype, values)
    assert len(raw) == dtypes.encoded_size(dtype, values.size) == values.size * dtype.bits // 8
    assert dtypes.decode(dtype, raw, values.shape).tobytes() == np.asarray(values, dtype.numpy).tobytes()


def test_fp6_packs_four_values_in_three_bytes_lsb_first():
    """Arm's layout: byte0 = v0 | v1[1:0] << 6, byte1 = v1[5:2] | v2[3:0] << 4, byte2 = v2[5:4] | v3 << 2."""
    v = np.array([0b000001, 0b100010, 0b110011, 0b101010], np.uint8)
    raw = dtypes.encode(DType.FP6E2M3, v.view(ml_dtypes.float6_e2m3fn))
    assert list(raw) == [0b10_000001, 0b0011_1000, 0b101010_11]
    assert list(dtypes.encode(DType.FP4E2M1, np.array([1, 2, 3], np.uint8).view(ml_dtypes.float4_e2m1fn))) == [
        0x21,
        0x03,
    ]


@pytest.mark.parametrize("dtype", [DType.FP4E2M1, DType.FP6E2M3, DType.MXINT8, DType.FP8UE8M0])
def test_conformance_npy_encoding_round_trips(dtype):
    """Arm's .npy files hold fp6 / fp4 packed along the last dimension, MXINT8 as uint8, fp8ue8m0 as V1."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 1 << min(dtype.bits, 8), size=(2, 64)).astype(np.uint8)
    values = codes.view(dtype.numpy)
    npy = dtypes.to_npy(values, dtype)
    if dtype in PACKED:
        assert npy.dtype == np.uint8 and npy.shape == (2, 64 * dtype.bits // 8)
    assert dtypes.from_npy(npy, dtype).tobytes() == values.tobytes()
    assert dtypes.from_npy(npy, dtype).shape == values.shape


def test_mxint8_values_are_codes_over_64():
    codes = np.array([-128, -64, 0, 1, 127], np.int8)
    assert list(dtypes.real_values(codes, DType.MXINT8)) == [-2.0, -1.0, 0.0, 1 / 64, 127 / 64]


def graph_of(version, tensors, operators, inputs, outputs) -> Graph:
    block = Block("main", operators, {t.name: t for t in tensors}, inputs, outputs)
    return Graph([Region("main", [block])], version)


def block_scaled_constant() -> Graph:
    rng = np.random.default_rng(1)
    data = rng.integers(0, 64, size=(2, 64)).astype(np.uint8).view(ml_dtypes.float6_e3m2fn)
    scales = np.array([[120, 127], [130, 1]], np.uint8).view(ml_dtypes.float8_e8m0fnu)
    t = Tensor("w", (2, 64), DType.FP6E3M2, data, scale_dtype=DType.FP8UE8M0, block_size=32, scale_data=scales)
    return graph_of((1, 1, 0, True), [t], [Operator("CONST", [], ["w"])], [], ["w"])


def test_block_scaled_constants_round_trip():
    g = block_scaled_constant()
    back = read_graph(write_graph(g))
    t = back.main.tensors["w"]
    assert t == g.main.tensors["w"] and t.block_scaled and t.scale_shape == (2, 2)
    assert t.scale_data is not None and t.scale_data.tobytes() == bytes([120, 127, 130, 1])
    assert back.tosa_version == (1, 1)


def test_a_1_0_file_may_not_use_1_1_types_or_operators():
    int64 = graph_of((1, 0, 0, False), [Tensor("x", (2,), DType.INT64)], [], ["x"], ["x"])
    with pytest.raises(TosaFormatError, match="tensor 'x' has element type INT64, which TOSA 1.1 added; .*1.0"):
        read_graph(write_graph(int64))
    g = block_scaled_constant()
    g.version = (1, 0, 0, False)
    with pytest.raises(TosaFormatError, match="FP6E3M2, which TOSA 1.1 added"):
        read_graph(write_graph(g))


def test_validate_applies_the_graphs_version():
    g = graph_of((1, 0, 0, False), [Tensor("x", (2,), DType.INT64)], [], ["x"], ["x"])
    with pytest.raises(TosaError, match="'x' is INT64, a TOSA 1.1 type; the graph is TOSA 1.0"):
        validate(g)


def test_block_scaled_shapes_must_be_whole_blocks():
    g = block_scaled_constant()
    t = g.main.tensors["w"]
    t.shape, t.data, t.scale_data = (2, 48), None, None
    with pytest.raises(TosaFormatError, match="blocks of 32, but its shape is \\[2, 48\\]"):
        read_graph(write_graph(g))


def test_builder_graphs_are_1_1_when_a_1_1_row_types_them():
    """A 1.0 operator with types only a 1.1 row has (fp8e4m3 x fp8e5m2 MATMUL) makes the graph TOSA 1.1; the same
    operator with 1.0 types keeps it 1.0."""
    from tosa_vk import Builder

    def matmul(b_dtype: str):
        b = Builder()
        x, y = b.input("a", (1, 2, 4), "fp8e4m3"), b.input("b", (1, 4, 3), b_dtype)
        b.output(b.matmul(x, y, out_dtype="fp32" if b_dtype == "fp8e5m2" else "fp16"))
        return b.build().tosa_version

    assert matmul("fp8e5m2") == (1, 1)
    assert matmul("fp8e4m3") == (1, 0)

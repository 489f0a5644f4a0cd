"""tosa_vk.Builder: spec defaults, shape inference, the same Graph type as the loader."""

from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, DType, TosaError
from tosa_vk.ir import NanPropagationMode, read_graph, write_graph


def test_conv_block_with_defaults():
    b = Builder()
    x = b.input("x", (1, 8, 8, 4), "fp32")
    w = b.const(np.ones((8, 3, 3, 4), np.float32))
    y = b.conv2d(x, w, np.zeros(8, np.float32), pad=(1, 1, 1, 1))
    z = b.clamp(y, min_val=0.0, max_val=6.0)
    b.output(z)
    graph = b.build()
    conv = next(op for op in graph.main.operators if op.op == "CONV2D")
    assert conv.attrs["stride"] == (1, 1) and conv.attrs["dilation"] == (1, 1)
    assert conv.attrs["acc_type"] == DType.FP32 and conv.attrs["local_bound"] is False
    assert len(conv.inputs) == 5  # zero points were added as CONST inputs
    assert y.shape == (1, 8, 8, 8) and y.dtype == DType.FP32
    assert graph.main.operators[-1].attrs["nan_mode"] == NanPropagationMode.PROPAGATE
    assert read_graph(write_graph(graph)) == graph


def test_int8_conv_infers_int32_output_and_zero_points():
    b = Builder()
    x = b.input("x", (1, 5, 5, 2), "int8")
    y = b.conv2d(x, np.ones((3, 1, 1, 2), np.int8), np.zeros(3, np.int32), input_zp=-3, stride=(2, 2))
    b.output(y)
    graph = b.build()
    assert y.shape == (1, 3, 3, 3) and y.dtype == DType.INT32
    zp = graph.main.tensors[graph.main.operators[-1].inputs[3]]
    assert zp.dtype == DType.INT8 and zp.data.tolist() == [-3]


def test_shape_inputs_and_lists():
    b = Builder()
    x = b.input("x", (2, 3, 4), "int16")
    r = b.reshape(x, [6, 4])
    s = b.slice(r, [1, 0], [2, 4])
    c = b.concat([s, s], axis=0)
    t = b.transpose(c, perms=(1, 0))
    p = b.pad(t, [0, 1, 2, 0])
    b.output(p)
    b.build()
    assert (r.shape, s.shape, c.shape, t.shape, p.shape) == ((6, 4), (2, 4), (4, 4), (4, 4), (5, 6))


def test_output_dtype_needed_for_cast():
    b = Builder()
    x = b.input("x", (4,), "fp32")
    with pytest.raises(TosaError, match="CAST.*out_dtype"):
        b.cast(x)
    y = b.cast(x, out_dtype="bf16")
    assert y.dtype == DType.BF16


def test_errors_name_the_op_and_rule():
    b = Builder()
    x = b.input("x", (1, 4, 4, 1), "fp32")
    with pytest.raises(TosaError, match="MAX_POOL2D.*kernel"):
        b.max_pool2d(x, stride=(1, 1), pad=(0, 0, 0, 0))
    with pytest.raises(TosaError, match="unknown attribute"):
        b.add(x, x, axis=1)
    with pytest.raises(TosaError, match="TRANSPOSE"):
        b.transpose(x, perms=(0, 0, 1, 2))


def test_build_needs_outputs():
    b = Builder()
    b.input("x", (1,), "int32")
    with pytest.raises(TosaError, match="no outputs"):
        b.build()


def test_builder_graph_saves_and_loads(tmp_path):
    b = Builder()
    x = b.input("x", (3,), "bf16")
    b.output(b.mul(x, x, np.array([0], np.int8)))
    path = tmp_path / "g.tosa"
    tosa_vk.save_graph(b.build(), path)
    assert tosa_vk.load_graph(path) == b.graph


def test_generated_names_stay_unique_and_in_sequence():
    """Names come from a per-base counter (building stays linear in the graph's size, issue 15)."""
    b = Builder()
    x = b.input("x", (2,), "fp32")
    taken = b.add(x, x, name="add_1")
    names = [b.add(x, x).name for _ in range(3)]
    assert taken.name == "add_1" and names == ["add", "add_2", "add_3"]

"""tosa_vk.Builder: spec defaults, shape inference, the same Graph type as the loader."""

from __future__ import annotations

import ml_dtypes
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


@pytest.mark.parametrize(
    "spelling, expected",
    [
        ("float32", DType.FP32),
        (np.float32, DType.FP32),
        (np.dtype("int8"), DType.INT8),
        ("int16", DType.INT16),
        (np.bool_, DType.BOOL),
        (bool, DType.BOOL),
        ("float16", DType.FP16),
        ("bfloat16", DType.BF16),
        (ml_dtypes.bfloat16, DType.BF16),
        (np.dtype(ml_dtypes.float8_e4m3fn), DType.FP8E4M3),
        ("fp32", DType.FP32),
        ("INT4", DType.INT4),
        (DType.INT48, DType.INT48),
        (np.int64, DType.INT64),  # TOSA 1.1's INT64 (int48 and shape are named, never guessed)
        ("int64", DType.INT64),
    ],
)
def test_numpy_dtypes_and_their_names_are_accepted(spelling, expected):
    """Issue 19: numpy dtypes, their types and names are dtypes wherever the Builder takes one."""
    b = Builder()
    x = b.input("x", (4,), spelling)
    assert x.dtype == expected
    assert b.const(np.zeros(2), dtype=spelling).dtype == expected
    assert b.variable("v", (2,), spelling).dtype == expected
    f = b.input("f", (4,), np.float32)
    if expected not in (DType.INT48, DType.INT4, DType.BOOL, DType.FP8E4M3, DType.INT64):
        assert b.cast(f, out_dtype=spelling).dtype == expected


def test_numpy_dtypes_as_out_dtype_and_acc_type():
    b = Builder()
    x = b.input("x", (1, 4, 4, 2), np.dtype(np.float16))
    y = b.conv2d(x, np.ones((3, 1, 1, 2), np.float16), np.zeros(3, np.float16), acc_type=np.float32)
    assert b.block.operators[-1].attrs["acc_type"] == DType.FP32
    q = b.cast(y, out_dtype=np.int8)
    b.output(b.rescale(q, np.array([1 << 30], np.int32), np.array([30], np.int8), out_dtype="int16"))
    assert q.dtype == DType.INT8 and b.build().main.tensors[b.block.outputs[0]].dtype == DType.INT16


@pytest.mark.parametrize("spelling", ["uint8", np.uint8, np.uint64, np.float64, float, "complex64", "nope"])
def test_dtypes_without_a_tosa_type_name_the_accepted_ones(spelling):
    b = Builder()
    with pytest.raises(TosaError, match=r"accepted.*fp32.*float32.*bfloat16") as info:
        b.input("x", (4,), spelling)
    assert "int48" in str(info.value)
    x = b.input("y", (4,), "fp32")
    with pytest.raises(TosaError, match=r"CAST.*accepted"):
        b.cast(x, out_dtype=spelling)


def test_repeated_names_are_errors():
    """Issue 19: a name the caller gives is never silently renamed; a taken one is an error naming it."""
    b = Builder()
    x = b.input("x", (4,), "fp32")
    with pytest.raises(TosaError, match="'x'.*already"):
        b.input("x", (4,), "fp32")
    b.add(x, x, name="sum")
    with pytest.raises(TosaError, match="ADD.*'sum'.*already"):
        b.add(x, x, name="sum")
    with pytest.raises(TosaError, match="'x'.*already"):
        b.mul(x, x, name="x")
    with pytest.raises(TosaError, match="'w'.*already"):
        b.const(np.ones(4, np.float32), name="w") and b.const(np.ones(4, np.float32), name="w")
    with pytest.raises(TosaError, match="'sum'.*already"):
        b.variable("sum", (4,), "fp32")
    b.variable("h", (1,), "int8")
    with pytest.raises(TosaError, match="VARIABLE 'h' declared twice"):
        b.variable("h", (1,), "int8")
    # generated names still step around taken ones, and a region's inputs may repeat a value
    assert [b.add(x, x).name, b.add(x, x).name] == ["add", "add_1"]
    c = b.input("c", (1,), "bool")
    out = b.cond_if(c, [x, x], lambda s, p, q: s.add(p, q), lambda s, p, q: s.sub(p, q))
    b.output(out)
    b.build()


def test_every_op_is_a_listed_method_with_a_signature():
    """Issue 19: ops are real methods (help() and dir() show them) with the catalogue's inputs and attributes."""
    import inspect

    from tosa_vk.ir.ops import OPS

    names = dir(Builder())
    assert all(op.lower() in names for op in OPS)
    assert all(op.lower() in Builder.__dict__ for op in OPS)
    sig = inspect.signature(Builder.conv2d)
    params = sig.parameters
    assert list(params)[:6] == ["self", "input", "weight", "bias", "input_zp", "weight_zp"]
    assert params["pad"].kind is inspect.Parameter.KEYWORD_ONLY and repr(params["pad"].default) == "(0, 0, 0, 0)"
    assert repr(params["stride"].default) == "(1, 1)" and repr(params["input_zp"].default) == "0"
    assert params["acc_type"].default is None or repr(params["acc_type"].default) == "None"
    assert (
        "'axis'" not in str(inspect.signature(Builder.add)) and "axis" in inspect.signature(Builder.argmax).parameters
    )
    assert Builder.conv2d.__doc__ and "CONV2D" in Builder.conv2d.__doc__
    text = pydoc_text(Builder)
    assert "conv2d(self, input" in text and "rescale(self, input" in text


def pydoc_text(obj) -> str:
    import pydoc

    return pydoc.plain(pydoc.render_doc(obj))


def test_stub_matches_the_catalogue():
    """tosa_vk/builder.pyi is what the generator makes from the catalogue today (regenerate:
    python scripts/gen_builder_stub.py)."""
    from pathlib import Path

    from tosa_vk import builder
    from tosa_vk.ir.ops import OPS

    path = Path(builder.__file__).with_suffix(".pyi")
    assert path.read_text() == builder.stub_text()
    for op in OPS:
        assert f"    def {op.lower()}(" in path.read_text()

"""TOSA 1.1's shape operators (EXT-SHAPE) and DIM: their values and rules (tosa_vk/ir/shape_ops.py), the validator's
inference of them, both backends (reference: tosa_vk/reference/shape.py; Vulkan: folded at compile time by
tosa_vk/stages/passes/shape.py) and the Builder. Arm's generated 1.1 tests of these operators run in
tests/test_conformance_1_1.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_both

import tosa_vk
from tosa_vk import Builder
from tosa_vk.errors import TosaError
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.ops import op_spec
from tosa_vk.ir.shape_ops import SHAPE_OPS, evaluate
from tosa_vk.ir.validate import validate

# ---- values: each operator's pseudocode on its edge cases ---------------------------------------------------------

VALUES = [
    ("ADD_SHAPE", [[1, -5, 0], [2, 5, 0]], [3, 0, 0]),
    ("SUB_SHAPE", [[1, 0], [2, -7]], [-1, 7]),
    ("MUL_SHAPE", [[3, -2, 0], [4, 5, 9]], [12, -10, 0]),
    ("DIV_FLOOR_SHAPE", [[0, 7, 8, 9], [1, 2, 2, 10]], [0, 3, 4, 0]),
    ("DIV_CEIL_SHAPE", [[0, 7, 8, 9], [1, 2, 2, 10]], [0, 4, 4, 1]),
    ("MOD_SHAPE", [[0, 7, 8, 9], [1, 2, 2, 10]], [0, 1, 0, 9]),
    ("MIN_SHAPE", [[1, -3, 5], [2, -4, 5]], [1, -4, 5]),
    ("MAX_SHAPE", [[1, -3, 5], [2, -4, 5]], [2, -3, 5]),
    ("EXP2_SHAPE", [[0, 1, 10, 30]], [1, 2, 1024, 1 << 30]),
    ("LOG2_FLOOR_SHAPE", [[1, 2, 3, 4, 5, 1 << 40]], [0, 1, 1, 2, 2, 40]),
    ("LOG2_CEIL_SHAPE", [[1, 2, 3, 4, 5, (1 << 40) + 1]], [0, 1, 2, 2, 3, 41]),
    ("CONCAT_SHAPE", [[1, 2], [3], [4, 5, 6]], [1, 2, 3, 4, 5, 6]),
    ("CONCAT_SHAPE", [[7]], [7]),
    ("ADD_SHAPE", [[], []], []),  # the shape of a rank-0 tensor
    ("EXP2_SHAPE", [[]], []),
]


@pytest.mark.parametrize(("op", "inputs", "want"), VALUES, ids=[f"{v[0]}-{i}" for i, v in enumerate(VALUES)])
def test_values(op, inputs, want):
    assert evaluate(op, inputs, {}) == want


def test_slice_shape_and_dim():
    assert evaluate("SLICE_SHAPE", [[5, 6, 7, 8], [1], [2]], {}) == [6, 7]
    assert evaluate("SLICE_SHAPE", [[5, 6, 7, 8], [0], [4]], {}) == [5, 6, 7, 8]
    assert evaluate("DIM", [], {"axis": 2}, (3, 4, 5)) == [5]
    assert evaluate("DIM", [], {"axis": 1}, (2, 64), block_size=32) == [64]
    assert evaluate("ASSERT_EQUAL_SHAPE", [[3, 1], [3, 1]], {"allow_broadcast": False}) == []
    assert evaluate("ASSERT_EQUAL_SHAPE", [[1, 4], [7, 4]], {"allow_broadcast": True}) == []
    assert evaluate("ASSERT_EQUAL_SHAPE", [[3, 4], [1, 4]], {"allow_broadcast": True}) == []
    assert evaluate("ADD_SHAPE", [[1], None], {}) is None  # an input not known (yet)


ERRORS = [
    ("ADD_SHAPE", [[1, 2], [1]], {}, r"ERROR_IF\(length\(input1\) != length\(input2\)\)"),
    ("MUL_SHAPE", [[1 << 62], [4]], {}, r"REQUIRE\(the result of MUL_SHAPE fits tensor_size_t\)"),
    ("DIV_FLOOR_SHAPE", [[4], [0]], {}, r"REQUIRE\(input2\[index\] >= 1\)"),
    ("DIV_CEIL_SHAPE", [[-4], [2]], {}, r"REQUIRE\(input1\[index\] >= 0\)"),
    ("MOD_SHAPE", [[4], [-1]], {}, r"REQUIRE\(input2\[index\] >= 1\)"),
    ("EXP2_SHAPE", [[-1]], {}, r"REQUIRE\(input\[index\] >= 0\)"),
    ("EXP2_SHAPE", [[31]], {}, r"REQUIRE\(input\[index\] < MAX_LOG2_SIZE\)"),
    ("LOG2_CEIL_SHAPE", [[0]], {}, r"REQUIRE\(in >= 1\)"),
    ("LOG2_FLOOR_SHAPE", [[-8]], {}, r"REQUIRE\(in >= 1\)"),
    ("CONCAT_SHAPE", [], {}, r"ERROR_IF\(input == \[\]\)"),
    ("CONCAT_SHAPE", [[1], []], {}, r"ERROR_IF\(input\[i\] == \[\]\)"),
    ("SLICE_SHAPE", [[1, 2], [0], [0]], {}, r"ERROR_IF\(size_value <= 0\)"),
    ("SLICE_SHAPE", [[1, 2], [-1], [1]], {}, r"ERROR_IF\(start_value < 0\)"),
    ("SLICE_SHAPE", [[1, 2], [1], [2]], {}, r"ERROR_IF\(start_value \+ size_value > length\(input\)\)"),
    ("ASSERT_EQUAL_SHAPE", [[2, 3], [2, 4]], {"allow_broadcast": False}, r"ERROR_IF\(input1\[index\] != input2"),
    ("ASSERT_EQUAL_SHAPE", [[1, 3], [1, 3, 1]], {"allow_broadcast": True}, r"ERROR_IF\(length\(input1\)"),
    ("ASSERT_EQUAL_SHAPE", [[2, 3], [2, 4]], {"allow_broadcast": True}, r"input2\[index\] != 1 && input2"),
    ("ASSERT_EQUAL_SHAPE", [[1, 3], [2, 1]], {"allow_broadcast": False}, r"ERROR_IF\(input1\[index\] != input2"),
]


@pytest.mark.parametrize(("op", "inputs", "attrs", "rule"), ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_rules(op, inputs, attrs, rule):
    with pytest.raises(TosaError, match=rule):
        evaluate(op, inputs, attrs)


def test_dim_rules():
    with pytest.raises(TosaError, match=r"ERROR_IF\(axis >= rank\(shape\)\)"):
        evaluate("DIM", [], {"axis": 3}, (1, 2, 3))
    with pytest.raises(TosaError, match=r"ERROR_IF\(axis < 0\)"):
        evaluate("DIM", [], {"axis": -1}, (1, 2, 3))
    with pytest.raises(TosaError, match=r"get_innermost_block_size"):
        evaluate("DIM", [], {"axis": 0}, (2, 48), block_size=32)


def test_catalogue():
    for name in SHAPE_OPS:
        spec = op_spec(name)
        assert spec.since == (1, 1) and spec.chapter == "shape", name
        assert all(row.since == (1, 1) for row in spec.types)
    assert [o.name for o in op_spec("SLICE_SHAPE").inputs] == ["input", "start", "size"]
    assert op_spec("CONCAT_SHAPE").inputs[0].is_list and op_spec("ASSERT_EQUAL_SHAPE").outputs == ()
    dim_types = {row.types["in_t"] for row in op_spec("DIM").types}
    assert {DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.FP8E4M3, DType.BF16} <= dim_types
    assert all("EXT-SHAPE" in row.needs for row in op_spec("DIM").types)


# ---- graphs: validation, both backends, placement -----------------------------------------------------------------


def chain(b: Builder, x):
    """x [4, 6] -> its shape [4, 6] by DIM and CONCAT_SHAPE, put through every value operator back to a shape of
    24 elements: RESHAPE(x, [2, 3, 4])."""
    d0, d1 = b.dim(x, axis=0), b.dim(x, axis=1)  # [4], [6]
    s = b.concat_shape([d0, d1])  # [4, 6]
    s = b.sub_shape(b.add_shape(s, [2, 2]), [2, 2])  # [4, 6]
    s = b.mul_shape(s, [3, 1])  # [12, 6]
    s = b.div_floor_shape(s, [6, 3])  # [2, 2]
    s = b.max_shape(b.min_shape(s, [2, 9]), [0, 3])  # [2, 3]
    e = b.exp2_shape(b.log2_floor_shape(b.slice_shape(s, 0, 1)))  # [2] -> [1] -> [2]
    f = b.div_ceil_shape(b.log2_ceil_shape(b.dim(x, axis=1)), [1])  # 6 -> [3]
    g = b.add_shape(b.mod_shape(b.slice_shape(s, 1, 1), [2]), f)  # 3 % 2 + 3 -> [4]
    b.assert_equal_shape(b.concat_shape([e, g]), [2, 4], allow_broadcast=False)
    shape = b.concat_shape([e, b.slice_shape(s, 1, 1), g])  # [2, 3, 4]
    b.assert_equal_shape(shape, [1, 3, 4], allow_broadcast=True)
    return b.reshape(x, shape, name="y")


def shape_graph():
    b = Builder()
    x = b.input("x", (4, 6), "int16")
    b.output(chain(b, x))
    return b.build()


def test_builder_and_validation():
    graph = shape_graph()
    assert graph.tosa_version == (1, 1)
    assert graph.main.tensors["y"].shape == (2, 3, 4)
    ops = [op.op for op in graph.main.operators]
    assert ops.count("ASSERT_EQUAL_SHAPE") == 2 and ops.count("DIM") == 3
    before = {n: t.data is None for n, t in graph.main.tensors.items()}
    validate(graph)
    assert {n: t.data is None for n, t in graph.main.tensors.items()} == before  # validation changes nothing


def test_validation_names_op_and_rule():
    b = Builder()
    x = b.input("x", (4, 6), "fp32")
    with pytest.raises(TosaError, match=r"ASSERT_EQUAL_SHAPE .*ERROR_IF\(input1\[index\] != input2\[index\]\)"):
        b.assert_equal_shape(b.dim(x, axis=0), [5], allow_broadcast=False)
    with pytest.raises(TosaError, match=r"DIM .*ERROR_IF\(axis >= rank\(shape\)\)"):
        b.dim(x, axis=2)
    with pytest.raises(TosaError, match=r"DIV_FLOOR_SHAPE .*REQUIRE\(input2\[index\] >= 1\)"):
        b.div_floor_shape([4], [0])


def test_shape_values_are_not_graph_outputs():
    b = Builder()
    x = b.input("x", (4, 6), "fp32")
    b.output(b.dim(x, axis=0))
    with pytest.raises(TosaError, match="graph inputs and outputs may not be shape_t values"):
        b.build()


def test_reference():
    x = np.arange(24, dtype=np.int16).reshape(4, 6)
    (y,) = tosa_vk.load(shape_graph(), backend="reference").run({"x": x}).values()
    np.testing.assert_array_equal(y, x.reshape(2, 3, 4))


def test_reference_checks_values_when_run():
    """The reference operator raises the rule itself (on values no validation saw)."""
    from tosa_vk.ir.graph import Operator
    from tosa_vk.reference import load_all, registry

    load_all()
    op = Operator("ADD_SHAPE", ["a", "b"], ["c"])
    call = registry.Call(op, [np.array([1, 2]), np.array([1])], [DType.SHAPE] * 2, [DType.SHAPE], [(2,)])
    with pytest.raises(TosaError, match=r"ERROR_IF\(length\(input1\) != length\(input2\)\)"):
        registry.OPS["ADD_SHAPE"](call)
    call.inputs = [np.array([1, 2]), np.array([3, -4])]
    np.testing.assert_array_equal(registry.OPS["ADD_SHAPE"](call), [4, -2])


@pytest.mark.vulkan
def test_vulkan_strict_and_placement(device):
    x = np.arange(24, dtype=np.int16).reshape(4, 6)
    got, want = run_both(device, shape_graph(), {"x": x})
    np.testing.assert_array_equal(got, want)
    with tosa_vk.load(shape_graph(), backend="vulkan", device=device, strict=True) as model:
        rows = {p.op.split(" #")[0]: p for p in model.placement}
    for name in set(SHAPE_OPS) - {"ASSERT_EQUAL_SHAPE"}:  # (checked and gone: it has no value)
        assert rows[name].where == "constant", rows[name]
        assert rows[name].reason.startswith("shape operator: evaluated at compile time"), rows[name]


def test_fold_pass_leaves_caller_graph():
    from tosa_vk.stages import passes

    graph = shape_graph()
    before = [op.op for op in graph.main.operators]
    folded = passes.run(graph)
    assert not any(op.op in SHAPE_OPS for _, block in folded.blocks() for op in block.operators)
    assert [op.op for op in graph.main.operators] == before
    made = [op for op in folded.main.operators if op.attrs.get("folded")]
    assert len(made) == sum(op in SHAPE_OPS and op != "ASSERT_EQUAL_SHAPE" for op in before)
    for op in made:
        assert op.op == "CONST_SHAPE" and folded.main.tensors[op.outputs[0]].data is not None
        assert folded.main.tensors[op.outputs[0]] is not graph.main.tensors[op.outputs[0]]

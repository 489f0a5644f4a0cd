"""Static validation (tosa_vk.ir.validate) and shape inference (tosa_vk.ir.shapes).

Real graphs: the generated conformance selection (tests/conftest.py) and the shipped models.
Hand-built graphs: one per class of error, each must name the operator and the rule.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tosa_vk.errors import TosaError
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.flatbuffer import load_graph
from tosa_vk.ir.graph import Block, Graph, Operator, Region, Tensor
from tosa_vk.ir.shapes import infer, infer_from
from tosa_vk.ir.validate import validate

MODELS = sorted((Path(__file__).resolve().parent.parent / "resources" / "models").glob("*/model.tosa"))


def _check_infer(graph: Graph) -> None:
    for region, block in graph.blocks():
        for i, op in enumerate(block.operators):
            for k, (shape, dtype) in enumerate(infer(op, block, graph)):
                t = block.tensors[op.outputs[k]]
                if shape is not None and not t.unranked:
                    assert shape == t.shape, f"{region.name} {op.op} #{i} output {k}: {shape} != {t.shape}"
                if dtype is not None:
                    assert dtype == t.dtype, f"{region.name} {op.op} #{i} output {k}: {dtype} != {t.dtype}"


@pytest.mark.conformance
def test_conformance_positive_validates_and_infers(positive_test):
    path = positive_test / "test.tosa"
    graph = load_graph(path)
    validate(graph, file=str(path))
    _check_infer(graph)


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.parent.name)
def test_models_validate_and_infer(path):
    graph = load_graph(path)
    validate(graph, file=str(path))
    _check_infer(graph)


@pytest.mark.conformance
def test_conformance_negative_rejected(negative_test):
    """Every ERROR_IF test of the generator is rejected statically, with the op named."""
    with pytest.raises(TosaError) as err:
        validate(load_graph(negative_test / "test.tosa"))
    assert err.value.op or "tensor" in err.value.rule


# --- hand-built graphs -----------------------------------------------------------------------------------------


def _graph(tensors, ops, inputs, outputs, extra_regions=()) -> Graph:
    block = Block("main", list(ops), {t.name: t for t in tensors}, list(inputs), list(outputs))
    return Graph([Region("main", [block]), *extra_regions])


def _const(name, values, dtype) -> Tensor:
    data = np.asarray(values, dtype=DType.of(dtype).numpy)
    return Tensor(name, data.shape, dtype, data=data)


def _conv_graph(out_shape=(1, 6, 6, 4), pad=(0, 0, 0, 0), dtype="FP32", weight_dtype=None):
    weight_dtype = weight_dtype or dtype
    tensors = [
        Tensor("x", (1, 8, 8, 3), dtype),
        _const("w", np.zeros((4, 3, 3, 3)), weight_dtype),
        _const("b", np.zeros(4), dtype),
        _const("izp", [0], dtype),
        _const("wzp", [0], weight_dtype),
        Tensor("y", out_shape, dtype),
    ]
    ops = [Operator("CONST", [], [n]) for n in ("w", "b", "izp", "wzp")]
    ops.append(
        Operator(
            "CONV2D",
            ["x", "w", "b", "izp", "wzp"],
            ["y"],
            dict(pad=pad, stride=(1, 1), dilation=(1, 1), acc_type=DType.FP32, local_bound=False),
        )
    )
    return _graph(tensors, ops, ["x"], ["y"])


def _raises(graph: Graph, *fragments: str) -> str:
    with pytest.raises(TosaError) as info:
        validate(graph, file="hand.tosa")
    msg = str(info.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return msg


def test_good_conv_graph_validates_and_infers():
    g = _conv_graph()
    validate(g)
    assert infer(g.main.operators[-1], g.main, g) == [((1, 6, 6, 4), DType.FP32)]


def test_undefined_input_name():
    g = _graph(
        [Tensor("x", (2, 3), "FP32"), Tensor("y", (2, 3), "FP32")],
        [Operator("ADD", ["x", "nope"], ["y"])],
        ["x"],
        ["y"],
    )
    _raises(g, "ADD #0 'y'", "'nope'", "undefined")


def test_input_used_before_defined():
    t = [Tensor(n, (2,), "FP32") for n in ("x", "a", "y")]
    g = _graph(t, [Operator("ADD", ["x", "a"], ["y"]), Operator("ABS", ["x"], ["a"])], ["x"], ["y"])
    _raises(g, "ADD #0", "'a' is used before it is defined")


def test_tensor_written_twice():
    t = [Tensor(n, (2,), "FP32") for n in ("x", "y")]
    g = _graph(t, [Operator("ABS", ["x"], ["y"]), Operator("NEGATE", ["x"], ["y"])], ["x"], ["y"])
    _raises(g, "NEGATE #1 'y'", "written twice")


def test_wrong_input_count():
    t = [Tensor(n, (2,), "FP32") for n in ("x", "y")]
    g = _graph(t, [Operator("ADD", ["x"], ["y"])], ["x"], ["y"])
    _raises(g, "ADD #0 'y'", "wrong number of inputs", "takes 2")


def test_wrong_dtype_combination():
    g = _conv_graph(weight_dtype="INT8")
    _raises(g, "CONV2D #4 'y'", "ERROR_IF(operator data types do not meet requirement", "weight=INT8")


def test_acc_type_must_match_row():
    g = _conv_graph(dtype="INT8")  # int8 conv with fp32 acc_type (needs INT32) and an int8 bias (needs INT32)
    _raises(g, "CONV2D #4", "Supported Data Types")


def test_conv_output_shape_mismatch():
    g = _conv_graph(out_shape=(1, 5, 6, 4))
    _raises(
        g,
        "CONV2D #4 'y'",
        "ERROR_IF(OH != idiv_check(IH - 1 + pad_top + pad_bottom - (KH - 1) * dilation_y, stride_y) + 1)",
        "declared OH=5, computed 6",
    )


def test_conv_negative_pad():
    g = _conv_graph(pad=(-1, 0, 0, 0))
    _raises(g, "CONV2D #4", "ERROR_IF(pad_top < 0")


def test_transpose_perms_not_a_permutation():
    t = [Tensor("x", (2, 3, 4), "INT8"), Tensor("y", (3, 3, 4), "INT8")]
    g = _graph(t, [Operator("TRANSPOSE", ["x"], ["y"], dict(perms=(1, 1, 2)))], ["x"], ["y"])
    _raises(g, "TRANSPOSE #0 'y'", "ERROR_IF(indexes_used[index] == true)")


def test_transpose_output_shape_mismatch():
    t = [Tensor("x", (2, 3, 4), "INT8"), Tensor("y", (2, 3, 4), "INT8")]
    g = _graph(t, [Operator("TRANSPOSE", ["x"], ["y"], dict(perms=(1, 0, 2)))], ["x"], ["y"])
    _raises(g, "TRANSPOSE #0", "ERROR_IF(shape1[perms[i]] != shape[i]): declared shape[0]=2, computed 3")


def test_rank_above_level_8k():
    shape = (1, 1, 1, 1, 1, 1, 2)
    g = _graph([Tensor("x", shape, "FP32"), Tensor("y", shape, "FP32")], [Operator("ABS", ["x"], ["y"])], ["x"], ["y"])
    _raises(g, "ABS #0", "LEVEL_CHECK(rank(shape) <= MAX_RANK)", "rank 7")


def _cond_if_graph(then_name="then", else_name="else", then_shape=(2,)):
    main = _graph(
        [_const("c", [True], "BOOL"), Tensor("x", (2,), "FP32"), Tensor("y", (2,), "FP32")],
        [
            Operator("CONST", [], ["c"]),
            Operator("COND_IF", ["c", "x"], ["y"], dict(then_graph=then_name, else_graph=else_name)),
        ],
        ["x"],
        ["y"],
    )
    regions = []
    for name, op, shape in (("then", "ABS", then_shape), ("else", "NEGATE", (2,))):
        ts = {"a": Tensor("a", shape, "FP32"), "r": Tensor("r", shape, "FP32")}
        ins = ["a"]
        if op == "NEGATE":
            ts.update(zp=_const("zp", [0.0], "FP32"), zo=_const("zo", [0.0], "FP32"))
            ops = [Operator("CONST", [], ["zp"]), Operator("CONST", [], ["zo"]), Operator(op, ["a", "zp", "zo"], ["r"])]
        else:
            ops = [Operator(op, ins, ["r"])]
        regions.append(Region(name, [Block(name, ops, ts, ["a"], ["r"])]))
    main.regions.extend(regions)
    return main


def test_cond_if_good():
    g = _cond_if_graph()
    validate(g)
    assert infer(g.main.operators[1], g.main, g) == [((2,), DType.FP32)]


def test_cond_if_unknown_region():
    _raises(_cond_if_graph(then_name="nowhere"), "COND_IF #1 'y'", "then_graph 'nowhere' names no region")


def test_cond_if_signature_mismatch():
    _raises(
        _cond_if_graph(then_shape=(3,)),
        "COND_IF #1",
        "ERROR_IF(tensor_list_shape(input_list) != tosa_input_shape(then_graph))",
    )


def test_unknown_operator():
    t = [Tensor(n, (2,), "FP32") for n in ("x", "y")]
    _raises(_graph(t, [Operator("FROB", ["x"], ["y"])], ["x"], ["y"]), "FROB #0", "unknown operator")


def test_zero_point_must_be_zero_for_float():
    g = _conv_graph()
    g.main.tensors["izp"].data = np.asarray([3.0], np.float32)
    _raises(g, "CONV2D #4", "ERROR_IF(!is_same<in_t,i8_t>() && input_zp != 0)")


def test_reshape_size_mismatch_and_infer_from():
    x = Tensor("x", (2, 6), "INT8")
    shape = Tensor("s", (2,), "SHAPE", data=np.asarray([3, 4], np.int64))
    assert infer_from("RESHAPE", [x, shape], {}) == [((3, 4), DType.INT8)]
    bad = Tensor("s", (2,), "SHAPE", data=np.asarray([5, 4], np.int64))
    with pytest.raises(TosaError, match=r"tensor_size\(shape1\) != tensor_size\(shape\)"):
        infer_from("RESHAPE", [x, bad], {})


def test_infer_from_needs_out_dtype_for_cast():
    x = Tensor("x", (2, 3), "FP32")
    assert infer_from("CAST", [x], {}) == [((2, 3), None)]
    assert infer_from("CAST", [x], {}, out_dtype=DType.INT8) == [((2, 3), DType.INT8)]
    assert infer_from(
        "MATMUL",
        [
            Tensor("a", (1, 2, 3), "INT8"),
            Tensor("b", (1, 3, 5), "INT8"),
            Tensor("az", (1,), "INT8"),
            Tensor("bz", (1,), "INT8"),
        ],
        {},
    ) == [((1, 2, 5), DType.INT32)]


def test_reshape_minus_one_rejected():
    x = Tensor("x", (2, 6), "INT8")
    s = Tensor("s", (2,), "SHAPE", data=np.asarray([-1, 4], np.int64))
    assert infer_from("RESHAPE", [x, s], {}) == [((3, 4), DType.INT8)]  # builders may use -1
    g = _graph(
        [x, s, Tensor("y", (3, 4), "INT8")],
        [Operator("CONST_SHAPE", [], ["s"]), Operator("RESHAPE", ["x", "s"], ["y"])],
        ["x"],
        ["y"],
    )
    _raises(g, "RESHAPE #1 'y'", "shape values must be >= 1")


def test_pool_kernel_level_check():
    g = _graph(
        [Tensor("x", (1, 9000, 4, 1), "FP32"), Tensor("y", (1, 1, 4, 1), "FP32")],
        [Operator("MAX_POOL2D", ["x"], ["y"], dict(kernel=(9000, 1), stride=(1, 1), pad=(0, 0, 0, 0)))],
        ["x"],
        ["y"],
    )
    _raises(g, "MAX_POOL2D #0", "LEVEL_CHECK(kernel_y <= MAX_KERNEL)")


def test_control_flow_recursion_and_nesting():
    g = _cond_if_graph()
    then = g.region("then").blocks[0]
    then.tensors["c"] = _const("c", [True], "BOOL")
    then.tensors["r2"] = Tensor("r2", (2,), "FP32")
    then.operators += [
        Operator("CONST", [], ["c"]),
        Operator("COND_IF", ["c", "r"], ["r2"], dict(then_graph="then", else_graph="else")),
    ]
    then.outputs = ["r2"]
    _raises(g, "COND_IF #2", "recursive")


def test_control_flow_body_cannot_read_outer_names():
    g = _cond_if_graph()
    g.region("then").blocks[0].operators[0].inputs = ["x"]  # 'x' lives in main only
    _raises(g, "region 'then' ABS #0", "'x' is not a tensor of block 'then'")


def _nested(depth: int) -> Graph:
    """main -> l1 -> ... -> l<depth>, each level a COND_IF on a constant wrapping an ABS at the bottom."""

    def level(name: str, child: str | None) -> Block:
        ts = {"a": Tensor("a", (2,), DType.FP32), "r": Tensor("r", (2,), DType.FP32)}
        if child is None:
            return Block(name, [Operator("ABS", ["a"], ["r"])], ts, ["a"], ["r"])
        ts["c"] = _const("c", [True], "BOOL")
        ops = [
            Operator("CONST", [], ["c"]),
            Operator("COND_IF", ["c", "a"], ["r"], dict(then_graph=child, else_graph=child)),
        ]
        return Block(name, ops, ts, ["a"], ["r"])

    names = ["main"] + [f"l{i}" for i in range(1, depth + 1)]
    return Graph([Region(n, [level(n, names[i + 1] if i + 1 < len(names) else None)]) for i, n in enumerate(names)])


def test_nesting_depth_level_8k():
    validate(_nested(6))  # COND_IFs run at tosa_nesting_depth 0..5
    _raises(_nested(7), "region 'l6' COND_IF #1", "ERROR_IF(tosa_nesting_depth >= MAX_NESTING)")

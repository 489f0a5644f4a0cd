"""Shape folding: TOSA 1.1's shape operators (EXT-SHAPE) and DIM become CONST_SHAPEs of their values.

shape_t values are resolvable to constants at backend compile time (spec, "Tensor Definitions"), and every shape
operator has constant inputs in a graph that validates, so the Vulkan backend computes them here (tosa_vk/ir/
shape_ops.py) and no lowering or host step ever sees one. A folded CONST_SHAPE names the operator it replaces in
its FOLDED attribute (the placement reports it as that operator, a constant); an ASSERT_EQUAL_SHAPE, which has no
output, is checked and removed. An operator whose inputs are not known stays (placement then reports it).
"""

from __future__ import annotations

import numpy as np

from ...ir.graph import Block, Graph, Operator
from ...ir.shape_ops import FOLDED, SHAPE_OPS, evaluate
from ...ir.shapes import shape_value


def has_shape_ops(graph: Graph) -> bool:
    return any(op.op in SHAPE_OPS for _, block in graph.blocks() for op in block.operators)


def fold_shapes(graph: Graph) -> int:
    """Rewrites every block in place (new tensors for the folded values); returns the operators folded."""
    return sum(_fold_block(block) for _, block in graph.blocks())


def _fold_block(block: Block) -> int:
    folded = 0
    operators: list[Operator] = []
    for op in block.operators:
        if op.op not in SHAPE_OPS:
            operators.append(op)
            continue
        if op.op == "DIM":
            t = block.tensors[op.inputs[0]]
            value = evaluate("DIM", [], op.attrs, t.shape, t.block_size if t.block_scaled else 0)
        else:
            value = evaluate(op.op, [shape_value(block.tensors[n]) for n in op.inputs], op.attrs)
        if value is None:
            operators.append(op)
            continue
        folded += 1
        if op.outputs:  # (ASSERT_EQUAL_SHAPE has none: it held)
            out = block.tensors[op.outputs[0]]
            block.tensors[out.name] = type(out)(out.name, out.shape, out.dtype, np.asarray(value, dtype=np.int64))
            operators.append(Operator("CONST_SHAPE", [], [out.name], {FOLDED: op.op}, op.location))
    block.operators = operators
    return folded

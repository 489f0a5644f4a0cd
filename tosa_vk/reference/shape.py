"""Shape operators (TOSA 1.1, EXT-SHAPE) and DIM.

Their values are shape_t values (int64 arrays, as CONST_SHAPE's); the rules and arithmetic are tosa_vk.ir.shape_ops,
the one place that computes them (the validator and the Vulkan backend's folding pass use it too).
"""

from __future__ import annotations

import numpy as np

from ..ir.shape_ops import SHAPE_OPS, evaluate
from .registry import Call, reference


@reference(*SHAPE_OPS)
def shape_op(call: Call):
    """One shape operator on its input values; ASSERT_EQUAL_SHAPE returns no output."""
    if call.name == "DIM":
        block = call.extra.get("block")
        t = block.tensors[call.op.inputs[0]] if block is not None else None
        scaled = t is not None and t.block_scaled
        value = evaluate("DIM", [], call.op.attrs, call.inputs[0].shape, t.block_size if scaled and t else 0)
    else:
        value = evaluate(call.name, [np.asarray(x).reshape(-1).tolist() for x in call.inputs], call.op.attrs)
    if call.name == "ASSERT_EQUAL_SHAPE":
        return []
    return np.asarray(value, dtype=np.int64)

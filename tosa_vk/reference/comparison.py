"""Comparison operators (spec 2.8). A NaN operand makes every comparison false; the sign of zero is ignored."""

from __future__ import annotations

import numpy as np

from .elementwise_binary import broadcast_inputs
from .numeric import to_float64
from .registry import Call, reference


def _operands(call: Call):
    a, b = broadcast_inputs(call, call.inputs)
    if call.in_types[0].is_float:  # compare bf16 / fp16 in float64 (IEEE semantics: NaN compares false)
        return to_float64(a), to_float64(b)
    return a, b


@reference("EQUAL")
def EQUAL(call: Call):
    a, b = _operands(call)
    return np.equal(a, b)


@reference("GREATER")
def GREATER(call: Call):
    a, b = _operands(call)
    return np.greater(a, b)


@reference("GREATER_EQUAL")
def GREATER_EQUAL(call: Call):
    a, b = _operands(call)
    return np.greater_equal(a, b)

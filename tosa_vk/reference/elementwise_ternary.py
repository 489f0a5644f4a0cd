"""Elementwise ternary operators (spec 2.7): SELECT."""

from __future__ import annotations

import numpy as np

from .elementwise_binary import broadcast_inputs
from .registry import Call, reference


@reference("SELECT")
def SELECT(call: Call):
    # ERROR_IF(shape != broadcast_shape(broadcast_shape(shape1, shape2), shape3))
    condition, on_true, on_false = broadcast_inputs(call, call.inputs)
    return np.where(condition, on_true, on_false).astype(call.out_types[0].numpy, copy=False)

"""Variables (spec 2.16, EXT-VARIABLE; tosa-stateful-ops-proposal.md) on the reference backend: state that persists
across graph runs, kept as numpy values in the session's store (`Call.state`, {uid: tosa_vk.ir.variables.Variable}).

In a .tosa file a variable is a block tensor with `variable` set (its `variable_name` is the uid, its data the
optional initial value). VARIABLE names it among its outputs, VARIABLE_WRITE among its outputs (the value is its
input), VARIABLE_READ among its inputs. The rules themselves are tosa_vk/ir/variables.py, shared with the Vulkan
backend.
"""

from __future__ import annotations

import numpy as np

from ..ir.variables import check_read, check_write, declare, uid_of, variable_tensor
from .registry import Call, reference


@reference("VARIABLE")
def VARIABLE(call: Call):
    t = variable_tensor(call.extra["block"], call.op.outputs + call.op.inputs, call.name)
    var, created = declare(call.state, uid_of(t), t.shape, t.dtype.name, None if t.data is None else t.data.shape)
    if created:
        var.value = t.data.copy() if t.data is not None else np.zeros(t.shape, t.dtype.numpy)
    return [var.value] * len(call.op.outputs)


@reference("VARIABLE_WRITE")
def VARIABLE_WRITE(call: Call):
    t = variable_tensor(call.extra["block"], call.op.outputs + call.op.inputs, call.name)
    (i,) = [i for i, n in enumerate(call.op.inputs) if n != t.name]
    value = call.inputs[i]
    var = check_write(call.state, uid_of(t), value.shape, call.in_types[i].name)
    var.value = np.array(value, copy=True)
    return [var.value] * len(call.op.outputs)


@reference("VARIABLE_READ")
def VARIABLE_READ(call: Call):
    t = variable_tensor(call.extra["block"], call.op.inputs, call.name)
    return check_read(call.state, uid_of(t), call.out_shapes[0], call.out_types[0].name).value.copy()

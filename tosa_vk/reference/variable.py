"""Variables (spec 2.16, EXT-VARIABLE; tosa-stateful-ops-proposal.md): state that persists across graph runs.

In a .tosa file a variable is a block tensor with `variable` set (its `variable_name` is the uid, its data the
optional initial value). VARIABLE names it among its outputs, VARIABLE_WRITE among its outputs (the value is its
input), VARIABLE_READ among its inputs. The store is `Call.state`, owned by the session: {uid: Variable}.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Block, Tensor
from .registry import Call, reference


@dataclass
class Variable:
    uid: str
    shape: tuple[int, ...]
    dtype: DType
    value: np.ndarray
    is_written: bool = False
    seen: bool = False  # declared during the current run


def uid_of(t: Tensor) -> str:
    return t.variable_name or t.name


def begin_run(state: dict) -> None:
    """Clears the per-run `seen` flags (tosa_execute_graph in the proposal)."""
    for var in state.values():
        var.seen = False


def _variable_tensor(call: Call, names: list[str]) -> Tensor:
    block: Block = call.extra["block"]
    found = [block.tensors[n] for n in names if n in block.tensors and block.tensors[n].variable]
    if len(found) != 1:
        raise TosaError(f"{call.name} must name exactly one variable tensor, names {names}")
    return found[0]


@reference("VARIABLE")
def VARIABLE(call: Call):
    t = _variable_tensor(call, call.op.outputs + call.op.inputs)
    uid = uid_of(t)
    var = call.state.get(uid)
    if var is None:  # first run: allocate, copy the initial value if there is one
        var = Variable(uid, t.shape, t.dtype, np.zeros(t.shape, t.dtype.numpy))
        if t.data is not None:
            if t.data.shape != t.shape:
                raise TosaError(f"REQUIRE(var_shape == shape) does not hold for variable '{uid}'")
            var.value = t.data.copy()
            var.is_written = True
        call.state[uid] = var
    elif var.seen:
        raise TosaError(f"REQUIRE(!var_tensor.seen) does not hold: variable '{uid}' is declared twice in one run")
    var.seen = True
    return [var.value] * len(call.op.outputs)


def _declared(call: Call, t: Tensor) -> Variable:
    var = call.state.get(uid_of(t))
    if var is None or not var.seen:
        raise TosaError(f"REQUIRE(var_tensor != NULL) does not hold: variable '{uid_of(t)}' is not declared "
                        "(no VARIABLE op before it in this run)")
    return var


@reference("VARIABLE_WRITE")
def VARIABLE_WRITE(call: Call):
    t = _variable_tensor(call, call.op.outputs + call.op.inputs)
    var = _declared(call, t)
    (i,) = [i for i, n in enumerate(call.op.inputs) if n != t.name]
    value = call.inputs[i]
    if value.shape != var.shape or call.in_types[i] != var.dtype:
        raise TosaError(f"REQUIRE(var_tensor.type == in_t && var_tensor.shape == shape) does not hold for "
                        f"variable '{var.uid}': it is {var.dtype}{list(var.shape)}, the value "
                        f"{call.in_types[i]}{list(value.shape)}")
    var.value = np.array(value, copy=True)
    var.is_written = True
    return [var.value] * len(call.op.outputs)


@reference("VARIABLE_READ")
def VARIABLE_READ(call: Call):
    t = _variable_tensor(call, call.op.inputs)
    var = _declared(call, t)
    if not var.is_written:
        raise TosaError(f"REQUIRE(var_tensor.is_written) does not hold: variable '{var.uid}' is read before any "
                        "write")
    if call.out_types[0] != var.dtype or tuple(call.out_shapes[0]) != var.shape:
        raise TosaError(f"REQUIRE(var_tensor.type == out_t && var_tensor.shape == shape) does not hold for "
                        f"variable '{var.uid}'")
    return var.value.copy()

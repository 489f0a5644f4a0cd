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
    value: np.ndarray | None  # None when the value lives in device memory
    is_written: bool = False
    seen: bool = False  # declared during the current run


def uid_of(t: Tensor) -> str:
    return t.variable_name or t.name


def begin_run(state: dict) -> None:
    """Clears the per-run `seen` flags (tosa_execute_graph in the proposal)."""
    for var in state.values():
        var.seen = False


def variable_tensor(block: Block, names: list[str], op: str) -> Tensor:
    """The one variable tensor among an operator's tensor `names` (see the module docstring)."""
    found = [block.tensors[n] for n in names if n in block.tensors and block.tensors[n].variable]
    if len(found) != 1:
        raise TosaError(f"{op} must name exactly one variable tensor, names {names}")
    return found[0]


def declare(state: dict, t: Tensor, keep_value: bool = True) -> Variable:
    """VARIABLE: the first declaration creates the variable (with its initial value if it has one); a second one
    in the same run is an error. `keep_value=False`: the value lives elsewhere (device memory)."""
    uid = uid_of(t)
    var = state.get(uid)
    if var is None:
        if t.data is not None and t.data.shape != t.shape:
            raise TosaError(f"REQUIRE(var_shape == shape) does not hold for variable '{uid}'")
        var = Variable(uid, t.shape, t.dtype, None, is_written=t.data is not None)
        if keep_value:
            var.value = t.data.copy() if t.data is not None else np.zeros(t.shape, t.dtype.numpy)
        state[uid] = var
    elif var.seen:
        raise TosaError(f"REQUIRE(!var_tensor.seen) does not hold: variable '{uid}' is declared twice in one run")
    var.seen = True
    return var


def declared(state: dict, t: Tensor) -> Variable:
    var = state.get(uid_of(t))
    if var is None or not var.seen:
        raise TosaError(f"REQUIRE(var_tensor != NULL) does not hold: variable '{uid_of(t)}' is not declared "
                        "(no VARIABLE op before it in this run)")
    return var


def check_write(state: dict, t: Tensor, shape: tuple[int, ...], dtype: DType) -> Variable:
    """VARIABLE_WRITE's rules for a value of `dtype``shape`; marks the variable written."""
    var = declared(state, t)
    if tuple(shape) != var.shape or dtype != var.dtype:
        raise TosaError(f"REQUIRE(var_tensor.type == in_t && var_tensor.shape == shape) does not hold for "
                        f"variable '{var.uid}': it is {var.dtype}{list(var.shape)}, the value "
                        f"{dtype}{list(shape)}")
    var.is_written = True
    return var


def check_read(state: dict, t: Tensor, shape: tuple[int, ...], dtype: DType) -> Variable:
    """VARIABLE_READ's rules for an output of `dtype``shape`."""
    var = declared(state, t)
    if not var.is_written:
        raise TosaError(f"REQUIRE(var_tensor.is_written) does not hold: variable '{var.uid}' is read before any "
                        "write")
    if dtype != var.dtype or tuple(shape) != var.shape:
        raise TosaError(f"REQUIRE(var_tensor.type == out_t && var_tensor.shape == shape) does not hold for "
                        f"variable '{var.uid}'")
    return var


@reference("VARIABLE")
def VARIABLE(call: Call):
    var = declare(call.state, variable_tensor(call.extra["block"], call.op.outputs + call.op.inputs, call.name))
    return [var.value] * len(call.op.outputs)


@reference("VARIABLE_WRITE")
def VARIABLE_WRITE(call: Call):
    t = variable_tensor(call.extra["block"], call.op.outputs + call.op.inputs, call.name)
    (i,) = [i for i, n in enumerate(call.op.inputs) if n != t.name]
    value = call.inputs[i]
    var = check_write(call.state, t, value.shape, call.in_types[i])
    var.value = np.array(value, copy=True)
    return [var.value] * len(call.op.outputs)


@reference("VARIABLE_READ")
def VARIABLE_READ(call: Call):
    t = variable_tensor(call.extra["block"], call.op.inputs, call.name)
    return check_read(call.state, t, call.out_shapes[0], call.out_types[0]).value.copy()

"""The variable rules of EXT-VARIABLE (spec 2.16; tosa-stateful-ops-proposal.md), shared by both backends.

A session's variables are a store {uid: Variable}. Each run first clears the `seen` flags (begin_run); VARIABLE
declares (once per run), VARIABLE_WRITE and VARIABLE_READ check the declaration, types and shapes. The reference
backend keeps the value in `Variable.value`; the Vulkan backend keeps it in device memory and runs these checks as
the Program's StateCheck steps (no data crosses). Types are DType names, so the rules need nothing of either
backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TosaError
from .dtype import DType
from .graph import Block, Tensor


@dataclass
class Variable:
    uid: str
    shape: tuple[int, ...]
    dtype: str  # DType name
    value: Any = None  # numpy array on the reference backend; None when it lives in device memory
    is_written: bool = False
    seen: bool = False  # declared during the current run


def uid_of(t: Tensor) -> str:
    return t.variable_name or t.name


def variable_tensor(block: Block, names: list[str], op: str) -> Tensor:
    """The one variable tensor among an operator's tensor `names`: VARIABLE names it among its outputs,
    VARIABLE_WRITE among its outputs (the value is its input), VARIABLE_READ among its inputs."""
    found = [block.tensors[n] for n in names if n in block.tensors and block.tensors[n].variable]
    if len(found) != 1:
        raise TosaError(f"{op} must name exactly one variable tensor, names {names}")
    return found[0]


def begin_run(state: dict[str, Variable]) -> None:
    """Clears the per-run `seen` flags (tosa_execute_graph in the proposal)."""
    for var in state.values():
        var.seen = False


def declare(
    state: dict[str, Variable], uid: str, shape: tuple[int, ...], dtype: str, initial_shape: tuple[int, ...] | None
) -> tuple[Variable, bool]:
    """VARIABLE: the first declaration creates the variable (written if it has an initial value, whose shape is
    `initial_shape`); a second one in the same run is an error. Returns (variable, created now)."""
    var = state.get(uid)
    created = var is None
    if var is None:
        if initial_shape is not None and tuple(initial_shape) != tuple(shape):
            raise TosaError(f"REQUIRE(var_shape == shape) does not hold for variable '{uid}'")
        var = state[uid] = Variable(uid, tuple(shape), dtype, is_written=initial_shape is not None)
    elif var.seen:
        raise TosaError(f"REQUIRE(!var_tensor.seen) does not hold: variable '{uid}' is declared twice in one run")
    var.seen = True
    return var, created


def declared(state: dict[str, Variable], uid: str) -> Variable:
    var = state.get(uid)
    if var is None or not var.seen:
        raise TosaError(
            f"REQUIRE(var_tensor != NULL) does not hold: variable '{uid}' is not declared "
            "(no VARIABLE op before it in this run)"
        )
    return var


def check_write(state: dict[str, Variable], uid: str, shape: tuple[int, ...], dtype: str) -> Variable:
    """VARIABLE_WRITE's rules for a value of `dtype` `shape`; marks the variable written."""
    var = declared(state, uid)
    if tuple(shape) != var.shape or dtype != var.dtype:
        raise TosaError(
            f"REQUIRE(var_tensor.type == in_t && var_tensor.shape == shape) does not hold for "
            f"variable '{uid}': it is {var.dtype}{list(var.shape)}, the value {dtype}{list(shape)}"
        )
    var.is_written = True
    return var


def check_read(state: dict[str, Variable], uid: str, shape: tuple[int, ...], dtype: str) -> Variable:
    """VARIABLE_READ's rules for an output of `dtype` `shape`."""
    var = declared(state, uid)
    if not var.is_written:
        raise TosaError(f"REQUIRE(var_tensor.is_written) does not hold: variable '{uid}' is read before any write")
    if dtype != var.dtype or tuple(shape) != var.shape:
        raise TosaError(
            f"REQUIRE(var_tensor.type == out_t && var_tensor.shape == shape) does not hold for variable '{uid}'"
        )
    return var


def new_value(state: dict[str, Variable], uid: str, value) -> tuple[Variable, np.ndarray]:
    """A value a session sets a variable to (Model.set_variable): the variable must exist (a run declared it) and
    the value have its shape; returned in the variable's storage dtype."""
    var = state.get(uid)
    if var is None:
        raise TosaError(f"no variable '{uid}' (variables are declared by the first run; have {sorted(state)})")
    array = np.asarray(value, dtype=DType[var.dtype].numpy)
    if array.shape != var.shape:
        raise TosaError(f"variable '{uid}' has shape {list(var.shape)}, got {list(array.shape)}")
    return var, array


def apply(
    state: dict[str, Variable],
    rule: str,
    uid: str,
    shape: tuple[int, ...],
    dtype: str,
    initial_shape: tuple[int, ...] | None = None,
) -> None:
    """One rule by name ("declare" / "write" / "read"): how the Vulkan runtime runs a StateCheck step."""
    if rule == "declare":
        declare(state, uid, shape, dtype, initial_shape)
    elif rule == "write":
        check_write(state, uid, shape, dtype)
    elif rule == "read":
        check_read(state, uid, shape, dtype)
    else:
        raise TosaError(f"unknown variable rule {rule!r}")

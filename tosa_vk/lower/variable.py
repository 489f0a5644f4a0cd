"""Variables (spec 2.16, EXT-VARIABLE) on Vulkan: the value lives in device memory for the session's lifetime.

Every variable uid has one persistent buffer (its first variable tensor; later declarations share it), uploaded
with the initial value at load. VARIABLE_WRITE / VARIABLE_READ are copy kernels into / out of it. The
seen / is_written rules run on the host as StateCheck steps (no data crosses), with the reference backend's code
(tosa_vk/reference/variable.py).
"""
from __future__ import annotations

from functools import partial

from ..ir.graph import Tensor
from ..program import StateCheck, Step, VariableSpec
from ..reference.variable import check_read, check_write, declare, uid_of, variable_tensor
from . import LowerCtx, lowering
from .data_layout import copy


def _variable(ctx: LowerCtx, names: list[str]) -> Tensor:
    return variable_tensor(ctx.block, names, ctx.label)


@lowering("VARIABLE")
def VARIABLE(ctx: LowerCtx) -> list[Step]:
    t = _variable(ctx, ctx.op.outputs + ctx.op.inputs)
    c, name = ctx.compiler, ctx.q(t.name)
    spec = c.variables.get(uid_of(t))
    if spec is None:
        c.variables[uid_of(t)] = VariableSpec(uid_of(t), name, t.data)
    elif spec.tensor != name and (c.tensors[spec.tensor].shape, c.tensors[spec.tensor].dtype) == (t.shape, t.dtype):
        c.alias(name, t, spec.tensor)
    return [StateCheck(ctx.label, partial(declare, t=t, keep_value=False))]


@lowering("VARIABLE_WRITE")
def VARIABLE_WRITE(ctx: LowerCtx) -> list[Step] | None:
    t = _variable(ctx, ctx.op.outputs + ctx.op.inputs)
    (value,) = [ctx.block.tensors[n] for n in ctx.op.inputs if n != t.name]
    steps: list[Step] = [StateCheck(ctx.label, partial(check_write, t=t, shape=value.shape, dtype=value.dtype))]
    if (value.shape, value.dtype) != (t.shape, t.dtype) or ctx.q(t.name) not in ctx.compiler.tensors:
        return steps                      # the check fails at run time, as the spec says
    kernel = copy(ctx, value.name, t.name)
    return None if kernel is None else steps + [kernel]


@lowering("VARIABLE_READ")
def VARIABLE_READ(ctx: LowerCtx) -> list[Step] | None:
    t = _variable(ctx, ctx.op.inputs)
    out = ctx.outputs[0]
    steps: list[Step] = [StateCheck(ctx.label, partial(check_read, t=t, shape=out.shape, dtype=out.dtype))]
    if (out.shape, out.dtype) != (t.shape, t.dtype) or ctx.q(t.name) not in ctx.compiler.tensors:
        return steps
    kernel = copy(ctx, t.name, out.name)
    return None if kernel is None else steps + [kernel]

"""Variables (spec 2.16, EXT-VARIABLE) on Vulkan: the value lives in device memory for the session's lifetime.

Every variable uid has one persistent buffer (its first variable tensor; later declarations share it), uploaded
with the initial value at load. VARIABLE_WRITE / VARIABLE_READ are copy kernels into / out of it. The
seen / is_written rules run on the host as StateCheck steps (no data crosses), with the reference backend's code
(tosa_vk/reference/variable.py).
"""

from __future__ import annotations

from ...ir.graph import Tensor
from ...ir.variables import uid_of, variable_tensor
from ...program import StateCheck, Step, VariableSpec
from .context import LowerCtx, lowering
from .data_layout import copy_step


def _variable(ctx: LowerCtx, names: list[str]) -> Tensor:
    return variable_tensor(ctx.block, names, ctx.label)


@lowering("VARIABLE")
def VARIABLE(ctx: LowerCtx) -> list[Step]:
    t = _variable(ctx, ctx.op.outputs + ctx.op.inputs)
    c, name = ctx.compilation, ctx.q(t.name)
    spec = c.variables.get(uid_of(t))
    if spec is None:
        c.variables[uid_of(t)] = VariableSpec(uid_of(t), name, t.data)
    elif spec.tensor != name and (c.tensors[spec.tensor].shape, c.tensors[spec.tensor].dtype) == (t.shape, t.dtype):
        c.alias(name, t, spec.tensor)
    return [
        StateCheck(
            ctx.label, "declare", uid_of(t), t.shape, t.dtype.name, None if t.data is None else tuple(t.data.shape)
        )
    ]


@lowering("VARIABLE_WRITE")
def VARIABLE_WRITE(ctx: LowerCtx) -> list[Step]:
    t = _variable(ctx, ctx.op.outputs + ctx.op.inputs)
    (value,) = [ctx.block.tensors[n] for n in ctx.op.inputs if n != t.name]
    steps: list[Step] = [StateCheck(ctx.label, "write", uid_of(t), value.shape, value.dtype.name)]
    if (value.shape, value.dtype) != (t.shape, t.dtype) or ctx.q(t.name) not in ctx.compilation.tensors:
        return steps  # the check fails at run time, as the spec says
    return steps + [copy_step(ctx, value.name, t.name)]


@lowering("VARIABLE_READ")
def VARIABLE_READ(ctx: LowerCtx) -> list[Step]:
    t = _variable(ctx, ctx.op.inputs)
    out = ctx.outputs[0]
    steps: list[Step] = [StateCheck(ctx.label, "read", uid_of(t), out.shape, out.dtype.name)]
    if (out.shape, out.dtype) != (t.shape, t.dtype) or ctx.q(t.name) not in ctx.compilation.tensors:
        return steps
    return steps + [copy_step(ctx, t.name, out.name)]

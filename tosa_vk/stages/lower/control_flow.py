"""Control flow (spec 2.15, EXT-CONTROLFLOW) on Vulkan: COND_IF and WHILE_LOOP as Branch / Loop steps whose regions
are compiled like the main block, into the same arena.

A region's inputs share the memory of the values passed in (no copies in); its outputs are copied into the
operator's outputs by kernels. WHILE_LOOP's outputs are the loop-carried tensors: the inputs are copied into them
once, the cond and body regions read them in place, and the body's last kernels copy its results back into them
(through a temporary where a result is another carried tensor, so a swap cannot overwrite a value still to be
read). Only the condition, one bool, is read back by the host; where the device has conditional rendering, the cond
region also writes it as a uint32 predicate so the runtime can record iterations ahead (tosa_vk/vulkan/runtime.py).
"""

from __future__ import annotations

from ...ir.dtype import DType
from ...program import Branch, Loop, Step
from .context import LowerCtx, lowering
from .data_layout import copy_step


def _region(ctx: LowerCtx, attr: str, values: list[str]) -> tuple[str, list[Step]]:
    """Compiles region `attr` with its inputs aliased to the program-wide tensors `values`; returns the
    region's name prefix and steps."""
    c = ctx.compilation
    name = ctx.attr(attr)
    block = c.regions[name]
    prefix = c.prefix_for(name)
    for inner, value in zip(block.inputs, values):
        c.alias(prefix + inner, block.tensors[inner], value)
    return prefix, c.block(block, name, prefix)


def _copies(ctx: LowerCtx, pairs) -> list[Step]:
    return [copy_step(ctx, src, dst) for src, dst in pairs]


@lowering("COND_IF")
def COND_IF(ctx: LowerCtx) -> list[Step]:
    condition, *args = map(ctx.q, ctx.op.inputs)
    outs = [ctx.q(n) for n in ctx.op.outputs]
    then, orelse = (_branch(ctx, attr, args, outs) for attr in ("then_graph", "else_graph"))
    return [Branch(ctx.label, condition, then, orelse, reads=(condition, *args), writes=tuple(outs))]


def _branch(ctx: LowerCtx, attr: str, args: list[str], outs: list[str]) -> list[Step]:
    """One COND_IF region's steps, then copies of its results into the operator's outputs."""
    prefix, steps = _region(ctx, attr, args)
    results = [prefix + n for n in ctx.compilation.regions[ctx.attr(attr)].outputs]
    return steps + _copies(ctx, zip(results, outs))


@lowering("WHILE_LOOP")
def WHILE_LOOP(ctx: LowerCtx) -> list[Step]:
    c = ctx.compilation
    state = [ctx.q(n) for n in ctx.op.outputs]
    enter = _copies(ctx, zip(map(ctx.q, ctx.op.inputs), state))
    prefix, cond = _region(ctx, "cond_graph", state)
    condition = prefix + c.regions[ctx.attr("cond_graph")].outputs[0]
    prefix, body = _region(ctx, "body_graph", state)
    results = [prefix + n for n in c.regions[ctx.attr("body_graph")].outputs]
    roots = [c.root.get(n, n) for n in state]
    staged: list[tuple[str, str]] = []
    back: list[tuple[str, str]] = []
    for k, (src, dst) in enumerate(zip(results, state)):
        root = c.root.get(src, src)
        if root == roots[k]:
            continue  # the carried value passes through unchanged
        if root in roots:  # another carried tensor: stage it before any is overwritten
            t = ctx.tensor(src)
            tmp = ctx.temporary(t.shape, t.dtype)
            staged.append((src, tmp))
            src = tmp
        back.append((src, dst))
    stage_steps, back_steps = _copies(ctx, staged), _copies(ctx, back)
    predicate = ""
    if ctx.target.has("conditionalRendering"):
        predicate = ctx.temporary((1,), DType.INT32)
        cond.append(
            ctx.kernel(
                "control_flow/predicate", {"A": condition, "O": predicate}, groups=(1, 1, 1), writes=(predicate,)
            )
        )
    return enter + [
        Loop(ctx.label, cond, condition, body + stage_steps + back_steps, writes=tuple(state), predicate=predicate)
    ]

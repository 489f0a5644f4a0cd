"""Element-wise groups (tosa_vk/stages/fuse.py) as one generated kernel, shaders/fused/elementwise.comp: every operator
of the group computed per element by tosa_vk/stages/lower/fused/epilogue.py's expressions (what its own kernel
computes), values used only inside the group kept in registers, the others stored.

Done here: fp32, int8 / int16 / int32 and bool values; inputs of the group's shape or broadcast along size-1
dimensions; SLICE of a tensor from outside the group as an offset read. Anything else declines (None) and the
operators get their own kernels."""

from __future__ import annotations

import math

import numpy as np

from ....program import Kernel
from ...fuse import REDUCTIONS, data_inputs
from ..context import LowerCtx
from ..types import glsl_store
from . import render
from .epilogue import COMPUTE, bind, expression
from .operands import broadcast_load, element_index, group_input, stored_outputs


def lower_group(ctx: LowerCtx, members: list[int]) -> list[Kernel] | None:
    """The kernel of the group whose first operator is ctx.op (ctx.epilogue lists the others, for the label)."""
    block = ctx.block
    if any(block.operators[i].op in REDUCTIONS for i in members):  # a row group (fuse.py)
        from .rows import lower_rows  # (it imports this module's helpers)

        return lower_rows(ctx, members)
    ops = [block.operators[i] for i in members]
    shape = tuple(block.tensors[ops[0].outputs[0]].shape)
    inside = {op.outputs[0]: f"v{k}" for k, op in enumerate(ops)}
    bindings: dict[str, str] = {}
    decls: list[str] = []
    defines: dict[str, str] = {}
    body = render.coordinates(shape)
    body.append(render.let("int", "c", f"c{len(shape) - 1}" if shape and shape[-1] > 1 else "0"))
    loaded: dict[str, str] = {}
    for k, op in enumerate(ops):
        out = block.tensors[op.outputs[0]]
        if out.dtype not in COMPUTE:
            return None
        if op.op == "SLICE":
            src = block.tensors[op.inputs[0]]
            start = block.tensors[op.inputs[1]].data
            if src.dtype not in COMPUTE or start is None or len(src.shape) != len(shape):
                return None
            offsets = [int(v) for v in np.asarray(start).reshape(-1)]
            index = element_index(src.shape, shape, offsets)
            array = group_input(ctx, bindings, decls, src)
            body.append(render.let(COMPUTE[out.dtype], f"v{k}", render.convert(COMPUTE[src.dtype], array[index])))
            continue
        args = []
        for name in data_inputs(op):
            if name in inside:
                args.append(inside[name])
                continue
            if name not in loaded:
                var = f"x{len(loaded)}"
                load = broadcast_load(ctx, bindings, decls, block.tensors[name], shape, var)
                if load is None:
                    return None
                body.append(load)
                loaded[name] = var
            args.append(loaded[name])
        expr = expression(ctx, op, args, k, bindings, decls, defines)
        if expr is None:
            return None
        body.append(render.let(COMPUTE[out.dtype], f"v{k}", expr))
    stored = stored_outputs(block, members)
    for k, op in enumerate(ops):
        name = op.outputs[0]
        if name in stored:
            t = block.tensors[name]
            array = bind(bindings, decls, f"O{len(bindings)}", t, "writeonly")
            body.append(render.store(array, "i", glsl_store(t.dtype, f"v{k}")))
    if not stored:
        return None
    defines.update({"TOTAL": str(math.prod(shape)), "EP_DECLS": render.items(decls), "GROUP_BODY": render.items(body)})
    return [ctx.kernel("fused/elementwise", bindings, defines, invocations=math.prod(shape), writes=tuple(stored))]

"""Element-wise groups (tosa_vk/stages/fuse.py) as one generated kernel, shaders/fused/elementwise.comp: every operator
of the group computed per element by tosa_vk/stages/lower/fused/epilogue.py's expressions (what its own kernel
computes), values used only inside the group kept in registers, the others stored.

Done here: fp32, int8 / int16 / int32 and bool values; inputs of the group's shape or broadcast along size-1
dimensions; SLICE of a tensor from outside the group as an offset read. Anything else declines (None) and the
operators get their own kernels."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ....ir.graph import Block, Tensor
from ....program import Kernel
from ...fuse import REDUCTIONS, data_inputs
from .. import LowerCtx
from ..types import glsl_store
from .epilogue import COMPUTE, Array, bind, expression, variable


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
    coords = _coordinates(shape)
    body = coords[:]
    body.append(f"int c = {'c' + str(len(shape) - 1) if shape and shape[-1] > 1 else '0'};")
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
            index = _index(src.shape, shape, offsets)
            array = _input(ctx, bindings, decls, src)
            body.append(f"{COMPUTE[out.dtype]} v{k} = {COMPUTE[src.dtype]}({array[index]});")
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
        body.append(f"{variable(COMPUTE[out.dtype])} v{k} = {expr};")
    stored = _stored(block, members)
    for k, op in enumerate(ops):
        name = op.outputs[0]
        if name in stored:
            t = block.tensors[name]
            array = bind(bindings, decls, f"O{len(bindings)}", t, "writeonly")
            body.append(f"{array['i']} = {glsl_store(t.dtype, f'v{k}')};")
    if not stored:
        return None
    defines.update({"TOTAL": str(math.prod(shape)), "EP_DECLS": " ".join(decls), "GROUP_BODY": " ".join(body)})
    return [ctx.kernel("fused/elementwise", bindings, defines, invocations=math.prod(shape), writes=tuple(stored))]


def _stored(block: Block, members: list[int]) -> list[str]:
    """Outputs of the group read outside it (or block outputs, or variables)."""
    inside = set(members)
    uses = Counter(n for i, op in enumerate(block.operators) if i not in inside for n in op.inputs)
    names = [block.operators[i].outputs[0] for i in members]
    return [n for n in names if uses[n] or n in block.outputs or block.tensors[n].variable]


def broadcast_load(ctx: LowerCtx, bindings: dict, decls: list, t: Tensor, shape, var: str) -> str | None:
    """The declaration of `var` as t's element at the kernel's coordinates, t an input of the kernel's `shape` or
    broadcast along its size-1 dimensions (row groups' too: tosa_vk/stages/lower/fused/rows.py); None where t is
    neither."""
    if t.dtype not in COMPUTE or len(t.shape) != len(shape) or any(d not in (s, 1) for d, s in zip(t.shape, shape)):
        return None
    array = _input(ctx, bindings, decls, t)
    return f"{COMPUTE[t.dtype]} {var} = {COMPUTE[t.dtype]}({array[_index(t.shape, shape)]});"


def _coordinates(shape: tuple[int, ...]) -> list[str]:
    """GLSL that splits the flat index i into coordinates c0.. of the dimensions larger than 1."""
    lines = ["uint r_ = i;"]
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] > 1:
            lines.append(f"int c{d} = int(r_ % {shape[d]}u); r_ /= {shape[d]}u;")
    return lines


def _index(tensor_shape, shape, offsets=None) -> str:
    """The element of a tensor (of the group's rank) read for the group's element at (c0, ..): coordinates of its
    size-1 dimensions are 0 (broadcast), `offsets` are added (SLICE)."""
    terms = []
    stride = 1
    const = 0
    for d in range(len(tensor_shape) - 1, -1, -1):
        offset = offsets[d] if offsets else 0
        if tensor_shape[d] > 1 and shape[d] > 1:
            terms.append(f"c{d} * {stride}" if stride != 1 else f"c{d}")
        const += offset * stride
        stride *= tensor_shape[d]
    if const:
        terms.append(str(const))
    return " + ".join(terms) or "0"


def _input(ctx: LowerCtx, bindings: dict[str, str], decls: list[str], tensor: Tensor) -> Array:
    """The array a group input is read from (bound once; through a texel buffer where the target allows)."""
    for key, bound in bindings.items():
        if bound == tensor.name and key.startswith("I"):
            return Array(key.lower(), texel=key in ctx.texels)
    return bind(bindings, decls, f"I{len(bindings)}", tensor, ctx=ctx)

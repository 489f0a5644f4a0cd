"""What an element-wise group (group.py) and a row group (rows.py) share: the flat index split into coordinates,
an input read at them (broadcast or offset), the group's outputs read outside it."""

from __future__ import annotations

from collections import Counter

from ....ir.graph import Block, Tensor
from ..context import LowerCtx
from . import render
from .epilogue import COMPUTE, bind
from .render import Array


def stored_outputs(block: Block, members: list[int]) -> list[str]:
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
    array = group_input(ctx, bindings, decls, t)
    return render.let(COMPUTE[t.dtype], var, render.convert(COMPUTE[t.dtype], array[element_index(t.shape, shape)]))


def element_index(tensor_shape, shape, offsets=None) -> str:
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


def group_input(ctx: LowerCtx, bindings: dict[str, str], decls: list[str], tensor: Tensor) -> Array:
    """The array a group input is read from (bound once; through a texel buffer where the target allows)."""
    for key, bound in bindings.items():
        if bound == tensor.name and key.startswith("I"):
            return Array(key.lower(), texel=key in ctx.texels)
    return bind(bindings, decls, f"I{len(bindings)}", tensor, ctx=ctx)

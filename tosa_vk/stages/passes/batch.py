"""Batched projections: 1x1 CONV2Ds with the same weights, each reading a run of whole pixels of one tensor (an
unrolled RNN's input projection per time step: SLICE x_t -> [RESHAPE] -> CONV2D), become one CONV2D over the whole
tensor, and each original output a SLICE of its result (a view, no kernel: tosa_vk/stages/fuse.py). One dispatch instead
of one per step, and the rows of work are the same.

Convolutions that would apply an epilogue chain keep their own kernel (batching them would trade the chain's
operators for kernels of their own). Results are bit-identical: a 1x1 convolution with stride 1 and no padding
computes each output pixel from its input pixel alone, in the same order whatever the other pixels are. Part of the
fuse switch (`fuse=False` keeps one CONV2D per step).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ...ir.dtype import DType
from ...ir.graph import BLOCK_SCALED_INPUTS, Block, Graph, Operator, Tensor
from ..fuse import with_epilogues
from .permute import fresh_name


def batch_projections(graph: Graph) -> int:
    """Rewrites the main block in place; returns the CONV2Ds removed."""
    block = graph.main
    producer = {n: op for op in block.operators for n in op.outputs}
    uses = Counter(n for op in block.operators for n in op.inputs)
    uses.update(block.outputs)
    groups: dict[tuple, list[tuple[Operator, tuple[str, list[int], list[int]]]]] = defaultdict(list)
    chained = with_epilogues(block)  # their chain would be lost: a kernel saved, one added
    for index, op in enumerate(block.operators):
        run = None if index in chained else _pixel_run(block, op, producer, uses)
        if run is not None:  # same source, same constant values (zero points are often one CONST per operator)
            values = tuple((t.dtype.name, t.shape, t.data.tobytes()) for t in (block.tensors[n] for n in op.inputs[1:])
                           if t.data is not None)  # fmt: skip
            groups[(run[0], values, tuple(sorted((k, str(v)) for k, v in op.attrs.items())))].append((op, run))
    removed = 0
    for members in groups.values():
        whole = int(np.prod(block.tensors[members[0][1][0]].shape[:-1]))
        pixels = sum(int(np.prod(size[:-1])) for _, (_, _, size) in members)
        if len(members) < 2 or pixels * 2 < whole:
            continue  # batching would compute more unused pixels than it saves dispatches
        _rewrite(block, members)
        removed += len(members) - 1
    return removed


def _pixel_run(block: Block, conv: Operator, producer: dict, uses: Counter) -> tuple[str, list[int], list[int]] | None:
    """(source, SLICE start, SLICE size) when `conv` is a 1x1, stride 1, unpadded CONV2D with constant weights,
    bias and zero points whose input is a SLICE of whole pixels of a 4-D NHWC tensor, through RESHAPEs."""
    if conv.op != "CONV2D" or any(block.tensors[n].data is None for n in conv.inputs[1:]):
        return None
    if conv.attrs.get(BLOCK_SCALED_INPUTS):  # its scales belong to its own input
        return None
    if block.tensors[conv.inputs[1]].shape[1:3] != (1, 1) or any(conv.attrs.get("pad") or ()):
        return None
    if any(int(s) != 1 for s in (*(conv.attrs.get("stride") or ()), *(conv.attrs.get("dilation") or ()))):
        return None
    name = conv.inputs[0]
    while (op := producer.get(name)) is not None and op.op == "RESHAPE" and uses[name] == 1:
        name = op.inputs[0]
    op = producer.get(name)
    if op is None or op.op != "SLICE" or uses[name] != 1:
        return None
    source = block.tensors[op.inputs[0]]
    data = [block.tensors[n].data for n in op.inputs[1:3]]
    if source.rank != 4 or source.variable or data[0] is None or data[1] is None:
        return None
    start, size = ([int(v) for v in np.asarray(d).reshape(-1)] for d in data)
    if start[-1] != 0 or size[-1] != source.shape[-1]:
        return None  # whole pixels only
    return source.name, start, size


def _rewrite(block: Block, members: list) -> None:
    """One CONV2D over the source where the first member was; each member's output a SLICE (+ RESHAPE) of it."""
    first = members[0][0]
    source = block.tensors[members[0][1][0]]
    out_t = block.tensors[first.outputs[0]]
    batched = block.add_tensor(
        Tensor(fresh_name(block, f"{first.outputs[0]}_batched"), (*source.shape[:-1], out_t.shape[-1]), out_t.dtype)
    )
    replacement: dict[int, list[Operator]] = {
        id(first): [Operator("CONV2D", [source.name, *first.inputs[1:]], [batched.name], dict(first.attrs))]
    }
    for conv, (_, start, size) in members:
        out = block.tensors[conv.outputs[0]]
        shape = [*size[:-1], out.shape[-1]]
        ops = replacement.setdefault(id(conv), [])
        piece = conv.outputs[0] if tuple(shape) == out.shape else fresh_name(block, f"{conv.outputs[0]}_piece")
        if piece != conv.outputs[0]:
            block.add_tensor(Tensor(piece, tuple(shape), out.dtype))
        ops += shape_constants(block, conv.outputs[0], [[*start[:-1], 0], shape])
        ops.append(Operator("SLICE", [batched.name, *[o.outputs[0] for o in ops[-2:]]], [piece]))
        if piece != conv.outputs[0]:
            ops += shape_constants(block, conv.outputs[0], [list(out.shape)])
            ops.append(Operator("RESHAPE", [piece, ops[-1].outputs[0]], [conv.outputs[0]]))
    block.operators = [new for op in block.operators for new in replacement.get(id(op), [op])]
    _drop_unused(block)


def shape_constants(block: Block, base: str, values: list[list[int]]) -> list[Operator]:
    """CONST_SHAPE operators of `values` (a SLICE's start and size, a RESHAPE's shape), named after `base`."""
    ops = []
    for v in values:
        t = block.add_tensor(
            Tensor(fresh_name(block, f"{base}_shape"), (len(v),), DType.SHAPE, np.asarray(v, dtype=np.int64))
        )
        ops.append(Operator("CONST_SHAPE", [], [t.name]))
    return ops


def _drop_unused(block: Block) -> None:
    """Removes SLICEs, RESHAPEs and shape constants whose outputs nothing reads (those that fed the batched
    convolutions, and any the graph had already)."""
    while True:
        read = {n for op in block.operators for n in op.inputs} | set(block.outputs)
        dead = [op for op in block.operators if op.op in ("SLICE", "RESHAPE", "CONST_SHAPE")
                and not any(n in read for n in op.outputs)]  # fmt: skip
        if not dead:
            return
        block.operators = [op for op in block.operators if not any(op is d for d in dead)]
        for op in dead:
            for n in op.outputs:
                block.tensors.pop(n, None)

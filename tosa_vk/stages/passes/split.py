"""Oversized tensors: a descriptor may bind at most the device's maxStorageBufferRange bytes (128 MiB on lavapipe
and many mobile GPUs), so a constant operand larger than that becomes pieces under it, one operator per piece, and
a CONCAT of their results along the output channels (as llama.cpp's Vulkan backend splits such buffers).

Split along output channels, so each piece's result is exact (the same sums in the same order):
- MATMUL's B [N, C, W] along W, results [N, H, W_i];
- CONV2D's weights [OC, KH, KW, IC] along OC (a per-channel bias with them), results [N, OH, OW, OC_i];
- GATHER's values [N, K, C] along C, results [N, W, C_i].
The pieces live in the one arena (each its own binding, a sub-range of the one allocation: tosa_vk/vulkan/memory.py
needs the arena under maxMemoryAllocationSize, not under the range). No piece's result is copied:
- where the result's leading dimensions are all 1 (a matrix-vector product, one token's embedding) each piece is
  one run of the result and the CONCAT is a view (its producers write in place at offsets that are multiples of the
  arena's alignment, tosa_vk/stages/fuse.py);
- else MATMUL's and CONV2D's kernels store their channels of every row into the whole result (a strided CONCAT,
  fuse.py: the kernel binds the result and its store map adds the piece's first channel and the row pitch), so
  pieces keep the widths the kernels like (a multiple of 8 where W is) rather than an alignment;
- GATHER's result with leading dimensions past 1 is still one copy (its kernel has no store map; the copy is small
  next to the table).
Any other tensor over the limit has no split: a TosaUnsupportedError names it.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import TosaUnsupportedError
from ...ir.graph import Block, Graph, Operator, Tensor
from .permute import fresh_name

# operator -> (index of the operand that splits, its axis, the result's axis); the others are read whole
SPLITS = {"MATMUL": (1, 2, 2), "CONV2D": (1, 0, 3), "GATHER": (0, 2, 2)}


def nbytes(t: Tensor) -> int:
    return t.size * t.dtype.numpy.itemsize


def oversized(graph: Graph, limit: int) -> bool:
    """Whether a tensor of the main block is larger than `limit` bytes."""
    return any(nbytes(t) > limit for t in graph.main.tensors.values())


def split_oversized(graph: Graph, limit: int, file: str | None = None, alignment: int = 1) -> int:
    """Rewrites the main block in place: every constant operand of SPLITS over `limit` bytes becomes pieces under it;
    returns the operators split. TosaUnsupportedError for a tensor over the limit that has no split. `alignment`: the
    arena's (pieces whose results are runs start at its multiples, where they fit, so that the CONCAT is a view)."""
    block = graph.main
    done: dict[int, list[Operator]] = {}
    for index, op in enumerate(block.operators):
        big = [n for n in (*op.inputs, *op.outputs) if nbytes(block.tensors[n]) > limit]
        if not big or op.op == "CONST":  # a constant is judged by its readers
            continue
        rule = SPLITS.get(op.op)
        operand = op.inputs[rule[0]] if rule else None
        if rule is None or big != [operand] or block.tensors[big[0]].data is None:
            name = next((n for n in big if n != operand), big[0])
            raise TosaUnsupportedError(
                f"tensor '{name}' takes {nbytes(block.tensors[name])} bytes, more than the target's "
                f"maxStorageBufferRange ({limit}), and has no split here (only a constant MATMUL B, CONV2D weight or "
                "GATHER values tensor splits, along its output channels); use backend='reference'",
                op=op.op,
                index=index,
                output=op.outputs[0] if op.outputs else None,
                file=file,
            )
        assert rule is not None and operand is not None
        done[id(op)] = _split(block, op, index, rule, limit, file, alignment)
    if not done:
        return 0
    block.operators = [new for op in block.operators for new in done.get(id(op), [op])]
    read = {n for op in block.operators for n in op.inputs} | set(block.outputs)
    for op in [op for op in block.operators if op.op == "CONST" and not any(n in read for n in op.outputs)]:
        block.operators.remove(op)  # the whole constant, read by nothing now (its pieces are new tensors)
        for n in op.outputs:
            block.tensors.pop(n, None)
    return len(done)


def _split(
    block: Block, op: Operator, index: int, rule: tuple[int, int, int], limit: int, file: str | None, alignment: int
) -> list[Operator]:
    """The CONSTs of the pieces, one `op` per piece and the CONCAT of their results into `op`'s output."""
    which, axis, out_axis = rule
    t = block.tensors[op.inputs[which]]
    assert t.data is not None
    length = t.shape[axis]
    per = nbytes(t) // length  # bytes of one output channel
    fit = (limit // 4 * 4) // per  # channels a piece may hold (its binding is rounded up to 4 bytes)
    if fit < 1:
        raise TosaUnsupportedError(
            f"tensor '{t.name}': one output channel of it takes {per} bytes, more than the target's "
            f"maxStorageBufferRange ({limit}): no split fits; use backend='reference'",
            op=op.op,
            index=index,
            output=op.outputs[0],
            file=file,
        )
    out = block.tensors[op.outputs[0]]
    count = -(-length // fit)
    step = -(-length // count)  # balanced pieces
    # piece widths: where each piece's result is one run (leading dimensions all 1), channels whose bytes are a
    # multiple of the alignment (a view's offset must be); else (stored strided) multiples of 8 channels, which
    # keep the kernels' vector loads and stores (matmul_fast.comp wants W % 8 == 0) for all pieces but a last one
    if all(d == 1 for d in out.shape[:out_axis]):
        unit = alignment // math.gcd(alignment, out.dtype.numpy.itemsize * math.prod(out.shape[out_axis + 1 :]))
    else:
        unit = 8
    if unit <= fit:
        step = min(-(-step // unit) * unit, fit // unit * unit)
    bias = block.tensors[op.inputs[2]] if op.op == "CONV2D" else None
    ops: list[Operator] = []
    results = []
    for start in range(0, length, step):
        stop = min(start + step, length)
        inputs = list(op.inputs)
        inputs[which] = _piece(block, t, axis, start, stop, ops)
        if bias is not None and bias.data is not None and bias.shape[0] == length > 1:
            inputs[2] = _piece(block, bias, 0, start, stop, ops)
        shape = list(out.shape)
        shape[out_axis] = stop - start
        result = block.add_tensor(Tensor(fresh_name(block, f"{out.name}_split"), tuple(shape), out.dtype))
        ops.append(Operator(op.op, inputs, [result.name], dict(op.attrs), op.location))
        results.append(result.name)
    ops.append(Operator("CONCAT", results, [out.name], {"axis": out_axis}, op.location))
    return ops


def _piece(block: Block, t: Tensor, axis: int, start: int, stop: int, ops: list[Operator]) -> str:
    assert t.data is not None
    whole = np.asarray(t.data).reshape(t.shape)
    data = np.ascontiguousarray(whole[(slice(None),) * axis + (slice(start, stop),)])
    piece = block.add_tensor(Tensor(fresh_name(block, f"{t.name}_piece"), data.shape, t.dtype, data))
    ops.append(Operator("CONST", [], [piece.name]))
    return piece.name

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
- else each piece's kernel (MATMUL's, CONV2D's, GATHER's) stores its channels of every row into the whole result (a
  strided CONCAT, fuse.py: the kernel binds the result and its store map adds the piece's first channel and the
  row pitch), so pieces keep the widths the kernels like (a multiple of 8 where W is) rather than an alignment.
Activations: an operator whose result rows (along the first axis longer than 1) depend only on the same rows of its
inputs (ROWWISE: element-wise operators, reductions along another axis) runs as pieces of rows, each reading SLICEs
and writing into a CONCAT that are views of the whole tensors (IN_PLACE: the fuse stage makes them views, their
offsets multiples of the arena's alignment), so no kernel binds a whole tensor and nothing is copied.
Any other tensor over the limit has no split: a TosaUnsupportedError names it.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import TosaUnsupportedError
from ...ir.graph import IN_PLACE, Block, Graph, Operator, Tensor
from .batch import shape_constants
from .permute import fresh_name

# operator -> (index of the operand that splits, its axis, the result's axis); the others are read whole
SPLITS = {"MATMUL": (1, 2, 2), "CONV2D": (1, 0, 3), "GATHER": (0, 2, 2)}
# operators whose result rows depend only on the same rows of their inputs -> how many inputs are data (sliced with
# the rows; the rest, parameters such as RESCALE's multipliers or a TABLE, are read whole)
ROWWISE = dict.fromkeys(
    ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "POW", "INTDIV", "ARITHMETIC_RIGHT_SHIFT", "LOGICAL_LEFT_SHIFT")
    + ("LOGICAL_RIGHT_SHIFT", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR", "BITWISE_AND", "BITWISE_OR", "BITWISE_XOR")
    + ("EQUAL", "GREATER", "GREATER_EQUAL"),
    2,
)
ROWWISE |= dict.fromkeys(
    ("ABS", "NEGATE", "CEIL", "FLOOR", "CLZ", "EXP", "LOG", "RECIPROCAL", "RSQRT", "SIN", "COS", "ERF", "SIGMOID")
    + ("TANH", "CLAMP", "CAST", "RESCALE", "TABLE", "LOGICAL_NOT", "BITWISE_NOT"),
    1,
)
ROWWISE |= {"SELECT": 3}
# reductions: rows split along an axis they do not reduce
ROWWISE |= dict.fromkeys(("REDUCE_SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PRODUCT", "REDUCE_ALL", "REDUCE_ANY"), 1)
ROWWISE |= {"ARGMAX": 1}


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
        if rule is not None and operand is not None and big == [operand] and block.tensors[operand].data is not None:
            done[id(op)] = _split(block, op, index, rule, limit, file, alignment)
            continue
        rows = _rows(block, op, big, limit, alignment) if len(graph.regions) == 1 else None
        if rows is None:
            name = next((n for n in big if n != operand), big[0])
            raise TosaUnsupportedError(
                f"tensor '{name}' takes {nbytes(block.tensors[name])} bytes, more than the target's "
                f"maxStorageBufferRange ({limit}), and has no split here (a constant MATMUL B, CONV2D weight or "
                "GATHER values tensor splits along its output channels; an element-wise operator or a reduction "
                "along another axis, without control flow, along the rows of its first axis longer than 1, in "
                "pieces whose bytes are multiples of the arena's alignment); use backend='reference'",
                op=op.op,
                index=index,
                output=op.outputs[0] if op.outputs else None,
                file=file,
            )
        done[id(op)] = _split_rows(block, op, *rows)
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


def _rows(block: Block, op: Operator, big: list[str], limit: int, alignment: int) -> tuple[int, int, list[bool]] | None:
    """How a ROWWISE operator splits: (axis, rows a piece, whether each input is sliced), or None where it cannot
    (a variable over the limit, an input over it read whole, no piece under it with aligned offsets)."""
    data = ROWWISE.get(op.op)
    out = block.tensors[op.outputs[0]] if len(op.outputs) == 1 else None
    if data is None or out is None or any(block.tensors[n].variable for n in big):
        return None
    axis = next((d for d, size in enumerate(out.shape) if size > 1), None)
    if axis is None or (op.op.startswith("REDUCE") or op.op == "ARGMAX") and int(op.attrs.get("axis") or 0) == axis:
        return None
    rank, length = len(out.shape), out.shape[axis]
    ins = [block.tensors[n] for n in op.inputs]
    sliced = [i < data and len(t.shape) == rank and t.shape[axis] == length for i, t in enumerate(ins)]
    if any(nbytes(t) > limit for t, s in zip(ins, sliced) if not s):
        return None  # (a broadcast operand over the limit: read whole by every piece)
    cut = [t for t, s in zip(ins, sliced) if s] + [out]
    per = [nbytes(t) // length for t in cut]  # bytes of one row of each tensor cut
    # rows whose bytes are a multiple of the alignment in every tensor cut (a view's offset must be)
    unit = math.lcm(*(alignment // math.gcd(alignment, b) for b in per))
    fit = min(limit // b for b in per) // unit * unit
    if fit < 1:
        return None
    balanced = -(-length // -(-length // fit))
    return axis, min(-(-balanced // unit) * unit, fit), sliced


def _split_rows(block: Block, op: Operator, axis: int, step: int, sliced: list[bool]) -> list[Operator]:
    """One `op` per `step` rows along `axis`, reading SLICEs of its sliced inputs and writing into a CONCAT of its
    output, all views (IN_PLACE)."""
    out = block.tensors[op.outputs[0]]
    ops: list[Operator] = []
    results = []
    for start in range(0, out.shape[axis], step):
        stop = min(start + step, out.shape[axis])
        inputs = list(op.inputs)
        for i, name in enumerate(op.inputs):
            if sliced[i]:
                inputs[i] = _rows_of(block, name, axis, start, stop, ops)
        shape = list(out.shape)
        shape[axis] = stop - start
        result = block.add_tensor(Tensor(fresh_name(block, f"{out.name}_rows"), tuple(shape), out.dtype))
        ops.append(Operator(op.op, inputs, [result.name], dict(op.attrs), op.location))
        results.append(result.name)
    ops.append(Operator("CONCAT", results, [out.name], {"axis": axis, IN_PLACE: True}, op.location))
    return ops


def _rows_of(block: Block, name: str, axis: int, start: int, stop: int, ops: list[Operator]) -> str:
    """Rows [start, stop) along `axis` of tensor `name`: a constant's own piece, else a SLICE view of it."""
    t = block.tensors[name]
    if t.data is not None:
        return _piece(block, t, axis, start, stop, ops)
    shape = list(t.shape)
    shape[axis] = stop - start
    piece = block.add_tensor(Tensor(fresh_name(block, f"{name}_rows"), tuple(shape), t.dtype))
    at = [0] * len(shape)
    at[axis] = start
    ops += shape_constants(block, piece.name, [at, shape])
    ops.append(Operator("SLICE", [name, *[o.outputs[0] for o in ops[-2:]]], [piece.name], {IN_PLACE: True}))
    return piece.name

"""The fuse stage: which operators one kernel does together, so that a tensor used only between them is never
written to memory and each absorbed operator costs no dispatch (issue 16).

Epilogues: the kernel of a convolution, MATMUL, pool or reduction applies the chain of per-element operators that
follows it — RESCALE (constant zero points), CLAMP, ADD / SUB / MUL / MAXIMUM / MINIMUM with another tensor (a
residual, a per-channel or single value), SIGMOID, TANH, ERF, EXP, RECIPROCAL, RSQRT, ABS, int8 TABLE, CAST between
int8 / int16 / int32 / fp32 / bool, and RESHAPEs that
keep the channel dimension — to each result in registers, and stores only the last one; the kernel runs where the
chain's last operator was (every tensor it reads exists by then). A tensor joins a chain only when the next
operator is its single use and has its shape (an operand broadcast up ends it): a second consumer, a block output,
a variable or a region boundary ends the chain (that tensor is stored as usual), and an operator joins one chain
at most. Each step computes what the operator's own kernel computes, so results are identical to the unfused
program (tosa_vk/stages/lower/fused/epilogue.py). A CONV2D or MATMUL chain may end in a layout tail, RESHAPEs and
TRANSPOSEs that the kernel does by storing each result where they would have moved it (no copy kernel; attention's heads
split and merged around the MATMULs), or be a CONCAT along the channels of the results of several such operators
or of GATHERs (pieces of one split past maxStorageBufferRange, tosa_vk/stages/passes/split.py) that is no view:
each kernel stores its channels of every row into the CONCAT's output (a strided store), all of them or none.
A reduction's chain may go on through a head: a 1x1 CONV2D on the 1x1 image it
made (the classifier after a global average pool), then that convolution's own chain; the kernel pools into shared
memory and computes the output channels from there (tosa_vk/stages/lower/reduction.py). A reduction also folds the same
reduction before it, and a CONV2D (its input) or a MATMUL (its B) reads through a TRANSPOSE before it
(Fusion.prologues).

Element-wise groups: connected element-wise operators of one output shape (the epilogue set, EQUAL / GREATER /
GREATER_EQUAL / SELECT, LOGICAL_AND / OR / XOR / NOT, and SLICEs of tensors from outside the group, read at an
offset) become one generated kernel that runs where the group's first operator was: every input from outside must
exist by then, which also keeps a group from both feeding and reading an operator outside it. Values used only
inside the group stay in registers (tosa_vk/stages/lower/fused/group.py).

Row groups: a REDUCE_SUM / REDUCE_MAX / REDUCE_MIN along the last axis with the element-wise operators connected
to it whose results have its input's shape or the reduced one (softmax, layer norm, their int8 forms with RESCALE /
TABLE) become one kernel per row block, proposed before element-wise groups; the reductions give up their
epilogues to them, and take them back where the lowering declines the group (tosa_vk/stages/lower/fused/rows.py;
TOSA_VK_ROW_GROUPS=0 turns row groups off).

Views: a SLICE whose output is one contiguous run of its input reads that memory in place, and a CONCAT whose
inputs are each one run of its output has their producers write there; no kernel either way (not in VGF exports,
whose resources are bound whole: compile(..., views=False)).

`fuse(graph, partition, can_fuse, can_group)` decides: it proposes the longest chains and groups the structure
allows, then keeps, for each anchor, the first of (prologue + chain, chain, chain without its tail) that the anchor
kernel's lowering answers `can_fuse` with no reason for, and each group that `can_group` accepts (as ggml-vulkan's
ggml_vk_can_fuse: the answer comes before anything is built). The answer is a lowering: the kernels it built are
kept (tosa_vk.stages.lower.Answers), and the lower stage takes them as Fusion says, one operator after another, never
lowering a fusion twice nor declining one. `tosa_vk.load(..., fuse=False)` or TOSA_VK_FUSE=0 turns the stage
off.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Set
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import IN_PLACE, Block, Graph, Operator
from .records import Fusion, Partition

REDUCTIONS = ("REDUCE_SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PRODUCT")
ANCHORS: tuple[str, ...] = ("CONV2D", "CONV3D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D", "MATMUL")
ANCHORS += ("AVG_POOL2D", "MAX_POOL2D", *REDUCTIONS)
ANCHORS += ("MATMUL_T", "AVG_POOL2D_ADAPTIVE", "MAX_POOL2D_ADAPTIVE")  # TOSA 1.1: the same kernels
# per-element operators a kernel applies to its results (and a RESHAPE keeping the last dimension, in a chain only:
# it changes no element's linear index or channel)
EPILOGUE: tuple[str, ...] = ("RESCALE", "CLAMP", "ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "TABLE", "CAST")
# anchors whose kernels store through a chain's layout tail (RESHAPEs and TRANSPOSEs at its end: the store's index
# map instead of a copy kernel)
STORE_MAPS = ("CONV2D", "MATMUL", "MATMUL_T")
# kernels that store their result into a strided CONCAT's output (_strided_concat): the STORE_MAPS, and GATHER,
# whose chain is that CONCAT alone (its kernel moves raw values: no per-element step)
STRIDED = (*STORE_MAPS, "GATHER")
# one data input (the rest are parameters); the others two
UNARY: tuple[str, ...] = ("RESCALE", "CLAMP", "TABLE", "SLICE", "CAST", "LOGICAL_NOT")


@dataclass(frozen=True)
class Named:
    """A per-element operator that an epilogue or an element-wise group applies by calling one GLSL function of
    shaders/include/ on its one data input (tosa_vk/stages/lower/fused/epilogue.py): adding one is a row of NAMED plus
    the function, which computes what the operator's own kernel computes."""

    function: str
    types: tuple[DType, ...]  # the element types it takes (and gives)
    fp64: bool = False  # computed in fp64 (shaders/include/unary.glsl): needs shaderFloat64; heavy code


NAMED: dict[str, Named] = {
    "SIGMOID": Named("tosa_sigmoid", (DType.FP32,), fp64=True),
    "TANH": Named("tosa_tanh", (DType.FP32,), fp64=True),
    "EXP": Named("tosa_exp", (DType.FP32,), fp64=True),
    "RECIPROCAL": Named("tosa_reciprocal", (DType.FP32,), fp64=True),
    "RSQRT": Named("tosa_rsqrt", (DType.FP32,), fp64=True),
    "ERF": Named("tosa_erf", (DType.FP32,), fp64=True),
    "ABS": Named("tosa_abs", (DType.INT32, DType.FP32)),  # shaders/include/elementwise.glsl
}
EPILOGUE += tuple(NAMED)
UNARY += tuple(NAMED)


def data_inputs(op: Operator) -> list[str]:
    """The inputs an element-wise operator computes on (RESCALE's multiplier, a SLICE's start, ... are not)."""
    return op.inputs[: 1 if op.op in UNARY else 3 if op.op == "SELECT" else 2]


# (block, anchor, chain, prologue or None) -> why the anchor's kernel cannot do them (None: it can); lower.can_fuse
CanFuse = Callable[[Block, int, list[int], "int | None"], "str | None"]
# (block, members) -> why no generated kernel does the element-wise group (None: one does); lower.can_group
CanGroup = Callable[[Block, list[int]], "str | None"]


def fuse(
    graph: Graph,
    partition: Partition,
    alignment: int | None = None,
    can_fuse: CanFuse | None = None,
    can_group: CanGroup | None = None,
) -> Fusion:
    """The fusion of `graph`; `alignment` (the arena's offset alignment) allows views, None none. `can_fuse` /
    `can_group` (the lower stage's answers) settle each proposed chain, prologue and group; None accepts all."""
    out = Fusion()
    for region in graph.regions:
        block = region.blocks[0]
        on_vulkan = lambda i, r=region.name: partition.of(r, i).where in ("vulkan", "alias")  # noqa: E731
        pinned = {i for i, op in enumerate(block.operators) if op.attrs.get(IN_PLACE)}  # views, nothing else
        claimed: set[int] = set(pinned)
        for later, first in _prologues(block, on_vulkan).items():
            out.prologues[(region.name, later)] = first
            claimed.update([later, first])
        taken = {first for (r, _), first in out.prologues.items() if r == region.name}
        seeds = _row_seeds(block, on_vulkan, claimed)  # anchors of row groups first, epilogues where declined
        for anchor, chain in _epilogues(block, on_vulkan, taken, skip=seeds):
            out.chains[(region.name, anchor)] = chain
            claimed.update([anchor, *chain])
        for members in _rows(block, on_vulkan, claimed, seeds):
            if can_group is None or can_group(block, members) is None:
                out.groups[(region.name, members[0])] = members
                claimed.update(members)
        for anchor, chain in _epilogues(block, on_vulkan, taken | claimed, only=seeds - claimed):
            out.chains[(region.name, anchor)] = chain
            claimed.update([anchor, *chain])
        for members in _groups(block, on_vulkan, claimed):
            if can_group is None or can_group(block, members) is None:
                out.groups[(region.name, members[0])] = members
            claimed.update(members)  # (declined: its operators get their own kernels)
        if can_fuse is not None:
            _settle(out, region.name, block, can_fuse)
        _whole_concats(out, region.name, block)
        # views only without control flow: carried loop state is matched by memory root, which views share
        if alignment and len(graph.regions) == 1:
            placed = {i: partition.of(region.name, i).where for i in range(len(block.operators))}
            for index, offsets in _views(block, placed, claimed - pinned, alignment).items():
                out.views[(region.name, index)] = offsets
    return out


def pinned_views(graph: Graph, partition: Partition, alignment: int | None) -> Fusion:
    """With fusion off, the SLICEs and CONCATs that must be views still are (IN_PLACE: pieces of a tensor past
    maxStorageBufferRange, which no kernel may bind whole)."""
    out = Fusion()
    block = graph.main
    pinned = {i for i, op in enumerate(block.operators) if op.attrs.get(IN_PLACE)}
    if alignment and pinned and len(graph.regions) == 1:
        region = graph.regions[0].name
        placed = {i: partition.of(region, i).where for i in range(len(block.operators))}
        unpinned = set(range(len(block.operators))) - pinned
        for index, offsets in _views(block, placed, unpinned, alignment).items():
            out.views[(region, index)] = offsets
    return out


def _settle(out: Fusion, region: str, block: Block, can_fuse: CanFuse) -> None:
    """Each anchor keeps the first of its prologue with its chain, its chain, its chain without the tail, that its
    kernel can do; none: the anchor, its prologue's operator and its chain's operators get their own kernels."""
    anchors = {i for r, i in (*out.chains, *out.prologues) if r == region}
    for anchor in sorted(anchors):
        full = out.chains.pop((region, anchor), [])
        first = out.prologues.pop((region, anchor), None)
        options: list[tuple[int | None, list[int]]] = [(first, full)] if first is not None else []
        for candidate in (full, without_tail(block, full)):
            if candidate and (None, candidate) not in options:
                options.append((None, candidate))
        chosen = next(((p, c) for p, c in options if can_fuse(block, anchor, c, p) is None), None)
        if chosen is None:
            continue
        if chosen[0] is not None:
            out.prologues[(region, anchor)] = chosen[0]
        if chosen[1]:
            out.chains[(region, anchor)] = chosen[1]


def with_epilogues(block: Block) -> set[int]:
    """The operators of `block` that would anchor an epilogue chain if everything ran on Vulkan (the passes stage
    asks, so as not to trade a fused chain for a batched kernel)."""
    return {anchor for anchor, _ in _epilogues(block, lambda i: True, set())}


def _epilogues(
    block: Block, on_vulkan, taken: set[int], skip: Set[int] = frozenset(), only: Set[int] | None = None
) -> list[tuple[int, list[int]]]:
    """Anchors (not in `skip`; among `only` if given) and their chains."""
    uses = Counter(n for op in block.operators for n in op.inputs)
    uses.update(block.outputs)  # a block output is stored: it ends a chain
    consumer = {n: i for i, op in enumerate(block.operators) for n in op.inputs}
    claimed = set(taken)  # an operator joins one chain at most (ADD(a, b) could end two), or one prologue
    found = []
    for index, op in enumerate(block.operators):
        if op.op not in (*ANCHORS, *STRIDED) or not on_vulkan(index) or index in skip:
            continue
        if only is not None and index not in only:
            continue
        chain: list[int] = []
        tensor = op.outputs[0]
        in_tail = headed = False
        while uses[tensor] == 1 and not block.tensors[tensor].variable and tensor in consumer:
            nxt = consumer[tensor]
            nop = block.operators[nxt]
            if not chain and op.op in STRIDED and nxt not in taken and _strided_concat(block, nxt, on_vulkan, uses):
                chain.append(nxt)  # every input's kernel stores into it (claimed by each): nothing follows
                break
            if op.op not in ANCHORS:  # (GATHER: a strided CONCAT or nothing)
                break
            if nxt in claimed or not on_vulkan(nxt):
                break
            if op.op in REDUCTIONS and not headed and _head(block, nop, tensor):
                headed = True  # the convolution's own chain follows
            elif in_tail or _layout(block, nop, tensor):
                # the layout tail: only RESHAPEs and TRANSPOSEs follow, done by the store (STORE_MAPS)
                if op.op not in STORE_MAPS or nop.op not in ("RESHAPE", "TRANSPOSE") or nop.inputs[0] != tensor:
                    break
                in_tail = True
            elif not _joins(block, nop, tensor):
                break
            chain.append(nxt)
            tensor = nop.outputs[0]
        chain = _without_trailing_reshapes(block, chain)
        if chain:
            claimed.update(chain)
            found.append((index, chain))
    return found


def _strided_concat(block: Block, index: int, on_vulkan, uses: Counter) -> bool:
    """Whether operator `index` is a CONCAT along the last axis that is not one run per input (some leading
    dimension is not 1: no view), each of whose inputs is the result, read by nothing else, of its own operator of
    STRIDED on Vulkan: their kernels can store their channels of each row into its output (a strided store, no
    copy kernel)."""
    op = block.operators[index]
    if op.op != "CONCAT" or len(op.outputs) != 1 or len(set(op.inputs)) != len(op.inputs) < 2:
        return False
    out = block.tensors[op.outputs[0]]
    axis = int(op.attrs.get("axis") or 0)
    if out.variable or not out.shape or axis != len(out.shape) - 1 or all(d == 1 for d in out.shape[:axis]):
        return False
    producer = {n: i for i, o in enumerate(block.operators) for n in o.outputs}
    for name in op.inputs:
        t, p = block.tensors[name], producer.get(name)
        if t.variable or t.data is not None or uses[name] != 1 or p is None or not on_vulkan(p):
            return False
        if block.operators[p].op not in STRIDED or block.operators[p].outputs[0] != name:
            return False
    return on_vulkan(index)


def _whole_concats(out: Fusion, region: str, block: Block) -> None:
    """A strided CONCAT (_strided_concat) stays in its inputs' chains only where every input's kernel took it (one
    kernel that declined it would leave its channels unwritten): else it is dropped from all, and copies."""
    producer = {n: i for i, o in enumerate(block.operators) for n in o.outputs}
    for key, chain in list(out.chains.items()):
        if key[0] != region or not chain or block.operators[chain[-1]].op != "CONCAT":
            continue
        concat = block.operators[chain[-1]]
        if not all(out.chain(region, producer[n])[-1:] == chain[-1:] for n in concat.inputs):
            for n in concat.inputs:
                if out.chain(region, producer[n])[-1:] == chain[-1:]:
                    kept = out.chains.pop((region, producer[n]))[:-1]
                    if kept:
                        out.chains[(region, producer[n])] = kept


def tail_start(block: Block, chain: list[int]) -> int:
    """Where a chain's tail begins (len(chain) without one): at its first TRANSPOSE or RESHAPE changing the last
    dimension or its strided CONCAT, the layout tail, which the kernel stores through as an index map
    (lower/epilogue.py), so only RESHAPEs and TRANSPOSEs follow; or at a reduction's head (a CONV2D), which its own
    chain follows."""
    for k, i in enumerate(chain):
        op = block.operators[i]
        if op.op in ("CONV2D", "CONCAT") or _layout(block, op, op.inputs[0]):
            return k
    return len(chain)


def without_tail(block: Block, chain: list[int]) -> list[int]:
    """The chain up to its tail, without trailing RESHAPEs (what a kernel that cannot store through an index map,
    or do a head, still does)."""
    return _without_trailing_reshapes(block, chain[: tail_start(block, chain)])


def _head(block: Block, op: Operator, tensor: str) -> bool:
    """Whether `op` is a CONV2D with a 1x1 kernel, no padding and `tensor` as its input, a 1x1 image: a reduction's
    result through a classifier (its kernel computes every input channel of the convolution)."""
    if op.op != "CONV2D" or op.inputs[0] != tensor:
        return False
    x, w, out = (block.tensors[n].shape for n in (op.inputs[0], op.inputs[1], op.outputs[0]))
    pad = op.attrs.get("pad")
    return (
        len(x) == len(w) == len(out) == 4
        and tuple(x[1:3]) == tuple(w[1:3]) == tuple(out[1:3]) == (1, 1)
        and (pad is None or not np.any(np.asarray(pad)))
    )


def _without_trailing_reshapes(block: Block, chain: list[int]) -> list[int]:
    """A trailing RESHAPE is an alias anyway: not worth a place in a kernel's chain."""
    end = len(chain)
    while end and block.operators[chain[end - 1]].op == "RESHAPE":
        end -= 1
    return chain[:end]


def _layout(block: Block, op: Operator, tensor: str) -> bool:
    """A TRANSPOSE, or a RESHAPE moving elements to other channels: it starts a chain's layout tail."""
    return op.op == "TRANSPOSE" or (op.op == "RESHAPE" and not _joins(block, op, tensor))


def _prologues(block: Block, on_vulkan) -> dict[int, int]:
    """Reductions whose input is only the result of the reduction of the same kind (and nan_mode) before them,
    CONV2Ds whose input is only the result of a TRANSPOSE or a SLICE, MATMULs whose B is only a TRANSPOSE of its
    last two dimensions."""
    uses = Counter(n for op in block.operators for n in op.inputs)
    uses.update(block.outputs)
    producer = {n: i for i, op in enumerate(block.operators) for n in op.outputs}
    found: dict[int, int] = {}
    for index, op in enumerate(block.operators):
        operand = {"MATMUL": 1, "CONV2D": 0}.get(op.op, 0 if op.op in REDUCTIONS else None)
        first = producer.get(op.inputs[operand]) if operand is not None and len(op.inputs) > operand else None
        if first is None or first in found or not on_vulkan(index) or not on_vulkan(first):
            continue
        before = block.operators[first]
        if op.op == "CONV2D" and before.op == "TRANSPOSE" and uses[op.inputs[0]] == 1:
            found[index] = first  # its input read through the permutation (a small-channel NCHW input)
        elif op.op == "CONV2D" and before.op == "SLICE" and uses[op.inputs[0]] == 1 and _edge_trim(block, before):
            found[index] = first  # its input read in place (the lowering takes only slices it never reads past)
        elif op.op == "MATMUL" and before.op == "TRANSPOSE" and uses[op.inputs[1]] == 1:
            if [int(p) for p in before.attrs.get("perms", ())] == [0, 2, 1]:
                found[index] = first  # B read as the [N, W, C] it was before (attention's K^T)
        elif (
            before.op == op.op
            and before.attrs.get("nan_mode") == op.attrs.get("nan_mode")
            and uses[op.inputs[0]] == 1
            and not block.tensors[op.inputs[0]].variable
        ):
            found[index] = first
    return found


def _edge_trim(block: Block, op: Operator) -> bool:
    """A SLICE from (0, 0, 0, 0) that drops rows / columns at the end of an NHWC image, and is not one contiguous run
    (those are views: no kernel at all)."""
    src, out, start = block.tensors[op.inputs[0]], block.tensors[op.outputs[0]], block.tensors[op.inputs[1]].data
    if start is None or src.variable or len(src.shape) != 4 or any(int(v) for v in np.asarray(start).reshape(-1)):
        return False
    kept = (src.shape[0], src.shape[3]) == (out.shape[0], out.shape[3])
    return kept and _run_start(src.shape, start, out.shape) is None


def _joins(block: Block, op: Operator, tensor: str) -> bool:
    """Whether `op`, which reads `tensor` (the chain's value), can be applied in an epilogue (the anchor's can_fuse
    checks types and shapes: _settle shortens a chain it cannot do)."""
    if op.op == "RESHAPE":
        shapes = [block.tensors[n].shape for n in (op.inputs[0], op.outputs[0])]
        return op.inputs[0] == tensor and all(shapes) and shapes[0][-1] == shapes[1][-1]
    if op.op not in EPILOGUE or not op.outputs or len(op.outputs) != 1:
        return False
    if block.tensors[op.outputs[0]].shape != block.tensors[tensor].shape:
        return False  # broadcast up by the other operand: more results than the kernel computes
    if op.op == "RESCALE":
        return op.inputs[0] == tensor and _zero_points_known(block, op)
    if op.op in UNARY:
        return op.inputs[0] == tensor
    return tensor in op.inputs[:2] and op.inputs[0] != op.inputs[1]


def _zero_points_known(block: Block, op: Operator) -> bool:
    """A RESCALE whose zero points are compile-time constants (fused kernels have them as literals)."""
    return all(block.tensors[n].data is not None for n in op.inputs[3:5])


# in groups too: SLICE of a tensor from outside the group (a strided read, no copy), comparisons, logical operators
# and SELECT (bool values in registers: masks)
GROUPED = EPILOGUE + ("SLICE", "EQUAL", "GREATER", "GREATER_EQUAL", "SELECT")
GROUPED += ("LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT")


def _groups(block: Block, on_vulkan, claimed: set[int]) -> list[list[int]]:
    """Element-wise groups: connected operators of one output shape whose inputs outside the group exist before
    its first operator (its kernel runs there; whatever reads the group's results comes later). Values used only
    inside stay in registers; the others are stored."""
    producer = {n: i for i, op in enumerate(block.operators) for n in op.outputs}
    constant = {n for n, t in block.tensors.items() if t.data is not None}
    group_of: dict[int, list[int]] = {}
    for index, op in enumerate(block.operators):
        if index in claimed or op.op not in GROUPED or len(op.outputs) != 1 or not on_vulkan(index):
            continue
        shape = block.tensors[op.outputs[0]].shape
        if op.op == "RESCALE" and not _zero_points_known(block, op):
            continue
        feeding = [group_of[p] for n in data_inputs(op) if (p := producer.get(n, -1)) in group_of]
        joined = list({id(g): g for g in feeding}.values())
        # join every group the operator reads from, else the latest one alone (the others' values are then inputs)
        attempts = [joined] + [[g] for g in sorted(joined, key=lambda g: -g[0])] if len(joined) > 1 else [joined]
        for attempt in attempts:
            members = sorted({i for g in attempt for i in g} | {index})
            if _fits(block, members, producer, constant, shape):
                for i in members:
                    group_of[i] = members
                break
        else:
            group_of[index] = [index]  # a group of its own, which later operators may join
    seen: set[int] = set()
    groups = []
    for g in group_of.values():
        if id(g) not in seen and len(g) > 1 and any(block.operators[i].op != "SLICE" for i in g):
            seen.add(id(g))
            groups.append(g)
    return sorted(groups)


def _fits(block: Block, members: list[int], producer: dict, constant: set, shape) -> bool:
    """One output shape, and every input from outside the group there before its first operator."""
    first = members[0]
    return all(block.tensors[block.operators[i].outputs[0]].shape == shape for i in members) and all(
        n in constant or producer.get(n, -1) < first or producer.get(n) in members
        for i in members
        for n in block.operators[i].inputs
    )


ROW_REDUCTIONS = ("REDUCE_SUM", "REDUCE_MAX", "REDUCE_MIN")
ROWS_ENV = "TOSA_VK_ROW_GROUPS"  # 0: no row groups (the reductions anchor epilogues as before)


def _row_seeds(block: Block, on_vulkan, claimed: set[int]) -> set[int]:
    """Reductions along the last axis (of length 2 or more) that may anchor a row group."""
    found = set()
    for index, op in enumerate(block.operators):
        shape = block.tensors[op.inputs[0]].shape if op.inputs else ()
        if op.op in ROW_REDUCTIONS and index not in claimed and on_vulkan(index) and len(shape) >= 1:
            if int(op.attrs.get("axis") or 0) == len(shape) - 1 and shape[-1] > 1:
                found.add(index)
    return found


def _rows(block: Block, on_vulkan, claimed: set[int], seeds: set[int]) -> list[list[int]]:
    """Row groups: last-axis reductions (`seeds`) with the element-wise operators connected to them whose results
    have the rows' shape or the reduced one (a value per row), as one kernel per row block (lower/rows.py: softmax,
    layer norm). As for element-wise groups, every input from outside exists before the first member: operators
    taken in block order, those that would read a later outside value left out, then only the parts connected to
    a reduction kept."""
    producer = {n: i for i, op in enumerate(block.operators) for n in op.outputs}
    readers: dict[str, list[int]] = {}
    for i, op in enumerate(block.operators):
        for n in op.inputs:
            readers.setdefault(n, []).append(i)
    constant = {n for n, t in block.tensors.items() if t.data is not None}
    if os.environ.get(ROWS_ENV, "1") == "0":
        return []
    taken = set(claimed)
    groups = []
    for seed in sorted(seeds):
        if seed in taken:
            continue
        shape = tuple(block.tensors[block.operators[seed].inputs[0]].shape)
        candidate = partial(_row_member, block, shape, seeds, taken, on_vulkan)
        component, todo = set(), [seed]
        while todo:
            i = todo.pop()
            if i in component or not candidate(i):
                continue
            component.add(i)
            op = block.operators[i]
            todo.extend(producer[n] for n in op.inputs if n in producer)
            todo.extend(r for n in op.outputs for r in readers.get(n, []))
        members: list[int] = []
        for i in sorted(component):
            ins = block.operators[i].inputs
            if all(n in constant or producer.get(n, -1) in members or producer.get(n, -1) < (members or [i])[0]
                   for n in ins):  # fmt: skip
                members.append(i)
        for part in _connected(block, members):
            # a reduction with per-row steps only is the reduction's kernel with an epilogue (which also splits a
            # long axis over workgroups); a group saves a round trip where a per-element value joins
            rowwise = [
                i for i in part if i not in seeds and tuple(block.tensors[block.operators[i].outputs[0]].shape) == shape
            ]
            if rowwise and any(i in seeds for i in part):
                groups.append(part)
                taken.update(part)
    return sorted(groups)


def _row_member(block: Block, shape: tuple, seeds: set[int], taken: set[int], on_vulkan, i: int) -> bool:
    """Whether operator i may join a row group of rows `shape`: a seed reducing that shape, or an element-wise
    operator giving that shape or the reduced one."""
    op = block.operators[i]
    if i in taken or not on_vulkan(i) or len(op.outputs) != 1:
        return False
    if i in seeds:
        return tuple(block.tensors[op.inputs[0]].shape) == shape
    if op.op not in GROUPED or op.op == "SLICE":
        return False
    if tuple(block.tensors[op.outputs[0]].shape) not in (shape, (*shape[:-1], 1)):
        return False
    return op.op != "RESCALE" or _zero_points_known(block, op)


def _connected(block: Block, members: list[int]) -> list[list[int]]:
    """`members` split into the parts connected through the tensors they pass each other."""
    made = {n: i for i in members for n in block.operators[i].outputs}
    part = {i: i for i in members}

    def root(i: int) -> int:
        while part[i] != i:
            i = part[i]
        return i

    for i in members:
        for n in block.operators[i].inputs:
            if n in made:
                part[root(i)] = root(made[n])
    found: dict[int, list[int]] = {}
    for i in members:
        found.setdefault(root(i), []).append(i)
    return list(found.values())


def _views(block: Block, placed: dict[int, str], claimed: set[int], alignment: int) -> dict[int, list[int]]:
    """SLICEs whose output is one contiguous run of their input, and CONCATs whose inputs are each one run of the
    output, written by a kernel or host step and read by nothing else: views at byte offsets that are multiples of
    `alignment` (a descriptor's offset; a kernel-side base offset would lift that, on devices where it is large)."""
    uses = Counter(n for op in block.operators for n in op.inputs)
    uses.update(block.outputs)
    producer = {n: i for i, op in enumerate(block.operators) for n in op.outputs}
    found: dict[int, list[int]] = {}
    for index, op in enumerate(block.operators):
        if index in claimed or placed[index] != "vulkan" or op.op not in ("SLICE", "CONCAT"):
            continue
        out = block.tensors[op.outputs[0]]
        width = out.dtype.numpy.itemsize
        if out.variable:
            continue
        if op.op == "SLICE":
            src, start = block.tensors[op.inputs[0]], block.tensors[op.inputs[1]].data
            at = None if start is None or src.variable else _run_start(src.shape, start, out.shape)
            offsets = None if at is None else [at * width]
        else:
            axis = int(op.attrs.get("axis") or 0)
            ins = [block.tensors[n] for n in op.inputs]
            writers = [producer.get(n) for n in op.inputs]
            ok = (
                all(d == 1 for d in out.shape[:axis])  # each input is one run of the output
                and len(set(op.inputs)) == len(op.inputs)
                and all(uses[t.name] == 1 and not t.variable and t.data is None for t in ins)
                and all(p is not None and placed[p] in ("vulkan", "host") and p not in found for p in writers)
            )
            offsets = list(np.cumsum([0] + [t.size * width for t in ins[:-1]])) if ok else None
        if offsets is not None and all(int(o) % alignment == 0 for o in offsets):
            found[index] = [int(o) for o in offsets]
    return found


def _run_start(shape, start, size) -> int | None:
    """The flat index where a SLICE (start, size) of a row-major `shape` begins, if it is one contiguous run:
    size 1 up to some dimension, anything there, whole dimensions after it."""
    start = [int(s) for s in np.asarray(start).reshape(-1)]
    k = next((i for i, s in enumerate(size) if s != 1), len(size))
    if any(size[i] != shape[i] for i in range(k + 1, len(size))):
        return None
    flat, step = 0, 1
    for d in range(len(shape) - 1, -1, -1):
        flat += start[d] * step
        step *= shape[d]
    return flat

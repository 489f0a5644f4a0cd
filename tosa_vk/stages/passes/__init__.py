"""The passes stage: graph-to-graph rewrites before partitioning that never change a result.

Run in order on a copy of the graph's structure (tensors and their data are shared, never modified):
- permutes: a TRANSPOSE before and after each custom operator whose shader wants NHWC, for the tensors the caller
  says are NCHW (permute.py; only when `layouts` is given);
- merging: TRANSPOSE pairs that undo each other disappear, other back-to-back pairs become one (permute.py);
- shape folding: TOSA 1.1's shape operators become CONST_SHAPEs of their values (shape.py);
- block-scaled tensors (TOSA 1.1) become their elements and their scales, two plain tensors, and the operators on
  them operators on plain tensors (block_scaled.py);
- batching (with fusion on): 1x1 CONV2Ds sharing weights over runs of pixels of one tensor become one (batch.py);
- splitting: a constant MATMUL / CONV2D / GATHER operand over the target's maxStorageBufferRange becomes pieces under
  it along the output channels, their results concatenated (split.py; `limit`).
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.graph import Block, Graph, Region
from .batch import batch_projections
from .block_scaled import has_block_scaled, split_block_scaled
from .permute import apply_custom_layouts, merge_transposes
from .shape import fold_shapes, has_shape_ops
from .split import oversized, split_oversized


def run(
    graph: Graph,
    layouts: dict[str, str] | str | None = None,
    batch: bool = False,
    file: str | None = None,
    limit: int | None = None,
    alignment: int = 1,
) -> Graph:
    """The graph after every pass; `graph` itself is returned when no pass would change it. `batch`: batched
    projections too (an optimisation of the fuse stage's kind, off with it); `file` names the graph in errors;
    `limit`: the largest tensor in bytes a kernel may bind (the target's max_storage_buffer_range; None: any), and
    `alignment` the arena's (split results placed to be written in place where it allows)."""
    kinds = {op.op for op in graph.main.operators}
    shapes, scaled = has_shape_ops(graph), has_block_scaled(graph)
    big = limit is not None and oversized(graph, limit)
    if layouts is None and "TRANSPOSE" not in kinds and not (batch and "CONV2D" in kinds) and not (shapes or scaled):
        if not big:
            return graph
    graph = copy_structure(graph)
    if shapes:
        fold_shapes(graph)
    if scaled:  # after shape folding (DIM of a block-scaled tensor)
        split_block_scaled(graph, file)
    if layouts is not None:
        apply_custom_layouts(graph, layouts)  # both passes
    else:
        merge_transposes(graph)
    if batch:
        batch_projections(graph)
    if big:  # last: the pieces' operators are the ones that run
        assert limit is not None
        split_oversized(graph, limit, file, alignment)
    return graph


def copy_structure(graph: Graph) -> Graph:
    """A graph whose operator lists, tensor tables and operators are new (tensors are shared: passes replace
    tensors, never change one)."""

    def block(b: Block) -> Block:
        ops = [
            replace(op, inputs=list(op.inputs), outputs=list(op.outputs), attrs=dict(op.attrs)) for op in b.operators
        ]
        return Block(b.name, ops, dict(b.tensors), list(b.inputs), list(b.outputs))

    return Graph([Region(r.name, [block(b) for b in r.blocks]) for r in graph.regions], graph.version)

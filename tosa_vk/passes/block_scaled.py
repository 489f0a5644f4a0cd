"""Block-scaled tensors (TOSA 1.1) in the Vulkan form: each becomes two plain tensors, its elements (one code a byte,
under its name) and its scales (fp8ue8m0, one byte a block, under `Tensor.scale_name`, as a model's feeds and
results already name them), and the operators on them become the *_BLOCK_SCALED operators that take the two:

- MATMUL_T with a block-scaled A and / or B -> MATMUL_T_BLOCK_SCALED; a plain operand gets constant unit scales
  (2^0), so its kernel sums per block and scales once (the spec reads value x scale per element: the same products,
  other rounding, within the dot-product bound). The zero points (0 for these types) are dropped.
- ROW_GATHER of block-scaled values -> ROW_GATHER_BLOCK_SCALED of the (values, scales) list;
- IDENTITY -> one IDENTITY each; a CONST's scales are a constant tensor beside its elements.

Any other operator on a block-scaled tensor has no Vulkan form yet: a TosaError says so. The reference backend runs
the graph as it is (its operators read the scales of a block-scaled input, reference/registry.py Call.scales).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Block, BlockSize, Graph, Operator, Tensor


def has_block_scaled(graph: Graph) -> bool:
    return any(t.block_scaled for _, b in graph.blocks() for t in b.tensors.values())


def split_block_scaled(graph: Graph, file: str | None = None) -> None:
    """Rewrites `graph` (a copy of the caller's structure, passes.copy_structure) in place."""
    for _, block in graph.blocks():
        scaled = {n: t for n, t in block.tensors.items() if t.block_scaled}
        if not scaled:
            continue
        for name, t in scaled.items():
            block.tensors[name] = replace(t, scale_dtype=None, block_size=0, scale_data=None)
            block.tensors[t.scale_name] = Tensor(t.scale_name, t.scale_shape, DType.FP8UE8M0, t.scale_data)
        block.inputs = _with_scales(block.inputs, scaled)
        block.outputs = _with_scales(block.outputs, scaled)
        ops: list[Operator] = []
        for index, op in enumerate(block.operators):
            if not any(n in scaled for n in (*op.inputs, *op.outputs)):
                ops.append(op)
                continue
            rewrite = _REWRITES.get(op.op)
            if rewrite is None:
                raise TosaError(
                    f"{op.op} #{index}: block-scaled operands ({', '.join(n for n in op.inputs if n in scaled)}) "
                    "have no Vulkan form for this operator yet; use backend='reference'",
                    file=file,
                )
            ops.extend(rewrite(op, index, block, scaled, file))
        block.operators = ops


def _with_scales(names: list[str], scaled: dict[str, Tensor]) -> list[str]:
    return [m for n in names for m in ((n, scaled[n].scale_name) if n in scaled else (n,))]


def _matmul_t(op: Operator, index: int, block: Block, scaled: dict[str, Tensor], file) -> list[Operator]:
    # the zero points are not read: the validator refuses constant non-zero ones (ERROR_IF: zero points only for
    # i8_t); a run-time one is taken as 0, as the plain floating-point MATMUL_T kernels take it
    a, b = op.inputs[:2]
    size = next(scaled[n] for n in (a, b) if n in scaled).block_size
    scales = []
    for side, name in (("A", a), ("B", b)):
        if name in scaled:
            scales.append(scaled[name].scale_name)
            continue
        t = block.tensors[name]
        unit = f"{op.outputs[0]}_{side}_unit_scale"  # 2^0 for every block of the plain operand
        while unit in block.tensors:
            unit += "_"
        shape = (*t.shape[:-1], t.shape[-1] // size)
        block.tensors[unit] = Tensor(unit, shape, DType.FP8UE8M0, np.ones(shape, dtype=DType.FP8UE8M0.numpy))
        scales.append(unit)
    attrs = {"block_size": BlockSize(size)}
    return [Operator("MATMUL_T_BLOCK_SCALED", [a, scales[0], b, scales[1]], list(op.outputs), attrs)]


def _row_gather(op: Operator, index: int, block: Block, scaled: dict[str, Tensor], file) -> list[Operator]:
    values, indices, row_count = op.inputs
    (out,) = op.outputs
    t = scaled[values]
    return [
        Operator(
            "ROW_GATHER_BLOCK_SCALED",
            [values, t.scale_name, indices, row_count],
            [out, scaled[out].scale_name],
            {"block_size": BlockSize(t.block_size)},
        )
    ]


def _identity(op: Operator, index: int, block: Block, scaled: dict[str, Tensor], file) -> list[Operator]:
    (x,), (y,) = op.inputs, op.outputs
    return [op, Operator("IDENTITY", [scaled[x].scale_name], [scaled[y].scale_name], dict(op.attrs))]


def _const(op: Operator, index: int, block: Block, scaled: dict[str, Tensor], file) -> list[Operator]:
    return [op]  # its scales: a constant tensor (data without an operator)


_REWRITES = {"MATMUL_T": _matmul_t, "ROW_GATHER": _row_gather, "IDENTITY": _identity, "CONST": _const}

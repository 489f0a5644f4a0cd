"""Block-scaled tensors (TOSA 1.1) as the Vulkan backend holds them: two plain tensors, the elements (one code a
byte, `Tensor.name`) and the fp8ue8m0 scales (`Tensor.scale_name`, one per block of the last dimension) — the two
arrays a model's feeds and results carry anyway.

Every operator on a block-scaled tensor becomes operators on plain ones (_REWRITES):
- data layout moves values and scales alike: CONCAT, IDENTITY and RESIZE's nearest neighbour each twice, the second
  over the scales (the last dimension is whole blocks, so a block's scale goes where its values go); RESHAPE of
  both (aliases, no copy) with a new shape constant for the scales; a CONST's scales are a CONST beside it;
- CAST to / from a block-scaled type is CAST_TO_BLOCK_SCALED / CAST_FROM_BLOCK_SCALED, whose kernels encode / decode;
- MATMUL_T with a block-scaled A and / or B is MATMUL_T_BLOCK_SCALED; a plain operand gets constant unit scales
  (2^0), so its kernel sums per block and scales once (the spec reads value x scale per element: the same products,
  other rounding, within the dot-product bound). The zero points (0 for these types) are dropped;
- ROW_GATHER of block-scaled values is ROW_GATHER_BLOCK_SCALED of the (values, scales) list;
- CONV2D reads a block-scaled input / weight itself: the scales are appended to its inputs and the attribute
  BLOCK_SCALED_INPUTS lists which spec inputs they belong to (its lowering reads them from there, a host step hands
  them to the reference as Call.scales, tosa_vk/reference/host_kernels.py).
Any other operator on a block-scaled tensor has no Vulkan form yet: a TosaError names it. The reference backend runs
the graph as it is (its operators read the scales of a block-scaled input, reference/registry.py Call.scales).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ...errors import TosaError
from ...ir.dtype import DType
from ...ir.graph import BLOCK_SCALED_INPUTS, Block, BlockSize, Graph, Operator, Tensor

Scaled = dict[str, Tensor]  # block-scaled tensors of a block by name, as they were before the split


def has_block_scaled(graph: Graph) -> bool:
    return any(t.block_scaled for _, block in graph.blocks() for t in block.tensors.values())


def split_block_scaled(graph: Graph, file: str | None = None) -> None:
    """Rewrites every block of `graph` (a copy of the caller's structure, passes.copy_structure) in place: new
    tensors for the scales; a block's inputs / outputs list a block-scaled tensor's scales right after it."""
    for _, block in graph.blocks():
        _split_block(block, file)


def _split_block(block: Block, file: str | None) -> None:
    scaled = {n: t for n, t in block.tensors.items() if t.block_scaled}
    if not scaled:
        return
    for name, t in scaled.items():
        if t.scale_name in block.tensors:
            raise TosaError(f"block-scaled tensor '{name}': the graph has a tensor '{t.scale_name}' already", file=file)
        block.tensors[name] = Tensor(name, t.shape, t.dtype, t.data, t.variable, t.variable_name, t.unranked)
        assert t.scale_dtype is not None
        block.tensors[t.scale_name] = Tensor(t.scale_name, t.scale_shape, t.scale_dtype, t.scale_data)
    block.inputs = _with_scales(block.inputs, scaled)
    block.outputs = _with_scales(block.outputs, scaled)
    operators: list[Operator] = []
    for index, op in enumerate(block.operators):
        if not any(n in scaled for n in op.inputs + op.outputs):
            operators.append(op)
            continue
        rewrite = _REWRITES.get(op.op)
        made = rewrite(op, block, scaled) if rewrite is not None else None
        if made is None:
            names = [n for n in op.inputs + op.outputs if n in scaled]
            t = scaled[names[0]]
            raise TosaError(
                f"{op.op} #{index}: tensor '{names[0]}' is block-scaled ({t.dtype.name} x {t.scale_dtype} scales), "
                "and the Vulkan backend has no block-scaled form of this operator yet; use backend='reference'",
                op=op.op,
                file=file,
            )
        operators += made
    block.operators = operators


def _with_scales(names: list[str], scaled: Scaled) -> list[str]:
    return [m for n in names for m in (scaled[n].array_names if n in scaled else (n,))]


def _fresh(block: Block, name: str) -> str:
    while name in block.tensors:
        name += "_"
    return name


def _cast(op: Operator, block: Block, scaled: Scaled) -> list[Operator] | None:
    (x,), (out,) = op.inputs, op.outputs
    if x in scaled:
        size = {"block_size": BlockSize(scaled[x].block_size)}
        return [Operator("CAST_FROM_BLOCK_SCALED", [x, scaled[x].scale_name], [out], size, op.location)]
    size = {"block_size": BlockSize(scaled[out].block_size)}
    return [Operator("CAST_TO_BLOCK_SCALED", [x], [out, scaled[out].scale_name], size, op.location)]


def _const(op: Operator, block: Block, scaled: Scaled) -> list[Operator] | None:
    (out,) = op.outputs
    return [op, Operator("CONST", [], [scaled[out].scale_name], dict(op.attrs), op.location)]


def _twice(op: Operator, block: Block, scaled: Scaled) -> list[Operator] | None:
    """CONCAT, IDENTITY, RESIZE (nearest): once over the values, once over the scales."""
    if not all(n in scaled for n in op.inputs[:1] + op.outputs):
        return None
    inputs = [scaled[n].scale_name if n in scaled else n for n in op.inputs]  # (RESIZE's scale / offset / border)
    return [op, Operator(op.op, inputs, [scaled[op.outputs[0]].scale_name], dict(op.attrs), op.location)]


def _reshape(op: Operator, block: Block, scaled: Scaled) -> list[Operator] | None:
    x, out = op.inputs[0], op.outputs[0]
    if x not in scaled or out not in scaled:
        return None
    # the scales to the output's scale shape: a new shape constant
    shape = _fresh(block, f"{scaled[out].scale_name}_shape")
    value = np.asarray(scaled[out].scale_shape, dtype=np.int64)
    block.tensors[shape] = Tensor(shape, value.shape, DType.SHAPE, value)
    return [
        op,
        Operator("CONST_SHAPE", [], [shape], {}, op.location),
        Operator("RESHAPE", [scaled[x].scale_name, shape], [scaled[out].scale_name], {}, op.location),
    ]


def _matmul_t(op: Operator, block: Block, scaled: Scaled) -> list[Operator] | None:
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
        unit = _fresh(block, f"{op.outputs[0]}_{side}_unit_scale")  # 2^0 for every block of the plain operand
        shape = (*t.shape[:-1], t.shape[-1] // size)
        block.tensors[unit] = Tensor(unit, shape, DType.FP8UE8M0, np.ones(shape, dtype=DType.FP8UE8M0.numpy))
        scales.append(unit)
    attrs = {"block_size": BlockSize(size)}
    return [Operator("MATMUL_T_BLOCK_SCALED", [a, scales[0], b, scales[1]], list(op.outputs), attrs, op.location)]


def _row_gather(op: Operator, block: Block, scaled: Scaled) -> list[Operator] | None:
    values, indices, row_count = op.inputs
    (out,) = op.outputs
    t = scaled[values]
    return [
        Operator(
            "ROW_GATHER_BLOCK_SCALED",
            [values, t.scale_name, indices, row_count],
            [out, scaled[out].scale_name],
            {"block_size": BlockSize(t.block_size)},
            op.location,
        )
    ]


def _scale_inputs(op: Operator, block: Block, scaled: Scaled) -> list[Operator] | None:
    """An operator whose kernel reads block-scaled inputs with their scales (CONV2D): the scales follow its inputs."""
    if any(n in scaled for n in op.outputs):
        return None
    at = tuple(i for i, n in enumerate(op.inputs) if n in scaled)
    inputs = [*op.inputs, *(scaled[op.inputs[i]].scale_name for i in at)]
    return [replace(op, inputs=inputs, attrs={**op.attrs, BLOCK_SCALED_INPUTS: at})]


_REWRITES: dict[str, Callable[[Operator, Block, Scaled], list[Operator] | None]] = {
    "CAST": _cast,
    "CONST": _const,
    "CONCAT": _twice,
    "IDENTITY": _twice,
    "RESIZE": _twice,
    "RESHAPE": _reshape,
    "MATMUL_T": _matmul_t,
    "ROW_GATHER": _row_gather,
    "CONV2D": _scale_inputs,
}

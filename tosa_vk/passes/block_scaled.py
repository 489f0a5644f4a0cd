"""Block-scaled tensors (TOSA 1.1) as the Vulkan backend holds them: two plain tensors, the elements (one code a
byte, `Tensor.name`) and the fp8ue8m0 scales (`Tensor.scale_name`, one per block of the last dimension) — the two
arrays a model's feeds and results carry anyway.

Every operator on a block-scaled tensor becomes operators on plain ones: data layout moves values and scales alike
(CONCAT, RESHAPE, IDENTITY and RESIZE's nearest neighbour each twice, the second over the scales: the last dimension
is whole blocks, so a block's scale goes where its values go), and CAST to / from a block-scaled type is
CAST_TO_BLOCK_SCALED / CAST_FROM_BLOCK_SCALED, whose kernels encode and decode. An operator with no such form (e.g.
MATMUL_T of a block-scaled operand) is a TosaError naming it.
"""

from __future__ import annotations

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Block, BlockSize, Graph, Operator, Tensor

# operators that act on a block-scaled tensor's values and its scales in the same way: one copy each
_TWICE = ("CONCAT", "IDENTITY", "RESIZE")


def has_block_scaled(graph: Graph) -> bool:
    return any(t.block_scaled for _, block in graph.blocks() for t in block.tensors.values())


def split_block_scaled(graph: Graph, file: str | None = None) -> None:
    """Rewrites every block in place (new tensors for the scales; a block's inputs / outputs list a block-scaled
    tensor's scales right after it)."""
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
    for op in block.operators:
        if not any(n in scaled for n in op.inputs + op.outputs):
            operators.append(op)
        else:
            operators += _split_operator(op, block, scaled, file)
    block.operators = operators


def _with_scales(names: list[str], scaled: dict[str, Tensor]) -> list[str]:
    return [m for n in names for m in ((n, scaled[n].scale_name) if n in scaled else (n,))]


def _split_operator(op: Operator, block: Block, scaled: dict[str, Tensor], file: str | None) -> list[Operator]:
    def scale(name: str) -> str:
        return scaled[name].scale_name

    out = op.outputs[0] if op.outputs else ""
    if op.op == "CAST" and op.inputs[0] in scaled:
        block_size = {"block_size": BlockSize(scaled[op.inputs[0]].block_size)}
        return [Operator("CAST_FROM_BLOCK_SCALED", [op.inputs[0], scale(op.inputs[0])], [out], block_size, op.location)]
    if op.op == "CAST" and out in scaled:
        block_size = {"block_size": BlockSize(scaled[out].block_size)}
        return [Operator("CAST_TO_BLOCK_SCALED", list(op.inputs), [out, scale(out)], block_size, op.location)]
    if op.op == "CONST" and out in scaled:
        return [op, Operator("CONST", [], [scale(out)], dict(op.attrs), op.location)]
    if op.op in _TWICE and all(n in scaled for n in op.inputs[:1] + op.outputs):
        inputs = [scale(n) if n in scaled else n for n in op.inputs]  # (RESIZE's scale / offset / border stay)
        return [op, Operator(op.op, inputs, [scale(out)], dict(op.attrs), op.location)]
    if op.op == "RESHAPE" and op.inputs[0] in scaled and out in scaled:
        # the scales to the output's scale shape: a new shape constant (RESHAPE of both is an alias, no copy)
        shape = f"{scale(out)}_shape"
        while shape in block.tensors:
            shape += "_"
        value = np.asarray(block.tensors[scale(out)].shape, dtype=np.int64)
        block.tensors[shape] = Tensor(shape, value.shape, DType.SHAPE, value)
        return [
            op,
            Operator("CONST_SHAPE", [], [shape], {}, op.location),
            Operator("RESHAPE", [scale(op.inputs[0]), shape], [scale(out)], {}, op.location),
        ]
    names = [n for n in op.inputs + op.outputs if n in scaled]
    raise TosaError(
        f"{op.op}: tensor '{names[0]}' is block-scaled ({scaled[names[0]].dtype.name} x {scaled[names[0]].scale_dtype}"
        " scales), and the Vulkan backend has no block-scaled form of this operator yet; use backend='reference'",
        op=op.op,
        file=file,
    )

"""Block-scaled tensors (TOSA 1.1) as the Vulkan backend holds them: two plain tensors, the elements (one code a
byte, under the tensor's name) and the fp8ue8m0 scales (under `Tensor.scale_name`, as Model.run feeds them).

A CONST of a block-scaled tensor is followed by a CONST of its scales. An operator reading a block-scaled tensor
gets the scales appended to its inputs, in input order, and the attribute BLOCK_SCALED_INPUTS listing which of its
spec inputs they belong to: its lowering reads them from there (or declines), and a host step hands them to the
reference implementation as Call.scales (tosa_vk/host_kernels.py). A block-scaled tensor that another operator
writes, or that the graph returns, has no such form yet and is refused.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import TosaError
from ..ir.graph import Graph, Operator, Tensor

BLOCK_SCALED_INPUTS = "block_scaled_inputs"  # attribute: positions of the spec inputs whose scales follow


def has_block_scaled(graph: Graph) -> bool:
    return any(t.block_scaled for _, block in graph.blocks() for t in block.tensors.values())


def split_block_scaled(graph: Graph, file: str | None = None) -> None:
    """Every block-scaled tensor of `graph` (a copy_structure copy) split in two, its readers told (module doc)."""
    for _, block in graph.blocks():
        scaled = {n: t for n, t in block.tensors.items() if t.block_scaled}
        if not scaled:
            continue
        operators = []
        for op in block.operators:
            written = [n for n in op.outputs if n in scaled]
            if written and op.op != "CONST":
                raise _refused(scaled[written[0]], f"written by {op.op}", file)
            operators.append(op)
            if written:  # a constant's scales: a CONST of their own
                operators.append(Operator("CONST", [], [scaled[written[0]].scale_name], {}))
        block.operators[:] = operators
        for n in block.outputs:
            if n in scaled:
                raise _refused(scaled[n], "a graph output", file)
        for n, t in scaled.items():
            assert t.scale_dtype is not None
            block.tensors[n] = replace(t, scale_dtype=None, block_size=0, scale_data=None)
            block.tensors[t.scale_name] = Tensor(t.scale_name, t.scale_shape, t.scale_dtype, data=t.scale_data)
        block.inputs[:] = [m for n in block.inputs for m in ((n, scaled[n].scale_name) if n in scaled else (n,))]
        for op in block.operators:
            _append_scales(op, scaled)


def _append_scales(op: Operator, scaled: dict[str, Tensor]) -> None:
    at = tuple(i for i, n in enumerate(op.inputs) if n in scaled)
    if at:
        op.inputs.extend(scaled[op.inputs[i]].scale_name for i in at)
        op.attrs[BLOCK_SCALED_INPUTS] = at


def _refused(t: Tensor, why: str, file: str | None) -> TosaError:
    return TosaError(
        f"tensor '{t.name}' is block-scaled ({t.dtype.name} x {t.scale_dtype} scales) and {why}: the Vulkan backend "
        "runs block-scaled tensors only as operator inputs so far; use backend='reference'",
        file=file,
    )

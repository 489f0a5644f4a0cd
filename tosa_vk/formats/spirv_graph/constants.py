"""Constant graphs: the VGF codec's part that the exporter writes and the runner reads.

A GRAPH segment whose graph has no inputs and only sets graph constants (the constant section's data, bound by
SegmentInfo's constant bindings) as its outputs does no computing; tosa_vk's exporter writes one to fill the tensors
its compute segments read (tosa_vk/formats/vgf_export.py), and model-converter writes one for a graph whose outputs are
constants. `constant_graph` encodes a Block of CONST outputs (every one a graph constant), `constant_graph_outputs`
recognises one by decoding it (any graph module of that shape, not only ours), and `runs_as_is` says whether a .vgf
holds only such graphs besides its COMPUTE segments (tosa_vk/formats/vgf_run.py runs it as it is; otherwise
tosa_vk/formats/vgf_graph.py decodes its TOSA graph).
"""

from __future__ import annotations

import numpy as np

from vgf import VGF
from vgf.vk_enums import FORMATS

from ...errors import TosaError
from ...ir.dtype import DType
from ...ir.graph import Block, Operator, Tensor
from .decode import decode_module
from .encode import encode

# VkFormat value -> the element type a constant graph's tensor of that format has (TOSA's int8 / int16 / int32 /
# fp16 / fp32, whose bytes are the same in the arena and the graph). Other element types travel as R8_SINT bytes
# (vgf_export.py): bool (a graph constant's true is 0xFF, kernels read 1), bf16, fp8, int48.
GRAPH_ELEMENTS = {
    FORMATS[f"VK_FORMAT_{f}"].value: d
    for f, d in (
        ("R8_SINT", DType.INT8),
        ("R16_SINT", DType.INT16),
        ("R32_SINT", DType.INT32),
        ("R16_SFLOAT", DType.FP16),
        ("R32_SFLOAT", DType.FP32),
    )
}
GRAPH_MAX_RANK = 6  # TOSA's MAX_RANK: a tensor's shape as the graph declares it


def constant_graph(name: str, tensors: list[tuple[int, tuple[int, ...]]]) -> bytes:
    """A SPIR-V graph module (entry point `name`) without inputs whose output k is graph constant k: a tensor of
    (VkFormat value from GRAPH_ELEMENTS, shape of rank 1..GRAPH_MAX_RANK) at set 0, binding k. The layout
    model-converter writes for a graph whose outputs are constants; encoded by tosa_vk/formats/spirv_graph (every
    constant a graph constant, however small)."""
    block = Block(name)
    for k, (fmt, shape) in enumerate(tensors):
        assert 1 <= len(shape) <= GRAPH_MAX_RANK and min(shape) >= 1, f"tensor shape {shape}"
        dtype = GRAPH_ELEMENTS[fmt]
        data = np.broadcast_to(np.zeros((), dtype.numpy), shape)  # encode does not read a graph constant's data
        block.add_tensor(Tensor(f"constant_{k}", shape, dtype, data))
        block.operators.append(Operator("CONST", [], [f"constant_{k}"]))
        block.outputs.append(f"constant_{k}")
    spirv, names = encode(block, name, inline=0)
    assert names == block.outputs, names
    return spirv


def constant_graph_outputs(code: bytes | str | None) -> list[tuple[int, int, int]] | None:
    """(set, binding, graph constant id) of each output of a graph module without inputs whose outputs are all
    graph constants (no operation in the graph: decoded, it holds only the CONST operators of its outputs); None
    for any other module. Decoded for its structure only (the data is the constant section's, bound by the
    segment)."""
    if not isinstance(code, bytes):
        return None
    try:
        decoded = decode_module(code, None, [], None)
    except TosaError:
        return None
    block, ids = decoded.block, decoded.graph_constants
    if block.inputs or any(op.op != "CONST" or op.outputs[0] not in block.outputs for op in block.operators):
        return None
    if any(n not in ids for n in block.outputs) or any(b is None for b in decoded.bindings):
        return None
    return [(*b, ids[n]) for b, n in zip(decoded.bindings, block.outputs) if b is not None]


def runs_as_is(vgf: VGF) -> bool:
    """True when tosa_vk runs the file's segments as they are (vgf_program): every GRAPH segment only outputs
    constants. A file with other GRAPH segments holds a TOSA graph (tosa_vk/formats/vgf_graph.py decodes those)."""
    return all(
        s.type == "COMPUTE"
        or (s.module_index < len(vgf.modules) and constant_graph_outputs(vgf.modules[s.module_index].code) is not None)
        for s in vgf.segments
    )

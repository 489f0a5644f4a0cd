"""The fuse stage: which operators one kernel does together, so that a tensor used only between them is never
written to memory and each absorbed operator costs no dispatch (issue 16).

Epilogues: a convolution's kernel applies the chain of per-element operators that follows it — a RESCALE (constant
zero points; multiplier and shift read per channel) and then any CLAMPs — to each result in registers, and stores
only the last one. A tensor joins a chain only when the next operator is its single use: a second consumer, a
block output, a variable or a region boundary ends the chain (that tensor is stored as usual). Integer results are
bit-identical to the unfused program (the same arithmetic), floating-point ones too (CLAMP's bounds are values of
the output type, and rounding is monotonic).

`fuse(graph, partition)` decides; the lower stage asks `Fusion.chain()` and falls back to separate kernels when
a lowering declines a chain. `tosa_vk.load(..., fuse=False)` or TOSA_VK_FUSE=0 turns the
stage off.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .ir.dtype import DType
from .ir.graph import Block, Graph, Operator

if TYPE_CHECKING:
    from .partition import Partition

ANCHORS = ("CONV2D", "CONV3D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D")
EPILOGUE = ("RESCALE", "CLAMP")
ENV = "TOSA_VK_FUSE"


def enabled(fuse: bool | None) -> bool:
    """The fuse= option, defaulting to the environment (TOSA_VK_FUSE=0 turns fusion off)."""
    return os.environ.get(ENV, "1") != "0" if fuse is None else fuse


@dataclass
class Fusion:
    """(region, anchor index) -> the indices of the operators its kernel applies after it, in order."""

    chains: dict[tuple[str, int], list[int]] = field(default_factory=dict)

    def chain(self, region: str, index: int) -> list[int]:
        return self.chains.get((region, index), [])


def fuse(graph: Graph, partition: Partition) -> Fusion:
    out = Fusion()
    for region in graph.regions:
        block = region.blocks[0]
        for anchor, chain in _epilogues(block, lambda i, r=region.name: partition.of(r, i).where == "vulkan"):
            out.chains[(region.name, anchor)] = chain
    return out


def _epilogues(block: Block, on_vulkan) -> list[tuple[int, list[int]]]:
    uses = Counter(n for op in block.operators for n in op.inputs)
    uses.update(block.outputs)  # a block output is stored: it ends a chain
    consumer = {n: i for i, op in enumerate(block.operators) for n in op.inputs}
    found = []
    for index, op in enumerate(block.operators):
        if op.op not in ANCHORS or not on_vulkan(index):
            continue
        chain: list[int] = []
        tensor = op.outputs[0]
        while uses[tensor] == 1 and not block.tensors[tensor].variable and tensor in consumer:
            nxt = consumer[tensor]
            if not on_vulkan(nxt) or not _joins(block, block.operators[nxt], tensor, chain, block.operators):
                break
            chain.append(nxt)
            tensor = block.operators[nxt].outputs[0]
        if chain:
            found.append((index, chain))
    return found


def _joins(block: Block, op: Operator, tensor: str, chain: list[int], ops: list[Operator]) -> bool:
    """Whether `op`, reading `tensor` as its first input, can follow `chain` in an epilogue."""
    if op.op not in EPILOGUE or op.inputs[0] != tensor:
        return False
    if op.op == "RESCALE":  # first in the chain, on the accumulator (int32), zero points known at compile time
        return (
            not chain
            and block.tensors[tensor].dtype == DType.INT32
            and all(block.tensors[n].data is not None for n in op.inputs[3:5])
        )
    return True

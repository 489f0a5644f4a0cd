"""The records the compile stages pass to one another (tosa_vk/stages/compiler.py): each stage imports the records it
consumes from here, never the stage that made them.

    Partition  partition -> fuse, lower   where each operator runs, and the main block's kernels found on the way
    Fusion     fuse -> lower              which operators one kernel does together
    Lowered    lower -> plan              steps over program-wide tensor names, memory sharing, constants

Plain data, at the bottom of the package's layers: they import only the Program's records and the IR's Tensor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from ..ir.graph import Tensor
    from ..program import Placement, Step, VariableSpec


@dataclass
class Partition:
    """Placements by (region name, operator index), and the main block's kernels found on the way."""

    placements: dict[tuple[str, int], Placement]
    lowered: dict[tuple[str, int], tuple[list[Step], dict]] = field(default_factory=dict)

    def of(self, region: str, index: int) -> Placement:
        return self.placements[(region, index)]


@dataclass
class Fusion:
    """(region, anchor index) -> the indices of the operators its kernel applies after it, in order."""

    chains: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    # (region, first operator) -> the element-wise operators one generated kernel does, in order
    groups: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    # (region, SLICE / CONCAT) -> byte offsets: the SLICE's output is its input's bytes from offsets[0]; the CONCAT's
    # inputs are written by their producers straight into its output at offsets[i]. Either way no kernel.
    views: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    # (region, reduction) -> the reduction of the same kind before it whose result only it reads: one kernel folds
    # both axes (e.g. a global average pool's REDUCE_SUM over W, then over H); (region, CONV2D or MATMUL) -> the
    # TRANSPOSE whose result only it reads (as its input, as B): the kernel reads through the permutation
    prologues: dict[tuple[str, int], int] = field(default_factory=dict)

    def chain(self, region: str, index: int) -> list[int]:
        return self.chains.get((region, index), [])

    def group(self, region: str, index: int) -> list[int]:
        return self.groups.get((region, index), [])

    def view(self, region: str, index: int) -> list[int] | None:
        return self.views.get((region, index))

    def absorbed(self, region: str, index: int) -> int | None:
        """The operator whose kernel also does this one (as its prologue), if any."""
        return next((i for (r, i), first in self.prologues.items() if r == region and first == index), None)


@dataclass
class Lowered:
    """The lower stage's result, the plan stage's input: steps over program-wide tensor names, every tensor that
    needs memory, which share memory (`root`), constants (uploaded once) and variables."""

    steps: list[Step]
    tensors: dict[str, Tensor]
    root: dict[str, str]
    offsets: dict[str, int]  # views (Fusion.views): bytes from the start of their root's memory
    constants: dict[str, np.ndarray]
    variables: dict[str, VariableSpec]
    placement: list[Placement]
    inputs: list[str]
    outputs: list[str]

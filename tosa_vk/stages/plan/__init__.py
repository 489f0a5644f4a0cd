"""The plan stage: where and how every tensor lives on the device — live ranges, offsets in one arena (arena.py,
memory.py) and descriptors / formats under the channel-packing contract (resources.py) — giving the Program."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...program import Program
from ...target import Target
from . import arena, resources

if TYPE_CHECKING:
    from ..records import Lowered


def plan(lowered: Lowered, target: Target, alignment: int | None = None) -> Program:
    """The Program of `lowered` for `target` (tensor offsets aligned to the target's, or to `alignment`)."""
    buffers, size, stats = arena.place(
        lowered.tensors,
        lowered.steps,
        lowered.root,
        lowered.offsets,
        lowered.constants,
        lowered.inputs,
        lowered.outputs,
        alignment or target.alignment,
    )
    return Program(
        lowered.steps,
        buffers,
        size,
        lowered.inputs,
        lowered.outputs,
        lowered.constants,
        lowered.placement,
        stats,
        lowered.variables,
        resources.plan_resources(lowered.tensors, lowered.steps, lowered.root, lowered.offsets),
        _signature(lowered, lowered.inputs),
        _signature(lowered, lowered.outputs),
    )


def _signature(lowered: Lowered, names: list[str]) -> dict[str, tuple[tuple[int, ...], str]]:
    """The graph's own inputs or outputs as the user feeds and gets them: name -> (shape, DType name)."""
    return {name: (lowered.tensors[name].shape, lowered.tensors[name].dtype.name) for name in names}

"""Memory planning: liveness intervals of tensors packed into one arena (greedy best fit, largest first).

A tensor is live from the step that writes it to the last step that reads it; graph inputs from the start, graph
outputs to the end. (Constants and variables live forever: the lowerer places them before the packed region.)
Tensors whose intervals overlap never share bytes; the others may. `lower_bound` is the largest total size of
tensors live at one time — no packing can use less, so `arena / lower_bound` measures the packing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Interval:
    name: str
    size: int
    first: int  # step index that writes it (-1: before the run)
    last: int  # last step index that reads it (a large number: after the run)
    offset: int = -1

    def overlaps(self, other: Interval) -> bool:
        return self.first <= other.last and other.first <= self.last


def align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def pack(intervals: list[Interval], alignment: int) -> int:
    """Assigns every interval an offset (multiple of `alignment`); returns the arena size."""
    placed: list[Interval] = []
    for iv in sorted(intervals, key=lambda i: (-i.size, i.first, i.name)):
        size = align(max(iv.size, 1), alignment)
        busy = sorted((p.offset, p.offset + align(max(p.size, 1), alignment)) for p in placed if p.overlaps(iv))
        offset, best = 0, None
        for start, end in busy:  # best fit: the smallest gap that holds it
            if start - offset >= size and (best is None or start - offset < best[1]):
                best = (offset, start - offset)
            offset = max(offset, end)
        iv.offset = best[0] if best is not None else offset
        placed.append(iv)
    return max((p.offset + align(max(p.size, 1), alignment) for p in placed), default=0)


def lower_bound(intervals: list[Interval]) -> int:
    """The most bytes live at any one step."""
    points = sorted({i.first for i in intervals})
    return max((sum(i.size for i in intervals if i.first <= t <= i.last) for t in points), default=0)

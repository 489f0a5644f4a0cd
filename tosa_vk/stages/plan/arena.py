"""Liveness and placement of every tensor in the arena: constants and variables first (uploaded once /
persistent), then every other tensor packed by its live range (tosa_vk/stages/plan/memory.py)."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Tensor
from ...program import Branch, Buffer, Loop, Step
from . import memory


def liveness(steps: list[Step], root: dict[str, str]) -> tuple[dict[str, int], dict[str, int], int]:
    """First write and last use of every memory root, in a depth-first numbering of the (nested) steps. A tensor
    used inside a WHILE_LOOP but made before it lives across the whole loop (the next iteration reads it again)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    count = 0

    def use(name: str, i: int, write: bool) -> None:
        r = root.get(name, name)
        if write:
            first.setdefault(r, i)
        last[r] = max(last.get(r, i), i)

    def visit(items: list[Step]) -> None:
        nonlocal count
        for step in items:
            i, count = count, count + 1
            for name in step.writes:
                use(name, i, True)
            for name in step.reads:
                use(name, i, False)
            if isinstance(step, Branch):
                visit(step.then)
                visit(step.orelse)
            elif isinstance(step, Loop):
                visit(step.cond)
                visit(step.body)
                end, count = count, count + 1
                for name in filter(None, (step.condition, step.predicate)):  # read between iterations
                    use(name, end, False)
                for r, lo in list(last.items()):
                    if lo >= i and first.get(r, -1) < i:
                        last[r] = end

    visit(steps)
    return first, last, count


def place(
    tensors: dict[str, Tensor],
    steps: list[Step],
    root: dict[str, str],
    offsets: dict[str, int],
    constants: dict[str, np.ndarray],
    inputs: list[str],
    outputs: list[str],
    alignment: int,
) -> tuple[dict[str, Buffer], int, dict[str, int]]:
    """Buffers by tensor name, the arena's size and memory statistics; every offset a multiple of `alignment`
    (views: their root's offset plus theirs, also a multiple)."""
    first, last, count = liveness(steps, root)
    forever = count + 1
    for name in outputs:
        last[root.get(name, name)] = forever
    static = [n for n, t in tensors.items() if n not in root and (n in constants or t.variable)]
    offset = 0
    intervals: dict[str, memory.Interval] = {}
    for name in static:
        t = tensors[name]
        intervals[name] = memory.Interval(name, t.size * t.dtype.numpy.itemsize, -1, forever, offset)
        offset = memory.align(offset + max(intervals[name].size, 1), alignment)
    dynamic = []
    for name, t in tensors.items():
        if name in root or name in intervals:
            continue
        lo = -1 if name in inputs else first.get(name, -1)
        iv = memory.Interval(name, t.size * t.dtype.numpy.itemsize, lo, max(last.get(name, lo), lo))
        intervals[name] = iv
        dynamic.append(iv)
    dynamic_bytes = memory.pack(dynamic, alignment)
    for iv in dynamic:
        iv.offset += offset
    stats = {
        "arena_bytes": offset + dynamic_bytes,
        "static_bytes": offset,
        "dynamic_bytes": dynamic_bytes,
        "dynamic_lower_bound_bytes": memory.lower_bound(dynamic),
        "dynamic_naive_bytes": sum(iv.size for iv in dynamic),
    }
    kinds = {
        **{n: "intermediate" for n in tensors},
        **{n: "constant" for n in constants},
        **{n: "input" for n in inputs},
        **{n: "output" for n in outputs},
    }
    buffers = {}
    for name, t in tensors.items():
        iv = intervals[root.get(name, name)]
        buffers[name] = Buffer(
            name,
            iv.offset + offsets.get(name, 0),
            t.size * t.dtype.numpy.itemsize,
            t.shape,
            t.dtype.numpy,
            "variable" if t.variable else kinds[name],
            iv.name,
            (iv.first, iv.last),
        )
    return buffers, max(offset + dynamic_bytes, 16), stats

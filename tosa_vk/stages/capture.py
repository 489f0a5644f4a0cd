"""Intermediate tensors of a run: `Model.run(..., capture=...)` (issue 19).

A captured tensor must still be in memory when the run ends, which a compiled program does not promise: fusion
keeps a chain's intermediates in registers, and the arena reuses a tensor's bytes once its last reader ran. So a
capture runs a twin of the model — the same graph with the captured tensors as extra graph outputs, which ends
every fusion chain at them and keeps them to the end of the run (tosa_vk/stages/fuse.py, plan/arena.py) — with the same
options on the same device, and the model's variables lent to it for the run. Both backends work this way, so what
`tosa-vk compare` puts side by side was computed by the same program on each.

Capturable are the main block's tensors that hold data at run time, in execution order: the graph's inputs, then
each operator's outputs (not constants, not shape values). Tensors inside COND_IF / WHILE_LOOP regions are not.
"""

from __future__ import annotations

import difflib
from typing import NamedTuple

from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Graph
from .passes import copy_structure

CONSTANTS = ("CONST", "CONST_SHAPE")


def capturable(graph: Graph) -> list[str]:
    """The main block's run-time tensors in execution order (graph inputs first)."""
    main = graph.main
    names = list(main.inputs)
    for op in main.operators:
        if op.op not in CONSTANTS:
            names += [n for n in op.outputs if main.tensors[n].dtype != DType.SHAPE and n not in names]
    return names


def producers(graph: Graph) -> dict[str, str]:
    """Tensor name -> the main-block operator that writes it, as "CONV2D #36" (its index in the block)."""
    return {n: f"{op.op} #{i}" for i, op in enumerate(graph.main.operators) for n in op.outputs}


class Captured(NamedTuple):
    """One capturable tensor of a model (`Model.capturable`), in execution order: its name, its producer ("CONV2D
    #36"; "input" for a graph input), TOSA dtype and shape."""

    name: str
    producer: str
    dtype: DType
    shape: tuple[int, ...]


def listing(graph: Graph) -> list[Captured]:
    """capturable(graph) with each tensor's producer, dtype and shape."""
    main, producer = graph.main, producers(graph)
    return [
        Captured(n, producer.get(n, "input"), main.tensors[n].dtype, tuple(main.tensors[n].shape))
        for n in capturable(graph)
    ]


def select(known: list[str], capture, file: str | None = None, why=None) -> list[str]:
    """run()'s `capture` among the tensor names `known` (in execution order): "all" (or True) is all of them, else a
    name or a list of names, each checked; `why(name)`: the reason an unknown name cannot be captured, None for
    one the model does not have (the message then suggests close names)."""
    if capture is True or capture == "all":
        return known
    names = [capture] if isinstance(capture, str) else capture
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise TosaError(f"run(capture=...) takes 'all' or a list of tensor names, got {type(capture).__name__}")
    wanted, knows = set(names), set(known)
    for name in names:
        if name in knows:
            continue
        reason = why(name) if why is not None else None
        if reason is None:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            raise TosaError(f"run(capture=...): the model has no tensor {name!r}{hint}", file=file)
        raise TosaError(f"run(capture=...): tensor {name!r} cannot be captured: {reason}", file=file)
    return [n for n in known if n in wanted]


def resolve(graph: Graph, capture, file: str | None = None) -> list[str]:
    """run()'s `capture` as tensor names in execution order: "all" (or True) is every capturable tensor, else a
    name or a list of names, each checked."""

    def why(name: str) -> str | None:
        where = next((r.name for r, b in graph.blocks() if name in b.tensors), None)
        if where is None:
            return None
        if name not in graph.main.tensors:
            return f"it is in region {where!r}; capture takes the main block's tensors"
        return "it is a constant or a shape value, known before the run"

    return select(capturable(graph), capture, file, why)


def with_outputs(graph: Graph, names: list[str]) -> Graph:
    """`graph` (unchanged) copied with `names` appended to its outputs."""
    twin = copy_structure(graph)
    twin.main.outputs += [n for n in names if n not in twin.main.outputs]
    return twin

"""The user-facing session API: `tosa_vk.load(path, backend=...) -> Model`, `Model.run(feeds) -> outputs`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import TosaError
from .ir import Graph, load_graph

BACKENDS = ("reference",)


class Model:
    """A loaded graph bound to a backend. Variables (EXT-VARIABLE) persist across run() calls of one Model."""

    def __init__(self, graph: Graph, backend: str = "reference", file: str | None = None, max_iterations=1_000_000):
        if backend not in BACKENDS:
            raise TosaError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
        from .reference.executor import Interpreter
        self.graph = graph
        self.backend = backend
        self.file = file
        self._impl = Interpreter(graph, file=file, max_iterations=max_iterations)

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {t.name: (t.shape, t.dtype.name) for t in self.graph.inputs}

    @property
    def outputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {t.name: (t.shape, t.dtype.name) for t in self.graph.outputs}

    def run(self, feeds: dict[str, np.ndarray] | None = None, **named: np.ndarray) -> dict[str, np.ndarray]:
        """Runs the graph: inputs by name (a dict, keywords, or both) -> outputs by name."""
        return self._impl.run({**(feeds or {}), **named})

    def __repr__(self) -> str:
        return f"Model({self.file or 'graph'!s}, backend={self.backend!r})"


def load(source: str | Path | Graph, backend: str = "reference", **options) -> Model:
    """A Model from a .tosa path or a Graph."""
    if isinstance(source, Graph):
        return Model(source, backend, **options)
    return Model(load_graph(source), backend, file=str(source), **options)

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

    @property
    def variables(self) -> dict[str, np.ndarray]:
        """Current values of the session's variables by uid (copies; declared on the first run)."""
        return {uid: var.value.copy() for uid, var in self._impl.state.items()}

    def set_variable(self, uid: str, value: np.ndarray) -> None:
        var = self._impl.state.get(uid)
        if var is None:
            raise TosaError(f"no variable '{uid}' (variables are declared by the first run; have "
                            f"{sorted(self._impl.state)})")
        value = np.asarray(value, dtype=var.dtype.numpy)
        if value.shape != var.shape:
            raise TosaError(f"variable '{uid}' has shape {list(var.shape)}, got {list(value.shape)}")
        var.value, var.is_written = value.copy(), True

    def reset_variables(self) -> None:
        """Forgets all state: the next run declares the variables again with their initial values."""
        self._impl.state.clear()

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

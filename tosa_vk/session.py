"""The user-facing session API: `tosa_vk.load(path, backend=...) -> Model`, `Model.run(feeds) -> outputs`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import TosaError
from .ir import Graph, load_graph

BACKENDS = ("reference", "vulkan")


class Model:
    """A loaded graph bound to a backend. Variables (EXT-VARIABLE) persist across run() calls of one Model."""

    def __init__(self, graph: Graph, backend: str = "reference", file: str | None = None, max_iterations=1_000_000,
                 **options):
        if backend not in BACKENDS:
            raise TosaError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
        self.graph = graph
        self.backend = backend
        self.file = file
        if backend == "vulkan":
            from .vulkan_backend import VulkanModel
            self._vulkan = VulkanModel(graph, file, max_iterations=max_iterations, **options)
            self._impl = self._vulkan
            self._run = self._vulkan.run
        else:
            from .reference.executor import Interpreter
            self._impl = Interpreter(graph, file=file, max_iterations=max_iterations)
            self._run = self._impl.run

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {t.name: (t.shape, t.dtype.name) for t in self.graph.inputs}

    @property
    def outputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {t.name: (t.shape, t.dtype.name) for t in self.graph.outputs}

    @property
    def variables(self) -> dict[str, np.ndarray]:
        """Current values of the session's variables by uid (copies; declared on the first run)."""
        if self.backend == "vulkan":
            return self._vulkan.variables()
        return {uid: var.value.copy() for uid, var in self._impl.state.items()}

    def set_variable(self, uid: str, value: np.ndarray) -> None:
        var = self._impl.state.get(uid)
        if var is None:
            raise TosaError(f"no variable '{uid}' (variables are declared by the first run; have "
                            f"{sorted(self._impl.state)})")
        value = np.asarray(value, dtype=var.dtype.numpy)
        if value.shape != var.shape:
            raise TosaError(f"variable '{uid}' has shape {list(var.shape)}, got {list(value.shape)}")
        if self.backend == "vulkan":
            self._vulkan.set_variable(uid, value)
        else:
            var.value, var.is_written = value.copy(), True

    def reset_variables(self) -> None:
        """Forgets all state: the next run declares the variables again with their initial values."""
        if self.backend == "vulkan":
            self._vulkan.reset_variables()
        else:
            self._impl.state.clear()

    def run(self, feeds: dict[str, np.ndarray] | None = None, **named: np.ndarray) -> dict[str, np.ndarray]:
        """Runs the graph: inputs by name (a dict, keywords, or both) -> outputs by name."""
        return self._run({**(feeds or {}), **named})

    @property
    def transferred(self) -> dict[str, int]:
        """Bytes that crossed between host and device memory in the last run ({"to_device", "from_device"};
        the Vulkan backend: inputs, outputs, host steps' operands and control-flow conditions)."""
        return dict(self._vulkan.runtime.transferred) if self.backend == "vulkan" else {}

    @property
    def placement(self) -> list[tuple[str, str]]:
        """(operator, where it runs: "vulkan" | "host" | "alias") for the Vulkan backend."""
        return self._vulkan.program.placement if self.backend == "vulkan" else []

    def export_vgf(self, path: str | Path | None = None):
        """The graph as a VGF container (vgf.VGF; written to `path` if given): our SPIR-V kernels as COMPUTE
        segments (tosa_vk/vgf_export.py). Needs every operator as a Vulkan kernel."""
        from .vgf_export import export_vgf
        if self.backend == "vulkan":
            return export_vgf(self._vulkan.program, path)
        from .vulkan_backend import VulkanModel
        vulkan = VulkanModel(self.graph, self.file, strict=True)
        try:
            return export_vgf(vulkan.program, path)
        finally:
            vulkan.close()

    def profile(self) -> list[tuple[str, float]]:
        """Per-kernel GPU times of the last run (load with timestamps=True)."""
        return self._vulkan.profile() if self.backend == "vulkan" else []

    def close(self) -> None:
        """Frees device resources now."""
        if self.backend == "vulkan":
            self._vulkan.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"Model({self.file or 'graph'!s}, backend={self.backend!r})"


def load(source: str | Path | Graph, backend: str = "reference", **options) -> Model:
    """A Model from a .tosa path or a Graph."""
    if isinstance(source, Graph):
        return Model(source, backend, **options)
    return Model(load_graph(source), backend, file=str(source), **options)

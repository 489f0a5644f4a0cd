"""The reference backend as a Model: the op library's numpy interpreter (tosa_vk/reference/executor.py) behind
tosa_vk's session API."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ..ir.graph import Graph
from ..ir.variables import new_value
from ..program import Placement
from ..reference.executor import Interpreter
from ..reference.feeds import coerce_input, coerce_scales
from ..target import Target
from ..timeout import checked_timeout
from .model import GraphModel, Model, Timing, in_flight, stateful

REASON = "reference backend: numpy"  # every operator's placement


class ReferenceModel(GraphModel):
    """Options: max_iterations (WHILE_LOOP cap), timeout_s (the longest a run may take: positive seconds, checked
    before each operator and WHILE_LOOP iteration; None, the default: no limit), max_in_flight (runs submit()
    takes at once, 1 to 64 as on Vulkan; the interpreter still runs one at a time, so this changes nothing but what
    is accepted: code written for the Vulkan backend runs here)."""

    backend = "reference"

    def __init__(
        self,
        source: Graph,
        *,
        file: str | None = None,
        max_iterations: int = 1_000_000,
        timeout_s: float | None = None,
        max_in_flight: int = 1,
    ):
        checked_timeout(timeout_s)  # before the graph is validated
        self.max_in_flight = in_flight(max_in_flight, stateful(source), file)
        self.graph, self.file = source, file
        self.interpreter = Interpreter(source, file=file, max_iterations=max_iterations, timeout_s=timeout_s)
        # one run at a time: the interpreter reuses its per-operator calls and holds the variables
        self.lock = threading.RLock()

    def _run(self, feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        # converted here (the interpreter's own coerce_input then finds the storage dtype and has nothing to do)
        values = {t.name: coerce_input(t, feeds[t.name], self.file, cast=cast) for t in self.graph.inputs}
        for t in self.graph.inputs:
            if t.block_scaled:  # TOSA 1.1: elements and scales are two feeds
                values[t.scale_name] = coerce_scales(t, feeds[t.scale_name], self.file, cast=cast)
        with self.lock:
            return self.interpreter.run(values)

    @property
    def variables(self) -> dict[str, np.ndarray]:
        with self.lock:
            return {uid: var.value.copy() for uid, var in self.interpreter.state.items()}

    def set_variable(self, uid: str, value: np.ndarray) -> None:
        with self.lock:
            var, array = new_value(self.interpreter.state, uid, value)
            var.value, var.is_written = array.copy(), True

    def reset_variables(self) -> None:
        with self.lock:
            self.interpreter.state.clear()

    def _lend_state(self, twin: Model) -> None:
        assert isinstance(twin, ReferenceModel)
        twin.interpreter.state = self.interpreter.state  # one dict: the twin's run updates this model's variables

    def export_vgf(self, path: str | Path | None = None, target: Target | str = "lavapipe"):
        """The graph compiled for `target` (strict: every operator a Vulkan kernel) as a VGF container (vgf.VGF;
        written to `path` if given). Needs no device."""
        from ..formats.vgf_export import export_vgf
        from ..stages.compiler import compile

        return export_vgf(compile(self.graph, target, strict=True, views=False, file=self.file), path)

    @property
    def placement(self) -> list[Placement]:
        """Every operator of every region on the host: the numpy interpreter runs them all."""
        main = self.graph.regions[0].name
        return [
            Placement(op.label(index, "" if region.name == main else f"{region.name}::"), "host", REASON)
            for region in self.graph.regions
            for index, op in enumerate(region.blocks[0].operators)
        ]

    def _timings(self) -> list[Timing]:
        with self.lock:
            return [Timing(op, "host", seconds * 1e6) for op, seconds in self.interpreter.timings]

"""The Vulkan backend: compiles a graph for the device (tosa_vk.compile) and runs the Program with
tosa_vk.vulkan.Runtime.

Variables and control flow stay on the device (tosa_vk/lower/variable.py, control_flow.py). Operators the partition
places on the host run as host kernels (tosa_vk/host_kernels.py) on numpy views of the same device memory (no copies
where the memory is host-visible); `strict=True` refuses them instead.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from . import compiler, host_kernels
from .errors import TosaError
from .ir.graph import Graph
from .program import Placement
from .reference.executor import coerce_input
from .session import GraphModel, Model, Timing
from .variables import new_value
from .vulkan import Device
from .vulkan.runtime import Runtime


class OnDevice(Model):
    """A Model that owns a Runtime on a Device (and the device too unless it was given): close() frees both;
    idempotent and safe after a failed __init__."""

    runtime: Runtime | None = None
    device: Device | None = None
    own_device = False

    @property
    def open_runtime(self) -> Runtime:
        """The runtime; a clear error once the model is closed."""
        if self.runtime is None:
            raise TosaError("the model is closed", file=self.file)
        return self.runtime

    def profile(self) -> list[Timing]:
        """Per-kernel device times of the last run (GPU timestamps: load with timestamps=True)."""
        return [Timing(op, "device", float(seconds) * 1e6) for op, seconds in self.open_runtime.profile()]

    @property
    def transferred(self) -> dict[str, int]:
        return dict(self.open_runtime.transferred)

    def check_feeds(self, expected: list[str], feeds: dict, what: str) -> None:
        """Every input in `expected` given, nothing else; `what` names them in the error ("graph", "VGF")."""
        missing = [n for n in expected if n not in feeds]
        unknown = sorted(set(feeds) - set(expected))
        if missing or unknown:
            raise TosaError(f"{what} inputs {expected} expected; missing {missing}, unknown {unknown}", file=self.file)

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None
        if self.own_device and self.device is not None:
            self.device.close()
            self.device = None


class VulkanModel(OnDevice, GraphModel):
    """A graph compiled for a Vulkan device (tosa_vk.compile) and run by tosa_vk.vulkan.Runtime.

    Options: device (a Device, an index or a name), strict (no host steps), timestamps (GPU times for profile()),
    max_iterations (WHILE_LOOP cap), force_host (operator or output names to run on the host), layouts (tensors
    the graph holds as NCHW, for custom ops with an NHWC shader)."""

    backend = "vulkan"

    def __init__(
        self,
        source: Graph,
        *,
        file: str | None = None,
        device: Device | str | int | None = None,
        strict: bool = False,
        timestamps: bool = False,
        max_iterations: int = 1_000_000,
        force_host: Collection[str] = (),
        layouts: dict[str, str] | str | None = None,
    ):
        self.graph, self.file = source, file
        self.device = device if isinstance(device, Device) else Device(device)
        self.own_device = not isinstance(device, Device)
        try:
            self.program = compiler.compile(
                source, self.device.info.target, strict=strict, force_host=force_host, layouts=layouts, file=file
            )
            self.runtime = Runtime(
                self.program, self.device, timestamps=timestamps, max_iterations=max_iterations, host=host_kernels.run
            )
        except BaseException:
            self.close()
            raise

    def run(self, feeds: dict[str, np.ndarray] | None = None, **named: np.ndarray) -> dict[str, np.ndarray]:
        feeds = {**(feeds or {}), **named}
        main = self.graph.main
        self.check_feeds(main.inputs, feeds, "graph")
        values = {n: coerce_input(main.tensors[n], feeds[n], self.file) for n in main.inputs}
        try:
            return self.open_runtime.run(values)
        except TosaError as err:
            raise err.located(file=self.file) from None

    @property
    def variables(self) -> dict[str, np.ndarray]:
        runtime = self.open_runtime
        return {uid: runtime.view(self.program.variables[uid].tensor).copy() for uid in runtime.state}

    def set_variable(self, uid: str, value: np.ndarray) -> None:
        runtime = self.open_runtime
        var, array = new_value(runtime.state, uid, value)
        runtime.view(self.program.variables[uid].tensor)[...] = array
        var.is_written = True

    def reset_variables(self) -> None:
        self.open_runtime.reset_variables()

    @property
    def placement(self) -> list[Placement]:
        return list(self.program.placement)

    def export_vgf(self, path: str | Path | None = None):
        """The program as a VGF container (vgf.VGF; written to `path` if given): our SPIR-V kernels as COMPUTE
        segments (tosa_vk/vgf_export.py). Needs every operator as a Vulkan kernel."""
        from .vgf_export import export_vgf

        return export_vgf(self.program, path)

"""The Vulkan backend: lowers a graph to a Program and runs it with tosa_vk.vulkan.Runtime.

Variables and control flow stay on the device (tosa_vk/lower/variable.py, control_flow.py). Operators without a
Vulkan kernel run on the host with the reference implementation, on numpy views of the same
device memory (no copies where the memory is host-visible); `strict=True` refuses them instead.
"""
from __future__ import annotations

import numpy as np

from .errors import TosaError
from .ir.graph import Block, Graph, Operator
from .ir.validate import validate
from .lower import compile_graph
from .reference.executor import Interpreter, coerce_input
from .reference.registry import Call
from .reference.variable import begin_run
from .vulkan import Device
from .vulkan.memory import align
from .vulkan.runtime import Runtime


class OnDevice:
    """Owns a Runtime on a Device (and the device too unless it was given): close() frees both; idempotent and
    safe after a failed __init__."""
    runtime = device = file = None
    own_device = False

    def check_feeds(self, expected: list[str], feeds: dict, what: str) -> None:
        """Every input in `expected` given, nothing else; `what` names them in the error ("graph", "VGF")."""
        missing = [n for n in expected if n not in feeds]
        unknown = sorted(set(feeds) - set(expected))
        if missing or unknown:
            raise TosaError(f"{what} inputs {expected} expected; missing {missing}, unknown {unknown}",
                            file=self.file)

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None
        if self.own_device and self.device is not None:
            self.device.close()
            self.device = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class VulkanModel(OnDevice):
    def __init__(self, graph: Graph, file: str | None = None, device: Device | str | int | None = None,
                 strict: bool = False, timestamps: bool = False, max_iterations: int = 1_000_000):
        validate(graph, file=file)
        self.graph, self.file = graph, file
        self.host = Interpreter(graph, file=file, check=False, max_iterations=max_iterations)
        self.device = device if isinstance(device, Device) else Device(device)
        self.own_device = not isinstance(device, Device)
        try:
            limits = self.device.info.limits
            self.program = compile_graph(graph, self.device.info.features,
                                         align(max(16, limits["minStorageBufferOffsetAlignment"]), 16),
                                         strict=strict, host_runner=self._host_runner)
            self.runtime = Runtime(self.program, self.device, timestamps=timestamps, max_iterations=max_iterations)
        except BaseException:
            self.close()
            raise

    def _host_runner(self, op: Operator, block: Block, buffered: tuple[str, ...]):
        """A Host step running the reference implementation of `op` on views of the arena (`buffered` inputs
        arrive as views, the others are shape values known at compile time)."""
        from .reference import registry
        fn = registry.OPS[op.op]
        outs = [block.tensors[n] for n in op.outputs]
        call = Call(op, [], [block.tensors[n].dtype for n in op.inputs], [t.dtype for t in outs],
                    [t.shape for t in outs], run_region=self.host.run_region, state=self.host.state,
                    extra={"max_iterations": self.host.max_iterations, "block": block})

        def run(views: list[np.ndarray]) -> list[np.ndarray]:
            values = iter(views)
            call.inputs = [next(values) if n in buffered else block.tensors[n].data for n in op.inputs]
            result = fn(call)
            return list(result) if isinstance(result, (list, tuple)) else [result]
        return run

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        main = self.graph.main
        self.check_feeds(main.inputs, feeds, "graph")
        values = {n: coerce_input(main.tensors[n], feeds[n], self.file) for n in main.inputs}
        begin_run(self.runtime.state)  # a new run: every variable may be declared once again
        try:
            return self.runtime.run(values)
        except TosaError as err:
            raise err.located(file=self.file) from None

    @property
    def state(self) -> dict:
        """The variables' flags by uid (tosa_vk.reference.variable.Variable, values in device memory)."""
        return self.runtime.state

    def variables(self) -> dict[str, np.ndarray]:
        return {uid: self.runtime.view(self.program.variables[uid].tensor).copy() for uid in self.runtime.state}

    def set_variable(self, uid: str, value: np.ndarray) -> None:
        self.runtime.view(self.program.variables[uid].tensor)[...] = value
        self.runtime.state[uid].is_written = True

    def reset_variables(self) -> None:
        self.runtime.reset_variables()

    def profile(self) -> list[tuple[str, float]]:
        return self.runtime.profile()

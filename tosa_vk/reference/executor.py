"""Interprets a Graph with the numpy reference operators, block by block in operator order.

Control-flow operators get `Call.run_region` (a callable that runs a named region on a list of values) rather than
importing this module; VARIABLE operators get `Call.state`, the session's variable store.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TosaError, TosaTimeoutError
from ..ir.dtype import DType
from ..ir.graph import Block, Graph, Tensor
from ..ir.variables import begin_run
from ..timeout import checked_timeout, overrun_text
from . import prepared, registry
from .feeds import coerce_input, coerce_scales
from .registry import Call, ScaledArray


class Interpreter:
    """Runs one validated Graph; `state` (variables) persists across run() calls of the same interpreter."""

    def __init__(
        self,
        graph: Graph,
        file: str | None = None,
        check: bool = True,
        max_iterations: int = 1_000_000,
        prepare: bool = True,
        timeout_s: float | None = None,
    ):
        """prepare: common fp32 / integer operators as closures made once (reference/prepared.py), else every
        operator through its chapter function. The closures rely on the static rules holding: only with check.
        timeout_s: the longest a run may take (None: no limit), checked before each operator and each block a
        control-flow operator runs (every WHILE_LOOP iteration): one long numpy operator is not interrupted."""
        from . import load_all

        load_all()
        if check:
            from ..ir.validate import validate  # (the catalogue: not for coerce_input's importers)

            validate(graph, file=file)
        self.graph = graph
        self.file = file
        self.state: dict = {}
        self.timings: list[tuple[str, float]] = []  # (operator, seconds) of the last run
        self.max_iterations = max_iterations
        self.timeout_s = checked_timeout(timeout_s)
        self._deadline = math.inf  # time.monotonic() by which the current run must end
        self.prepare = prepare and check
        self._regions = {r.name: r for r in graph.regions}
        self._plans: dict[int, tuple] = {}

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Graph inputs by name -> graph outputs by name (storage dtypes, see DType.numpy)."""
        main = self.graph.main
        expected = feed_names(self.graph.inputs)
        missing = [n for n in expected if n not in feeds]
        if missing:
            raise TosaError(f"missing graph input(s) {missing}; the graph takes {expected}", file=self.file)
        unknown = sorted(set(feeds) - set(expected))
        if unknown:
            raise TosaError(f"unknown graph input(s) {unknown}; the graph takes {expected}", file=self.file)
        values = [coerce_input(main.tensors[n], feeds[n], self.file) for n in main.inputs]
        scales = {
            t.scale_name: coerce_scales(t, feeds[t.scale_name], self.file) for t in self.graph.inputs if t.block_scaled
        }
        begin_run(self.state)
        self.timings = []
        self._deadline = math.inf if self.timeout_s is None else time.monotonic() + self.timeout_s
        env = self.run_block(self.graph.regions[0].name, main, values, scales, env_out=True)
        return {name: env[name] for name in feed_names(self.graph.outputs)}

    def run_region(self, name: str, values: list[np.ndarray]) -> list[np.ndarray]:
        region = self._regions.get(name)
        if region is None:
            raise TosaError(f"no region named {name!r}", file=self.file)
        return self.run_block(name, region.blocks[0], values)

    def run_block(self, region: str, block: Block, values: list[np.ndarray], scales=None, env_out=False) -> Any:
        """The block's outputs for its input `values`; `scales`: those of block-scaled inputs by scale name (TOSA
        1.1); `env_out`: every value by name instead (a block-scaled tensor's scales under its scale_name)."""
        if len(values) != len(block.inputs):
            raise TosaError(
                f"block '{block.name}' takes {len(block.inputs)} inputs, got {len(values)}",
                file=self.file,
                region=region,
            )
        self._in_time(f"next block: '{block.name}'")  # a loop's iterations, whatever their blocks hold
        constants, steps = self._prepared(block)
        env = dict(constants)
        env.update(zip(block.inputs, values))
        env.update(scales or {})
        for step in steps:
            self._in_time(f"next operator: {step.label}")
            start = time.perf_counter()
            try:
                if step.run is not None:
                    env[step.outputs[0].name] = step.run(*[_read(env, n) for n in step.call.op.inputs])
                else:
                    self._run_step(step, env)
            except TosaError as err:
                op = step.call.op
                raise err.located(
                    op=op.op,
                    index=step.index,
                    output=op.outputs[0] if op.outputs else None,
                    region=region,
                    file=self.file,
                ) from None
            self.timings.append((step.label, time.perf_counter() - start))
        return env if env_out else [_read(env, n) for n in block.outputs]

    def _in_time(self, where: str) -> None:
        if time.monotonic() > self._deadline:
            raise TosaTimeoutError(overrun_text(self.timeout_s, where), file=self.file)

    def _prepared(self, block: Block) -> tuple[dict[str, np.ndarray], list[_Step]]:
        """Per block, once: its constant values and one reusable Call per operator."""
        cached = self._plans.get(id(block))
        if cached is None:
            constants = {n: t.data for n, t in block.tensors.items() if t.data is not None and not t.variable}
            constants.update({t.scale_name: t.scale_data for t in block.tensors.values() if t.scale_data is not None})
            steps = []
            for index, op in enumerate(block.operators):
                if op.op in ("CONST", "CONST_SHAPE"):
                    continue
                fn = registry.OPS.get(op.op)
                if fn is None:
                    raise TosaError(f"no reference implementation of {op.op}", op=op.op, index=index, file=self.file)
                outs = [block.tensors[n] for n in op.outputs]
                call = Call(
                    op,
                    [],
                    [block.tensors[n].dtype for n in op.inputs],
                    [t.dtype for t in outs],
                    [t.shape for t in outs],
                    run_region=self.run_region,
                    state=self.state,
                    extra={"max_iterations": self.max_iterations, "block": block},
                )
                ins = [block.tensors[n] for n in op.inputs]
                scaled = any(t.block_scaled for t in ins + outs)  # block-scaled (1.1): values and scales
                make = prepared.PREPARED.get(op.op) if self.prepare and len(outs) == 1 and not scaled else None
                known = [None if block.tensors[n].variable else block.tensors[n].data for n in op.inputs]
                run = make(call, known, functools.partial(_slow, fn, call)) if make else None
                steps.append(_Step(index, fn, call, outs, op.label(index), run, ins if scaled else None))
            cached = self._plans[id(block)] = (constants, steps)
        return cached

    @staticmethod
    def _run_step(step: _Step, env: dict) -> None:
        call = step.call
        call.inputs = [_read(env, n) for n in call.op.inputs]
        if step.scaled is not None:
            call.scales = [_read(env, t.scale_name) if t.block_scaled else None for t in step.scaled]
        result = step.fn(call)
        results = result if isinstance(result, (list, tuple)) else (result,)
        if len(results) != len(step.outputs):
            raise TosaError(
                f"reference {call.op.op} returned {len(results)} outputs, the graph declares {len(step.outputs)}"
            )
        for t, r in zip(step.outputs, results):
            if t.block_scaled != isinstance(r, ScaledArray):
                raise TosaError(f"reference {call.op.op} has no block-scaled form for output '{t.name}'")
            if isinstance(r, ScaledArray):
                # row-major, whatever the operator's indexing left (results are saved as .npy files for Arm's tools)
                scale = np.ascontiguousarray(r.scale, dtype=DType.FP8UE8M0.numpy)
                env[t.scale_name] = scale.reshape(t.scale_shape)
                r = r.data
            r = np.asarray(r)
            if r.dtype != t.dtype.numpy or r.shape != t.shape:
                if r.size != t.size:
                    raise TosaError(f"output '{t.name}' computed with shape {list(r.shape)}, declared {list(t.shape)}")
                r = r.astype(t.dtype.numpy, copy=False).reshape(t.shape)
            env[t.name] = r


@dataclass
class _Step:
    index: int
    fn: Callable[[Call], object]
    call: Call
    outputs: list[Tensor]
    label: str
    run: Callable[..., np.ndarray] | None = None  # the prepared closure, if the operator has one here
    scaled: list[Tensor] | None = None  # the input tensors, where an input or output is block-scaled (1.1)


def _slow(fn: Callable[[registry.Call], object], call: registry.Call, *inputs: np.ndarray):
    """The chapter function on `inputs` (a prepared closure's way to report a REQUIRE that does not hold)."""
    call.inputs = list(inputs)
    return fn(call)


def _read(env: dict, name: str) -> np.ndarray:
    try:
        return env[name]
    except KeyError:
        raise TosaError(f"tensor '{name}' is read before it is written") from None


def feed_names(tensors: list[Tensor]) -> list[str]:
    """A graph's input (or output) arrays: one a tensor, two for a block-scaled one (its elements, then its scales
    under `Tensor.scale_name`, as Arm's conformance files give them)."""
    return [n for t in tensors for n in t.array_names]

"""An ExecuTorch program (.pte) as a Model: its execution plan run in order, each delegate of ExecuTorch's Arm
backends as a TOSA graph on the chosen backend (reference or vulkan) — TOSABackend's processed bytes are a TOSA
flatbuffer, VgfBackend's a VGF container whose GRAPH segments are decoded (tosa_vk/formats/vgf_graph.py) —
the host operators the partitioner left around and between them in numpy (tosa_vk/formats/pte/host_ops.py).

Inputs and outputs are the method's, in its order: a .pte keeps no argument names, so they are input_0, input_1, ...
and output_0, ... unless the loader names them (`tosa_vk.from_torch` names them after the module's forward).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import TosaError, TosaFormatError, TosaUnsupportedError
from ..formats.pte import host_ops
from ..formats.pte.program import DelegateRun, Kernel, Plan, TensorListValue, TensorValue, describe
from ..ir import Graph
from ..ir.flatbuffer import read_graph
from ..program import Placement
from ..reference.executor import coerce_array
from .model import Model, Timing, in_flight

TOSA_BACKENDS = ("TOSABackend",)  # delegate ids whose processed bytes are a TOSA flatbuffer
VGF_BACKENDS = ("VgfBackend",)  # ... a VGF container (ExecuTorch's Arm VGF backend: model-converter's GRAPH segments)
HOST_REASON = "ExecuTorch host operator: numpy"


def _delegate_graph(backend: str, data: bytes, where: str) -> Graph:
    """A delegate's processed bytes as a TOSA graph: a TOSA flatbuffer (TOSABackend) as it is, a VGF's GRAPH segments
    (VgfBackend) decoded as `tosa_vk.load("x.vgf")` decodes them."""
    if backend in TOSA_BACKENDS:
        return read_graph(data, file=where)
    if backend in VGF_BACKENDS:
        from vgf import VGFError, read_vgf

        from ..formats.spirv_graph.constants import runs_as_is
        from ..formats.vgf_graph import to_graph

        try:
            vgf = read_vgf(data, file=where)
        except VGFError as err:
            raise TosaFormatError(err.rule, file=err.file) from None
        if runs_as_is(vgf):
            raise TosaUnsupportedError("a VGF delegate of COMPUTE segments only (not a TOSA graph)", file=where)
        return to_graph(vgf, file=where)
    raise TosaUnsupportedError(
        f"a delegate for ExecuTorch's {backend}; tosa_vk runs {', '.join(TOSA_BACKENDS + VGF_BACKENDS)} delegates "
        "(ExecuTorch's Arm TOSA and VGF partitioners)",
        file=where,
    )


class PteModel(Model):
    """`plan` (one method of a .pte) with its TOSA delegates loaded as `model_class` models (the backend's Model
    class, built with `options`). submit() / close() are every Model's (tosa_vk/backends/model.py): close() lets
    the run in progress finish before it closes the delegates (on Vulkan: ABANDON_AFTER_S, then closing them stops
    it); `max_in_flight` runs go at once, each delegate with as many slots."""

    source_kind = "ExecuTorch program"

    def __init__(
        self,
        plan: Plan,
        model_class: type,
        *,
        backend: str,
        file: str | None = None,
        options: dict[str, Any] | None = None,
        input_names: list[str] | None = None,
        output_names: list[str] | None = None,
    ):
        self.plan, self.file, self.backend = plan, file, backend
        self.max_in_flight = in_flight((options or {}).get("max_in_flight", 1), False, file)
        if backend == "vulkan":
            from ..vulkan.runtime import ABANDON_AFTER_S

            self.settle_s = ABANDON_AFTER_S  # then _release closes the delegates, which stops a runaway shader
        host_ops.check(plan, file)  # (the reader checked every index and that inputs and outputs are tensors)
        self.delegates: list[Model] = []
        try:
            for index, delegate in enumerate(plan.delegates):
                where = f"{file or '<buffer>'} (delegate {index})"
                graph = _delegate_graph(delegate.backend, delegate.processed, where)
                self.delegates.append(model_class(graph, file=where, **(options or {})))
        except BaseException:
            self.close()
            raise
        self._host_times: list[Timing] = []
        self._input_names = self._names(input_names, plan.inputs, "input")
        self._output_names = self._names(output_names, plan.outputs, "output")

    def _names(self, names: list[str] | None, indices: tuple[int, ...], what: str) -> list[str]:
        if names is None:
            return [f"{what}_{i}" for i in range(len(indices))]
        if len(names) != len(indices) or len(set(names)) != len(names):
            raise TosaError(f"{len(indices)} distinct {what} names needed, got {names}", file=self.file)
        return list(names)

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """Each input's (shape, dtype): a tensor's; an int / float / bool input (a method's scalar) as a 0-d
        int64 / float64 / bool; a tensor list as ((n,), "tensor list"), given as a list of n arrays."""
        return {n: describe(self.plan.values[i]) for n, i in zip(self._input_names, self.plan.inputs)}

    @property
    def outputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return {n: describe(self.plan.values[i]) for n, i in zip(self._output_names, self.plan.outputs)}

    @property
    def input_defaults(self) -> dict[str, int | float | bool]:
        """The int / float / bool inputs' values, those the program was exported with (ExecuTorch specialises
        them: its runtime takes no other); run() uses them for such an input not given."""
        return {n: self.plan.values[i] for n, i in zip(self._input_names, self.plan.inputs)
                if not isinstance(self.plan.values[i], (TensorValue, TensorListValue))}  # fmt: skip

    def _gather(self, feeds, named: dict, cast, outputs, where: str = "graph") -> dict:
        """run()'s feeds, with input_defaults for the int / float / bool inputs not given."""
        given = {**(feeds if isinstance(feeds, dict) else {}), **named}
        named = {**{n: v for n, v in self.input_defaults.items() if n not in given}, **named}
        return super()._gather(feeds, named, cast, outputs, where)

    def _input(self, name: str, index: int, given: Any, cast: bool, env: list[Any]) -> Any:
        """One method input, checked against the program: a tensor as every Model's, a tensor list member by
        member (stored at its members' values), an int / float / bool as ExecuTorch's set_input takes it (of the
        input's type, equal to the value the program was exported with)."""
        t = self.plan.values[index]
        if isinstance(t, TensorValue):
            return coerce_array(name, given, t.sizes, t.dtype, t.dtype.name, file=self.file, cast=cast,
                                where=self.source_kind)  # fmt: skip
        if isinstance(t, TensorListValue):
            if not isinstance(given, (list, tuple)) or len(given) != len(t.items):
                raise TosaError(f"input {name!r} is a list of {len(t.items)} tensors; got "
                                f"{_what(given)}", file=self.file)  # fmt: skip
            for i, (member, array) in enumerate(zip(t.items, given)):
                if member is None:  # an optional list's member left out: None there
                    if array is not None:
                        raise TosaError(f"input {name!r}[{i}] is left out (None) in the program", file=self.file)
                    continue
                m = self.plan.values[member]
                env[member] = coerce_array(f"{name}[{i}]", array, m.sizes, m.dtype, m.dtype.name, file=self.file,
                                           cast=cast, where=self.source_kind)  # fmt: skip
            return t
        return _scalar(name, given, t, self.file)

    def _run(self, feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        plan = self.plan
        env: list[Any] = [v.data if isinstance(v, TensorValue) else v for v in plan.values]
        for name, index in zip(self._input_names, plan.inputs):
            env[index] = self._input(name, index, feeds[name], cast, env)
        times = []
        for index, ins in enumerate(plan.instructions):
            if isinstance(ins, Kernel):
                start = time.perf_counter()
                host_ops.run(ins, env, plan, self.file)
                times.append(Timing(f"{ins.name} #{index}", "host", (time.perf_counter() - start) * 1e6))
            else:
                self._delegate(ins, env)
        self._host_times = times
        results = {}
        for name, index in zip(self._output_names, plan.outputs):
            if env[index] is None:
                raise TosaError(f"output {name} (value {index}) is never written by the plan", file=self.file)
            results[name] = np.asarray(env[index])
        return results

    def _delegate(self, call: DelegateRun, env: list[Any]) -> None:
        model = self.delegates[call.index]
        args = [a for i in call.args for a in (env[i].items if isinstance(env[i], TensorListValue) else (i,))]
        names, outs = list(model.inputs), list(model.outputs)
        if len(args) != len(names) + len(outs):
            raise TosaError(f"delegate {call.index} is called with {len(args)} values; its TOSA graph has "
                            f"{len(names)} inputs and {len(outs)} outputs", file=self.file)  # fmt: skip
        feeds = {}
        for name, i in zip(names, args):
            shape = tuple(model.inputs[name][0])
            value = np.asarray(env[i])
            order = self._order(i)
            if order and tuple(value.shape[d] for d in order) == shape:
                value = np.transpose(value, order)  # a channels-last value: the delegate takes its memory layout
            if value.shape != shape:
                raise TosaError(f"delegate {call.index}'s input {name!r} is {list(shape)}, the plan gives value {i} "
                                f"of shape {list(value.shape)}", file=self.file)  # fmt: skip
            feeds[name] = value
        results = model.run(feeds)
        for name, i in zip(outs, args[len(names) :]):
            t = self.plan.values[i]
            value = results[name]
            order = self._order(i)
            if isinstance(t, TensorValue) and order and value.shape == tuple(t.sizes[d] for d in order):
                value = np.transpose(value, np.argsort(order))  # the delegate wrote the memory layout
            elif isinstance(t, TensorValue) and value.size == int(np.prod(t.sizes, dtype=np.int64)):
                value = value.reshape(t.sizes)
            env[i] = value

    def _order(self, index: int) -> tuple[int, ...] | None:
        """A tensor value's dim order where it is not the identity (channels-last), else None: ExecuTorch hands a
        delegate the memory layout, which the Arm backend's TOSA graph takes as its shape."""
        t = self.plan.values[index]
        if isinstance(t, TensorValue) and t.dim_order != tuple(range(len(t.sizes))):
            return t.dim_order
        return None

    @property
    def output_steps(self) -> dict[str, float]:
        """Each output's quantization step: the scale of the dequantize that writes it (an int8 program's float
        output is exact to within one), 0.0 for an output no dequantize writes."""
        steps = {}
        for name, index in zip(self._output_names, self.plan.outputs):
            writers = [k for k in self.plan.instructions if isinstance(k, Kernel) and index in k.args]
            last = writers[-1] if writers else None
            scale = self.plan.values[last.args[1]] if last and "dequantize_per_tensor" in last.op else None
            steps[name] = float(scale) if isinstance(scale, (int, float)) else 0.0
        return steps

    def _timings(self) -> list[Timing]:
        """The last run's host operators (wall clock) and each delegate's own profile (the vulkan backend's
        kernels need load(..., timestamps=True)), in plan order; delegate rows are labelled "delegate N::..."."""
        host = iter(self._host_times)
        rows: list[Timing] = []
        for ins in self.plan.instructions:
            if isinstance(ins, Kernel):
                rows.extend(t for t in [next(host, None)] if t is not None)
            else:
                rows += [t._replace(op=f"delegate {ins.index}::{t.op}") for t in self.delegates[ins.index].profile()]
        return rows

    @property
    def placement(self) -> list[Placement]:
        """The plan in order: each host operator on the host, each delegate's operators where its backend puts them
        (labelled "delegate N::OP #i ...")."""
        rows = []
        for index, ins in enumerate(self.plan.instructions):
            if isinstance(ins, Kernel):
                rows.append(Placement(f"{ins.name} #{index}", "host", HOST_REASON))
            else:
                for p in self.delegates[ins.index].placement:
                    rows.append(Placement(f"delegate {ins.index}::{p.op}", p.where, p.reason))
        return rows

    def _release(self) -> None:
        for model in self.delegates:
            model.close()


def _what(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


def _scalar(name: str, given: Any, traced: int | float | bool, file: str | None) -> int | float | bool:
    """An int / float / bool method input: of the program's type (a bool for a bool, an integer for an int, a real
    number for a float; a 0-d array too), and the value the program was exported with, as ExecuTorch's set_input
    checks (the export specialised the graph to it: any other would run the traced value regardless)."""
    value = given.item() if isinstance(given, np.ndarray) and given.shape == () else given
    value = value.item() if isinstance(value, np.generic) else value
    kind = "bool" if isinstance(traced, bool) else "int" if isinstance(traced, int) else "float"
    ok = {"bool": isinstance(value, bool), "int": isinstance(value, int) and not isinstance(value, bool),
          "float": isinstance(value, (int, float)) and not isinstance(value, bool)}[kind]  # fmt: skip
    if not ok:
        raise TosaError(f"input {name!r} is an ExecuTorch {kind} (a method's non-tensor argument); got "
                        f"{value!r} ({_what(given)})", file=file)  # fmt: skip
    same = abs(value - traced) <= 1e-4 + 1e-5 * abs(traced) if kind == "float" else value == traced
    if not same:
        raise TosaError(f"input {name!r}: the program was exported with {name}={traced!r} and ExecuTorch specialises "
                        f"a method's {kind} arguments to the exported value (its runtime refuses another); got "
                        f"{value!r}: export the module again with the value you want", file=file)  # fmt: skip
    return traced

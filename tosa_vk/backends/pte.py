"""An ExecuTorch program (.pte) as a Model: its execution plan run in order, each delegate of ExecuTorch's Arm
backends as a TOSA graph on the chosen backend (reference or vulkan) — TOSABackend's processed bytes are a TOSA
flatbuffer, VgfBackend's a VGF container whose GRAPH segments are decoded (tosa_vk/formats/vgf_graph.py) —
the host operators the partitioner left around and between them in numpy (tosa_vk/formats/pte/host_ops.py).

Device tensors (`run(device_outputs=True)`, DeviceTensor feeds) as on a .tosa Model where a value goes straight into
or out of a Vulkan delegate: a DeviceTensor feeds an input only delegates read as it is (a host operator or a
channels-last transpose in between is an error naming it), and a delegate's outputs no host operator reads stay on
its device (passed on to the next delegate, or returned); an output a host operator writes comes back as a
DeviceTensor on the host. The delegates share the process's device (tosa_vk/vulkan/shared.py).

Inputs and outputs are the method's, in its order: a .pte keeps no argument names, so they are input_0, input_1, ...
and output_0, ... unless the loader names them (`tosa_vk.from_torch` names them after the module's forward).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import TosaError, TosaFormatError, TosaUnsupportedError
from ..formats.pte import host_ops, lower
from ..formats.pte.program import DelegateRun, Kernel, Plan, TensorListValue, TensorValue, describe
from ..ir import DType, Graph
from ..ir.dtype import tosa_name
from ..ir.flatbuffer import read_graph, write_graph
from ..program import Placement
from ..reference.feeds import coerce_array
from .model import GraphModel, Model, TensorSpec, Timing, in_flight
from .tensor import DeviceTensor

if TYPE_CHECKING:
    from ..stages.capture import Captured

TOSA_BACKENDS = ("TOSABackend",)  # delegate ids whose processed bytes are a TOSA flatbuffer
VGF_BACKENDS = ("VgfBackend",)  # ... a VGF container (ExecuTorch's Arm VGF backend: model-converter's GRAPH segments)
HOST_REASON = "ExecuTorch host operator: numpy"


def delegate_name(index: int) -> str:
    """How tools name delegate `index`: its tensors "delegate_0/<tensor>", its operators "delegate_0::CONV2D #3",
    its graph `tosa-vk extract`'s delegate_0.tosa."""
    return f"delegate_{index}"


def _host_dtype(dtype: np.dtype) -> DType:
    """A host value's TOSA dtype, for judging it (compare); one TOSA has not (float64, unsigned) is judged as FP32 /
    INT64."""
    name = tosa_name(dtype)
    return DType[name] if name in DType.__members__ else (DType.FP32 if dtype.kind == "f" else DType.INT64)


def value_spec(value: Any) -> TensorSpec:
    """A method input's / output's TensorSpec (Model.inputs, `tosa-vk info`): its shape, and its element type by
    TOSA's name, as a .tosa's (a scalar int as INT64, a bool as BOOL); a tensor list as ((n,), "tensor list"), an
    argument exported as None as ((), "None")."""
    shape, dtype = describe(value)
    return TensorSpec(shape, dtype if dtype in ("tensor list", "None") else tosa_name(dtype))


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
        host_lowering: bool = True,
    ):
        self.file, self.backend = file, backend
        self.max_in_flight = in_flight((options or {}).get("max_in_flight", 1), False, file)
        if backend == "vulkan":
            from ..vulkan.runtime import ABANDON_AFTER_S

            self.settle_s = ABANDON_AFTER_S  # then _release closes the delegates, which stops a runaway shader
        host_ops.check(plan, file)  # (the reader checked every index and that inputs and outputs are tensors)
        # host operators with a TOSA equivalent become delegates of their own (delegate index -> what it was)
        self.lowered: dict[int, lower.Lowered] = {}
        self._host_why: dict[int, str] = {}  # instruction index -> why that host operator stays on the host
        self.plan = self._lower(plan) if host_lowering else plan
        self.delegates: list[GraphModel] = []
        self._lowered_models: dict[int, GraphModel] = {}
        try:
            for index, delegate in enumerate(self.plan.delegates):
                where = f"{file or '<buffer>'} (delegate {index})"
                graph = _delegate_graph(delegate.backend, delegate.processed, where)
                self.delegates.append(model_class(graph, file=where, **(options or {})))
            for index, low in self.lowered.items():  # (not among `delegates`: the tools list the program's own)
                where = f"{file or '<buffer>'} ({low.kernel.name} lowered to TOSA)"
                self._lowered_models[index] = model_class(low.graph, file=where, **(options or {}))
        except BaseException:
            self.close()
            raise
        self._host_times: dict[int, Timing] = {}  # the last run's host operators by instruction
        self._shared = _shared_storage(self.plan, self._written())
        self._input_names = self._names(input_names, plan.inputs, "input")
        self._output_names = self._names(output_names, plan.outputs, "output")

    def _lower(self, plan: Plan) -> Plan:
        """`plan` with each host operator that has a TOSA equivalent (tosa_vk/formats/pte/lower.py) called as a
        delegate of its own, numbered after the program's (its graph is in `lowered`, not in plan.delegates)."""
        instructions: list[Any] = list(plan.instructions)
        for index, low in enumerate(lower.lower_all(plan)):
            if isinstance(low, str):
                self._host_why[index] = low
            elif isinstance(low, int):  # computed by instruction `low`'s graph
                kernel = plan.instructions[index]
                assert isinstance(kernel, Kernel)
                instructions[index] = lower.Absorbed(kernel, low)
            elif low is not None:
                number = len(plan.delegates) + len(self.lowered)
                self.lowered[number] = low
                instructions[index] = DelegateRun(number, low.inputs + low.outputs)
        return dataclasses.replace(plan, instructions=instructions)

    def _model(self, index: int) -> GraphModel:
        """Delegate `index`'s model: the program's, or a lowered host operator's."""
        return self.delegates[index] if index < len(self.delegates) else self._lowered_models[index]

    def _host_kernel(self, ins: Kernel | DelegateRun | lower.Absorbed) -> Kernel | None:
        """The host operator an instruction calls, lowered or not; None for a delegate of the program."""
        if isinstance(ins, Kernel):
            return ins
        if isinstance(ins, lower.Absorbed):
            return ins.kernel
        return self.lowered[ins.index].kernel if ins.index in self.lowered else None

    def _results(self, ins: Kernel | DelegateRun | lower.Absorbed) -> list[int]:
        """The plan values an instruction's host operator writes, lowered or not (a lowered graph writes its
        absorbed operators' outs, not _fft_r2c's complex one); none for a delegate of the program."""
        kernel = self._host_kernel(ins)
        if kernel is None:
            return []
        low = self.lowered.get(ins.index) if isinstance(ins, DelegateRun) else None
        return [i for i in host_ops.out_indices(kernel) if low is None or i in low.outputs]

    def _fits(self, low: lower.Lowered, env: list[Any]) -> bool:
        """Whether a lowered operator's inputs are in its graph's ranges (an int64 value: int32's; GATHER's
        indices: the table's rows); a device tensor checked is read back to the host."""
        for index, (lo, hi) in low.guards.items():
            value = env[index] = self._on_host(env, index)
            if value.size and (value.min() < lo or value.max() >= hi):
                return False
        return True

    def _on_host(self, env: list[Any], index: int) -> np.ndarray:
        """Value `index` as the host holds it: in logical order (a device tensor a delegate left there is in the
        memory layout, channels-last ones transposed)."""
        value = env[index]
        if not isinstance(value, DeviceTensor):
            return np.asarray(value)
        order = self._order(index)
        return value.numpy() if order is None else np.transpose(value.numpy(), np.argsort(order))

    def _names(self, names: list[str] | None, indices: tuple[int, ...], what: str) -> list[str]:
        if names is None:
            return [f"{what}_{i}" for i in range(len(indices))]
        if len(names) != len(indices) or len(set(names)) != len(names):
            raise TosaError(f"{len(indices)} distinct {what} names needed, got {names}", file=self.file)
        return list(names)

    @property
    def inputs(self) -> dict[str, TensorSpec]:
        """Each input's TensorSpec: a tensor's; an int / float / bool input (a method's scalar) as a 0-d INT64 /
        float64 / BOOL; a tensor list as ((n,), "tensor list"), given as a list of n arrays; an optional argument
        exported as None as ((), "None"), given as nothing or None."""
        return {n: value_spec(self.plan.values[i]) for n, i in zip(self._input_names, self.plan.inputs)}

    @property
    def outputs(self) -> dict[str, TensorSpec]:
        return {n: value_spec(self.plan.values[i]) for n, i in zip(self._output_names, self.plan.outputs)}

    @property
    def input_defaults(self) -> dict[str, int | float | bool | None]:
        """The int / float / bool / None inputs' values, those the program was exported with (ExecuTorch
        specialises them: its runtime takes no other); run() uses them for such an input not given."""
        return {n: self.plan.values[i] for n, i in zip(self._input_names, self.plan.inputs)
                if not isinstance(self.plan.values[i], (TensorValue, TensorListValue))}  # fmt: skip

    def _gather(self, feeds, named: dict, cast, outputs, where: str = "graph") -> dict:
        """run()'s feeds, with input_defaults for the int / float / bool / None inputs not given."""
        given = {**(feeds if isinstance(feeds, dict) else {}), **named}
        named = {**{n: v for n, v in self.input_defaults.items() if n not in given}, **named}
        return super()._gather(feeds, named, cast, outputs, where)

    def _input(self, name: str, index: int, given: Any, cast: bool, env: list[Any]) -> Any:
        """One method input, checked against the program: a tensor as every Model's, a tensor list member by
        member (stored at its members' values), an int / float / bool as ExecuTorch's set_input takes it (of the
        input's type, equal to the value the program was exported with), None for one exported as None."""
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

    def _resolve(self, feeds: dict) -> dict:
        """DeviceTensor feeds: a host-backed one as its array; a Vulkan device's only for an input every reader of
        which is a delegate taking it as it is (no host operator, no channels-last transpose): it goes to the
        delegate's model, which checks its device, shape and dtype."""
        resolved = dict(feeds)
        for name, index in zip(self._input_names, self.plan.inputs):
            value = feeds[name]
            if not isinstance(value, DeviceTensor):
                continue
            if value.released or isinstance(value.device, str):
                value.buffer_on("host", name, self.file)  # a released one: the error naming it
                resolved[name] = value.numpy()
                continue
            host = self._host_reader(index)
            if host is not None:
                raise TosaError(
                    f"input {name!r}: a device tensor only feeds an input that goes straight into a delegate; this "
                    f"one {host}: pass tensor.numpy()",
                    file=self.file,
                )
        return resolved

    def _host_reader(self, index: int) -> str | None:
        """Why a method input `index` must be on the host (a host operator reads it, or a delegate takes it
        transposed); None when only delegates read it as it is."""
        if self._order(index):
            return "is channels-last (the delegate takes it transposed on the host)"
        return self._kernel_reader(index)

    def _kernel_reader(self, index: int) -> str | None:
        """Which host operator (run in numpy) reads value `index`, if any."""
        for i, ins in enumerate(self.plan.instructions):
            if isinstance(ins, Kernel) and index in ins.args:
                return f"is read by host operator {ins.name} #{i}"
        return None

    def _run(
        self, feeds: dict[str, Any], cast: bool, keep: Collection[str] = (), kept: dict | None = None
    ) -> dict[str, np.ndarray]:
        """The plan in order; the capturable tensors named in `keep` are stored in `kept` as they are made."""
        return {name: np.asarray(value) for name, value in self._execute(feeds, cast, False, keep, kept).items()}

    def _run_device(self, feeds: dict, cast: bool, names: list[str]) -> dict[str, DeviceTensor]:
        """run(device_outputs=True): an output a Vulkan delegate writes (no host operator after it) stays on its
        device; one a host operator writes is a DeviceTensor on the host (as the reference backend's)."""
        results = self._execute(feeds, cast, True)
        return {
            n: results[n] if isinstance(results[n], DeviceTensor) else DeviceTensor(np.array(results[n], copy=True), n)
            for n in names
        }

    def _execute(
        self, feeds: dict[str, Any], cast: bool, on_device: bool, keep: Collection[str] = (), kept: dict | None = None
    ) -> dict[str, Any]:
        """The plan run in order; `on_device`: delegates whose outputs no host operator reads keep them on the
        device (tosa_vk.DeviceTensor values, fed on to the next delegate or returned)."""
        plan = self.plan
        kept = {} if kept is None else kept
        env: list[Any] = [v.data if isinstance(v, TensorValue) else v for v in plan.values]
        for name, index in zip(self._input_names, plan.inputs):
            if isinstance(feeds[name], DeviceTensor):  # (_resolve checked that only delegates read it)
                env[index] = feeds[name]
                continue
            env[index] = self._input(name, index, feeds[name], cast, env)
            self._share(index, env)
            if name in keep:
                kept[name] = env[index]
        times: dict[int, Timing] = {}
        for index, ins in enumerate(plan.instructions):
            low = self.lowered.get(ins.index) if isinstance(ins, DelegateRun) else None
            kernel = self._host_kernel(ins)
            if isinstance(ins, lower.Absorbed):  # its outs were written by instruction ins.into
                pass
            elif kernel and (not low or not self._fits(low, env)):
                start = time.perf_counter()
                if low:  # a value its graph cannot take (int64 beyond int32, an index out of range): numpy's kernel
                    for i in low.inputs:
                        env[i] = self._on_host(env, i)
                host_ops.run(kernel, env, plan, self.file)
                for out in host_ops.out_indices(kernel):
                    self._share(out, env)
                times[index] = Timing(f"{kernel.name} #{index}", "host", (time.perf_counter() - start) * 1e6)
            else:
                assert isinstance(ins, DelegateRun)
                self._delegate(ins, env, on_device, keep, kept)
            for out in self._results(ins):  # a host operator's results, lowered or not
                if self._value_name(out) in keep:
                    kept[self._value_name(out)] = env[out]
        self._host_times = times
        results = {}
        for name, index in zip(self._output_names, plan.outputs):
            if env[index] is None:
                raise TosaError(f"output {name} (value {index}) is never written by the plan", file=self.file)
            results[name] = env[index] if isinstance(env[index], DeviceTensor) else np.asarray(env[index])
        return results

    def _delegate(self, call: DelegateRun, env: list[Any], on_device: bool, keep: Collection[str], kept: dict) -> None:
        model = self._model(call.index)
        args = [a for i in call.args for a in (env[i].items if isinstance(env[i], TensorListValue) else (i,))]
        names, outs = list(model.inputs), list(model.outputs)
        if len(args) != len(names) + len(outs):
            raise TosaError(f"delegate {call.index} is called with {len(args)} values; its TOSA graph has "
                            f"{len(names)} inputs and {len(outs)} outputs", file=self.file)  # fmt: skip
        feeds = {}
        for name, i in zip(names, args):
            if isinstance(env[i], DeviceTensor):  # taken as it is: the delegate checks shape, dtype and device
                feeds[name] = env[i]
                continue
            shape = tuple(model.inputs[name][0])
            value = np.asarray(env[i])
            if value.dtype == np.int64 and call.index in self.lowered:  # INT32 in its graph (_fits checked the range)
                value = value.astype(np.int32)
            order = self._order(i)
            if order and tuple(value.shape[d] for d in order) == shape:
                value = np.transpose(value, order)  # a channels-last value: the delegate takes its memory layout
            if value.shape != shape:
                raise TosaError(f"delegate {call.index}'s input {name!r} is {list(shape)}, the plan gives value {i} "
                                f"of shape {list(value.shape)}", file=self.file)  # fmt: skip
            feeds[name] = value
        prefix = delegate_name(call.index) + "/"
        mine = [n[len(prefix) :] for n in keep if n.startswith(prefix)]
        inner = [n for n in mine if n not in feeds and n not in outs]  # the graph's own inputs / outputs: no twin
        # the outputs stay on the device where nothing on the host needs them (never in a capture run)
        stays = not inner and on_device and all(self._stays(model, n, i) for n, i in zip(outs, args[len(names) :]))
        results = model.run(feeds, capture=inner) if inner else model.run(feeds, device_outputs=stays)
        kept.update({prefix + n: feeds[n] if n in feeds else results[n] for n in mine})
        for name, i in zip(outs, args[len(names) :]):
            t = self.plan.values[i]
            value = results[name]
            if stays:
                env[i] = value
                continue
            order = self._order(i)
            if isinstance(t, TensorValue) and order and value.shape == tuple(t.sizes[d] for d in order):
                value = np.transpose(value, np.argsort(order))  # the delegate wrote the memory layout
            elif isinstance(t, TensorValue) and value.size == int(np.prod(t.sizes, dtype=np.int64)):
                value = value.reshape(t.sizes)
            if isinstance(t, TensorValue) and call.index in self.lowered:
                value = value.astype(t.dtype, copy=False)  # a lowered int64 result: the graph's INT32, widened
            env[i] = value
            self._share(i, env)

    def _written(self) -> set[int]:
        """The values the plan writes: its inputs (a tensor list's members too), host operators' outs and returned
        values, delegates' outputs; the others are constants, or views the memory planner aliased (_shared_storage)."""
        written = set(self.plan.inputs)
        for index in self.plan.inputs:
            value = self.plan.values[index]
            if isinstance(value, TensorListValue):
                written.update(i for i in value.items if i is not None)
        for ins in self.plan.instructions:
            if isinstance(ins, Kernel):
                written.update(host_ops.out_indices(ins), ins.args[host_ops.HOST_OPS[ins.name].inputs :])
                continue
            if isinstance(ins, lower.Absorbed):  # (its outs: among its lowered graph's outputs)
                continue
            args = [a for i in ins.args for a in (self.plan.values[i].items
                    if isinstance(self.plan.values[i], TensorListValue) else (i,))]  # fmt: skip
            written.update(args[len(self._model(ins.index).inputs) :])
        return written

    def _share(self, index: int, env: list[Any]) -> None:
        """After value `index` is written: the views ExecuTorch's memory planner put in its buffer (values no
        instruction writes: select_scatter's unsqueezed arange) see its bytes, as in ExecuTorch's runtime, which
        gives them one buffer."""
        for other in self._shared.get(index, ()):
            value = env[index].numpy() if isinstance(env[index], DeviceTensor) else env[index]
            env[other] = _reinterpret(np.asarray(value), self.plan.values[index], self.plan.values[other])

    def _stays(self, model: Model, name: str, index: int) -> bool:
        """Whether a delegate's output `name` (value `index`) may stay on the device: the plan's value as the
        delegate writes it (no reshape; a channels-last one in its memory layout, which every delegate, the
        lowered host operators' too, reads), read by no host operator; a channels-last method output goes to the
        host (returned in logical order)."""
        t = self.plan.values[index]
        if not isinstance(t, TensorValue):
            return False
        order = self._order(index)
        if order is not None and index in self.plan.outputs:
            return False
        return (
            tuple(model.outputs[name][0]) == tuple(t.sizes if order is None else (t.sizes[d] for d in order))
            and model.outputs[name][1] == tosa_name(t.dtype)
            and self._kernel_reader(index) is None
            and index not in self._shared  # (a value sharing its buffer is read as bytes on the host)
        )

    def _value_name(self, index: int) -> str:
        """A plan value's tensor name: the method's output name, else "value_<index>" (a .pte names no values)."""
        if index in self.plan.outputs:
            return self._output_names[self.plan.outputs.index(index)]
        return f"value_{index}"

    @property
    def capturable(self) -> list[Captured]:
        """The method's inputs, then in plan order each host operator's result (named by _value_name, produced by
        "aten::add.out #5": the instruction's index) and each delegate's capturable tensors ("delegate_0/<tensor>",
        produced by "delegate_0::CONV2D #3" / "delegate_0::input")."""
        from ..stages.capture import Captured

        plan = self.plan
        rows = []
        for name, index in zip(self._input_names, plan.inputs):
            t = plan.values[index]
            if isinstance(t, TensorValue):  # (an int / float / bool or list input is not a tensor to capture)
                rows.append(Captured(name, "input", _host_dtype(t.dtype), t.sizes))
        called = set()
        for index, ins in enumerate(plan.instructions):
            kernel = self._host_kernel(ins)
            if kernel:  # a host operator's results, lowered or not, by their plan values
                for out in self._results(ins):
                    t = plan.values[out]
                    rows.append(
                        Captured(self._value_name(out), f"{kernel.name} #{index}", _host_dtype(t.dtype), t.sizes)
                    )
            elif (
                isinstance(ins, DelegateRun) and ins.index not in called
            ):  # (a delegate called again: its tensors are the last call's)
                called.add(ins.index)
                prefix = delegate_name(ins.index)
                for c in self.delegates[ins.index].capturable:
                    rows.append(c._replace(name=f"{prefix}/{c.name}", producer=f"{prefix}::{c.producer}"))
        return rows

    def _captures(self, capture) -> list[str]:
        from ..stages.capture import select

        return select([c.name for c in self.capturable], capture, self.file)

    def _capture_run(self, names: list[str], feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        kept: dict[str, np.ndarray] = {}
        results = self._run(feeds, cast, set(names), kept)
        return {**results, **{n: np.asarray(v) for n, v in kept.items()}}

    def delegate_tosa(self, index: int) -> bytes:
        """Delegate `index` as a .tosa file's bytes: a TOSABackend delegate's flatbuffer as the program stores it,
        a VgfBackend delegate's graph (its GRAPH segments decoded) serialized."""
        delegate = self.plan.delegates[index]
        if delegate.backend in TOSA_BACKENDS:
            return delegate.processed
        return write_graph(self.delegates[index].graph)

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
        output is exact to within one), 0.0 for an output no dequantize writes. A dequantize lowered to TOSA counts:
        its host operator is the writer."""
        steps = {}
        kernels = [k for k in map(self._host_kernel, self.plan.instructions) if k is not None]
        for name, index in zip(self._output_names, self.plan.outputs):
            writers = [k for k in kernels if index in k.args]
            last = writers[-1] if writers else None
            scale = self.plan.values[last.args[1]] if last and "dequantize_per_tensor" in last.op else None
            steps[name] = float(scale) if isinstance(scale, (int, float)) else 0.0
        return steps

    def _timings(self) -> list[Timing]:
        """The last run's host operators (wall clock) and each delegate's own profile (the vulkan backend's
        kernels need load(..., timestamps=True)), in plan order; delegate rows are labelled "delegate_N::..."."""
        rows: list[Timing] = []
        for index, ins in enumerate(self.plan.instructions):
            if index in self._host_times or isinstance(ins, (Kernel, lower.Absorbed)):
                rows.extend(t for t in [self._host_times.get(index)] if t is not None)
            else:
                low = self.lowered.get(ins.index)
                profile = self._model(ins.index).profile()
                if low:  # a lowered host operator: named as the host operator, its TOSA operators in brackets
                    rows += [t._replace(op=f"{low.kernel.name} #{index} [TOSA {t.op}]") for t in profile]
                else:
                    rows += [t._replace(op=f"{delegate_name(ins.index)}::{t.op}") for t in profile]
        return rows

    @property
    def placement(self) -> list[Placement]:
        """The plan in order: each host operator on the host (with why it has no TOSA form) or, lowered, where its
        graph runs ("lowered to TOSA GATHER"), each delegate's operators where its backend puts them (labelled
        "delegate_N::OP #i ...")."""
        rows = []
        for index, ins in enumerate(self.plan.instructions):
            if isinstance(ins, Kernel):
                why = self._host_why.get(index)
                rows.append(Placement(f"{ins.name} #{index}", "host", HOST_REASON + (f" ({why})" if why else "")))
            elif isinstance(ins, lower.Absorbed):
                into = self.plan.instructions[ins.into]
                assert isinstance(into, DelegateRun)
                where = self._lowered_where(into.index)
                reason = f"host operator lowered to TOSA with #{ins.into}"
                rows.append(Placement(f"{ins.kernel.name} #{index}", where, reason))
            elif ins.index in self.lowered:
                low = self.lowered[ins.index]
                reason = f"host operator lowered to TOSA {low.ops}"
                rows.append(Placement(f"{low.kernel.name} #{index}", self._lowered_where(ins.index), reason))
            else:
                for p in self.delegates[ins.index].placement:
                    rows.append(Placement(f"{delegate_name(ins.index)}::{p.op}", p.where, p.reason))
        return rows

    def _lowered_where(self, number: int) -> str:
        """Where lowered graph `number` runs (its first operator that is no constant or alias)."""
        wheres = [p.where for p in self._model(number).placement if p.where not in ("constant", "alias")]
        return wheres[0] if wheres else self.backend

    @property
    def transferred(self) -> dict[str, int]:
        """Bytes that crossed between host and device memory in the delegates' last runs."""
        total = {"to_device": 0, "from_device": 0}
        for model in [*self.delegates, *self._lowered_models.values()]:
            for key, count in model.transferred.items():
                total[key] = total.get(key, 0) + count
        return total

    def _release(self) -> None:
        for model in [*self.delegates, *getattr(self, "_lowered_models", {}).values()]:
            model.close()


def _shared_storage(plan: Plan, written: set[int]) -> dict[int, tuple[int, ...]]:
    """Value -> the views it shares its bytes with: values no instruction writes (not in `written`) that ExecuTorch's
    memory planner put at the same memory id, offset and size (allocation_info). Written values that share a
    buffer reuse it one after another (disjoint lifetimes) and are left alone."""
    groups: dict[tuple[int, int, int], list[int]] = {}
    for index, value in enumerate(plan.values):
        if isinstance(value, TensorValue) and value.storage is not None and value.data is None and value.nbytes:
            groups.setdefault((*value.storage, value.nbytes), []).append(index)
    shared = {}
    for group in groups.values():
        views = tuple(i for i in group if i not in written)
        for i in group:
            if i in written and views:
                shared[i] = views
    return shared


def _reinterpret(value: np.ndarray, source: TensorValue, target: TensorValue) -> np.ndarray:
    """`value` (of tensor `source`, in logical order) as tensor `target` of the same bytes reads it: both in their
    memory order (dim_order), the bytes reinterpreted where the dtypes differ."""
    memory = np.ascontiguousarray(np.transpose(value.astype(source.dtype, copy=False), source.dim_order))
    flat = memory.reshape(-1) if source.dtype == target.dtype else memory.reshape(-1).view(target.dtype)
    physical = flat.reshape([target.sizes[d] for d in target.dim_order])
    return np.transpose(physical, np.argsort(target.dim_order))


def _what(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


def _scalar(name: str, given: Any, traced: int | float | bool | None, file: str | None) -> int | float | bool | None:
    """An int / float / bool method input: of the program's type (a bool for a bool, an integer for an int, a real
    number for a float; a 0-d array too), and the value the program was exported with, as ExecuTorch's set_input
    checks (the export specialised the graph to it: any other would run the traced value regardless). An optional
    argument exported as None takes only None (the plan reads None there)."""
    if traced is None:
        if given is not None:
            raise TosaError(f"input {name!r} is an optional argument the program was exported with as None (the plan "
                            f"reads None there); got {_what(given)}: pass None or leave it out, or export the module "
                            "again with the value you want", file=file)  # fmt: skip
        return None
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

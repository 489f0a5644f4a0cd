"""The Model interface every backend implements (`tosa_vk.load(...) -> Model`, `Model.run(feeds) -> dict`), and
GraphModel, the part shared by the backends that run a TOSA graph (reference, vulkan): its signature and the capture
twins of `run(capture=...)`. tosa_vk/session.py's `load` picks the backend class.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import TosaError
from ..ir import Graph, Tensor
from ..ir.dtype import DType
from ..reference.quantization import QParams, dequantize, quantize
from .tensor import DeviceTensor

if TYPE_CHECKING:
    from ..stages.capture import Captured

KEPT_TWINS = 2  # capture twins a model keeps loaded (tosa_vk/stages/capture.py), by capture set


class TensorSpec(NamedTuple):
    """A model input's or output's signature (Model.inputs / outputs): its shape, and `dtype`, its element type's
    TOSA name (FP32, INT8, ...) whatever the file format (.tosa, .pte, .vgf; numpy's name where TOSA has no such
    type, float64); `np_dtype`, the numpy dtype its arrays have. Unpacks as (shape, dtype)."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def np_dtype(self) -> np.dtype:
        try:
            return DType.of(self.dtype).numpy
        except ValueError:  # numpy's own name (float64, uint8)
            return np.dtype(self.dtype)


class Timing(NamedTuple):
    """One operator's (or kernel's) time in the last run, in microseconds: `op` names every TOSA operator a kernel
    covers ("CONV2D #58 'x' + RESCALE #63 'y'" for a fused kernel), `where` is "device" (GPU timestamp queries)
    or "host" (wall clock of a host step or a reference operator)."""

    op: str
    where: str
    microseconds: float


class Model:
    """A loaded graph bound to a backend. Variables (EXT-VARIABLE) persist across run() calls of one Model.

    Subclasses implement run / inputs / outputs / close, and the state and profiling methods they support."""

    backend = ""
    file: str | None = None
    source_kind = "graph"  # how errors name what the model runs ("graph", "VGF")
    # float data in and out of integer inputs / outputs, by name (load(input_qparams=, output_qparams=), `quantize_io`)
    input_qparams: Mapping[str, QParams] = {}
    output_qparams: Mapping[str, QParams] = {}
    max_in_flight = 1  # runs submit() keeps going at once (load(..., max_in_flight=N))
    _executor: ThreadPoolExecutor | None = None
    _closed = False
    _active = 0  # runs in progress (run() and submitted ones): close() lets them finish
    # how long close() waits for them: None, until they end (a host run always does: max_iterations, timeout_s)
    settle_s: float | None = None
    _runs = 0  # runs of this model's own program so far (profile() warns of a first, cold one)

    def run(
        self,
        feeds: dict[str, np.ndarray] | None = None,
        /,
        *,
        cast: bool = False,
        outputs: Sequence[str] | None = None,
        capture: str | Sequence[str] | None = None,
        device_outputs: bool = False,
        **named: np.ndarray,
    ) -> dict[str, Any]:
        """Runs the graph: inputs by name (a dict, keywords, or both) -> outputs by name.

        Every input must be given, in its declared shape and a dtype numpy's `same_kind` rule converts to the
        input's storage dtype (see `inputs`): float64 for an FP32 input, int32 values in range for INT8; a float
        array for an INT8 input is an error unless `cast=True` (numpy's astype, as `np.asarray(x, dtype)` does), and so
        is a value a float input's type would change beyond rounding (1e300 or 2**24 + 1 into FP32).
        `outputs`: the names of the outputs to return (default all). `capture`: intermediate tensors to return
        too, after the outputs — "all" or a list of tensor names (tosa_vk/stages/capture.py: the run is then a twin
        program that keeps them stored). An input named "cast", "outputs", "capture" or "device_outputs" goes in the
        dict. Inputs / outputs with quantization parameters (`quantize_io`) take / return float data.

        `device_outputs=True`: the outputs as tosa_vk.DeviceTensor values kept on the device (each in memory of its
        own: a later run does not overwrite it), to feed another model on the same device with no host copy; a feed
        may be such a DeviceTensor (tosa_vk/backends/tensor.py says which). They are the graph's own values: not
        with output quantization parameters."""
        with _STATE:
            if self._closed:
                raise self.closed_error()
            self._active += 1
        try:
            return self._checked_run(feeds, named, cast, outputs, capture, device_outputs)
        finally:
            with _STATE:
                self._active -= 1
                if self._closed:
                    _STATE.notify_all()

    def _checked_run(self, feeds, named: dict, cast, outputs, capture, device_outputs) -> dict[str, Any]:
        """run() once the model is known open."""
        checked = self._resolve(self._gather(feeds, named, cast, outputs, self.source_kind))
        if capture is None or capture is False:  # a capture runs a twin program: profile() is not its
            self._runs += 1
        checked = self._quantized(checked, bool(cast))
        if not isinstance(device_outputs, (bool, np.bool_)):
            raise TosaError(
                f"run(device_outputs=...) takes True or False, got {type(device_outputs).__name__}; an input named "
                "'device_outputs' is given in the feeds dict",
                file=self.file,
            )
        if device_outputs:
            if capture is not None and capture is not False:
                raise TosaError("run(capture=...) returns host arrays: not with device_outputs=True", file=self.file)
            if self.output_qparams:
                raise TosaError(
                    "run(device_outputs=True) returns the graph's own values; this model dequantizes outputs "
                    f"{sorted(self.output_qparams)} (output_qparams), which only host results can be",
                    file=self.file,
                )
            names = list(self.outputs) if outputs is None else self._wanted(outputs, self.source_kind)
            return self._run_device(checked, bool(cast), names)
        if capture is None or capture is False:
            return self._dequantized(self._pick(self._run(checked, bool(cast)), outputs))
        names = self._captures(capture)
        results = self._capture_run(names, checked, bool(cast))
        picked = self._dequantized(self._pick({n: results[n] for n in self.outputs}, outputs))
        return {**picked, **{n: results[n] for n in names if n not in picked}}

    def quantize_io(
        self,
        inputs: Mapping[str, QParams | tuple[float, int]] | None = None,
        outputs: Mapping[str, QParams | tuple[float, int]] | None = None,
    ) -> None:
        """Float data in and out of an integer graph: float data for an input named in `inputs` is quantized with
        its parameters before each run (tosa_vk.reference.quantization.quantize: round half to even, saturating; integer
        data is taken as quantized already, e.g. a desc.json's int8 inputs), and each output named in `outputs` is
        dequantized after it (float32). Parameters are QParams (per tensor or per channel) or (scale, zero_point)
        pairs; their dtype is the tensor's (INT8, INT16, INT32).
        load(..., input_qparams=, output_qparams=) calls this; so does `tosa-vk run --input-qparams /
        --output-qparams`."""
        self.input_qparams = _checked_qparams(inputs or {}, self.inputs, "input", self.file)
        self.output_qparams = _checked_qparams(outputs or {}, self.outputs, "output", self.file)

    def _quantized(self, feeds: dict[str, Any], cast: bool) -> dict[str, Any]:
        """The feeds with the quantized inputs' float data quantized; with cast, a warning for float data cast
        (truncated) into another integer input."""
        if not self.input_qparams and not cast:
            return feeds
        for name, (_, dtype) in self.inputs.items():
            if isinstance(feeds[name], DeviceTensor):  # on a device: the graph's own values
                continue
            try:
                floats = np.asarray(feeds[name]).dtype.kind == "f"
            except (ValueError, TypeError):  # ragged or odd data: the backend's input check names it
                continue
            if name in self.input_qparams and floats:
                feeds = {**feeds, name: quantize(feeds[name], self.input_qparams[name])}
            elif cast and floats and dtype.startswith("INT") and name not in self.input_qparams:
                warnings.warn(
                    f"cast=True converts the float data of {dtype} input {name!r} by truncation (numpy astype: 0.9 "
                    "-> 0), it does not quantize it: give the input's scale and zero point instead "
                    f"(tosa_vk.load(..., input_qparams={{{name!r}: (scale, zero_point)}}), "
                    f"tosa-vk run --input-qparams {name}=SCALE,ZP)",
                    UserWarning,
                    stacklevel=3,
                )
        return feeds

    def _dequantized(self, results: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        quantized = self.output_qparams
        return {n: dequantize(v, quantized[n]) if n in quantized else v for n, v in results.items()}

    def _captures(self, capture) -> list[str]:
        """run(capture=...) as tensor names in execution order."""
        raise TosaError(f"run(capture=...) needs a TOSA graph; this {self.source_kind} has none", file=self.file)

    @property
    def capturable(self) -> list[Captured]:
        """The tensors run(capture="all") returns, in execution order, each a stages.capture.Captured (name,
        producer, dtype, shape): what `tosa-vk compare` and --dump-intermediates go through."""
        raise TosaError(f"run(capture=...) needs a TOSA graph; this {self.source_kind} has none", file=self.file)

    def _capture_run(self, names: list[str], feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        """A run that returns the outputs and the tensors `names` (GraphModel: a twin model)."""
        raise NotImplementedError

    def _run(self, feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        """The backend's run: every input given by name (not yet converted) -> every output."""
        raise NotImplementedError

    def _resolve(self, feeds: dict) -> dict:
        """DeviceTensor feeds as this backend takes them: here (a host backend) their arrays, for tensors on the
        host; a tensor on a Vulkan device is a TosaError (VulkanModel takes its own device's)."""
        resolved = dict(feeds)
        for name, value in feeds.items():
            if isinstance(value, DeviceTensor):
                value.buffer_on("host", name, self.file)
                resolved[name] = value.numpy()
        return resolved

    def _run_device(self, feeds: dict, cast: bool, names: list[str]) -> dict[str, DeviceTensor]:
        """run(device_outputs=True): here the host arrays as DeviceTensors on the host."""
        results = self._run(feeds, cast)
        return {n: DeviceTensor(np.array(results[n], copy=True), n) for n in names}  # never a view a run reuses

    def submit(self, feeds: dict[str, Any] | None = None, /, **options: Any) -> Future:
        """run(feeds, **options) started without waiting: a concurrent.futures.Future of its outputs (or of its
        error). Up to `max_in_flight` runs go at once (load(..., max_in_flight=N); on the Vulkan backend each in
        a runtime slot of its own: arena, command buffers, queue submission; the compiled pipelines shared); more
        wait their turn in submission order. close() cancels the runs not started yet (their futures say
        cancelled) and lets those running finish (see close)."""
        with _STATE:
            if self._closed:
                raise self.closed_error()
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.max_in_flight, thread_name_prefix="tosa_vk-run")
            return self._executor.submit(self.run, feeds, **options)

    def closed_error(self) -> TosaError:
        """What a run or submit() of a closed model raises: it names the model (its file, else the model)."""
        return TosaError("the model is closed" + ("" if self.file else f": {self!r}"), file=self.file)

    def close(self) -> None:
        """Frees the model's resources now (idempotent). One contract for every kind of Model: run() and submit()
        after it are a TosaError naming the model; submitted runs not started yet are cancelled (their futures say
        cancelled); runs in progress finish first (on a Vulkan device a run gets ABANDON_AFTER_S, then close()
        stops it: tosa_vk/backends/on_device.py). Subclasses free what they hold in `_release`, not here."""
        self._drain()
        self._settle()
        self._release()

    def _drain(self) -> None:
        """close()'s first step: no more run() or submit(); runs submitted and not started are cancelled."""
        with _STATE:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _settle(self) -> None:
        """close()'s second step: the runs in progress end (`settle_s` at most) before `_release` frees what they
        use."""
        with _STATE:
            _STATE.wait_for(lambda: self._active == 0, timeout=self.settle_s)

    def _release(self) -> None:
        """close()'s last step, once no run uses the model: its resources freed (idempotent)."""

    def _gather(self, feeds, named: dict, cast, outputs, where: str = "graph") -> dict:
        """run()'s feeds (the dict and the keywords) checked against `inputs`, and its keywords checked."""
        if not isinstance(cast, (bool, np.bool_)):
            raise TosaError(
                f"run(cast=...) takes True or False, got {type(cast).__name__}; an input named 'cast' is given in "
                "the feeds dict: run({'cast': value})",
                file=self.file,
            )
        if outputs is not None:
            self._wanted(outputs, where)
        if feeds is not None and not isinstance(feeds, Mapping):
            raise TosaError(f"run() takes the feeds as a dict of input name -> array, got {type(feeds).__name__}")
        twice = sorted(set(feeds or {}) & set(named))
        if twice:
            raise TosaError(f"input(s) {twice} given both in the feeds dict and as keywords", file=self.file)
        feeds = {**(feeds or {}), **named}
        expected = list(self.inputs)
        missing = [n for n in expected if n not in feeds]
        unknown = sorted(set(feeds) - set(expected))
        if missing or unknown:
            problems = [f"missing {where} input(s) {missing}"] if missing else []
            problems += [f"unknown {where} input(s) {unknown}"] if unknown else []
            raise TosaError(f"{'; '.join(problems)}; the {where} takes {expected}", file=self.file)
        return feeds

    def _wanted(self, outputs, where: str = "graph") -> list[str]:
        """run(outputs=...) as a list of output names, each checked."""
        names = [outputs] if isinstance(outputs, str) else outputs
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise TosaError(
                f"run(outputs=...) takes a list of output names, got {type(outputs).__name__}; an input named "
                "'outputs' is given in the feeds dict: run({'outputs': value})",
                file=self.file,
            )
        known = list(self.outputs)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise TosaError(f"no {where} output(s) {unknown}; the {where} outputs are {known}", file=self.file)
        return list(names)

    def _pick(self, results: dict[str, np.ndarray], outputs) -> dict[str, np.ndarray]:
        """The outputs run() returns: all, or those `outputs` names, in that order."""
        return results if outputs is None else {n: results[n] for n in self._wanted(outputs, self.source_kind)}

    @property
    def inputs(self) -> dict[str, TensorSpec]:
        """Input name -> TensorSpec: (shape, TOSA dtype name), and .np_dtype."""
        raise NotImplementedError

    @property
    def outputs(self) -> dict[str, TensorSpec]:
        """Output name -> TensorSpec: (shape, TOSA dtype name), and .np_dtype."""
        raise NotImplementedError

    @property
    def variables(self) -> dict[str, np.ndarray]:
        """Current values of the session's variables by uid (copies; declared on the first run)."""
        return {}

    def set_variable(self, uid: str, value: np.ndarray) -> None:
        """Sets variable `uid` (EXT-VARIABLE) to `value` for the next run; a TosaError for a model without it."""
        raise TosaError(f"no variable '{uid}': this model has no variables")

    def reset_variables(self) -> None:
        """Forgets all state: the next run declares the variables again with their initial values."""

    def profile(self, feeds: dict[str, Any] | None = None, /, *, warmup: int = 1, cast: bool = False) -> list[Timing]:
        """Per-kernel (Vulkan) or per-operator (reference) times of a run as Timing records, in execution order;
        the unit is microseconds (`Timing.microseconds`). The Vulkan backend times kernels with GPU timestamp
        queries: load with timestamps=True, else this is a TosaError (never an empty list).

        With `feeds`: `warmup` untimed runs (default 1: a model's first run compiles each pipeline at its first
        dispatch: a mobilenetv2 kernel of 0.8 ms read 1.8 s on lavapipe without its shader cache), then one run whose
        times are returned.
        Without: the last run's times — a RuntimeWarning says so when that run was a Vulkan model's first."""
        if feeds is not None:
            if not isinstance(warmup, int) or warmup < 0:
                raise TosaError(f"profile(warmup=...) takes 0 or more runs, got {warmup!r}", file=self.file)
            for _ in range(warmup + 1):
                self.run(feeds, cast=cast)
        timings = self._timings()  # first: a model that cannot profile says that rather than warn
        if feeds is None and self._runs == 1 and self.backend == "vulkan":
            warnings.warn(
                "profile(): the last run was this model's first, so its kernel times include pipeline compilation; "
                "profile(feeds) times a run after a warm-up",
                RuntimeWarning,
                stacklevel=2,
            )
        return timings

    def _timings(self) -> list[Timing]:
        """The last run's Timing records (profile() without feeds)."""
        raise TosaError(f"the {self.backend or type(self).__name__} backend has no profile()", file=self.file)

    @property
    def transferred(self) -> dict[str, int]:
        """Bytes that crossed between host and device memory in the last run ({"to_device", "from_device"})."""
        return {}

    @property
    def placement(self) -> list:
        """Where each operator runs, and why (tosa_vk.program.Placement records; the reference backend: every operator
        on the host)."""
        return []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.file or 'graph'!s}, backend={self.backend!r})"


# a graph tensor's element type -> the dtype of its QParams (graph inputs / outputs are not INT4 in practice)
QUANTIZED_TYPES = {"INT8": "int8", "INT16": "int16", "INT32": "int32"}


def _checked_qparams(
    given: Mapping[str, QParams | tuple[float, int]],
    signature: Mapping[str, tuple[tuple[int, ...], str]],
    which: str,
    file: str | None,
) -> dict[str, QParams]:
    """quantize_io's parameters, each checked: a tensor of the signature, an integer type, the QParams' dtype."""
    if not isinstance(given, Mapping):
        raise TosaError(f"{which} quantization parameters are a dict of {which} name -> QParams", file=file)
    checked = {}
    for name, qparams in given.items():
        if name not in signature:
            raise TosaError(f"no {which} {name!r} to quantize; the {which}s are {list(signature)}", file=file)
        dtype = signature[name][1]
        if dtype not in QUANTIZED_TYPES:
            raise TosaError(
                f"{which} {name!r} is {dtype}: quantization parameters apply to integer tensors "
                f"({', '.join(QUANTIZED_TYPES)})",
                file=file,
            )
        storage = QUANTIZED_TYPES[dtype]
        if isinstance(qparams, tuple) and len(qparams) == 2:
            qparams = QParams(float(qparams[0]), int(qparams[1]), storage)
        if not isinstance(qparams, QParams):
            raise TosaError(
                f"{which} {name!r}: quantization parameters are a QParams or a (scale, zero_point) pair, "
                f"got {qparams!r}",
                file=file,
            )
        if np.dtype(qparams.dtype) != np.dtype(storage):
            raise TosaError(f"{which} {name!r} is {dtype}, its QParams say {qparams.dtype}", file=file)
        scale = np.asarray(qparams.scale, np.float64)
        if scale.size == 0 or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise TosaError(f"{which} {name!r}: scale must be positive and finite, got {qparams.scale}", file=file)
        checked[name] = qparams
    return checked


class GraphModel(Model):
    """A Model of a TOSA graph (`graph`): its signature is the graph's. A subclass with `parses_lazily` is given
    the file alone (session.load) and the graph is parsed on first use."""

    parses_lazily = False
    _graph: Graph | None = None
    _data: bytes | None = None  # the file's bytes, where the model read them already

    @property
    def graph(self) -> Graph:
        if self._graph is None:
            if self.file is None:
                raise TosaError("the model has neither a graph nor a file")
            from ..ir.flatbuffer import load_graph, read_graph  # (a program-cache hit never parses the graph)

            self._graph = read_graph(self._data, file=self.file) if self._data else load_graph(self.file)
            self._data = None
        return self._graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        self._graph = graph

    @property
    def inputs(self) -> dict[str, TensorSpec]:
        return _arrays(self.graph.inputs)

    # the options load() gave this model: its capture twins are loaded with the same
    _options: dict[str, Any] = {}
    _twins: dict[tuple[str, ...], Model] | None = None

    def _captures(self, capture) -> list[str]:
        from ..stages.capture import resolve

        return resolve(self.graph, capture, self.file)

    @property
    def capturable(self) -> list[Captured]:
        from ..stages.capture import listing

        return listing(self.graph)

    def _capture_run(self, names: list[str], feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        from ..stages.capture import with_outputs

        with getattr(self, "lock", None) or nullcontext():  # one run at a time, the twin's included
            self._twins = self._twins if self._twins is not None else {}
            twin = self._twins.pop(tuple(names), None)
            if twin is None:
                if len(self._twins) >= KEPT_TWINS:  # each holds its own device memory: the oldest goes
                    self._twins.pop(next(iter(self._twins))).close()
                twin = self._twin(with_outputs(self.graph, names))
            self._twins[tuple(names)] = twin  # the most recent last
            self._lend_state(twin)
            try:
                return twin._run(feeds, cast)
            finally:
                self._take_state(twin)

    def _twin(self, graph: Graph) -> Model:
        """This model's backend and options on `graph`."""
        return type(self)(graph, file=self.file, **self._options)  # type: ignore[call-arg]  # subclasses take these

    def _lend_state(self, twin: Model) -> None:
        """Before a twin's run: it sees this model's variables."""

    def _take_state(self, twin: Model) -> None:
        """After a twin's run: this model's variables are what the twin left."""

    def _release(self) -> None:
        for twin in (self._twins or {}).values():
            twin.close()
        self._twins = None

    @property
    def outputs(self) -> dict[str, TensorSpec]:
        return _arrays(self.graph.outputs)


# every model's open / closed state, executor and count of runs in progress: an executor made once and none after
# close(), no run started after it, close() woken as the last run in progress ends
_STATE = threading.Condition()


# load(..., max_in_flight=N)'s largest N. The Vulkan backend builds every slot at load (an arena and recorded command
# buffers each), so an out-of-memory is an error of the load, never of a later run, and no run pays for a slot's
# first use; 10**9 made the load never return. A device runs a few submissions at once: 64 is far past any gain.
MAX_IN_FLIGHT = 64


def in_flight(value: Any, stateful: bool, file: str | None = None) -> int:
    """load(..., max_in_flight=N) checked: an int from 1 to MAX_IN_FLIGHT; a model with variables runs one run at a
    time (its runs depend on each other's state), so N > 1 is refused for it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_IN_FLIGHT:
        raise TosaError(
            f"max_in_flight={value!r}: take an integer from 1 to {MAX_IN_FLIGHT} (runs submit() keeps going at "
            "once; each is a runtime slot built at load)",
            file=file,
        )
    if value > 1 and stateful:
        raise TosaError(
            f"max_in_flight={value}: this model has variables (its runs read and write state in order), so it "
            "runs one run at a time: load it with max_in_flight=1",
            file=file,
        )
    return int(value)


def stateful(graph: Graph) -> bool:
    """Whether the graph declares variables (EXT-VARIABLE)."""
    return any(op.op == "VARIABLE" for region in graph.regions for op in region.blocks[0].operators)


def _arrays(tensors: list[Tensor]) -> dict[str, TensorSpec]:
    """Name -> TensorSpec of a graph's input or output arrays: a block-scaled tensor (TOSA 1.1) is two, its
    elements and its scales (`Tensor.scale_name`)."""
    arrays = {}
    for t in tensors:
        arrays[t.name] = TensorSpec(t.shape, t.dtype.name)
        if t.scale_dtype is not None:
            arrays[t.scale_name] = TensorSpec(t.scale_shape, t.scale_dtype.name)
    return arrays

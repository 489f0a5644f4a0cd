"""The Vulkan backend: compiles a graph for the device (tosa_vk.compile) and runs the Program with
tosa_vk.vulkan.Runtime (the device and runtime it owns: tosa_vk/backends/on_device.py).

Variables and control flow stay on the device (tosa_vk/stages/lower/variable.py, control_flow.py). Operators the
partition places on the host run as host kernels (tosa_vk/reference/host_kernels.py) on numpy views of the same device
memory (no copies where the memory is host-visible); `strict=True` refuses them instead.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from .. import device_class
from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Graph, Tensor
from ..ir.variables import new_value
from ..program import Placement, Program
from ..reference import host_kernels
from ..reference.feeds import coerce_input
from ..stages import fuse_enabled
from ..store.program_cache import Entry, ProgramCache
from ..timeout import checked_timeout
from ..vulkan import Device, shared
from ..vulkan.builtin import shipped_only
from ..vulkan.runtime import DEFAULT_TIMEOUT_S, Runtime
from ..vulkan.shaders import ShaderCache
from ..vulkan.threads import inline
from ..vulkan.variant import program_variants
from ..vulkan.warmup import warm_up
from .model import GraphModel, Model, TensorSpec, in_flight
from .on_device import OnDevice
from .tensor import DeviceTensor
from .tensor import checked as checked_tensor


def _text(path: str | Path) -> str:
    """A partition file's text, for the program-cache key (its rules checked: an error before the cache is asked)."""
    from ..stages import host_rules

    host_rules.read_file(path)
    return Path(path).read_text()


def _rules(host_ops: str | Collection[str]) -> list[str]:
    """The host_ops option's rules, for the program-cache key, in order (the first rule that matches an operator
    names its placement); malformed ones refused here. None given (the default): the rules module not imported."""
    if isinstance(host_ops, (tuple, list)) and not host_ops:
        return []
    from ..stages import host_rules

    return [r.text for r in host_rules.collect(host_ops)]


def _registered_custom_ops(model: VulkanModel) -> bool:
    """Whether the model's graph has a CUSTOM operator of a registered custom op. Registering one imports
    tosa_vk.custom, and so do the plugins TOSA_VK_CUSTOM_OPS names (custom.load_plugins, on the first lookup): with
    neither, none is registered, and neither the registry (~5 ms of classes) nor the graph is loaded to say so."""
    if "tosa_vk.custom" not in sys.modules and not os.environ.get("TOSA_VK_CUSTOM_OPS"):
        return False
    from .. import custom

    return custom.registered() and any(
        op.op == "CUSTOM" and custom.lookup(op.attrs.get("domain_name") or "", op.attrs.get("operator_name") or "")
        for region in model.graph.regions
        for op in region.blocks[0].operators
    )


class VulkanModel(OnDevice, GraphModel):
    """A graph compiled for a Vulkan device (tosa_vk.compile) and run by tosa_vk.vulkan.Runtime.

    Options: device (an index or a name: the process's shared Device of that GPU, as with none,
    tosa_vk/vulkan/shared.py; or a Device you opened, which stays yours), strict (no host steps), timestamps (GPU
    times for profile()),
    max_iterations (WHILE_LOOP cap), host_ops (rules for operators to run on the host: operator names, output tensor
    names or NNAdapter rules "OP:in,...:out,...", tosa_vk/stages/host_rules.py), partition (a file of such rules, one
    per line), layouts (tensors the graph holds as NCHW, for custom ops with an NHWC shader), timeout_s (the longest a
    run may take on the device before it fails; None: none), fuse (False: one kernel per operator; default on unless
    TOSA_VK_FUSE=0), cache_dir (the program cache, tosa_vk/store/program_cache.py: a folder, default
    $TOSA_VK_CACHE/programs; False: none), validation (the Khronos validation layer, OnDevice.attach: True, "warn",
    False; default TOSA_VK_VALIDATION), max_in_flight (runs submit() keeps going at once, 1 to MAX_IN_FLIGHT = 64,
    each in a runtime slot of its own built at load: an arena per slot, the pipelines compiled once; 1 for a model
    with variables), target (a device
    class of tosa_vk/device_class.py to compile for instead of the device's own, e.g. "nvidia"; default
    TOSA_VK_TARGET: kernels the device lacks features for are not chosen)."""

    backend = "vulkan"

    # session.load gives the file alone: it is parsed only if the graph is needed (a program-cache hit runs the
    # cached Program without it)
    parses_lazily = True

    def __init__(
        self,
        source: Graph | None,
        *,
        file: str | None = None,
        device: Device | str | int | None = None,
        strict: bool = False,
        timestamps: bool = False,
        max_iterations: int = 1_000_000,
        host_ops: str | Collection[str] = (),
        partition: str | Path | None = None,
        layouts: dict[str, str] | str | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        fuse: bool | None = None,
        cache_dir: str | Path | bool | None = None,
        validation: bool | str | None = None,
        max_in_flight: int = 1,
        target: str | None = None,
    ):
        if source is None and file is None:
            raise TosaError("a VulkanModel needs a graph or a .tosa file")
        checked_timeout(timeout_s)  # before any work (the Runtime keeps it)
        # the class and kernel features before the device opens: a bad name fails at once
        forced, disabled = device_class.forced(target), device_class.disabled()
        self._graph, self.file = source, file
        dev = self.attach(device, validation)
        try:
            # what the compiler may assume: the device's facts, the class asked for, TOSA_VK_DISABLE's features off
            self.target = dev.info.target.with_class(forced, disabled)
            self.options: dict[str, Any] = {
                "strict": strict,
                "host_ops": host_ops,
                "partition": partition,
                "layouts": layouts,
                "fuse": fuse,
            }
            self.cached = False  # whether the program came from the program cache
            self.warmup = None  # what the lavapipe warm-up at load did (tosa_vk/vulkan/warmup.py)
            found = self._cached(dev, cache_dir) if cache_dir is not False else None
            running: dict[str, Any] = {
                "timestamps": timestamps,
                "max_iterations": max_iterations,
                "host": host_kernels.run,
                "timeout_s": timeout_s,
            }
            if found and found[2]:
                self.cached = self._from_entry(dev, found[0], found[1], found[2], running)
            if not self.cached:
                self.program = self.compile()
                dev = self._placed(self.device or dev, self.program)  # (a failed entry may have reopened it)
                self.runtime = Runtime(self.program, dev, ShaderCache(), **running)
                # lavapipe: code compiled in parallel now, not one pipeline at a time in the first run; not for a
                # program-cache hit (its code is in Mesa's disk cache from the load that stored it)
                self.warmup = warm_up(self.runtime)
            dev = self.device or dev  # (the one _placed chose)
            count = in_flight(max_in_flight, bool(self.program.variables), self.file)
            check_all = self.cached and found is not None and found[2] is not None and not found[2].verified
            self.open_slots(
                count,
                lambda first: Runtime(
                    self.program, dev, first.cache, pipelines=first.pipelines, check_all=check_all, **running
                ),
            )
            # what run() coerces the feeds to: the graph's inputs, from the program (the graph may be unparsed)
            self._feeds = [Tensor(n, shape, DType[dtype]) for n, (shape, dtype) in self.program.input_types.items()]
            if found and not self.cached:
                assert self.runtime is not None
                cache, header, _ = found
                spirv = list(self.runtime.spirv.values())  # in program_variants order (Runtime._build)
                # verified: compiled here, every model module checked (Runtime, ShaderCache): a hit runs it unchecked
                cache.store(header, Entry(self.program.to_bytes(), self.runtime.pipelines.data(), spirv, verified=True))
            self.report_validation()  # what pipeline creation and the uploads made the layer say
        except BaseException:
            self.close()
            raise

    def compile(self, **overrides: Any) -> Program:
        """This model's graph compiled for its device with load's options (export_vgf may need views=False)."""
        assert self.device is not None
        from ..stages import compiler  # (the compile stages and the catalogue: a program-cache hit needs neither)

        options = {"kernels": shipped_only(), **self.options, **overrides}
        return compiler.compile(self.graph, self.target, **options, file=self.file)

    @property
    def inputs(self) -> dict[str, TensorSpec]:
        return {name: TensorSpec(*t) for name, t in self.program.input_types.items()}

    @property
    def outputs(self) -> dict[str, TensorSpec]:
        return {name: TensorSpec(*t) for name, t in self.program.output_types.items()}

    def _from_entry(self, dev: Device, cache: ProgramCache, header: dict, entry: Entry, running: dict) -> bool:
        """Runs the entry's Program (no compile, no glslc) when it decodes and, unless this build verified it when
        storing it (entry.verified: tosa_vk/store/program_cache.py, Trust), every module and kernel interface passes
        the checks (ShaderCache.adopt, Runtime's check_all; then it is stored verified); False, with one warning,
        for an entry that does not: a load never fails because of one (the caller compiles again and rewrites it)."""
        try:
            program = Program.from_bytes(entry.program)
            for name, (shape, _) in (*program.input_types.items(), *program.output_types.items()):
                if tuple(program.buffers[name].shape) != tuple(shape):  # what run() writes and reads
                    raise TosaError(f"tensor {name!r} has shape {program.buffers[name].shape}, its signature {shape}")
            shaders = ShaderCache()
            (shaders.take if entry.verified else shaders.adopt)(program_variants(program), entry.spirv)
            dev = self._placed(dev, program)
            runtime = Runtime(
                program, dev, shaders, pipeline_data=entry.pipeline_data, check_all=not entry.verified, **running
            )
        except Exception as err:  # whatever the entry makes fail, it is the entry's fault: build it again
            why = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:200]}"
            cache.damaged(cache.path(header["key"]), why)
            return False
        self.program, self.runtime = program, runtime
        self._data = None  # not needed: the graph, if ever asked for, is read from the file again
        if not entry.verified:  # checked now: the next hit need not
            cache.store(header, dataclasses.replace(entry, verified=True))
        return True

    def _placed(self, dev: Device, program: Program) -> Device:
        """The device the program runs on: for a program of small dispatches on lavapipe (tosa_vk/vulkan/threads.py),
        the shared device's sibling with the driver's compute threads off (tosa_vk/vulkan/shared.py: device tensors
        cross between the two as copies). Its target is the same (one physical device), so the program and the
        cache key stand. A Device the user gave is left alone."""
        if not self.own_device or dev.threads is not None or not inline(program, self.target):
            return dev
        try:
            small = shared.sibling(dev, threads=0)
        except TosaError:
            return dev  # (never expected: the device was just open) the threaded one serves
        self.move_to(small)
        return small

    def _cached(self, dev: Device, cache_dir) -> tuple[ProgramCache, dict, Entry | None] | None:
        """(the cache, this model's entry header, the entry if there is a valid one); None where the program
        cache does not apply: graphs with registered custom ops, whose shader files and numpy twins live outside
        the model."""
        if _registered_custom_ops(self):
            return None
        target = self.target
        if self._graph is None:
            try:
                self._data = model = Path(str(self.file)).read_bytes()  # parsed from these on a miss
            except OSError:
                self.graph  # noqa: B018 - load_graph's error names the file and why
                raise
        else:
            from ..ir.flatbuffer import write_graph

            model = write_graph(self._graph)  # not the file's bytes: a capture twin's graph differs from its file
        options = self.options
        partition = options["partition"]
        resolved = {
            **options,
            "fuse": fuse_enabled(options["fuse"]),
            "host_ops": _rules(options["host_ops"]),
            # the file by name (in the placements' reasons) and content
            "partition": None if partition is None else [str(partition), _text(partition)],
        }
        cache = ProgramCache(None if cache_dir in (None, True) else cache_dir)
        header = cache.header(cache.key(model, resolved, target), target.device_uuid, target.driver)
        return cache, header, cache.load(header)

    def _run(self, feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        return self._on_device(feeds, cast, None)

    def _resolve(self, feeds: dict) -> dict:
        return feeds  # DeviceTensors of this device are copied on the device (_on_device)

    def _run_device(self, feeds: dict, cast: bool, names: list[str]) -> dict[str, DeviceTensor]:
        return {n: DeviceTensor(buffer, n) for n, buffer in self._on_device(feeds, cast, names).items()}

    def _on_device(self, feeds: dict, cast: bool, keep: list[str] | None) -> dict:
        """A run: host feeds converted and written into the arena, DeviceTensor feeds (of this device, the input's
        exact shape and storage dtype) copied device to device (a sibling device's: through the host view of its
        memory, counted in `transferred`); the outputs as host arrays, or those `keep` names
        as device buffers of their own."""
        values, on_device = {}, {}
        for t in self._feeds:
            value = feeds[t.name]
            if isinstance(value, DeviceTensor):
                buf = self.program.buffer(t.name)
                storage = checked_tensor(value, self.device, t.name, buf.shape, buf.dtype, self.file)
                if storage.device is self.device:
                    on_device[t.name] = storage
                else:  # the sibling device's (shared.siblings): its mapped memory copied in like a host feed
                    values[t.name] = storage.numpy()
            else:
                values[t.name] = coerce_input(t, value, self.file, cast=cast)
        try:
            with self.slot() as runtime:
                results = runtime.run(values, on_device, keep)
        except TosaError as err:
            raise err.located(file=self.file) from None
        self.report_validation()
        return results

    @property
    def variables(self) -> dict[str, np.ndarray]:
        with self.using() as runtime:
            return {uid: runtime.view(self.program.variables[uid].tensor).copy() for uid in runtime.state}

    def _twin(self, graph: Graph) -> Model:
        return VulkanModel(graph, file=self.file, **{**self._options, "device": self.device, "max_in_flight": 1})

    def _lend_state(self, twin: Model) -> None:
        assert isinstance(twin, VulkanModel)
        _copy_state(self, twin)

    def _take_state(self, twin: Model) -> None:
        assert isinstance(twin, VulkanModel)
        _copy_state(twin, self)

    def _release(self) -> None:
        GraphModel._release(self)  # the capture twins first: they use this model's device
        OnDevice._release(self)

    def set_variable(self, uid: str, value: np.ndarray) -> None:
        with self.using() as runtime:
            var, array = new_value(runtime.state, uid, value)
            runtime.view(self.program.variables[uid].tensor)[...] = array
            var.is_written = True

    def reset_variables(self) -> None:
        with self.using() as runtime:
            runtime.reset_variables()

    @property
    def placement(self) -> list[Placement]:
        return list(self.program.placement)

    def export_vgf(self, path: str | Path | None = None):
        """The program as a VGF container (vgf.VGF; written to `path` if given): our SPIR-V kernels as COMPUTE
        segments (tosa_vk/formats/vgf_export.py). Needs every operator as a Vulkan kernel."""
        from ..formats.vgf_export import export_vgf

        program = self.program
        if program.views():  # VGF resources are bound whole: the same program with copies instead of views
            program = self.compile(views=False)
        return export_vgf(program, path)


def _copy_state(source: VulkanModel, target: VulkanModel) -> None:
    """The variables of `source` (their values in device memory and their flags) made `target`'s: a capture twin
    runs on the model's state and hands it back."""
    if not source.program.variables:
        return
    with source.using() as a, target.using() as b:
        b.state.clear()
        b.state.update({uid: copy.copy(var) for uid, var in a.state.items()})
        for uid, spec in source.program.variables.items():
            b.view(target.program.variables[uid].tensor)[...] = a.view(spec.tensor)

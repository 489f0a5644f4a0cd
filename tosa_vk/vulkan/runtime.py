"""Runs a Program on a Device: one arena for every tensor, constants uploaded once, every kernel compiled and
recorded at load, then each run() only writes the inputs, submits the recorded segments and reads the outputs."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import NamedTuple

import numpy as np

from vgf import vk_enums

from ..abi import spirv
from ..errors import TosaError
from ..ir import variables
from ..ir.variables import Variable, begin_run
from ..program import Branch, Host, Kernel, Loop, Program, StateCheck, walk
from ..timeout import checked_timeout, overrun_text
from .device import Device, VulkanError
from .loader import api
from .memory import Arena, DeviceBuffer, align
from .pipelines import Pipeline, Pipelines, bound_descriptors, kernel_layout
from .recorder import DeviceTimeout, Dispatch, Queue, Segment, Transfer, image_bindings
from .shaders import ShaderCache, specialize
from .variant import program_variants, variant_of

vk = api()  # the `vulkan` package; a VulkanError with the fix where there is no loader

DEFAULT_TIMEOUT_S = 300.0  # the longest one run may take; tosa_vk.load(..., timeout_s=) changes it
ABANDON_AFTER_S = 1.0  # close() waits this long for the unfinished work of a failed run, then leaves it
# (the model's close() too waits this long for a run in progress, then stops it: Runtime.stop)
BATCH_ITERATIONS = 16  # WHILE_LOOP iterations recorded ahead per command buffer (conditional rendering)
BATCH_DISPATCHES = 512  # ... at most this many dispatches in all


HostKernels = Callable[[Host, list[np.ndarray]], list[np.ndarray]]


class Span(NamedTuple):
    """A kernel or host step of the last run (Runtime.spans): `start` / `end` in seconds on the host clock
    (time.perf_counter)."""

    op: str
    where: str  # "device" | "host"
    start: float
    end: float


class Runtime:
    """`host` runs the program's Host steps (tosa_vk/reference/host_kernels.py; the Vulkan layer imports no backend);
    `pipeline_data` seeds the driver's pipeline cache (Pipelines); `check_all`: every kernel's interface is checked
    against its module before any pipeline is made, not only a model's own shaders' (a program from the program
    cache, whose built-in kernels could have been rewritten). `pipelines`: another Runtime's of the same program on
    the same device (a model's runs in flight: each slot a Runtime with its own arena, queue and recorded command
    buffers, the compiled pipelines shared; the Runtime that made them closes them)."""

    def __init__(
        self,
        program: Program,
        device: Device | None = None,
        cache: ShaderCache | None = None,
        timestamps: bool = False,
        force_staging: bool = False,
        max_iterations: int = 1_000_000,
        host: HostKernels | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        pipeline_data: bytes = b"",
        check_all: bool = False,
        pipelines: Pipelines | None = None,
    ):
        self.program = program
        self.check_all = check_all
        self.max_iterations = max_iterations
        self.timeout_s = checked_timeout(timeout_s)  # None: no limit
        self._deadline = 0.0  # time.monotonic() by which the current run must end
        self.failed = ""  # why the device work of a run did not finish: the runtime cannot run again
        self.stopped = ""  # why another thread stopped the run in progress (stop())
        self._views: dict[str, np.ndarray] = {}  # tensor -> its array in the mapped arena, made on first use
        self.abandoned = False  # closed with that work still running (its device must not be closed either)
        self.host = host
        self.state: dict[str, Variable] = {}  # variables' seen / is_written flags by uid (values stay in the arena)
        self.ran: list[Segment] = []  # segments submitted by the last run, in order
        self.timestamps = timestamps  # the segments bracket their dispatches with timestamp queries
        self.submitted: dict[Segment, float] = {}  # segment -> time.perf_counter() of its latest submit
        self.hosted: dict[str, Span] = {}  # host step -> its span in the last run (a loop's: the last iteration)
        self.transferred = {"to_device": 0, "from_device": 0}
        self.staged_tensors = force_staging  # device tensors in memory the host does not read in place (tests)
        self.own_device = device is None
        self.device: Device | None = device or Device()  # None once closed
        self.cache = cache or ShaderCache()
        # room past the last tensor for a rounded texel view (Target.texel_view_quantum)
        slack = self.device.info.target.texel_view_quantum
        self.arena = Arena(self.device, align(max(program.arena_bytes, 16), 16) + slack, force_staging)
        self.own_pipelines = pipelines is None
        self.pipelines = pipelines or Pipelines(self.device, pipeline_data)
        self.queue = Queue(self.device)
        self.segments: list[Segment] = []
        self.plan: list = []
        self._before: Transfer | None = None  # the current run's device-tensor copies (run())
        self._after: Transfer | None = None
        hosted = [s.op for s in walk(program.steps) if isinstance(s, Host)]
        if hosted and host is None:
            raise TosaError(f"the program runs {hosted[0]} on the host, and no host kernels were given")
        try:
            wait = self._build(timestamps)
            try:  # the constants upload while the driver compiles the pipelines (issue 49)
                for name, value in program.constants.items():
                    self.view(name)[...] = value
                self.reset_variables()
            finally:
                wait()  # (before close() can destroy what the threads make)
            self.plan = self._plan(self.program.steps, timestamps)
            if self._device.labels is not None and self.own_pipelines:  # (a shared one: named by its first runtime)
                self._name_pipelines()
        except BaseException:
            self.close()
            raise

    @property
    def _device(self) -> Device:
        assert self.device is not None, "the runtime is closed"
        return self.device

    def view(self, tensor: str) -> np.ndarray:
        """The tensor's bytes in the mapped arena, as an array (made once per tensor: ~35 us each)."""
        found = self._views.get(tensor)
        if found is None:
            buf = self.program.buffer(tensor)
            found = self._views[tensor] = self.arena.view(buf.offset, buf.shape, buf.dtype)
        return found

    def _build(self, timestamps: bool) -> Callable[[], None]:
        """Checks the kernels and starts creating their pipelines: the returned `wait` (Pipelines.prepare) ends that."""
        kernels = [s for s in walk(self.program.steps) if isinstance(s, Kernel)]
        for k in kernels:
            self._check_limits(k)
        variants = program_variants(self.program)
        self.spirv = dict(zip(variants, self.cache.get_many(variants)))
        self._modules: dict[tuple, bytes] = {}  # (variant, specialization values) -> the kernel's module
        checked = set()
        for k in kernels:
            if k.source or k.spirv or self.check_all:  # a model's shader: its interface must be what the kernel binds
                key = (variant_of(k), k.spec_values, kernel_layout(k), len(k.push_constants), k.entry)
                if key not in checked:  # (models repeat a layer's kernel many times)
                    self._check_interface(k)
                    checked.add(key)
        requests = {(self.module(k), len(k.bindings), len(k.push_constants), kernel_layout(k), k.entry)
                    for k in kernels}  # fmt: skip
        return self.pipelines.prepare(list(requests))

    def _name_pipelines(self) -> None:
        """Names each pipeline for GPU tools (tosa_vk/vulkan/labels.py): its shader and the kernels using it."""
        users: dict[int, tuple[Pipeline, str, dict[str, None]]] = {}
        for seg in self.segments:
            for d in seg.dispatches:
                users.setdefault(id(d.pipeline), (d.pipeline, d.shader, {}))[2][d.name] = None
        for pipeline, shader, ops in users.values():
            first, more = next(iter(ops)), len(ops) - 1
            self.pipelines.name(pipeline, f"{shader}: {first}" + (f" (and {more} more kernels)" if more else ""))

    def module(self, kernel: Kernel) -> bytes:
        """The kernel's SPIR-V: its variant's, with its specialization constants set."""
        key = (variant_of(kernel), kernel.spec_values)
        found = self._modules.get(key)
        if found is None:
            found = self._modules[key] = specialize(self.spirv[key[0]], kernel.spec_values)
        return found

    def _plan(self, steps: list, timestamps: bool) -> list:
        """Steps -> what run() executes: Segments (recorded command buffers of consecutive kernels, preceded by
        the variable checks among them), Host steps, and _Branch / _Loop holding nested plans."""
        plan: list = []
        pending: list[Dispatch] = []
        checks: list[StateCheck] = []

        def flush() -> None:
            if checks:
                plan.append(list(checks))
                checks.clear()
            if pending:
                seg = Segment(self._device, self.arena, self.queue.pool, list(pending), timestamps)
                self.segments.append(seg)
                plan.append(seg)
                pending.clear()

        for step in steps:
            if isinstance(step, Kernel):
                pending.append(self._dispatch(step))
            elif isinstance(step, StateCheck):
                checks.append(step)
            else:
                flush()
                if isinstance(step, Branch):
                    plan.append(
                        _Branch(step.condition, self._plan(step.then, timestamps), self._plan(step.orelse, timestamps))
                    )
                elif isinstance(step, Loop):
                    # the body is recorded with the next test after it: one submit per iteration, or per batch
                    body = self._plan(step.body + step.cond, timestamps)
                    plan.append(
                        _Loop(
                            step.op,
                            self._plan(step.cond, timestamps),
                            step.condition,
                            body,
                            *self._batch(step, body, timestamps),
                        )
                    )
                else:
                    plan.append(step)
        flush()
        return plan

    def _batch(self, loop: Loop, body: list, timestamps: bool) -> tuple[Segment | None, int]:
        """WHILE_LOOP iterations recorded ahead into one command buffer, each under conditional rendering on the
        loop's predicate (which the iteration's last kernel rewrites, unconditionally, from the condition): the
        device skips the iterations after the condition turned false, so the host reads the condition once per
        batch instead of once per iteration. (None, 1) when the device lacks conditional rendering or an
        iteration is more than plain kernels (host work, nested control flow, images)."""
        if not loop.predicate or len(body) != 1 or not isinstance(body[0], Segment):
            return None, 1
        iteration = body[0].dispatches
        if any(image is not None for d in iteration for image in d.images):
            return None, 1
        count = min(BATCH_ITERATIONS, BATCH_DISPATCHES // len(iteration))
        if count < 2:
            return None, 1
        offset, rewrite = self.program.buffer(loop.predicate).offset, self._bytes((loop.predicate,))
        dispatches = [
            replace(d, predicate=None if d.writes == rewrite else offset) for _ in range(count) for d in iteration
        ]
        seg = Segment(self._device, self.arena, self.queue.pool, dispatches, timestamps)
        self.segments.append(seg)
        return seg, count

    def _check_limits(self, step: Kernel) -> None:
        """A kernel's numbers against the device's limits, before any Vulkan call sees them (model files are
        untrusted: a set index or group count past a limit can crash or hang the driver)."""
        limits = self._device.info.limits
        bad = [s for s, _ in step.slots if not 0 <= s < limits["maxBoundDescriptorSets"]]
        if bad:
            raise VulkanError(
                f"{step.op}: descriptor set {bad[0]} is outside this device's "
                f"maxBoundDescriptorSets ({limits['maxBoundDescriptorSets']})"
            )
        if any(not 1 <= g <= m for g, m in zip(step.groups, limits["maxComputeWorkGroupCount"])):
            raise VulkanError(
                f"{step.op}: dispatch of {list(step.groups)} workgroups; this device allows 1 to "
                f"{limits['maxComputeWorkGroupCount']} per dimension"
            )
        if len(step.push_constants) > limits["maxPushConstantsSize"]:
            raise VulkanError(
                f"{step.op}: {len(step.push_constants)} bytes of push constants; this device allows "
                f"{limits['maxPushConstantsSize']}"
            )
        problem = _inconsistent(step, self.program)
        if problem:
            raise VulkanError(f"{step.op}: {problem}")

    def _check_interface(self, step: Kernel) -> None:
        bound = bound_descriptors(len(step.bindings), step.slots, step.descriptors)
        # a registered declaration's kernel is compiled with LOCAL_SIZE_X/Y/Z (tosa_vk/stages/lower/custom.py): its
        # group counts assume that workgroup size, which a shader that hard-codes another would silently break
        defines = dict(step.defines)
        declared = None
        if "LOCAL_SIZE_X" in defines:
            declared = (int(defines["LOCAL_SIZE_X"]), int(defines["LOCAL_SIZE_Y"]), int(defines["LOCAL_SIZE_Z"]))
        problems = spirv.check(
            self.module(step),
            step.op,
            step.entry,
            bound,
            len(step.push_constants),
            self._device.info.limits,
            local_size=declared,
            push_source="the declaration's push_constants" if declared else "the payload's push_constants",
        )
        if problems:
            raise VulkanError("\n".join(problems))
        # a binding the kernel only reads is an input, one it only writes an output (custom kernels: the node's
        # inputs and outputs; VGF segments: their declared inputs / outputs, INPUT and CONSTANT resources)
        slots = step.slots or tuple((0, i) for i in range(len(step.bindings)))
        roles = {}
        for slot, name in zip(slots, step.bindings):
            if name in step.writes and name not in step.reads:
                roles[slot] = ("output", f"'{name}'")
            elif name not in step.writes:
                roles[slot] = ("input", f"'{name}'")
        problems = spirv.check_roles(self.module(step), step.op, roles)
        if problems:
            raise TosaError("\n".join(problems))

    def _dispatch(self, step: Kernel) -> Dispatch:
        try:
            pipeline = self.pipelines.get(
                self.module(step),
                len(step.bindings),
                len(step.push_constants),
                kernel_layout(step),
                step.entry,
            )
        except vk.VkError as err:  # e.g. a model's valid-but-odd SPIR-V the driver's compiler gives up on
            raise VulkanError(
                f"{step.op}: the driver could not create the compute pipeline ({type(err).__name__})"
            ) from None
        ranges = []
        limit = self._device.info.limits["maxStorageBufferRange"]
        for name in step.bindings:
            buf = self.program.buffer(name)
            if buf.nbytes > limit:
                raise VulkanError(
                    f"{step.op}: tensor '{name}' takes {buf.nbytes} bytes, more than this "
                    f"device's maxStorageBufferRange ({limit}); split the graph or run it with "
                    f"backend='reference'"
                )
            size = max(align(buf.nbytes, 4), 4)
            if buf.offset < 0 or buf.offset + size > self.arena.size:  # a range past the arena corrupts the heap
                raise VulkanError(
                    f"{step.op}: tensor '{name}' ({size} bytes at offset {buf.offset}) lies outside the "
                    f"{self.arena.size}-byte arena"
                )
            ranges.append((buf.offset, size))
        return Dispatch(
            step.op,
            pipeline,
            ranges,
            step.push_constants,
            step.groups,
            self._bytes(step.reads),
            self._bytes(step.writes),
            image_bindings(step),
            texels=step.texels,
            shader=step.shader,
        )

    def _bytes(self, names) -> frozenset[tuple[int, int]]:
        """The arena byte ranges of tensors (memory is shared between tensors whose lifetimes don't overlap)."""
        return frozenset((b.offset, b.offset + b.nbytes) for b in map(self.program.buffer, names))

    def reset_variables(self) -> None:
        """Forgets the variables' state and writes their initial values (zeros where there is none)."""
        self.state.clear()
        for spec in self.program.variables.values():
            view = self.view(spec.tensor)
            view[...] = 0 if spec.initial is None else spec.initial

    def run(
        self,
        feeds: dict[str, np.ndarray],
        device_feeds: dict[str, DeviceBuffer] | None = None,
        keep: list[str] | None = None,
    ) -> dict:
        """Inputs by name (already in the storage dtype and shape) -> copies of the outputs by name.
        `transferred` then holds the bytes that crossed between host and device memory in this run.

        `device_feeds`: inputs already in device memory (device tensors of this device, in the storage dtype and
        shape), copied device to device into the arena. `keep`: outputs to return as DeviceBuffers of their own
        (copied device to device out of the arena: a later run does not overwrite them) instead of host arrays;
        neither counts in `transferred`."""
        if self.failed:
            raise VulkanError(f"this model cannot run again ({self.failed}); close it and load it again")
        self.transferred = {"to_device": 0, "from_device": 0}
        self.ran = []
        self.hosted = {}
        begin_run(self.state)  # a new run: every variable may be declared once again
        for name, value in feeds.items():
            self._write(name, value)
        # device tensors: copied in within the first submission, out within the last (where those are segments)
        self._before = self._copy_in(device_feeds) if device_feeds else None
        if self._before is not None and not (self.plan and isinstance(self.plan[0], Segment)):
            self.queue.submit(self._before)  # type: ignore[arg-type]  # a host step or a test reads them first
            self._before = None
        made = self._outputs(keep) if keep is not None else {}
        self._after = self._copy_out(made) if made else None
        # for the whole run, loops included
        self._deadline = math.inf if self.timeout_s is None else time.monotonic() + self.timeout_s
        try:
            self._execute(self.plan)
            if self._after is not None:  # the run did not end in a segment
                self.queue.submit(self._after)  # type: ignore[arg-type]
        except (VulkanError, KeyboardInterrupt) as err:  # device work may still be pending: no further runs
            self.failed = str(err) or type(err).__name__
            self.stranded = list(made.values())  # a pending copy may still write them: kept as long as the runtime
            raise
        except BaseException:
            for tensor in made.values():
                tensor.release()
            raise
        finally:
            self._before = self._after = None
        if keep is not None:
            return made
        return {name: self._read(name).copy() for name in self.program.outputs}

    def _copy_in(self, tensors: dict[str, DeviceBuffer]) -> Transfer | None:
        """Device tensors into their inputs' arena ranges: a recorded command buffer of copies. The host's view of
        the arena (the staging twin where the arena is staged: each segment copies it over first) receives them."""
        copies = []
        for name, tensor in tensors.items():
            buf = self.program.buffer(name)
            if buf.nbytes:
                copies.append((tensor.buffer, self.arena.stage.buffer, 0, buf.offset, buf.nbytes))
        return self.queue.record("in", copies) if copies else None

    def _outputs(self, names: list[str]) -> dict[str, DeviceBuffer]:
        """Device buffers of their own for the outputs `names`."""
        made: dict[str, DeviceBuffer] = {}
        try:
            for name in names:
                buf = self.program.buffer(name)
                made[name] = DeviceBuffer(self._device, buf.nbytes, buf.shape, buf.dtype, staged=self.staged_tensors)
        except BaseException:
            for tensor in made.values():
                tensor.release()
            raise
        return made

    def _copy_out(self, made: dict[str, DeviceBuffer]) -> Transfer | None:
        """The outputs copied device to device into their buffers, recorded (from the host's view of the arena:
        where the arena is staged, each segment leaves its results there, and host steps write there)."""
        copies = []
        for name, tensor in made.items():
            buf = self.program.buffer(name)
            if buf.nbytes:
                copies.append((self.arena.stage.buffer, tensor.buffer, buf.offset, 0, buf.nbytes))
        return self.queue.record("out", copies) if copies else None

    def stop(self, reason: str) -> None:
        """Called from another thread (a model's close()): the run in progress ends at its next step, or within
        one fence-wait slice of the command buffer it waits for, with a TosaError saying `reason`. Its device work
        may go on: the runtime cannot run again, and close() leaves what that work uses (ABANDON_AFTER_S)."""
        self.stopped = self.failed = reason
        self.queue.stopped = True

    def _execute(self, plan: list) -> None:
        for item in plan:
            if self.stopped:
                raise TosaError(self.stopped)
            if isinstance(item, Segment):
                left = self._deadline - time.monotonic()
                try:
                    if left <= 0:
                        raise DeviceTimeout(f"next kernel: {item.dispatches[0].name}")
                    self.submitted[item] = time.perf_counter()
                    before, self._before = self._before, None
                    after = None
                    if self._after is not None and item is self.plan[-1]:  # the run's last submission
                        after, self._after = self._after, None
                    self.queue.submit(item, None if left == math.inf else left, before, after)
                except DeviceTimeout as err:
                    if self.stopped:
                        raise TosaError(self.stopped) from None
                    raise DeviceTimeout(overrun_text(self.timeout_s, str(err))) from None
                self.ran.append(item)
            elif isinstance(item, list):
                for check in item:
                    try:
                        variables.apply(
                            self.state, check.rule, check.uid, check.shape, check.dtype, check.initial_shape
                        )
                    except TosaError as err:
                        raise err.located(op=check.op) from None
            elif isinstance(item, _Branch):
                self._execute(item.then if self._flag(item.condition) else item.orelse)
            elif isinstance(item, _Loop):
                self._execute(item.cond)
                done = 0  # iterations run (or skipped on the device after the condition turned false)
                while self._flag(item.condition):
                    if done >= self.max_iterations:
                        raise TosaError(
                            f"{item.op}: WHILE_LOOP did not finish within {self.max_iterations} "
                            "iterations (the session's max_iterations)"
                        )
                    if item.batch is not None and self.max_iterations - done >= item.batch_size:
                        self._execute([item.batch])
                        done += item.batch_size
                    else:
                        self._execute(item.body_and_cond)
                        done += 1
            else:
                assert self.host is not None  # checked in __init__
                start = time.perf_counter()
                try:
                    outs = self.host(item, [self._read(n) for n in item.reads])
                except TosaError as err:
                    raise err.located(op=item.op) from None
                for name, value in zip(item.writes, outs):
                    self._write(name, value)
                self.hosted[item.op] = Span(item.op, "host", start, time.perf_counter())

    def _flag(self, name: str) -> bool:
        """A control-flow condition: one bool read back from the device."""
        return bool(self._read(name).reshape(-1)[0])

    def _read(self, name: str) -> np.ndarray:
        view = self.view(name)
        self.transferred["from_device"] += view.nbytes
        return view

    def _write(self, name: str, value) -> None:
        view = self.view(name)
        view[...] = value
        self.transferred["to_device"] += view.nbytes

    def profile(self) -> list[tuple[str, float]]:
        """(kernel, seconds) of the last run, from GPU timestamps (build with timestamps=True): the segments that
        ran, once each (a loop body's times are its last iteration's)."""
        period = self._device.info.limits["timestampPeriod"]
        return [(d.name, t) for seg in dict.fromkeys(self.ran) for d, t in zip(seg.dispatches, seg.timings(period))]

    def spans(self) -> list[Span]:
        """The last run's kernels and host steps in order of start, once each as profile() (a loop body's: its last
        iteration). Host steps are wall-clock times; a segment's kernels are its timestamp queries' offsets from
        the segment's first one, placed at the segment's submit time: the device clock is not calibrated against
        the host's, so a segment starts a submit latency early and its kernels are end to end (each from the
        previous one's end timestamp, barriers included). No kernels without timestamps."""
        period = self._device.info.limits["timestampPeriod"]
        found = list(self.hosted.values())
        for seg in dict.fromkeys(self.ran):
            at = self.submitted[seg]
            edges = [at + s for s in accumulate(seg.timings(period), initial=0.0)]
            found += [Span(d.name, "device", a, b) for d, a, b in zip(seg.dispatches, edges, edges[1:])]
        return sorted(found, key=lambda s: s.start)

    def close(self) -> None:
        """Frees every Vulkan object of this runtime (idempotent; safe after a failed __init__)."""
        device = getattr(self, "device", None)
        if device is None or device.device is None:
            return
        queue = getattr(self, "queue", None)
        if queue is not None and not queue.finished(ABANDON_AFTER_S):
            # a timed-out or interrupted run left work on the device that may never end: destroying what it
            # uses is undefined and waiting may not return, so this runtime's objects (and its device's) stay
            # until the process exits
            self.abandoned = True
            self.device = None
            return
        vk.vkDeviceWaitIdle(device.device)
        self._views.clear()  # they point into the mapping freed below
        if queue is not None:  # segments are recorded from the queue's pool: none exist without it
            for seg in getattr(self, "segments", []):
                seg.close(queue.pool)
        self.segments = []
        for part in ("queue", "pipelines", "arena"):
            obj = getattr(self, part, None)
            if part == "pipelines" and not getattr(self, "own_pipelines", True):
                obj = None  # another Runtime's: it closes them
                setattr(self, part, None)
            if obj is not None:
                obj.close()
                setattr(self, part, None)
        if self.own_device:
            device.close()
        self.device = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _inconsistent(k: Kernel, program: Program) -> str:
    """What in a kernel's binding tables contradicts itself ('' if nothing): the recorder trusts them (a texel
    view written as a storage buffer's descriptor, or two descriptors in one slot, crashes the driver), and a
    program from the program cache or a VGF was written by someone else."""
    n = len(k.bindings)
    for name, table in (("slots", k.slots), ("descriptors", k.descriptors), ("images", k.images), ("texels", k.texels)):
        if table and len(table) != n:
            return f"{len(table)} {name} for {n} bindings"
    if len(set(k.slots)) != len(k.slots) or any(s < 0 or b < 0 for s, b in k.slots):
        return f"descriptor slots {list(k.slots)} repeat or are negative"
    missing = [b for b in k.bindings if b not in program.buffers]
    if missing:
        return f"binds tensor {missing[0]!r}, which the program does not hold"
    for i in range(n):
        descriptor = k.descriptors[i] if k.descriptors else vk_enums.STORAGE_BUFFER
        texel = k.texels[i] if k.texels else ""
        image = k.images[i] if k.images else None
        if descriptor not in vk_enums.DESCRIPTOR_TYPES:
            return f"binding {i} has an unknown descriptor type {descriptor!r}"
        if (texel != "") != (descriptor == vk_enums.UNIFORM_TEXEL_BUFFER) or (texel and texel not in vk_enums.FORMATS):
            return f"binding {i} is a {descriptor} with texel format {texel!r}"
        if (image is not None) != (descriptor in vk_enums.IMAGE_DESCRIPTORS):
            return f"binding {i} is a {descriptor} {'with' if image is not None else 'without'} an image"
    return ""


@dataclass
class _Branch:
    condition: str
    then: list
    orelse: list


@dataclass
class _Loop:
    op: str
    cond: list  # the first test
    condition: str
    body_and_cond: list  # an iteration and the test after it
    batch: Segment | None = None  # batch_size iterations under conditional rendering (see Runtime._batch)
    batch_size: int = 1

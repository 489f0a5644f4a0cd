"""Cold first runs on lavapipe: a loaded Runtime's pipelines' machine code compiled in parallel before its first run.

lavapipe (Mesa's llvmpipe) builds a pipeline's LLVM code at its first dispatch, not at vkCreateComputePipelines,
one pipeline at a time on its device's queue thread, and keeps the code in Mesa's disk cache
(MESA_SHADER_CACHE_DIR; its VkPipelineCache is a stub). warm_up() sends each distinct variant once as an empty
dispatch (0 workgroups: llvmpipe compiles the variant, then runs nothing) on this device's queue and on twin devices'
(Device.twin: a queue thread and LLVM context each; one Python thread per twin), each taking the next pipeline,
largest first, when done with one; what a twin compiled reaches the first run through Mesa's disk cache, what this
device compiled stays in its pipelines. A variant is what llvmpipe keys its code on: the pipeline and its bindings'
static state, which includes bits of each texel view's byte size (Target.texel_view_quantum), so each twin records
the runtime's own Dispatches (same ranges, same views) on an arena of the same size.

Only where the driver compiles at dispatch (lavapipe); GPU drivers compile at vkCreateComputePipelines, which
Pipelines.prepare already spreads over threads. Best effort: whatever fails here is left to the first run, which
compiles as it would have. TOSA_VK_WARMUP=0 turns it off.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace

from vgf.vk_enums import FORMATS

from ..program import Kernel, walk
from .device import Device
from .memory import Arena
from .pipelines import Pipelines, kernel_layout
from .recorder import Dispatch, Queue, Segment, view_bytes

NO_GROUPS = (0, 0, 0)  # a legal empty dispatch: lavapipe still builds the pipeline's variant for it
# The probe: an empty dispatch of the smallest pipeline, then the same again (compiled by then), each timed in the
# process's CPU seconds (what a loaded machine does not stretch, unlike the wall clock: a late queue-thread wake-up
# made warm-cache probes look like compiles). The first within CACHED_RATIO times the second plus CACHED_S found its
# code in Mesa's disk cache: the rest is taken to be there too, and no twin is started (a warm cache must not make a
# load slower). lavapipe 22.3, 2 cores at load 7-9, lstm_unrolled / mobilenetv2: a hit 2.6-7 ms (again 1.6-3.6 ms),
# a compile 90-100 ms.
CACHED_RATIO, CACHED_S = 3.0, 0.010
THREAD_NAME = "tosa_vk warm-up"


def requested() -> int | None:
    """TOSA_VK_WARMUP: 0 off, N > 1 that many devices at once; unset, 1 (or anything else): one per core."""
    text = os.environ.get("TOSA_VK_WARMUP", "").strip()
    return int(text) if text.isdigit() else None


def compiles_at_dispatch(device: Device) -> bool:
    """Whether the driver builds machine code at a pipeline's first dispatch (lavapipe), by the driver itself:
    a class forced with TOSA_VK_TARGET runs on the same driver."""
    return device.info.device_class == "lavapipe"


@dataclass
class Report:
    """What warm_up did: pipelines compiled per device (the first: the runtime's own; the probe's not counted),
    seconds, and what failed."""

    shares: list[int] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False  # the probe found Mesa's cache warm: nothing more was done
    probe: tuple[float, float] = (0.0, 0.0)  # CPU seconds of the probe's empty dispatch: first, again
    problems: list[str] = field(default_factory=list)


def warm_up(runtime, workers: int | None = None, probe: bool = True) -> Report | None:
    """Compiles `runtime`'s (a tosa_vk.vulkan.Runtime, just built) variants on `workers` devices at once (default:
    one per core, at most one per pipeline); None where nothing is done (off, another driver, fewer than two
    pipelines). `probe`: first the smallest pipeline alone on this device, and nothing more when Mesa's cache had it
    (CACHED_RATIO). Never raises: what fails is in the report's problems. Returns after every thread it started
    ended."""
    device, asked = runtime.device, requested()
    if device is None or asked == 0 or not compiles_at_dispatch(device):
        return None
    report = Report()
    start = time.perf_counter()
    try:
        requests = _requests(runtime)
        spirv_of = {id(runtime.pipelines.get(*request)): spirv for spirv, request in requests.items()}
        groups = sorted(_variants(runtime, spirv_of), key=lambda g: g[0])
        workers = min(workers or (asked if asked and asked > 1 else os.cpu_count() or 1), len(groups))
        if workers < 2:
            return None
        if probe:
            first = _timed(_run_empty, device, runtime.arena, groups[0][1])
            report.probe = (first, _timed(_run_empty, device, runtime.arena, groups[0][1]))
            if report.probe[0] < CACHED_RATIO * report.probe[1] + CACHED_S:
                report.cached, report.seconds = True, time.perf_counter() - start
                return report
            groups = groups[1:]
            workers = min(workers, len(groups))  # (no twin without a pipeline to take)
        # largest first, each device taking the next pipeline when it is done with one: the costs are only a guess
        todo = deque(dispatches for _, dispatches in reversed(groups))
        report.shares = [0] * workers
        twin_args = (report, device, runtime.arena.size, requests, spirv_of, todo)
        threads = [
            threading.Thread(target=_guarded, args=(report, _on_twin, *twin_args, i), name=THREAD_NAME)
            for i in range(1, workers)
        ]
        try:
            for t in threads:
                t.start()
            _drain(report, device, runtime.arena, todo, 0)
        finally:
            for t in threads:
                if t.ident is not None:
                    t.join()
    except Exception as err:  # best effort: the first run compiles what this did not
        _note(report, err)
    report.seconds = time.perf_counter() - start
    return report


def _variants(runtime, spirv_of: dict[int, bytes]) -> list[tuple[int, list[Dispatch]]]:
    """The runtime's dispatches, one per variant, grouped by pipeline: (cost, dispatches) per pipeline. The cost is
    the SPIR-V's size, a proxy for its LLVM time; a pipeline's variants go to one device (the same code twice on
    two devices would be compiled twice)."""
    target, room = runtime.device.info.target, runtime.arena.size
    by_pipeline: dict[int, dict[tuple, Dispatch]] = {}
    for seg in runtime.segments:
        for d in seg.dispatches:
            if any(image is not None for image in d.images):
                continue  # custom ops' images: made per segment, left to the first run
            sizes = tuple(
                view_bytes(target, offset, nbytes, _texel_size(texel), room) if texel else 0
                for (offset, nbytes), texel in zip(d.ranges, d.texels or ("",) * len(d.ranges))
            )
            by_pipeline.setdefault(id(d.pipeline), {}).setdefault(sizes, d)
    return [(len(spirv_of.get(key, b"")), list(found.values())) for key, found in by_pipeline.items()]


def _texel_size(texel: str) -> int:
    return FORMATS[texel].size


def _requests(runtime) -> dict[bytes, tuple]:
    """Pipelines.get()'s arguments for each kernel's module (keyed by the SPIR-V)."""
    found = {}
    for k in walk(runtime.program.steps):
        if isinstance(k, Kernel):
            spirv = runtime.module(k)
            found[spirv] = (spirv, len(k.bindings), len(k.push_constants), kernel_layout(k), k.entry)
    return found


def _timed(work, *args) -> float:
    """The process's CPU seconds while `work` ran."""
    start = time.process_time()
    work(*args)
    return time.process_time() - start


def _guarded(report: Report, work, *args) -> None:
    try:
        work(*args)
    except Exception as err:  # best effort: the first run compiles what this did not
        _note(report, err)


def _note(report: Report, err: Exception) -> None:
    report.problems.append(f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:200]}")


def _run_empty(device: Device, arena: Arena, dispatches: list[Dispatch]) -> None:
    """The dispatches, empty, in one command buffer on a queue of their own, waited for; not labelled or named
    for GPU tools (throw-away work: a capture shows the model's own command buffers only)."""
    device = copy.copy(device)  # the same handles and queue lock
    device.labels = None
    queue = Queue(device)
    try:
        empty = [replace(d, groups=NO_GROUPS, predicate=None) for d in dispatches]
        seg = Segment(device, arena, queue.pool, empty, False)
        try:
            queue.submit(seg)
        finally:
            seg.close(queue.pool)
    finally:
        queue.close()


def _drain(report: Report, device: Device, arena: Arena, todo: deque, index: int, make=None) -> None:
    """Takes pipelines off `todo` until none is left, each dispatched empty (its variants), one submit each (~0.2 ms
    against 20-450 ms of compiling); `make` gives the dispatch this device records for a runtime's."""
    while True:
        try:
            dispatches = todo.popleft()
        except IndexError:
            return
        _run_empty(device, arena, [make(d) for d in dispatches] if make else dispatches)
        report.shares[index] += 1


def _on_twin(
    report: Report,
    device: Device,
    size: int,
    requests: dict[bytes, tuple],
    spirv_of: dict[int, bytes],
    todo: deque,
    index: int,
) -> None:
    """Pipelines taken off `todo`, made again on a twin device and dispatched there, empty, on an arena of the same
    size (the same texel views); everything made is destroyed after."""
    twin = device.twin()
    try:
        pipelines = Pipelines(twin)
        try:
            arena = Arena(twin, size)
            try:

                def make(d: Dispatch) -> Dispatch:
                    return replace(d, pipeline=pipelines.get(*requests[spirv_of[id(d.pipeline)]]))

                _drain(report, twin, arena, todo, index, make)
            finally:
                arena.close()
        finally:
            pipelines.close()
    finally:
        twin.close()

"""Runs a Program on a Device: one arena for every tensor, constants uploaded once, every kernel compiled and
recorded at load, then each run() only writes the inputs, submits the recorded segments and reads the outputs."""
from __future__ import annotations

import numpy as np
import vulkan as vk

from ..program import Host, Kernel, Program
from .device import Device, VulkanError
from .memory import Arena, align
from .pipelines import Pipelines
from .recorder import Dispatch, Queue, Segment
from .shaders import ShaderCache, Variant


class Runtime:
    def __init__(self, program: Program, device: Device | None = None, cache: ShaderCache | None = None,
                 timestamps: bool = False, force_staging: bool = False):
        self.program = program
        self.own_device = device is None
        self.device = device or Device()
        self.cache = cache or ShaderCache()
        self.arena = Arena(self.device, align(max(program.arena_bytes, 16), 16), force_staging)
        self.pipelines = Pipelines(self.device)
        self.queue = Queue(self.device)
        self.segments: list[Segment] = []
        self.plan: list[Segment | Host] = []
        try:
            for name, value in program.constants.items():
                self.view(name)[...] = value
            self._build(timestamps)
        except BaseException:
            self.close()
            raise

    def view(self, tensor: str) -> np.ndarray:
        buf = self.program.buffer(tensor)
        return self.arena.view(buf.offset, buf.shape, buf.dtype)

    def _build(self, timestamps: bool) -> None:
        kernels = [s for s in self.program.steps if isinstance(s, Kernel)]
        variants = list(dict.fromkeys(Variant(k.shader, k.defines) for k in kernels))
        spirv = dict(zip(variants, self.cache.get_many(variants)))
        pending: list[Dispatch] = []
        for step in self.program.steps:
            if isinstance(step, Host):
                self._flush(pending, timestamps)
                self.plan.append(step)
                continue
            pipeline = self.pipelines.get(spirv[Variant(step.shader, step.defines)], len(step.bindings),
                                          len(step.push_constants))
            ranges = []
            limit = self.device.info.limits["maxStorageBufferRange"]
            for name in step.bindings:
                buf = self.program.buffer(name)
                if buf.nbytes > limit:
                    raise VulkanError(f"{step.op}: tensor '{name}' takes {buf.nbytes} bytes, more than this "
                                      f"device's maxStorageBufferRange ({limit}); split the graph or run it with "
                                      f"backend='reference'")
                ranges.append((buf.offset, max(align(buf.nbytes, 4), 4)))
            pending.append(Dispatch(step.op, pipeline, ranges, step.push_constants, step.groups,
                                    self._bytes(step.reads), self._bytes(step.writes)))
        self._flush(pending, timestamps)

    def _bytes(self, names) -> frozenset[tuple[int, int]]:
        """The arena byte ranges of tensors (memory is shared between tensors whose lifetimes don't overlap)."""
        return frozenset((b.offset, b.offset + b.nbytes) for b in map(self.program.buffer, names))

    def _flush(self, pending: list[Dispatch], timestamps: bool) -> None:
        if pending:
            seg = Segment(self.device, self.arena, self.queue.pool, list(pending), timestamps)
            self.segments.append(seg)
            self.plan.append(seg)
            pending.clear()

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Inputs by name (already in the storage dtype and shape) -> copies of the outputs by name."""
        for name, value in feeds.items():
            self.view(name)[...] = value
        for item in self.plan:
            if isinstance(item, Segment):
                self.queue.submit(item)
            else:
                outs = item.run([self.view(n) for n in item.reads])
                for name, value in zip(item.writes, outs):
                    self.view(name)[...] = value
        return {name: self.view(name).copy() for name in self.program.outputs}

    def profile(self) -> list[tuple[str, float]]:
        """(kernel, seconds) of the last run, from GPU timestamps (build with timestamps=True)."""
        period = self.device.info.limits["timestampPeriod"]
        return [(d.name, t) for seg in self.segments for d, t in zip(seg.dispatches, seg.timings(period))]

    def close(self) -> None:
        """Frees every Vulkan object of this runtime (idempotent; safe after a failed __init__)."""
        device = getattr(self, "device", None)
        if device is None or device.device is None:
            return
        vk.vkDeviceWaitIdle(device.device)
        queue = getattr(self, "queue", None)
        for seg in getattr(self, "segments", []):
            seg.close(queue.pool)
        self.segments = []
        for part in ("queue", "pipelines", "arena"):
            obj = getattr(self, part, None)
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

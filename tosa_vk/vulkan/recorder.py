"""Records a run of dispatches into command buffers once and re-submits them on every run.

Kernels between two host steps form a segment: one command buffer, barriers only where a dispatch touches a
buffer an earlier dispatch of the segment wrote (or writes one it read). Timestamps (optional) bracket every
dispatch, for per-op profiles.

Custom-op dispatches may bind several descriptor sets and image bindings: the segment creates their images
(tosa_vk/vulkan/images.py), copies the tensors' arena bytes into them before the dispatch and the storage images
the dispatch writes back into the arena after it, with full barriers on both sides.

A dispatch with a `predicate` is recorded inside a conditional-rendering block (VK_EXT_conditional_rendering) that
reads a uint32 at that arena offset: the device skips it when the value is 0 (batched WHILE_LOOP iterations).

Where the device has debug labels (tosa_vk/vulkan/labels.py), the command buffer is one label region and each
dispatch (with its image copies) a region inside it named by its kernel's operators; the command buffer, its
descriptor sets, pools and images are named too. All of it at recording: a submit costs the same.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from vgf.vk_enums import FORMATS

from ..errors import DeviceTimeout
from ..program import Image
from ..target import Target
from .device import Device, everything
from .images import ImageResource
from .loader import api
from .memory import Arena
from .pipelines import Pipeline

vk = api()  # the `vulkan` package; a VulkanError with the fix where there is no loader


@dataclass
class Dispatch:
    """A kernel ready to record: pipeline, buffer ranges per binding, push constants, group counts."""

    name: str
    pipeline: Pipeline
    ranges: list[tuple[int, int]]  # (offset, nbytes) in the arena, per binding
    push: bytes
    groups: tuple[int, int, int]
    reads: frozenset[tuple[int, int]]  # arena byte ranges [start, end)
    writes: frozenset[tuple[int, int]]
    # per binding, for image bindings: (image spec, VK_DESCRIPTOR_TYPE_* name, written by the dispatch); else None
    images: tuple[tuple[Image, str, bool] | None, ...] = ()
    # arena offset of a uint32: the dispatch is skipped when it is 0 (conditional rendering)
    predicate: int | None = None
    # per binding: the VK_FORMAT_* name of a uniform texel buffer view of its range, "" for other descriptors
    texels: tuple[str, ...] = ()
    shader: str = ""  # its shader's name (shaders/<chapter>/<family>), what GPU tools call its pipeline

    @property
    def layout(self):
        """(set, binding, VkDescriptorType) per binding (see pipelines.descriptor_layout)."""
        return self.pipeline.descriptor_layout or tuple(
            (0, i, vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER) for i in range(len(self.ranges))
        )


def image_bindings(kernel) -> tuple[tuple[Image, str, bool] | None, ...]:
    """Per binding of a program.Kernel: (image spec, descriptor type, written by the kernel) or None (a buffer)."""
    return tuple(
        None if img is None else (img, kernel.descriptors[i], kernel.bindings[i] in kernel.writes)
        for i, img in enumerate(kernel.images)
    )


# the pipeline stages and access masks the barriers name
COMPUTE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
HOST = vk.VK_PIPELINE_STAGE_HOST_BIT
SHADER_RW = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT


def _memory_barrier(cmd, src_stage: int, dst_stage: int, src_access: int, dst_access: int) -> None:
    """One global memory barrier: `src_access` of `src_stage` made available and visible to `dst_access` of
    `dst_stage` (no buffer or image barriers)."""
    barrier = vk.VkMemoryBarrier(
        sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, srcAccessMask=src_access, dstAccessMask=dst_access
    )
    vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, [barrier], 0, None, 0, None)


def _overlap(ranges, others) -> bool:
    return any(a < d and c < b for a, b in ranges for c, d in others)


class Segment:
    """One command buffer of dispatches, recorded once."""

    def __init__(self, device: Device, arena: Arena, pool, dispatches: list[Dispatch], timestamps: bool):
        self.device, self.dispatches = device, dispatches
        self.expected_s = 0.0  # how long its last run took (Queue.submit sleeps through most of the next one)
        vkd = device.device
        self.images: list[ImageResource] = []
        self.views: list = []  # VkBufferViews of the texel-buffer bindings
        sets_needed = max(1, sum(len(d.pipeline.set_layouts or [None]) for d in dispatches))
        counts: dict[int, int] = {}
        for d in dispatches:
            for _, _, dtype in d.layout:
                counts[dtype] = counts.get(dtype, 0) + 1
        counts = counts or {vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER: 1}
        self.descriptor_pool = vk.vkCreateDescriptorPool(
            vkd,
            vk.VkDescriptorPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                maxSets=sets_needed,
                poolSizeCount=len(counts),
                pPoolSizes=[vk.VkDescriptorPoolSize(type=t, descriptorCount=n) for t, n in sorted(counts.items())],
            ),
            None,
        )
        self.query_pool = None
        if timestamps and dispatches:
            self.query_pool = vk.vkCreateQueryPool(
                vkd,
                vk.VkQueryPoolCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                    queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
                    queryCount=len(dispatches) + 1,
                ),
                None,
            )
        self.command = vk.vkAllocateCommandBuffers(
            vkd,
            vk.VkCommandBufferAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                commandPool=pool,
                level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                commandBufferCount=1,
            ),
        )[0]
        # built once: the vulkan module's struct marshalling costs ~30 us per submit on its own
        self.submit_info = vk.VkSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1, pCommandBuffers=[self.command]
        )
        self.barriers = 0
        try:
            self._record(arena)
        except BaseException:  # e.g. an image format the device lacks: free what was made, then say why
            self.close(pool)
            raise

    def _record(self, arena: Arena) -> None:
        """The segment's command buffer: the arena staged in, each dispatch after the barrier its hazards need (and
        inside its predicate's conditional-rendering block), the arena staged out or made visible to the host."""
        cmd = self.command
        sets, images = self._descriptor_sets(arena)
        labels = self.device.labels
        if labels is not None:
            self._name(sets)
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO))
        if labels is not None:
            labels.begin(cmd, self.title)
        if arena.staged:  # device-local arena: bring the host's writes over first
            self._copy(cmd, arena.stage.buffer, arena.gpu.buffer, arena.size, COMPUTE, vk.VK_ACCESS_SHADER_READ_BIT)
        if self.query_pool is not None:
            vk.vkCmdResetQueryPool(cmd, self.query_pool, 0, len(self.dispatches) + 1)
            vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query_pool, 0)
        written: list[tuple[int, int]] = []  # arena ranges written / read since the last barrier
        read: list[tuple[int, int]] = []
        active = None  # the predicate of the open conditional-rendering block
        for i, (d, dsets, mine) in enumerate(zip(self.dispatches, sets, images)):
            if d.predicate != active:
                if active is not None:
                    self.device.end_conditional(cmd)
                if d.predicate is not None:
                    self._begin_predicate(cmd, arena, d.predicate)
                    written.clear()
                    read.clear()
                active = d.predicate
            if mine:  # images in (below): every earlier access done, arena bytes copied into the images
                written.clear()
                read.clear()
            elif _overlap(d.reads | d.writes, written) or _overlap(d.writes, read):  # RAW / WAW / WAR: wait
                self._barrier(cmd)
                written.clear()
                read.clear()
            written.extend(d.writes)
            read.extend(d.reads)
            if labels is not None:  # the dispatch's region: its operators (images: with the copies)
                labels.begin(cmd, d.name)
            if mine:  # images in: every earlier access done, arena bytes copied into the images
                self._images_in(cmd, arena, mine)
            self._dispatch(cmd, i, d, dsets)
            if any(w for _, _, w in mine):  # storage images out: back into the arena, visible to what follows
                self._images_out(cmd, arena, mine)
                written.clear()
                read.clear()
            if labels is not None:
                labels.end(cmd)
        if active is not None:
            self.device.end_conditional(cmd)
        if arena.staged:  # and the results back to the host-visible twin
            _memory_barrier(cmd, COMPUTE, TRANSFER, vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT)
            self._copy(cmd, arena.gpu.buffer, arena.stage.buffer, arena.size, HOST, vk.VK_ACCESS_HOST_READ_BIT)
        else:
            self._barrier(cmd, host=True)
        if labels is not None:
            labels.end(cmd)
        vk.vkEndCommandBuffer(cmd)

    @property
    def title(self) -> str:
        """What GPU tools call this command buffer: its kernels, first and last."""
        ops = [d.name for d in self.dispatches]
        if not ops:
            return "tosa_vk: no kernels"
        span = ops[0] if len(ops) == 1 else f"{ops[0]} .. {ops[-1]}"
        return f"tosa_vk: {len(ops)} kernel{'s' * (len(ops) > 1)}, {span}"

    def _name(self, sets: list[list]) -> None:
        """Names the command buffer, its pools, each dispatch's descriptor sets and images for GPU tools."""
        name = self.device.name
        name(vk.VK_OBJECT_TYPE_COMMAND_BUFFER, self.command, self.title)
        name(vk.VK_OBJECT_TYPE_DESCRIPTOR_POOL, self.descriptor_pool, self.title)
        name(vk.VK_OBJECT_TYPE_QUERY_POOL, self.query_pool, f"timestamps of {self.title}")
        for d, dsets in zip(self.dispatches, sets):
            for index, dset in enumerate(dsets):
                name(vk.VK_OBJECT_TYPE_DESCRIPTOR_SET, dset, f"{d.name}: set {index}")
        for res in self.images:
            for kind, handle in (
                (vk.VK_OBJECT_TYPE_IMAGE, res.image),
                (vk.VK_OBJECT_TYPE_DEVICE_MEMORY, res.memory),
                (vk.VK_OBJECT_TYPE_IMAGE_VIEW, res.view),
                (vk.VK_OBJECT_TYPE_SAMPLER, res.sampler),
            ):
                name(kind, handle, res.label)
        for view in self.views:
            name(vk.VK_OBJECT_TYPE_BUFFER_VIEW, view, "tosa_vk texel view of the arena")

    def _descriptor_sets(self, arena: Arena) -> tuple[list[list], list[list[tuple[ImageResource, int, bool]]]]:
        """Each dispatch's descriptor sets (by set index), written: its arena ranges as storage buffers, texel-buffer
        views or images; and each dispatch's images (resource, arena offset, whether the dispatch writes it)."""
        vkd = self.device.device
        layouts = [d.pipeline.set_layouts or [d.pipeline.set_layout] for d in self.dispatches]
        flat = []
        if self.dispatches:
            flat = vk.vkAllocateDescriptorSets(
                vkd,
                vk.VkDescriptorSetAllocateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                    descriptorPool=self.descriptor_pool,
                    descriptorSetCount=sum(map(len, layouts)),
                    pSetLayouts=[s for group in layouts for s in group],
                ),
            )
        sets, at = [], 0
        for group in layouts:  # the descriptor sets of each dispatch, by set index
            sets.append(list(flat[at : at + len(group)]))
            at += len(group)
        writes = []
        images: list[list[tuple[ImageResource, int, bool]]] = []
        for d, dsets in zip(self.dispatches, sets):
            mine = []
            for i, ((offset, nbytes), (set_index, binding, dtype)) in enumerate(zip(d.ranges, d.layout)):
                image = d.images[i] if i < len(d.images) else None
                texel = d.texels[i] if i < len(d.texels) else ""
                if texel:  # a texel-buffer view of the range
                    self.views.append(self._view(arena, texel, offset, nbytes))
                    info = {"pTexelBufferView": [self.views[-1]]}
                elif image is None:
                    buffer = vk.VkDescriptorBufferInfo(buffer=arena.buffer, offset=offset, range=nbytes)
                    info = {"pBufferInfo": [buffer]}
                else:
                    spec, descriptor, image_written = image
                    res = ImageResource(self.device, spec, descriptor, d.name)
                    res.label = f"{d.name}: binding {i} ({spec.format} image)"
                    self.images.append(res)
                    mine.append((res, offset, image_written))
                    info = {"pImageInfo": [res.descriptor_info()]}
                writes.append(
                    vk.VkWriteDescriptorSet(
                        sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                        dstSet=dsets[set_index],
                        dstBinding=binding,
                        descriptorCount=1,
                        descriptorType=dtype,
                        **info,
                    )
                )
            images.append(mine)
        if writes:
            vk.vkUpdateDescriptorSets(vkd, len(writes), writes, 0, None)
        return sets, images

    def _begin_predicate(self, cmd, arena: Arena, predicate: int) -> None:
        """Opens a conditional-rendering block on the predicate word at arena offset `predicate`, after every earlier
        write (the predicate's too) is visible to the test and to the dispatches inside."""
        _memory_barrier(
            cmd,
            COMPUTE,
            vk.VK_PIPELINE_STAGE_CONDITIONAL_RENDERING_BIT_EXT | COMPUTE,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_CONDITIONAL_RENDERING_READ_BIT_EXT | SHADER_RW,
        )
        self.device.begin_conditional(
            cmd,
            vk.VkConditionalRenderingBeginInfoEXT(
                sType=vk.VK_STRUCTURE_TYPE_CONDITIONAL_RENDERING_BEGIN_INFO_EXT,
                buffer=arena.buffer,
                offset=predicate,
            ),
        )

    def _dispatch(self, cmd, i: int, d: Dispatch, dsets: list) -> None:
        """Dispatch `i`: its pipeline, descriptor sets and push constants bound, its grid dispatched, timed."""
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline.pipeline)
        vk.vkCmdBindDescriptorSets(
            cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline.layout, 0, len(dsets), dsets, 0, None
        )
        if d.push:
            vk.vkCmdPushConstants(
                cmd, d.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(d.push), vk.ffi.from_buffer(d.push)
            )
        vk.vkCmdDispatch(cmd, *d.groups)
        if self.query_pool is not None:
            vk.vkCmdWriteTimestamp(cmd, COMPUTE, self.query_pool, i + 1)

    def _images_in(self, cmd, arena: Arena, images: list[tuple[ImageResource, int, bool]]) -> None:
        """Before an image dispatch: wait for every earlier access, copy the arena bytes of the images it reads
        into them, and put every image in the layout the shader uses."""
        compute, transfer = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        shader_rw = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        undefined, dst = vk.VK_IMAGE_LAYOUT_UNDEFINED, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL
        copied = [(res, offset) for res, offset, written in images if not written]
        made = [res for res, _, written in images if written]  # outputs: contents come from the dispatch
        vk.vkCmdPipelineBarrier(
            cmd,
            compute | transfer,
            compute | transfer,
            0,
            1,
            [
                vk.VkMemoryBarrier(
                    sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                    srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                    dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT | shader_rw,
                )
            ],
            0,
            None,
            len(images),
            [res.barrier(0, vk.VK_ACCESS_TRANSFER_WRITE_BIT, undefined, dst) for res, _ in copied]
            + [res.barrier(0, shader_rw, undefined, res.layout) for res in made],
        )
        for res, offset in copied:
            vk.vkCmdCopyBufferToImage(cmd, arena.buffer, res.image, dst, 1, [res.region(offset)])
        if copied:
            vk.vkCmdPipelineBarrier(
                cmd,
                transfer,
                compute,
                0,
                0,
                None,
                0,
                None,
                len(copied),
                [res.barrier(vk.VK_ACCESS_TRANSFER_WRITE_BIT, shader_rw, dst, res.layout) for res, _ in copied],
            )
        self.barriers += 1

    def _images_out(self, cmd, arena: Arena, images: list[tuple[ImageResource, int, bool]]) -> None:
        """After an image dispatch: copy the storage images it wrote back into the arena, visible to all later
        dispatches, copies and the host."""
        compute, transfer = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        src = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
        out = [(res, offset) for res, offset, written in images if written]
        vk.vkCmdPipelineBarrier(
            cmd,
            compute,
            transfer | compute,
            0,
            1,
            [
                vk.VkMemoryBarrier(
                    sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                    srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                    dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT
                    | vk.VK_ACCESS_SHADER_READ_BIT
                    | vk.VK_ACCESS_SHADER_WRITE_BIT,
                )
            ],
            0,
            None,
            len(out),
            [
                res.barrier(vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT, res.layout, src)
                for res, _ in out
            ],
        )
        for res, offset in out:
            vk.vkCmdCopyImageToBuffer(cmd, res.image, src, arena.buffer, 1, [res.region(offset)])
        _memory_barrier(
            cmd,
            transfer,
            compute | transfer | HOST,
            vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            SHADER_RW | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT | vk.VK_ACCESS_HOST_READ_BIT,
        )
        self.barriers += 1

    @staticmethod
    def _copy(cmd, src, dst, size: int, dst_stage: int, dst_access: int) -> None:
        vk.vkCmdCopyBuffer(cmd, src, dst, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=size)])
        _memory_barrier(cmd, TRANSFER, dst_stage, vk.VK_ACCESS_TRANSFER_WRITE_BIT, dst_access)

    def _view(self, arena: Arena, texel: str, offset: int, nbytes: int):
        """A view of the arena range as texels of format `texel` (the last one padded into the alignment gap; on
        lavapipe rounded up further, Target.texel_view_quantum: the shader reads only its tensor's part)."""
        size = FORMATS[texel].size
        nbytes = view_bytes(self.device.info.target, offset, nbytes, size, arena.size)
        return vk.vkCreateBufferView(
            self.device.device,
            vk.VkBufferViewCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                buffer=arena.buffer,
                format=getattr(vk, texel),
                offset=offset,
                range=nbytes,
            ),
            None,
        )

    def _barrier(self, cmd, host: bool = False) -> None:
        """Every earlier dispatch's writes visible to the next dispatches (counted), or to the host."""
        if host:
            _memory_barrier(cmd, COMPUTE, HOST, vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        else:
            _memory_barrier(cmd, COMPUTE, COMPUTE, vk.VK_ACCESS_SHADER_WRITE_BIT, SHADER_RW)
            self.barriers += 1

    def timings(self, period_ns: float) -> list[float]:
        """Seconds per dispatch of the last submit (needs timestamps=True)."""
        if self.query_pool is None:
            return []
        n = len(self.dispatches) + 1
        data = vk.ffi.new("uint64_t[]", n)
        vk.vkGetQueryPoolResults(
            self.device.device,
            self.query_pool,
            0,
            n,
            n * 8,
            data,
            8,
            vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT,
        )
        stamps = np.frombuffer(vk.ffi.buffer(data), dtype=np.uint64).astype(np.float64)
        return list(np.diff(stamps) * period_ns * 1e-9)

    def close(self, pool) -> None:
        vkd = self.device.device
        vk.vkFreeCommandBuffers(vkd, pool, 1, [self.command])
        for res in self.images:
            res.close()
        self.images = []
        for view in self.views:
            vk.vkDestroyBufferView(vkd, view, None)
        self.views = []
        vk.vkDestroyDescriptorPool(vkd, self.descriptor_pool, None)
        if self.query_pool is not None:
            vk.vkDestroyQueryPool(vkd, self.query_pool, None)


def view_bytes(target: Target, offset: int, nbytes: int, texel: int, room: int) -> int:
    """The byte size of a texel view of `nbytes` at `offset` of an arena of `room` bytes: whole texels of `texel`
    bytes, rounded up to the target's texel_view_quantum from 256 bytes on where the arena and the texel limit
    allow it (on lavapipe: one compiled shader for every size, Target.texel_view_quantum)."""
    nbytes = -(-nbytes // texel) * texel
    quantum = target.texel_view_quantum if nbytes >= 256 else 1
    rounded = -(-nbytes // quantum) * quantum
    if offset + rounded <= room and rounded // texel <= target.max_texel_buffer_elements:
        return rounded
    return nbytes


WAIT_SLICE_NS = 100_000_000  # one fence wait: 100 ms
# How a run waits for its command buffer: waking from vkWaitForFences costs ~70 us and more on lavapipe (its queue
# thread signals the waiter; a similar latency on GPU drivers), so a short run is polled to its end: each segment
# remembers how long its last run took, and one that took under POLL_MAX_S is polled until TAIL_S after that, then
# waited for asleep. Longer runs are waited for asleep at once: polling would burn a core that lavapipe's workers
# need, for a wake-up that costs under 1 % of them. Against the former fixed 0.3 ms poll (medians of 100 runs,
# three rounds; lavapipe, 2 cores): lstm_unrolled_fp32 1.03-1.30 -> ~0.5-0.7 ms (the 0.3 ms poll ended just before
# the work did, and then paid the wake-up).
# Not on a lavapipe device without compute threads (tosa_vk/vulkan/threads.py): its queue thread runs every
# workgroup, and a polling thread takes a core from it (alternated batches, load 7: lstm_int8 1.56 -> 0.77 ms,
# gru_fp32 0.51 -> 0.44 ms, p90 2.6 -> 1.1 ms and 1.1 -> 0.6 ms, process CPU per run down a third).
POLL_MAX_S = 0.002
TAIL_S = 0.001
_raw = vk.lib  # the loader's entry points (cffi), without the vulkan module's argument conversion


def _check(result: int) -> None:
    """A raw call's VkResult as the vulkan module's exception (its wrappers raise the same)."""
    if result != vk.VK_SUCCESS:
        raise vk.exception_codes[result]()


class Queue:
    """Submits command buffers on the device's compute queue and waits for them."""

    def __init__(self, device: Device):
        self.device = device
        vkd = device.device
        self.pool = vk.vkCreateCommandPool(
            vkd,
            vk.VkCommandPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                queueFamilyIndex=device.queue_family,
                flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            ),
            None,
        )
        self.fence = vk.vkCreateFence(vkd, vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
        self._fences = vk.ffi.new("VkFence[1]", [self.fence])  # what the raw calls take (submit)
        self.polls = device.threads != 0  # short runs polled to their end (POLL_MAX_S)
        self.transfers: dict[str, Transfer] = {}  # record()'s command buffers, made on first use
        self.pending = False  # a submitted command buffer not yet seen finished (a timed-out or interrupted wait)
        self.stopped = False  # set from another thread (Runtime.stop): submit's wait gives up at its next slice

    def finished(self, timeout_s: float) -> bool:
        """Whether the last submitted command buffer has finished, waiting at most `timeout_s`."""
        if self.pending:
            try:
                vk.vkWaitForFences(self.device.device, 1, [self.fence], vk.VK_TRUE, int(timeout_s * 1e9))
            except vk.VkTimeout:
                return False
            self.pending = False
        return True

    def submit(
        self, segment: Segment, timeout_s: float | None = None, before: Transfer | None = None, after=None
    ) -> None:
        """Runs one command buffer and waits for it, at most `timeout_s` seconds (VulkanError after that).
        `before` / `after`: copies (record()) run in the same submission, before and after it."""
        vkd, fence = self.device.device, self.fence
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        info = segment.submit_info
        if before is not None or after is not None:
            commands = [t.command for t in (before, segment, after) if t is not None]
            info = vk.VkSubmitInfo(
                sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=len(commands), pCommandBuffers=commands
            )
        # the driver's functions called directly (_raw): the vulkan module's wrappers convert every argument and
        # raise an exception per VK_NOT_READY, ~5-30 us a call against ~0.3 us
        with self.device.queue_lock:
            _check(_raw.vkQueueSubmit(self.device.queue, 1, vk.ffi.addressof(info), fence))
        self.pending = True
        start = time.perf_counter()
        poll = segment.expected_s + TAIL_S if self.polls and segment.expected_s < POLL_MAX_S else 0.0
        status = _raw.vkGetFenceStatus
        while time.perf_counter() - start < poll:  # a short run: polled to its end
            result = status(vkd, fence)
            if result == vk.VK_SUCCESS:
                segment.expected_s = time.perf_counter() - start
                self.pending = False
                _check(_raw.vkResetFences(vkd, 1, self._fences))
                return
            if result != vk.VK_NOT_READY:
                _check(result)
        while True:  # in slices, so Ctrl-C (KeyboardInterrupt) is handled between them
            left = WAIT_SLICE_NS if deadline is None else max(0, int((deadline - time.monotonic()) * 1e9))
            result = _raw.vkWaitForFences(vkd, 1, self._fences, vk.VK_TRUE, min(WAIT_SLICE_NS, left))
            if result == vk.VK_SUCCESS:
                break
            if result != vk.VK_TIMEOUT:
                _check(result)
            if self.stopped:
                raise DeviceTimeout("stopped") from None
            if deadline is not None and time.monotonic() >= deadline:
                raise DeviceTimeout(
                    f"the device did not finish a command buffer within {timeout_s:.3g} s "
                    f"(first kernel: {segment.dispatches[0].name})"
                ) from None
        segment.expected_s = time.perf_counter() - start
        self.pending = False
        _check(_raw.vkResetFences(vkd, 1, self._fences))

    def record(self, which: str, copies: list[tuple]) -> Transfer:
        """(source buffer, destination buffer, source offset, destination offset, bytes) copies recorded into the
        queue's `which` ("in" / "out") transfer command buffer, between full memory barriers (after the queue's
        earlier work and the host's writes; before the host's reads and later work). Run it with submit(), alone
        or before / after a segment in the same submission."""
        vkd = self.device.device
        if which not in self.transfers:
            self.transfers[which] = Transfer(
                vk.vkAllocateCommandBuffers(
                    vkd,
                    vk.VkCommandBufferAllocateInfo(
                        sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                        commandPool=self.pool,
                        level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                        commandBufferCount=1,
                    ),
                )[0]
            )
            copies_name = f"tosa_vk: device tensor copies {which}"
            self.device.name(vk.VK_OBJECT_TYPE_COMMAND_BUFFER, self.transfers[which].command, copies_name)
        transfer = self.transfers[which]  # recorded each time: the buffers are new (and a destroyed buffer's
        cmd = transfer.command  # handle may come back for another one, so a recording is never reused)
        vk.vkResetCommandBuffer(cmd, 0)
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO))
        everything(cmd)
        for src, dst, at, to, size in copies:
            vk.vkCmdCopyBuffer(cmd, src, dst, 1, [vk.VkBufferCopy(srcOffset=at, dstOffset=to, size=size)])
        everything(cmd)
        vk.vkEndCommandBuffer(cmd)
        return transfer

    def close(self) -> None:
        vkd = self.device.device
        vk.vkDestroyFence(vkd, self.fence, None)
        vk.vkDestroyCommandPool(vkd, self.pool, None)  # frees the transfer command buffer too


class Transfer:
    """A Queue's command buffer of copies (Queue.record), with what Queue.submit reads of a Segment."""

    def __init__(self, command):
        self.command = command
        self.submit_info = vk.VkSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1, pCommandBuffers=[command]
        )
        self.expected_s = 0.0
        self.dispatches = [SimpleNamespace(name="device tensor copies")]  # what a timeout names

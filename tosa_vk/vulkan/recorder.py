"""Records a run of dispatches into command buffers once and re-submits them on every run.

Kernels between two host steps form a segment: one command buffer, barriers only where a dispatch touches a
buffer an earlier dispatch of the segment wrote (or writes one it read). Timestamps (optional) bracket every
dispatch, for per-op profiles.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import vulkan as vk

from .device import Device
from .memory import Arena
from .pipelines import Pipeline


@dataclass
class Dispatch:
    """A kernel ready to record: pipeline, buffer ranges per binding, push constants, group counts."""
    name: str
    pipeline: Pipeline
    ranges: list[tuple[int, int]]  # (offset, nbytes) in the arena, per binding
    push: bytes
    groups: tuple[int, int, int]
    reads: frozenset[tuple[int, int]]   # arena byte ranges [start, end)
    writes: frozenset[tuple[int, int]]


def _overlap(ranges, others) -> bool:
    return any(a < d and c < b for a, b in ranges for c, d in others)


class Segment:
    """One command buffer of dispatches, recorded once."""

    def __init__(self, device: Device, arena: Arena, pool, dispatches: list[Dispatch], timestamps: bool):
        self.device, self.dispatches = device, dispatches
        vkd = device.device
        sets_needed = max(1, len(dispatches))
        self.descriptor_pool = vk.vkCreateDescriptorPool(vkd, vk.VkDescriptorPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, maxSets=sets_needed, poolSizeCount=1,
            pPoolSizes=[vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                descriptorCount=max(1, sum(len(d.ranges) for d in dispatches)))]),
            None)
        self.query_pool = None
        if timestamps and dispatches:
            self.query_pool = vk.vkCreateQueryPool(vkd, vk.VkQueryPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
                queryCount=len(dispatches) + 1), None)
        self.command = vk.vkAllocateCommandBuffers(vkd, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=pool,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        self.barriers = 0
        self._record(arena)

    def _record(self, arena: Arena) -> None:
        vkd, cmd = self.device.device, self.command
        sets = []
        if self.dispatches:
            sets = vk.vkAllocateDescriptorSets(vkd, vk.VkDescriptorSetAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, descriptorPool=self.descriptor_pool,
                descriptorSetCount=len(self.dispatches),
                pSetLayouts=[d.pipeline.set_layout for d in self.dispatches]))
        writes = []
        for d, dset in zip(self.dispatches, sets):
            for i, (offset, nbytes) in enumerate(d.ranges):
                writes.append(vk.VkWriteDescriptorSet(
                    sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, dstSet=dset, dstBinding=i, descriptorCount=1,
                    descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                    pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=arena.buffer, offset=offset, range=nbytes)]))
        if writes:
            vk.vkUpdateDescriptorSets(vkd, len(writes), writes, 0, None)
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO))
        if arena.staged:  # device-local arena: bring the host's writes over first
            self._copy(cmd, arena.stage.buffer, arena.gpu.buffer, arena.size,
                       vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_ACCESS_SHADER_READ_BIT)
        if self.query_pool is not None:
            vk.vkCmdResetQueryPool(cmd, self.query_pool, 0, len(self.dispatches) + 1)
            vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query_pool, 0)
        written: list[tuple[int, int]] = []
        read: list[tuple[int, int]] = []
        for i, (d, dset) in enumerate(zip(self.dispatches, sets)):
            if _overlap(d.reads | d.writes, written) or _overlap(d.writes, read):  # RAW / WAW / WAR: wait
                self._barrier(cmd)
                written.clear()
                read.clear()
            written.extend(d.writes)
            read.extend(d.reads)
            vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline.pipeline)
            vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline.layout, 0, 1, [dset], 0,
                                       None)
            if d.push:
                vk.vkCmdPushConstants(cmd, d.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(d.push),
                                      vk.ffi.from_buffer(d.push))
            vk.vkCmdDispatch(cmd, *d.groups)
            if self.query_pool is not None:
                vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, self.query_pool, i + 1)
        if arena.staged:  # and the results back to the host-visible twin
            vk.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                                    0, 1, [vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                                              srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                                                              dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT)],
                                    0, None, 0, None)
            self._copy(cmd, arena.gpu.buffer, arena.stage.buffer, arena.size, vk.VK_PIPELINE_STAGE_HOST_BIT,
                       vk.VK_ACCESS_HOST_READ_BIT)
        else:
            self._barrier(cmd, host=True)
        vk.vkEndCommandBuffer(cmd)

    @staticmethod
    def _copy(cmd, src, dst, size: int, dst_stage: int, dst_access: int) -> None:
        vk.vkCmdCopyBuffer(cmd, src, dst, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=size)])
        vk.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1, [vk.VkMemoryBarrier(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            dstAccessMask=dst_access)], 0, None, 0, None)

    def _barrier(self, cmd, host: bool = False) -> None:
        dst_stage = vk.VK_PIPELINE_STAGE_HOST_BIT if host else vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        dst_access = vk.VK_ACCESS_HOST_READ_BIT if host else (vk.VK_ACCESS_SHADER_READ_BIT
                                                              | vk.VK_ACCESS_SHADER_WRITE_BIT)
        vk.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dst_stage, 0, 1, [vk.VkMemoryBarrier(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
            dstAccessMask=dst_access)], 0, None, 0, None)
        if not host:
            self.barriers += 1

    def timings(self, period_ns: float) -> list[float]:
        """Seconds per dispatch of the last submit (needs timestamps=True)."""
        if self.query_pool is None:
            return []
        n = len(self.dispatches) + 1
        data = vk.ffi.new("uint64_t[]", n)
        vk.vkGetQueryPoolResults(self.device.device, self.query_pool, 0, n, n * 8, data, 8,
                                 vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        stamps = np.frombuffer(vk.ffi.buffer(data), dtype=np.uint64).astype(np.float64)
        return list(np.diff(stamps) * period_ns * 1e-9)

    def close(self, pool) -> None:
        vkd = self.device.device
        vk.vkFreeCommandBuffers(vkd, pool, 1, [self.command])
        vk.vkDestroyDescriptorPool(vkd, self.descriptor_pool, None)
        if self.query_pool is not None:
            vk.vkDestroyQueryPool(vkd, self.query_pool, None)


class Queue:
    """Submits command buffers on the device's compute queue and waits for them."""

    def __init__(self, device: Device):
        self.device = device
        vkd = device.device
        self.pool = vk.vkCreateCommandPool(vkd, vk.VkCommandPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=device.queue_family,
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT), None)
        self.fence = vk.vkCreateFence(vkd, vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)

    def submit(self, segment: Segment) -> None:
        vkd = self.device.device
        vk.vkQueueSubmit(self.device.queue, 1, [vk.VkSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1, pCommandBuffers=[segment.command])],
            self.fence)
        vk.vkWaitForFences(vkd, 1, [self.fence], vk.VK_TRUE, 0xFFFFFFFFFFFFFFFF)
        vk.vkResetFences(vkd, 1, [self.fence])

    def close(self) -> None:
        vkd = self.device.device
        vk.vkDestroyFence(vkd, self.fence, None)
        vk.vkDestroyCommandPool(vkd, self.pool, None)

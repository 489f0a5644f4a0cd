"""Device memory: an Arena is one storage buffer that many tensors share at aligned offsets.

Where a memory type is both host-visible and device-local (lavapipe, integrated GPUs) the arena is mapped once and
tensors are numpy views of it: inputs are written in place and outputs read in place, no staging copies. Elsewhere
(discrete GPUs) the arena is device-local and a host-visible twin of it stages uploads and downloads; the
Recorder copies the ranges a run needs.
"""

from __future__ import annotations

import threading

import numpy as np

from .device import Device, VulkanError
from .loader import api

vk = api()  # the `vulkan` package; a VulkanError with the fix where there is no loader

_USAGE = (
    vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
    | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT  # kernels read inputs through texel views (lower/texels.py)
    | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
    | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
)
HOST = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT


def align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


class _Allocation:
    """A VkBuffer with its own VkDeviceMemory of the first memory type having `flags`."""

    def __init__(self, device: Device, size: int, flags: int):
        self.device = device
        self.size = max(size, 16)
        vkd = device.device
        limit = device.info.limits["maxMemoryAllocationSize"]
        if self.size > limit:  # before any Vulkan call: drivers answer oversized requests unpredictably
            raise VulkanError(
                f"the tensors need {self.size} bytes of device memory in one allocation; {device.info.name} "
                f"allows {limit} (maxMemoryAllocationSize): split the graph or run it with backend='reference'"
            )
        self.buffer = vk.vkCreateBuffer(
            vkd,
            vk.VkBufferCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                size=self.size,
                usage=_USAGE
                | (
                    vk.VK_BUFFER_USAGE_CONDITIONAL_RENDERING_BIT_EXT
                    if device.info.features.get("conditionalRendering")
                    else 0
                ),
                sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
            ),
            None,
        )
        req = vk.vkGetBufferMemoryRequirements(vkd, self.buffer)
        props = memory_properties(device)
        types = [
            i
            for i in range(props.memoryTypeCount)
            if req.memoryTypeBits & (1 << i) and (props.memoryTypes[i].propertyFlags & flags) == flags
        ]
        if not types:
            vk.vkDestroyBuffer(vkd, self.buffer, None)
            raise VulkanError(f"{device.info.name} has no memory type with flags {flags:#x} for a storage buffer")
        heap = props.memoryHeaps[props.memoryTypes[types[0]].heapIndex].size
        if req.size > heap:
            vk.vkDestroyBuffer(vkd, self.buffer, None)
            raise VulkanError(
                f"the tensors need {req.size} bytes of device memory; the memory heap of {device.info.name} "
                f"holds {heap}: split the graph or run it with backend='reference'"
            )
        try:
            self.memory = vk.vkAllocateMemory(
                vkd,
                vk.VkMemoryAllocateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, allocationSize=req.size, memoryTypeIndex=types[0]
                ),
                None,
            )
        except vk.VkError as err:
            vk.vkDestroyBuffer(vkd, self.buffer, None)
            raise VulkanError(
                f"cannot allocate {req.size} bytes of device memory on {device.info.name}: {type(err).__name__}"
            ) from None
        vk.vkBindBufferMemory(vkd, self.buffer, self.memory, 0)
        self.host: np.ndarray | None = None
        if flags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT:
            mapped = vk.vkMapMemory(vkd, self.memory, 0, self.size, 0)
            self.host = np.frombuffer(mapped, dtype=np.uint8, count=self.size)

    def name(self, text: str) -> None:
        """Names the buffer and its memory for GPU tools."""
        self.device.name(vk.VK_OBJECT_TYPE_BUFFER, self.buffer, text)
        self.device.name(vk.VK_OBJECT_TYPE_DEVICE_MEMORY, self.memory, text)

    def close(self) -> None:
        if self.buffer is None:
            return
        vkd = self.device.device
        if self.host is not None:
            self.host = None
            vk.vkUnmapMemory(vkd, self.memory)
        vk.vkDestroyBuffer(vkd, self.buffer, None)
        vk.vkFreeMemory(vkd, self.memory, None)
        self.buffer = self.memory = None


def memory_properties(device: Device):
    """The device's VkPhysicalDeviceMemoryProperties, asked once per device (a device tensor per output and run
    allocates memory: the query's marshalling costs more than the allocation on lavapipe)."""
    found = getattr(device, "memory_properties", None)
    if found is None:
        found = device.memory_properties = vk.vkGetPhysicalDeviceMemoryProperties(device.physical)
    return found


def host_visible_device_local(device: Device) -> bool:
    found = getattr(device, "unified_memory", None)  # asked once per device
    if found is None:
        props = memory_properties(device)
        found = any(
            (props.memoryTypes[i].propertyFlags & (HOST | LOCAL)) == (HOST | LOCAL)
            for i in range(props.memoryTypeCount)
        )
        device.unified_memory = found
    return found


class Arena:
    """`size` bytes of device memory for tensors; `view(offset, shape, dtype)` is a numpy window onto it.

    `staged` is True when the device memory is not host-visible: views then show the staging twin, and each
    recorded segment copies the twin to the device first and back last (tosa_vk/vulkan/recorder.py).
    """

    def __init__(self, device: Device, size: int, force_staging: bool = False):
        self.size = size
        self.device = device
        self.staged = force_staging or not host_visible_device_local(device)
        if self.staged:
            self.gpu = _Allocation(device, size, LOCAL if not force_staging else HOST)
            self.stage = _Allocation(device, size, HOST)
        else:
            self.gpu = self.stage = _Allocation(device, size, HOST | LOCAL)
        if device.labels is not None:  # names for GPU tools (tosa_vk/vulkan/labels.py)
            self.gpu.name(f"tosa_vk arena ({size} bytes)")
            if self.staged:
                self.stage.name(f"tosa_vk arena ({size} bytes), host-visible staging twin")

    @property
    def buffer(self):
        return self.gpu.buffer

    def view(self, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        host = self.stage.host
        assert host is not None, "the stage allocation is host-visible, so mapped until close()"
        return host[offset : offset + count * dtype.itemsize].view(dtype).reshape(shape)

    def close(self) -> None:
        self.gpu.close()
        if self.stage is not self.gpu:
            self.stage.close()


class DeviceBuffer:
    """One tensor's bytes in device memory of its own (a device tensor, tosa_vk/backends/tensor.py): `nbytes` in a
    buffer of its own allocation, host-visible where the device has such memory (lavapipe, integrated GPUs: read in
    place) else device-local (discrete GPUs: `numpy()` copies it down through a staging buffer).

    Lifetime: `release()` frees it (idempotent, any thread); the device closing first copies every buffer still
    held down to the host (`Device.close` calls `evacuate`), so a buffer outliving its device keeps its values
    and never touches a destroyed device: `device` is then None and `numpy()` returns the host copy."""

    def __init__(self, device: Device, nbytes: int, shape: tuple[int, ...], dtype: np.dtype, staged: bool = False):
        self.shape, self.dtype, self.nbytes = tuple(shape), np.dtype(dtype), int(nbytes)
        # staged: device-local memory (forced for tests on a device whose memory is all host-visible)
        self.staged = staged or not host_visible_device_local(device)
        self._lock = threading.Lock()
        self._host: np.ndarray | None = None  # the values, once evacuated
        flags = HOST if staged else LOCAL if self.staged else HOST | LOCAL
        self.allocation: _Allocation | None = _Allocation(device, nbytes, flags)
        self.device: Device | None = device
        device.buffers.add(self)

    @property
    def buffer(self):
        """The VkBuffer (a TosaError once released or evacuated: its device is gone)."""
        allocation = self.allocation
        if allocation is None:
            raise VulkanError("this device tensor holds no device memory: it was released or its device closed")
        return allocation.buffer

    def numpy(self) -> np.ndarray:
        """A host copy of the values."""
        with self._lock:
            if self._host is not None:
                return self._host.copy()
            allocation = self.allocation
            if allocation is None:
                raise VulkanError("this device tensor was released")
            assert self.device is not None
            if not self.staged:
                assert allocation.host is not None
                raw = allocation.host[: self.nbytes].copy()
            else:
                raw = download(self.device, allocation.buffer, self.nbytes)
        return raw.view(self.dtype).reshape(self.shape)

    def evacuate(self) -> None:
        """The device is closing: the values copied to the host, the device memory freed."""
        if self.allocation is not None:
            values = self.numpy()
            with self._lock:
                self._host = values
                self._free()

    def release(self) -> None:
        with self._lock:
            self._host = None
            self._free()

    def _free(self) -> None:
        allocation, self.allocation = self.allocation, None
        device, self.device = self.device, None
        if allocation is not None and device is not None and device.device is not None:
            device.buffers.discard(self)
            allocation.close()

    @property
    def released(self) -> bool:
        return self.allocation is None and self._host is None

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # at interpreter shutdown the Vulkan module may be gone already
            pass


def download(device: Device, buffer, nbytes: int) -> np.ndarray:
    """`nbytes` of a buffer the host cannot map, copied through a host-visible staging buffer (uint8)."""
    stage = _Allocation(device, nbytes, HOST)
    try:
        region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=max(nbytes, 1))
        device.submit_once(lambda cmd: vk.vkCmdCopyBuffer(cmd, buffer, stage.buffer, 1, [region]))
        assert stage.host is not None
        return stage.host[:nbytes].copy()
    finally:
        stage.close()

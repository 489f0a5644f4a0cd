"""The Vulkan layer: devices, memory, shaders, command recording. Imports nothing from the compiler side."""

from .device import Device, DeviceInfo, VulkanError, enumerate_devices, select, visible

__all__ = ["Device", "DeviceInfo", "VulkanError", "enumerate_devices", "select", "visible"]

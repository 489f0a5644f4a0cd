"""The Vulkan layer: devices, memory, shaders, command recording. Imports nothing from the compiler side.

The device side (Device, enumerate_devices, ...) is imported on first use: it loads libvulkan (loader.py), which the
GLSL compilers and the SPIR-V cache (glsl_compiler.py, shaders.py, builtin.py) do not need, so `tosa-vk cache`,
`tosa-vk doctor` and VGF export work on a machine without Vulkan."""

from typing import TYPE_CHECKING, Any

from ..errors import VulkanError

if TYPE_CHECKING:
    from .device import Device, DeviceInfo, enumerate_devices, select, visible

__all__ = ["Device", "DeviceInfo", "VulkanError", "enumerate_devices", "select", "visible"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import device

        return getattr(device, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Names and labels for GPU tools (VK_EXT_debug_utils): RenderDoc, Nsight Graphics and Radeon GPU Profiler captures
show each dispatch inside a command-buffer label naming its operators ("CONV2D #3 'c' + RESCALE #4 'r'") and name
the pipelines, shader modules, arenas, descriptor sets and command buffers a model made.

On by default where the instance offers the extension (the Vulkan loader does); TOSA_VK_DEBUG_LABELS=0 turns it
off. The functions are looked up once per instance (vkGetInstanceProcAddr); where the extension is absent or off,
`Device.labels` is None and nothing is called. Everything is recorded or named once, when a model loads: a run
re-submits the recorded command buffers and costs the same with or without labels.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from .loader import api

vk = api()  # the `vulkan` package; a VulkanError with the fix where there is no loader

ENV = "TOSA_VK_DEBUG_LABELS"
EXTENSION = vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME
MAX_CHARS = 1000  # a label or name past this is cut (a fused kernel of a big model can name many operators)


def requested() -> bool:
    """Whether TOSA_VK_DEBUG_LABELS leaves labels on (unset or anything but 0 / off / false / no)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "false", "no")


@functools.cache
def offered() -> bool:
    """Whether the Vulkan instance offers VK_EXT_debug_utils (asked once per process)."""
    try:
        return any(e.extensionName == EXTENSION for e in vk.vkEnumerateInstanceExtensionProperties(None))
    except (vk.VkError, OSError):
        return False


def _handle(handle: Any) -> int:
    """A Vulkan handle (a cffi pointer) as the uint64 the object-name struct takes."""
    return int(vk.ffi.cast("uint64_t", handle))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 3] + "..."


class Labels:
    """The debug-utils functions of one instance; `name` names an object, `begin` / `end` bracket commands."""

    def __init__(self, instance: Any):
        self.set_name = vk.vkGetInstanceProcAddr(instance, "vkSetDebugUtilsObjectNameEXT")
        self.begin_label = vk.vkGetInstanceProcAddr(instance, "vkCmdBeginDebugUtilsLabelEXT")
        self.end_label = vk.vkGetInstanceProcAddr(instance, "vkCmdEndDebugUtilsLabelEXT")
        self._labels: dict[str, Any] = {}  # one VkDebugUtilsLabelEXT per text (a struct costs ~30 us to marshal)

    def name(self, device: Any, kind: int, handle: Any, text: str) -> None:
        """Names the object `handle` of VK_OBJECT_TYPE_* `kind` (None: nothing)."""
        if handle is None:
            return
        info = vk.VkDebugUtilsObjectNameInfoEXT(
            sType=vk.VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
            objectType=kind,
            objectHandle=_handle(handle),
            pObjectName=_cut(text),
        )
        self.set_name(device, info)

    def begin(self, cmd: Any, text: str) -> None:
        """Opens a label region in a command buffer being recorded (close it with end())."""
        label = self._labels.get(text)
        if label is None:
            label = self._labels[text] = vk.VkDebugUtilsLabelEXT(
                sType=vk.VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT, pLabelName=_cut(text), color=[0.0, 0.0, 0.0, 0.0]
            )
        self.begin_label(cmd, label)

    def end(self, cmd: Any) -> None:
        self.end_label(cmd)

"""Kernel inputs read through uniform texel buffers instead of storage buffers.

Measured on lavapipe (Mesa 22.3): a storage-buffer load is a loop over the SIMD lanes with a branch per lane and
component, a texel fetch is one branch-free gather; a 4-float CLAMP kernel costs 4.2 ns per float reading a storage
buffer and 1.6 ns reading a texel buffer (same storage-buffer store). GPUs read texel buffers through their texture
path, which is as fast as a storage buffer or faster for read-only data, so where a target has texel buffers large
enough (LowerCtx.texel), kernels read their inputs through one: the same arena bytes, seen through a VkBufferView.
Two kinds of view, in formats every Vulkan device reads as uniform texel buffers:
- words (`words()`): chunked loads of 4, 8 or 16 bytes as R32 / R32G32 / R32G32B32A32_UINT texels, 32 bytes as two
  16-byte texels (include/types.glsl TEXEL_WORDS); the shader unpacks the words as it unpacks a storage load;
- elements (`element()`): one element a texel in the element's own format (int8 -> R8_SINT, fp32 -> R32_SFLOAT...),
  which the fetch converts to the int / uint / float the kernel computes with (lower/epilogue.py Array).
VGF exports bind storage buffers only: compile(..., views=False) compiles for without(target).
"""

from __future__ import annotations

import math
from dataclasses import replace

from vgf.vk_enums import FORMATS

from ...ir.dtype import DType
from ...ir.graph import Tensor
from ...target import Target

WORDS = {4: "VK_FORMAT_R32_UINT", 8: "VK_FORMAT_R32G32_UINT", 16: "VK_FORMAT_R32G32B32A32_UINT"}
ELEMENTS = {
    DType.FP32: "VK_FORMAT_R32_SFLOAT",
    DType.INT32: "VK_FORMAT_R32_SINT",
    DType.INT16: "VK_FORMAT_R16_SINT",
    DType.INT8: "VK_FORMAT_R8_SINT",
    DType.BOOL: "VK_FORMAT_R8_UINT",
}


def words(word_bytes: int) -> str | None:
    """The view format of a shader reading `word_bytes` at a time, None for a size it does not take."""
    return WORDS.get(min(16, word_bytes)) if word_bytes in (4, 8, 16, 32) else None


def element(dtype: DType) -> str | None:
    """The view format of a shader reading one element of `dtype` a texel, None for a type it does not take."""
    return ELEMENTS.get(dtype)


def readable(target: Target, tensor: Tensor, fmt: str) -> bool:
    """Whether `target`'s texel buffers hold a `fmt` view of `tensor`."""
    texels = -(-math.prod(tensor.shape) * tensor.dtype.numpy.itemsize // FORMATS[fmt].size)
    return 0 < texels <= target.max_texel_buffer_elements


def without(target: Target) -> Target:
    """`target` with no texel reads (every input a storage buffer, as a VGF container binds them)."""
    return replace(target, max_texel_buffer_elements=0)

"""Kernel inputs read through uniform texel buffers instead of storage buffers.

Measured on lavapipe (Mesa 22.3): a storage-buffer load is a loop over the SIMD lanes with a branch per lane and
component, a texel fetch is one branch-free gather; a 4-float CLAMP kernel costs 4.2 ns per float reading a storage
buffer and 1.6 ns reading a texel buffer (same storage-buffer store). GPUs read texel buffers through their texture
path, which is as fast as a storage buffer or faster for read-only data, so where a target has texel buffers large
enough, kernels that opt in (shaders declare the binding with TEXEL_<X>, see include/types.glsl) read through one:
the same arena bytes, seen through a VkBufferView of 32-bit words. VGF exports bind storage buffers only:
compile(..., views=False) compiles for texels.without(target).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..ir.graph import Tensor
from ..target import Target

# texel bytes -> the format of the view: 32-bit unsigned words, one, two or four a texel (the shader unpacks them),
# formats every Vulkan device reads as uniform texel buffers
FORMATS = {4: "VK_FORMAT_R32_UINT", 8: "VK_FORMAT_R32G32_UINT", 16: "VK_FORMAT_R32G32B32A32_UINT"}


def texel_bytes(word_bytes: int) -> int:
    """The texel of a shader reading `word_bytes` at a time (32: two 16-byte texels, include/types.glsl)."""
    return min(16, word_bytes)


def readable(target: Target, tensor: Tensor, word_bytes: int = 16) -> bool:
    """Whether a kernel for `target` may read `tensor` through a texel buffer, `word_bytes` at a time."""
    texels = -(-math.prod(tensor.shape) * tensor.dtype.numpy.itemsize // texel_bytes(word_bytes))
    return word_bytes in (4, 8, 16, 32) and 0 < texels <= target.max_texel_buffer_elements


def without(target: Target) -> Target:
    """`target` with no texel reads (every input a storage buffer, as a VGF container binds them)."""
    return replace(target, max_texel_buffer_elements=0)

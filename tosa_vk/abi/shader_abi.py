"""Numbers the built-in shaders and the Python side must agree on, defined once here.

The shader compiler (tosa_vk/vulkan/shaders.py) #defines each of PRELUDE in every built-in shader, so the GLSL
never spells them; the lowering and VGF export import them from here.
"""

from __future__ import annotations

WORKGROUP = 64  # local_size_x of the 1-D kernels (shaders/include/index.glsl) and of the convolutions
MAX_RANK = 6  # dimensions the indexing kernels handle: the spec's MAX_RANK at level 8K

# Uniform texel-buffer views kernels read inputs through (tosa_vk/stages/lower/texels.py): VK_FORMAT_* -> the GLSL type
# that fetches it (TEXEL_<binding> in a shader). The runtime makes VkBufferViews in these formats; a device reads every
# one as a uniform texel buffer (mandatory in Vulkan 1.0) or gets no texel reads.
TEXEL_SAMPLERS = {
    "VK_FORMAT_R32_UINT": "usamplerBuffer",
    "VK_FORMAT_R32G32_UINT": "usamplerBuffer",
    "VK_FORMAT_R32G32B32A32_UINT": "usamplerBuffer",
    "VK_FORMAT_R32_SFLOAT": "samplerBuffer",
    "VK_FORMAT_R32_SINT": "isamplerBuffer",
    "VK_FORMAT_R16_SINT": "isamplerBuffer",
    "VK_FORMAT_R8_SINT": "isamplerBuffer",
    "VK_FORMAT_R8_UINT": "usamplerBuffer",
}

PRELUDE = (("WORKGROUP", str(WORKGROUP)), ("MAX_RANK", str(MAX_RANK)))

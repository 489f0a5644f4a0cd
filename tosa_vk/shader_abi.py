"""Numbers the built-in shaders and the Python side must agree on, defined once here.

The shader compiler (tosa_vk/vulkan/shaders.py) #defines each of PRELUDE in every built-in shader, so the GLSL
never spells them; the lowering and VGF export import them from here.
"""

from __future__ import annotations

WORKGROUP = 64  # local_size_x of the 1-D kernels (shaders/include/index.glsl) and of the convolutions
MAX_RANK = 6  # dimensions the indexing kernels handle: the spec's MAX_RANK at level 8K

PRELUDE = (("WORKGROUP", str(WORKGROUP)), ("MAX_RANK", str(MAX_RANK)))

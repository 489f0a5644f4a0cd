"""The Vulkan enums VGF files store, named and numbered once for vgf/ and tosa_vk alike.

Values are the Vulkan headers' (VK_ARM_tensors / VK_ARM_data_graph for the *_ARM ones); every reverse map and
derived table below is computed from these, never written again.
"""

from __future__ import annotations

from typing import NamedTuple

STORAGE_BUFFER = "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER"
STORAGE_IMAGE = "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"
COMBINED_IMAGE_SAMPLER = "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER"
UNIFORM_BUFFER = "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER"
UNIFORM_TEXEL_BUFFER = "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER"
TENSOR_ARM = "VK_DESCRIPTOR_TYPE_TENSOR_ARM"

DESCRIPTOR_TYPES = {
    COMBINED_IMAGE_SAMPLER: 1,
    STORAGE_IMAGE: 3,
    UNIFORM_TEXEL_BUFFER: 4,
    UNIFORM_BUFFER: 6,
    STORAGE_BUFFER: 7,
    TENSOR_ARM: 1000460000,
}
IMAGE_DESCRIPTORS = (STORAGE_IMAGE, COMBINED_IMAGE_SAMPLER)


class Format(NamedTuple):
    value: int
    size: int  # bytes per texel / element
    components: int
    numpy: str  # numpy dtype name of one component as stored (bfloat16 / float8_*: ml_dtypes' names)
    glsl: str = ""  # GLSL image format qualifier, for the formats images use


FORMATS = {
    "VK_FORMAT_R8_UINT": Format(13, 1, 1, "uint8"),
    "VK_FORMAT_R8_SINT": Format(14, 1, 1, "int8"),
    "VK_FORMAT_R16_UINT": Format(74, 2, 1, "uint16"),
    "VK_FORMAT_R16_SINT": Format(75, 2, 1, "int16"),
    "VK_FORMAT_R16_SFLOAT": Format(76, 2, 1, "float16"),
    "VK_FORMAT_R32_UINT": Format(98, 4, 1, "uint32"),
    "VK_FORMAT_R32G32_UINT": Format(101, 8, 2, "uint32"),
    "VK_FORMAT_R32_SINT": Format(99, 4, 1, "int32"),
    "VK_FORMAT_R32_SFLOAT": Format(100, 4, 1, "float32", "r32f"),
    "VK_FORMAT_R32G32_SFLOAT": Format(103, 8, 2, "float32", "rg32f"),
    "VK_FORMAT_R32G32B32A32_UINT": Format(107, 16, 4, "uint32"),
    "VK_FORMAT_R32G32B32A32_SFLOAT": Format(109, 16, 4, "float32", "rgba32f"),
    "VK_FORMAT_R64_UINT": Format(110, 8, 1, "uint64"),
    "VK_FORMAT_R64_SINT": Format(111, 8, 1, "int64"),
    "VK_FORMAT_R64_SFLOAT": Format(112, 8, 1, "float64"),
    "VK_FORMAT_R8_BOOL_ARM": Format(1000460000, 1, 1, "bool"),
    "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM": Format(1000460001, 2, 1, "bfloat16"),
    "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM": Format(1000460002, 1, 1, "float8_e4m3fn"),
    "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM": Format(1000460003, 1, 1, "float8_e5m2"),
}
# image formats by channel count (fp32 texels)
IMAGE_FORMATS = {f.components: name for name, f in FORMATS.items() if f.glsl}

# SamplerConfig fields (VkFilter / VkSamplerAddressMode / VkBorderColor)
FILTERS = {"VK_FILTER_NEAREST": 0, "VK_FILTER_LINEAR": 1}
ADDRESS_MODES = {
    "VK_SAMPLER_ADDRESS_MODE_REPEAT": 0,
    "VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT": 1,
    "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE": 2,
    "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER": 3,
}
BORDER_COLORS = {
    "VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK": 0,
    "VK_BORDER_COLOR_INT_TRANSPARENT_BLACK": 1,
    "VK_BORDER_COLOR_FLOAT_OPAQUE_BLACK": 2,
    "VK_BORDER_COLOR_INT_OPAQUE_BLACK": 3,
    "VK_BORDER_COLOR_FLOAT_OPAQUE_WHITE": 4,
    "VK_BORDER_COLOR_INT_OPAQUE_WHITE": 5,
}
SAMPLER_FIELDS = {
    "min_filter": FILTERS,
    "mag_filter": FILTERS,
    "address_mode_u": ADDRESS_MODES,
    "address_mode_v": ADDRESS_MODES,
    "border_color": BORDER_COLORS,
}

# value -> name
DESCRIPTOR_NAMES = {v: k for k, v in DESCRIPTOR_TYPES.items()}
FORMAT_NAMES = {f.value: name for name, f in FORMATS.items()}
SAMPLER_NAMES = {field: {v: k for k, v in table.items()} for field, table in SAMPLER_FIELDS.items()}
FORMAT_BY_VALUE = {f.value: f for f in FORMATS.values()}


def short(name: str) -> str:
    """A Vulkan enum name without its family prefix, as tools print it: "R32_SFLOAT", "STORAGE_BUFFER"."""
    for prefix in ("VK_FORMAT_", "VK_DESCRIPTOR_TYPE_"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name

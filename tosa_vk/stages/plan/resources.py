"""How each tensor is bound: descriptor type, VkFormat, logical shape / strides, and the channel-packing rules of
Arm's custom-operator contract (spec/arm-custom-operators-contract.md).

- STORAGE_BUFFER (the default) and TENSOR_ARM: scalar, dense, row-major (NHWC for 4-D features); the format is the
  scalar element format and channels stay in the shape, so C = 3 is fine. TENSOR_ARM is recorded for VGF export
  and bound as a storage buffer unless the device exposes VK_ARM_tensors.
- STORAGE_IMAGE / COMBINED_IMAGE_SAMPLER: packed texels; shape [H, W, C] or [1, H, W, C]; C must equal the
  format's component count, which exists only for C = 1, 2, 4 (R32 / R32G32 / R32G32B32A32 SFLOAT). No implicit
  padding or 3 -> 4 promotion.
- Views aliasing one allocation (alias groups) must describe the same bytes: same element count and scalar type.
"""

from __future__ import annotations

import numpy as np

from vgf.vk_enums import (
    COMBINED_IMAGE_SAMPLER,
    FORMATS,
    IMAGE_DESCRIPTORS,
    IMAGE_FORMATS,
    STORAGE_BUFFER,
    STORAGE_IMAGE,
    TENSOR_ARM,
    UNIFORM_TEXEL_BUFFER,
)

from ...errors import TosaError
from ...ir.dtype import DType
from ...program import Resource

# the descriptor types a tosa_vk tensor can be bound as (names and values: vgf/vk_enums.py)
DESCRIPTOR_TYPES = (STORAGE_BUFFER, STORAGE_IMAGE, COMBINED_IMAGE_SAMPLER, TENSOR_ARM)
# the scalar format of each element type (buffer and TENSOR_ARM resources)
SCALAR_FORMATS = {
    DType.BOOL: "VK_FORMAT_R8_BOOL_ARM",
    DType.INT4: "VK_FORMAT_R8_SINT",
    DType.INT8: "VK_FORMAT_R8_SINT",
    DType.INT16: "VK_FORMAT_R16_SINT",
    DType.INT32: "VK_FORMAT_R32_SINT",
    DType.INT48: "VK_FORMAT_R64_SINT",
    DType.INT64: "VK_FORMAT_R64_SINT",
    DType.SHAPE: "VK_FORMAT_R64_SINT",
    DType.INT64: "VK_FORMAT_R64_SINT",
    DType.FP32: "VK_FORMAT_R32_SFLOAT",
    DType.FP16: "VK_FORMAT_R16_SFLOAT",
    DType.BF16: "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM",
    DType.FP8E4M3: "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM",
    DType.FP8E5M2: "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM",
    # TOSA 1.1 MX types have no Vulkan format: one opaque code a byte (vgf_graph reads R8_UINT back as INT8)
    **dict.fromkeys((DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2, DType.FP8UE8M0, DType.MXINT8), "VK_FORMAT_R8_UINT"),
}


def dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def resource(
    tensor: str,
    shape: tuple[int, ...],
    dtype: DType,
    descriptor: str = STORAGE_BUFFER,
    format: str | None = None,
    alias_group: int | None = None,
) -> Resource:
    """A Resource for a tensor, checked against the contract; errors name the tensor and the rule."""
    shape = tuple(int(d) for d in shape)
    if descriptor not in DESCRIPTOR_TYPES:
        raise TosaError(f"tensor '{tensor}': unknown descriptor type {descriptor!r}; one of {DESCRIPTOR_TYPES}")
    if descriptor in IMAGE_DESCRIPTORS:
        return _image(tensor, shape, dtype, descriptor, format, alias_group)
    want = SCALAR_FORMATS[dtype]
    if format is not None and format != want:
        raise TosaError(
            f"tensor '{tensor}': a {descriptor} resource uses the scalar element format ({want} for "
            f"{dtype.name}), not {format}; channels stay in the shape"
        )
    return Resource(tensor, descriptor, want, shape, dense_strides(shape), dtype.name, alias_group)


def _image(tensor, shape, dtype, descriptor, format, alias_group) -> Resource:
    kind = "storage image" if descriptor == STORAGE_IMAGE else "sampled image"
    if len(shape) not in (3, 4):
        raise TosaError(f"tensor '{tensor}': a {kind} must have shape [H,W,C] or [1,H,W,C], got {list(shape)}")
    if len(shape) == 4 and shape[0] != 1:
        raise TosaError(f"tensor '{tensor}': a {kind} of rank 4 must have N = 1, got shape {list(shape)}")
    if dtype != DType.FP32:
        raise TosaError(
            f"tensor '{tensor}': image resources hold fp32 texels (R32 / R32G32 / R32G32B32A32 "
            f"SFLOAT), got {dtype.name}"
        )
    c = shape[-1]
    if c not in IMAGE_FORMATS:
        hint = (
            " (C = 3 has no packed format: pad to 4 channels explicitly or use a buffer / tensor resource)"
            if c == 3
            else ""
        )
        raise TosaError(
            f"tensor '{tensor}': a {kind} needs C in {{1, 2, 4}} channels to match a packed format, got C = {c}{hint}"
        )
    fmt = format or IMAGE_FORMATS[c]
    components = FORMATS[fmt].components if fmt in FORMATS else "?"
    if components != c:
        raise TosaError(
            f"tensor '{tensor}': format {fmt} has {components} components but "
            f"the image has C = {c}; no implicit padding or promotion"
        )
    return Resource(tensor, descriptor, fmt, shape, dense_strides(shape), dtype.name, alias_group)


def check_alias_group(members: list[Resource]) -> None:
    """Views of one allocation must describe the same data: same element count and scalar element type."""
    if not members:
        return
    first = members[0]
    size = int(np.prod(first.shape))
    for r in members[1:]:
        if int(np.prod(r.shape)) != size or r.dtype != first.dtype:
            raise TosaError(
                f"alias group {first.alias_group}: '{r.tensor}' ({r.descriptor}, {list(r.shape)} "
                f"{r.dtype}) does not describe the same data as '{first.tensor}' "
                f"({first.descriptor}, {list(first.shape)} {first.dtype})"
            )


def plan_resources(
    tensors: dict, steps: list, root: dict[str, str], offsets: dict[str, int] | None = None
) -> dict[str, Resource]:
    """Every tensor's Resource in a compiled program: a storage buffer unless a kernel binds it otherwise (a custom
    op's image or TENSOR_ARM binding); tensors sharing one allocation (RESHAPE / IDENTITY, region inputs, one
    variable's declarations) form an alias group, checked to describe the same data; views (`offsets`: part of
    their root's bytes) are in none."""
    from ...program import Kernel, walk

    asked: dict[str, tuple[str, str | None]] = {}
    for k in walk(steps):
        if isinstance(k, Kernel):
            for name, descriptor, image in zip(k.bindings, k.descriptors, k.images or (None,) * len(k.bindings)):
                # a texel-buffer read is a kernel's view of the tensor's storage buffer, not a resource of its own
                if descriptor not in (STORAGE_BUFFER, UNIFORM_TEXEL_BUFFER):
                    asked.setdefault(name, (descriptor, image.format if image is not None else None))
    members: dict[str, list[str]] = {}
    for name in tensors:
        if name not in (offsets or {}):
            members.setdefault(root.get(name, name), []).append(name)
    groups = {r: i for i, r in enumerate(r for r, names in members.items() if len(names) > 1)}
    out = {}
    for name, t in tensors.items():
        descriptor, fmt = asked.get(name, (STORAGE_BUFFER, None))
        group = None if name in (offsets or {}) else groups.get(root.get(name, name))
        out[name] = resource(name, t.shape, t.dtype, descriptor, fmt, group)
    for r in groups:
        check_alias_group([out[n] for n in members[r]])
    return out

"""VGF, the model container of Arm's ML SDK for Vulkan: our schema (schema/vgf.fbs), accessors (fbs/) and a
bounded reader / writer (container.py)."""

from .container import (
    VERSION,
    VGF,
    Binding,
    Constant,
    DescriptorSet,
    Module,
    PushConstantRange,
    Resource,
    Segment,
    VGFError,
    load_vgf,
    read_vgf,
    save_vgf,
    write_vgf,
)

__all__ = [
    "VERSION",
    "VGF",
    "Binding",
    "Constant",
    "DescriptorSet",
    "Module",
    "PushConstantRange",
    "Resource",
    "Segment",
    "VGFError",
    "load_vgf",
    "read_vgf",
    "save_vgf",
    "write_vgf",
]

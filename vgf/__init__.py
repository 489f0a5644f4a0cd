"""VGF, the model container of Arm's ML SDK for Vulkan: our schema (schema/vgf.fbs), accessors (fbs/) and a
bounded reader / writer (container.py)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def __getattr__(name: str) -> object:
    """The container's names, imported on first use (PEP 562): `vgf.vk_enums` alone (what tosa_vk's runtime
    needs) then costs no flatbuffer accessors (~70 ms)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(".container", __name__), name)
    globals()[name] = value
    return value


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

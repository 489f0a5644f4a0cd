"""Where tosa_vk's files are (one source for each): the GLSL shaders it ships, and the cache root where the SPIR-V
cache, the program cache and the generated conformance tests live. Imports nothing from tosa_vk."""

from __future__ import annotations

import os
from pathlib import Path


def _shader_root() -> Path:
    """shaders/ at the top of the repository (an editable install) or inside the installed package (a wheel)."""
    package = Path(__file__).resolve().parent
    inside = package / "shaders"
    return inside if inside.is_dir() else package.parent / "shaders"


SHADER_ROOT = _shader_root()


def cache_root() -> Path:
    """$TOSA_VK_CACHE, or ~/.cache/tosa_vk when it is unset or empty (an empty value is not the current folder)."""
    return Path(os.environ.get("TOSA_VK_CACHE") or Path.home() / ".cache" / "tosa_vk")

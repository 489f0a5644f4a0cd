"""Where tosa_vk's files are (one source for each): the GLSL shaders it ships, the cache root where the SPIR-V
cache, the program cache and the generated conformance tests live, and the command-line tools of this environment
(`find_tool`). Imports nothing from tosa_vk."""

from __future__ import annotations

import os
import shutil
import sys
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


def environment_bin() -> Path:
    """The folder of the running Python's console scripts: a virtual environment's bin/ (Scripts\\ on Windows),
    where pip puts the tools a package installs (tosa-opt, model-converter), whether or not the environment is
    activated (a venv's python run by its path leaves PATH as it was)."""
    return Path(sys.executable).parent


def find_tool(name: str) -> str | None:
    """A command-line tool: on PATH, else in environment_bin() (an unactivated virtual environment's). The one
    lookup every tool tosa_vk runs goes through."""
    found = shutil.which(name)
    if found:
        return found
    return shutil.which(name, path=str(environment_bin()))

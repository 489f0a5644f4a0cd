"""Built-in kernels shipped compiled (issue 17): running a graph needs no glslc when its kernels are among them.

The runtime's side: `shaders/builtin/spirv.zip` (built, not committed) holds the SPIR-V of each shipped variant under
the digest of its full source text (variant.source_digest: the .comp, every include, the defines, glslc's flags);
`library().get(variant)` finds a variant's module there, and the ShaderCache (shaders.py) asks it before its disk
cache and glslc. A shader edited after the build changes the digest, so its old SPIR-V is simply not found (then
glslc compiles it as before): a stale library can never run. A damaged library (zip CRC or SPIR-V header) is ignored
the same way, with one warning. Which variants are shipped, and the build of the zip, are build-time work:
tosa_vk/tools/conformance/shipped.py (`python -m tosa_vk.tools.conformance.shipped collect | build | info`).

Layer geometry that is a specialization constant (convolutions: shaders.specialize) is not part of a variant, so
layers of any shape share the listed modules. Without any GLSL compiler (glslc, cmeel's glslang), a fused kernel
that is not listed (fusion generates GLSL per chain) is declined at compile time (`shipped_only`): its operators
run as their own, listed kernels. A variant still missing then (a tile or type combination no listed graph has, a
custom op's GLSL) is an error naming its operators.
"""

from __future__ import annotations

import json
import warnings
import zipfile
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

from ..paths import SHADER_ROOT
from ..program import Kernel
from . import glsl_compiler
from .variant import SPIRV_MAGIC, Variant, source_digest, variant_of

FOLDER = SHADER_ROOT / "builtin"
LIBRARY = FOLDER / "spirv.zip"
INFO = "build.json"  # the library's own record: glslc version, variant count


class Library:
    """The shipped SPIR-V, read lazily; a missing or damaged library finds nothing."""

    def __init__(self, path: Path = LIBRARY):
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        self._names: set[str] = set()
        self._damaged = False

    def _open(self) -> zipfile.ZipFile | None:
        if self._zip is None and not self._damaged and self.path.is_file():
            try:
                self._zip = zipfile.ZipFile(self.path)
                self._names = set(self._zip.namelist())
            except (OSError, zipfile.BadZipFile):
                self._broken("cannot be opened")
        return self._zip

    def _broken(self, why: str) -> None:
        self._damaged, self._zip = True, None
        warnings.warn(
            f"tosa_vk: the built-in kernel library {self.path} {why}; compiling with glslc instead "
            "(rebuild it: python -m tosa_vk.tools.conformance.shipped build)",
            RuntimeWarning,
            stacklevel=3,
        )

    def get(self, variant: Variant) -> bytes | None:
        """The variant's SPIR-V if shipped (never for custom-op sources)."""
        if variant.text or variant.spirv:
            return None
        z = self._open()
        name = source_digest(variant) + ".spv"
        if z is None or name not in self._names:
            return None
        try:
            data = z.read(name)  # checks the entry's CRC
        except (OSError, zipfile.BadZipFile, zlib.error):
            self._broken("is damaged")
            return None
        if len(data) < 20 or len(data) % 4 or int.from_bytes(data[:4], "little") != SPIRV_MAGIC:
            self._broken("holds a module that is not SPIR-V")
            return None
        return data

    def info(self) -> dict:
        z = self._open()
        if z is None:
            return {"path": str(self.path), "modules": 0}
        return {"path": str(self.path), **json.loads(z.read(INFO)), "bytes": self.path.stat().st_size}


@cache
def library() -> Library:
    return Library()


def shipped_only() -> Callable[[Kernel], bool] | None:
    """compile()'s `kernels` option on this machine: None where a GLSL compiler (glslc or cmeel's glslang) can
    compile any kernel; with none at all, whether a kernel is shipped compiled."""
    if glsl_compiler.any_compiler():
        return None
    return lambda kernel: library().get(variant_of(kernel)) is not None

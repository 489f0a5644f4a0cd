"""What a shader variant is and what its SPIR-V depends on: the identity both the shipped library (builtin.py) and
the compiler with its disk cache (shaders.py) key modules by.

A Variant is a shader under shaders/ (or a custom op's GLSL text / ready SPIR-V) with its #defines and the names of
its int specialization constants; `source_digest` hashes its full source, every include and glslc's flags.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cache, lru_cache

from ..abi.shader_abi import PRELUDE
from ..errors import ShaderError
from ..paths import SHADER_ROOT
from ..program import Kernel, walk

SPIRV_MAGIC = 0x07230203
TARGET_ENV = "vulkan1.2"
# glslc without spirv-opt (-O0): drivers optimise SPIR-V themselves, and on lavapipe -O cost ~200-450 ms per
# convolution or matrix-product variant for no measured gain (mobilenetv2 in a new process, every cache empty: glslc
# 3.75 -> 0.51 s; pipeline creation, first dispatches (LLVM) and steady runs unchanged); part of the cache key
GLSLC_FLAGS = (f"--target-env={TARGET_ENV}", "-O0")


@dataclass(frozen=True)
class Variant:
    shader: str  # path under shaders/ without .comp, e.g. "elementwise_binary/binary"
    defines: tuple[tuple[str, str], ...]  # injected as #define lines after #version
    text: str = ""  # inline GLSL (custom ops) instead of shaders/<shader>.comp
    spirv: bytes = b""  # ready SPIR-V (custom-op payloads): validated, not compiled
    op: str = field(default="", compare=False)  # an operator using it, for errors (not part of its identity)
    specs: tuple[str, ...] = ()  # int specialization constants, declared with constant_id 0, 1, ... (specialize())

    def source(self) -> str:
        self._check_names()
        text = self.text or (SHADER_ROOT / f"{self.shader}.comp").read_text()
        lines = text.splitlines(keepends=True)
        at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("#version")), None)
        if at is None:
            raise ShaderError(f"{self.op or self.shader}: the GLSL source has no #version line")
        at += 1
        prelude = () if self.text else PRELUDE  # custom GLSL gets only its own defines
        extra = "".join(f"#define {k} {v}\n" for k, v in (*prelude, *self.defines))
        extra += "".join(f"layout(constant_id = {i}) const int {name} = 1;\n" for i, name in enumerate(self.specs))
        return "".join(lines[:at]) + extra + f"#line {at + 1}\n" + "".join(lines[at:])

    def _check_names(self) -> None:
        """A shader name that stays under shaders/, defines and specialization names that cannot start a line of
        their own: what a Program read from bytes (a cache entry, a file) could otherwise use to read or inject."""
        where = self.op or "a kernel"
        if not self.text and not _SHADER_NAME.fullmatch(self.shader):
            raise ShaderError(f"{where}: shader name {self.shader!r} is not a path under shaders/")
        for key, value in self.defines:
            if not _DEFINE_KEY.fullmatch(key) or _DEFINE_VALUE_BAD.search(value):
                raise ShaderError(f"{where}: #define {key!r} is not a macro name with a one-line value")
        for name in self.specs:
            if not name.isidentifier():
                raise ShaderError(f"{where}: specialization constant name {name!r} is not an identifier")

    @property
    def from_model(self) -> bool:
        """GLSL text that came with a model (a payload, a VGF module, a cached Program), not a registered op's."""
        if not self.text:
            return False
        from .. import custom  # (only here: a program of built-in kernels needs no custom-op registry)

        return not custom.user_source(self.text)


_SHADER_NAME = re.compile(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*")
_DEFINE_KEY = re.compile(r"[A-Za-z_]\w*(\([\w, ]*\))?")
_DEFINE_VALUE_BAD = re.compile(r'[\x00-\x1f\x7f\\#"]')


def variant_of(kernel) -> Variant:
    """The shader variant a program.Kernel dispatches."""
    return Variant(kernel.shader, kernel.defines, kernel.source, kernel.spirv, kernel.op, kernel.spec_names)


def program_variants(program) -> list[Variant]:
    """The shader variants a program.Program dispatches, each once, in the order its kernels first use them."""
    return list(dict.fromkeys(variant_of(k) for k in walk(program.steps) if isinstance(k, Kernel)))


@lru_cache(maxsize=4096)
def source_digest(variant: Variant) -> str:
    """What a variant's SPIR-V depends on but the compiler's version: its full source (defines included), every
    include, glslc's flags. The shipped library (builtin.py) is keyed by it, the disk cache by it and the version;
    read once per variant and process, like the includes (_includes_digest)."""
    h = hashlib.sha256()
    for part in (variant.source(), _includes_digest(), *GLSLC_FLAGS):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


@cache
def _includes_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(SHADER_ROOT.rglob("*.glsl")):  # shared includes and any chapter's own
        h.update(str(path.relative_to(SHADER_ROOT)).encode() + path.read_bytes())
    return h.hexdigest()

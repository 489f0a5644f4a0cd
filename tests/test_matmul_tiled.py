"""The tiled MATMUL family (shaders/tensor_ops/matmul_tiled.comp, tosa_vk/stages/lower/families/matmul_tiled.py) on
lavapipe with a GPU class forced (TOSA_VK_TARGET): every type, odd and aligned shapes, batches, B broadcast, fused
epilogues, 1x1 convolutions, the kill switches; against the reference backend (integers bit-exact, floats within the
spec's dot-product bound)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, run_both, ulp

import tosa_vk
from tosa_vk import Builder
from tosa_vk.ir import DType
from tosa_vk.program import Kernel
from tosa_vk.stages.lower.families.matmul_tiled import fit_tile
from tosa_vk.target import LAVAPIPE, named

GPU_CLASSES = ["nvidia", "amd", "intel", "mali", "adreno", "generic"]
NUMPY = {
    DType.FP32: np.float32,
    DType.FP16: np.float16,
    DType.INT8: np.int8,
    DType.INT32: np.int32,
    DType.BF16: ml_dtypes.bfloat16,
    DType.FP8E4M3: ml_dtypes.float8_e4m3fn,
    DType.FP8E5M2: ml_dtypes.float8_e5m2,
}


def shaders(graph, klass: str, disabled: str = "") -> list[str]:
    target = LAVAPIPE.with_class(klass, frozenset(d for d in disabled.split(",") if d))
    program = tosa_vk.compile(graph, target=target)
    return [s.shader for s in program.steps if isinstance(s, Kernel)]


def numpy_values(rng, shape, dtype: DType) -> np.ndarray:
    if dtype == DType.INT8:
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.standard_normal(shape).astype(NUMPY[dtype])


def dot_bound(a, b, want, out_t: DType) -> np.ndarray:
    """The dot-product bound of fp32 sums plus the output's rounding (B as [N or 1, C, W])."""
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return 2 * a.shape[2] * 2.0**-24 * mag + ulp(out_t, want.astype(np.float64))


def matmul_graph(a, b, out_t=None, zps=(0, 0), b_input=True, transposed=False):
    bb = Builder()
    x = bb.input("a", a.shape, _name(a))
    y = bb.input("b", b.shape, _name(b)) if b_input else bb.const(b)
    za = np.array([zps[0]], a.dtype)
    zb = np.array([zps[1]], b.dtype)
    op = bb.matmul_t if transposed else bb.matmul
    bb.output(op(x, y, za, zb, out_dtype=out_t, name="out"))
    return bb.build()


def _name(x: np.ndarray) -> str:
    return {
        "float32": "fp32",
        "float16": "fp16",
        "int8": "int8",
        "bfloat16": "bf16",
        "float8_e4m3fn": "fp8e4m3",
        "float8_e5m2": "fp8e5m2",
    }[x.dtype.name]


def check(device, graph, feeds, a, b, out_t, integer):
    got, want = run_both(device, graph, feeds)
    if integer:
        assert np.array_equal(got, want)
    else:
        assert_same(got, want, atol=dot_bound(a, b, want, out_t))


# (N, H, C, W): an aligned tile, odd edges with a batch, a row vector, one column with C < one slice, a long C (many
# slices). Each distinct tile is an LLVM compile on lavapipe (seconds): the class matrix runs two shapes, mali all.
SHAPES = [(1, 64, 32, 64), (2, 9, 13, 21), (1, 1, 40, 33), (3, 17, 5, 1), (1, 5, 300, 12)]
CLASS_SHAPES = [(k, s) for k in GPU_CLASSES for s in SHAPES[:2]] + [("mali", s) for s in SHAPES[2:]]


@pytest.mark.parametrize("klass, shape", CLASS_SHAPES, ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)))
def test_fp32_every_class(device, monkeypatch, klass, shape):
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    n, h, c, w = shape
    rng = np.random.default_rng(h * c + w)
    a, b = numpy_values(rng, (n, h, c), DType.FP32), numpy_values(rng, (n, c, w), DType.FP32)
    graph = matmul_graph(a, b)
    assert shaders(graph, klass) == ["tensor_ops/matmul_tiled"]
    check(device, graph, {"a": a, "b": b}, a, b, DType.FP32, False)


FLOAT_TYPES = [
    (DType.FP16, DType.FP16, DType.FP16),
    (DType.FP16, DType.FP16, DType.FP32),
    (DType.BF16, DType.BF16, DType.FP32),
    (DType.FP8E4M3, DType.FP8E4M3, DType.FP16),
    (DType.FP8E4M3, DType.FP8E5M2, DType.FP32),
]


@pytest.mark.parametrize(
    "klass, types",
    [("mali", t) for t in FLOAT_TYPES] + [("nvidia", FLOAT_TYPES[0]), ("generic", FLOAT_TYPES[2])],
    ids=lambda v: v if isinstance(v, str) else "x".join(d.name for d in v),
)
def test_float_types(device, monkeypatch, klass, types):
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    a_t, b_t, out_t = types
    rng = np.random.default_rng(7)
    a, b = numpy_values(rng, (2, 11, 19), a_t), numpy_values(rng, (2, 19, 24), b_t)
    graph = matmul_graph(a, b, out_t)
    assert shaders(graph, klass) == ["tensor_ops/matmul_tiled"]
    check(device, graph, {"a": a, "b": b}, a, b, out_t, False)


@pytest.mark.parametrize(
    "klass, disabled, shape",
    [("mali", "", (2, 7, 13, 9)), ("mali", "int8dot", (2, 7, 13, 9)), ("generic", "", (1, 16, 64, 32))]
    + [("nvidia", "", (1, 16, 64, 32)), ("adreno", "int8dot", (1, 16, 64, 32))],
    ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)),
)
@pytest.mark.parametrize("zps", [(0, 0), (-7, 3), (127, -128)], ids=lambda z: f"zp{z[0]}_{z[1]}")
def test_int8_bit_exact(device, monkeypatch, klass, disabled, zps, shape):
    """int8 into int32, zero points by the sum identity (int8dot: dot4x8 on packed bytes) or taken off when
    staged; generic's named device has no integer dot products, lavapipe does (forced here, it uses them)."""
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    monkeypatch.setenv("TOSA_VK_DISABLE", disabled)
    n, h, c, w = shape
    rng = np.random.default_rng(c + w)
    a, b = numpy_values(rng, (n, h, c), DType.INT8), numpy_values(rng, (n, c, w), DType.INT8)
    graph = matmul_graph(a, b, zps=zps)
    target = LAVAPIPE.with_class(klass, frozenset(d for d in disabled.split(",") if d))
    (kernel,) = [s for s in tosa_vk.compile(graph, target=target).steps if isinstance(s, Kernel)]
    assert kernel.shader == "tensor_ops/matmul_tiled"
    assert ("INT8_DOT" in dict(kernel.defines)) == (disabled != "int8dot")
    check(device, graph, {"a": a, "b": b}, a, b, DType.INT32, True)


def test_int8_run_time_zero_points(device, monkeypatch):
    monkeypatch.setenv("TOSA_VK_TARGET", "amd")
    rng = np.random.default_rng(3)
    a, b = numpy_values(rng, (1, 10, 23), DType.INT8), numpy_values(rng, (1, 23, 6), DType.INT8)
    bb = Builder()
    x, y = bb.input("a", a.shape, "int8"), bb.input("b", b.shape, "int8")
    za, zb = bb.input("za", (1,), "int8"), bb.input("zb", (1,), "int8")
    bb.output(bb.matmul(x, y, za, zb, name="out"))
    feeds = {"a": a, "b": b, "za": np.array([-3], np.int8), "zb": np.array([100], np.int8)}
    got, want = run_both(device, bb.build(), feeds)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("klass, dtype", [("mali", DType.FP32), ("mali", DType.INT8), ("intel", DType.FP32)])
def test_matmul_t_broadcast_and_constant_b(device, monkeypatch, klass, dtype):
    """MATMUL_T reads B as [D, W, C] in place (no transposed copy), one B for every n when D == 1."""
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    rng = np.random.default_rng(11)
    a, bt = numpy_values(rng, (3, 9, 20), dtype), numpy_values(rng, (1, 14, 20), dtype)
    for b_input in (True, False):
        graph = matmul_graph(a, bt, b_input=b_input, transposed=True)
        assert shaders(graph, klass) == ["tensor_ops/matmul_tiled"]
        feeds = {"a": a, "b": bt} if b_input else {"a": a}
        check(device, graph, feeds, a, bt.transpose(0, 2, 1), DType.FP32 if dtype.is_float else DType.INT32,
              not dtype.is_float)  # fmt: skip


@pytest.mark.parametrize("klass", ["mali", "amd"])
def test_fused_float_epilogue_and_a_transposed_b(device, monkeypatch, klass):
    """ADD (per column) + CLAMP + SIGMOID (EP_LOOP) fused into the tiled kernel, B read through a fused TRANSPOSE."""
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 13, 24)).astype(np.float32)
    bt = rng.standard_normal((2, 36, 24)).astype(np.float32)
    bias = rng.standard_normal((1, 1, 36)).astype(np.float32)
    bb = Builder()
    x, y = bb.input("a", a.shape, "fp32"), bb.input("b", bt.shape, "fp32")
    m = bb.matmul(x, bb.transpose(y, perms=[0, 2, 1]), np.float32(0), np.float32(0))
    m = bb.op("CLAMP", bb.op("ADD", m, bb.const(bias)), min_val=np.float32(-2), max_val=np.float32(3))
    bb.output(bb.op("SIGMOID", m, name="out"))
    graph = bb.build()
    target = LAVAPIPE.with_class(klass)
    (kernel,) = [s for s in tosa_vk.compile(graph, target=target).steps if isinstance(s, Kernel)]
    assert kernel.shader == "tensor_ops/matmul_tiled" and "SIGMOID" in kernel.op, kernel.op
    assert dict(kernel.defines)["B_TRANSPOSED"] == "1" and dict(kernel.defines)["EP_LOOP"] == "1"
    got, want = run_both(device, graph, {"a": a, "b": bt})
    assert_same(got, want, atol=1e-5)  # the sigmoid flattens the product's few-ulp differences


@pytest.mark.parametrize("klass, disabled", [("mali", ""), ("intel", "int8dot")])
def test_fused_int8_rescale_chain(device, monkeypatch, klass, disabled):
    """int8 MATMUL -> RESCALE (per column) -> int8, the quantized linear layer: bit-exact with its chain fused."""
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    monkeypatch.setenv("TOSA_VK_DISABLE", disabled)
    rng = np.random.default_rng(9)
    a = numpy_values(rng, (1, 19, 40), DType.INT8)
    w = numpy_values(rng, (1, 40, 12), DType.INT8)
    bb = Builder()
    x = bb.input("a", a.shape, "int8")
    m = bb.matmul(x, bb.const(w), np.array([5], np.int8), np.array([-2], np.int8))
    mult = rng.integers(1 << 29, 1 << 31, 12).astype(np.int32)
    shift = rng.integers(36, 40, 12).astype(np.int8)
    bb.output(bb.rescale(m, mult, shift, np.int32(0), np.int8(-4), out_dtype="int8", per_channel=True, name="out"))
    graph = bb.build()
    target = LAVAPIPE.with_class(klass, frozenset(d for d in disabled.split(",") if d))
    (kernel,) = [s for s in tosa_vk.compile(graph, target=target).steps if isinstance(s, Kernel)]
    assert kernel.shader == "tensor_ops/matmul_tiled" and "RESCALE" in kernel.op, kernel.op
    got, want = run_both(device, graph, {"a": a})
    assert np.array_equal(got, want)


@pytest.mark.parametrize("klass", ["mali", "adreno"])
def test_1x1_convolution_as_tiled_matmul(device, monkeypatch, klass):
    """A 1x1 fp32 convolution with bias and CLAMP on a GPU class: the tiled convolution takes it (tried before the
    1x1-as-matmul path, whose matmul_tiled B^T read serves where conv_tiled declines); results as the reference."""
    monkeypatch.setenv("TOSA_VK_TARGET", klass)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 7, 24)).astype(np.float32)
    w = rng.standard_normal((18, 1, 1, 24)).astype(np.float32)
    bias = rng.standard_normal(18).astype(np.float32)
    bb = Builder()
    y = bb.conv2d(bb.input("x", x.shape, "fp32"), w, bias, np.float32(0), np.float32(0), pad=[0, 0, 0, 0])
    bb.output(bb.clamp(y, min_val=np.float32(-1), max_val=np.float32(1.5), name="out"))
    graph = bb.build()
    assert shaders(graph, klass) == ["convolution/conv_tiled"]
    got, want = run_both(device, graph, {"x": x})
    mag = np.abs(x.reshape(-1, 24)).astype(np.float64) @ np.abs(w.reshape(18, 24).T) + np.abs(bias)
    assert_same(got, want, atol=(2 * 25 * 2.0**-24 * mag + 2.0**-23 * mag).reshape(got.shape))


def test_c_and_the_driver_loop_budget(device, monkeypatch):
    """Slices x (their k steps + 1) are the kernel's counted loop iterations: 40,000 values of C run tiled (exact for
    small integers), 70,000 (past lavapipe's 65,535) decline to the register kernel, which splits C into passes."""
    monkeypatch.setenv("TOSA_VK_TARGET", "mali")
    rng = np.random.default_rng(1)
    for c, shader in ((40000, ["tensor_ops/matmul_tiled"]), (70000, ["tensor_ops/matmul"])):
        a = rng.integers(-3, 4, (1, 2, c)).astype(np.float32)
        b = rng.integers(-3, 4, (1, c, 5)).astype(np.float32)
        graph = matmul_graph(a, b)
        assert shaders(graph, "mali") == shader
        got, want = run_both(device, graph, {"a": a, "b": b})
        assert np.array_equal(got, want)


@pytest.mark.parametrize("disabled", ["shared", "int8dot,shared"])
def test_kill_switch_keeps_the_register_kernels(monkeypatch, disabled):
    rng = np.random.default_rng(0)
    a, b = numpy_values(rng, (1, 16, 32), DType.FP32), numpy_values(rng, (1, 32, 16), DType.FP32)
    assert shaders(matmul_graph(a, b), "nvidia", disabled) == ["tensor_ops/matmul_fast"]
    assert shaders(matmul_graph(a, b), "lavapipe") == ["tensor_ops/matmul_fast"]  # lavapipe's own kernels


def test_int16_stays_on_the_register_kernels():
    rng = np.random.default_rng(0)
    a = rng.integers(-999, 999, (1, 4, 8)).astype(np.int16)
    bb = Builder()
    bb.output(bb.matmul(bb.input("a", a.shape, "int16"), bb.const(a.reshape(1, 8, 4)), np.int16(0), np.int16(0)))
    assert shaders(bb.build(), "nvidia") == ["tensor_ops/matmul"]


@pytest.mark.parametrize("klass", GPU_CLASSES)
def test_tiles_fit_every_target(klass):
    """The class's tile, shrunk to the product and to the device: within the workgroup and shared-memory limits of
    its named device, of lavapipe and of Vulkan's minimum (128 invocations, 16 KiB)."""
    for base in (named(klass), LAVAPIPE.with_class(klass), named("minimum").with_class(klass)):
        for h, w in ((4096, 4096), (1, 1000), (7, 3)):
            t = fit_tile(base, h, w)
            assert t.invocations <= base.max_workgroup_invocations
            assert t.shared_bytes() <= base.max_shared_memory
            assert t.rows % t.thread_rows == 0 and t.cols % t.thread_cols == 0
            assert t.rows <= max(t.thread_rows, 2 * h) and t.cols <= max(t.thread_cols, 2 * w)


def test_a_forced_class_compiles_a_different_program():
    rng = np.random.default_rng(0)
    a, b = numpy_values(rng, (1, 64, 64), DType.FP32), numpy_values(rng, (1, 64, 64), DType.FP32)
    graph = matmul_graph(a, b, b_input=False)
    assert shaders(graph, "lavapipe") != shaders(graph, "nvidia")

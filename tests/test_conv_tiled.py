"""The tiled convolution family (tosa_vk/stages/lower/families/conv_tiled.py) with each GPU class forced on this device,
against the reference backend: integers bit-exact (zero points, int4 weights, the int8 dot-product path and plain int
multiply-adds), floating point within the dot-product bound; pads, strides, dilations, odd channel counts, batch,
fused epilogues, loop-budget passes, the kill switches; and that the lavapipe class keeps its register kernels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import graph_of, run_both, shrink_target
from test_vulkan_convolution import conv_case

import tosa_vk
from tosa_vk import device_class
from tosa_vk.program import Kernel, walk
from tosa_vk.stages.lower.families import conv_tiled
from tosa_vk.target import LAVAPIPE

GPU_CLASSES = ("nvidia", "amd", "intel", "mali", "adreno", "generic")


@pytest.fixture
def forced(monkeypatch):
    """force(name, disabled=""): compile for that class (and switch those features off) from here on."""

    def force(name: str, disabled: str = "") -> None:
        monkeypatch.setenv(device_class.ENV_TARGET, name)
        monkeypatch.setenv(device_class.ENV_DISABLE, disabled)

    return force


def shaders(graph, klass: str, disabled: frozenset[str] = frozenset()) -> list[str]:
    program = tosa_vk.compile(graph, LAVAPIPE.with_class(klass, disabled))
    return [k.shader for k in walk(program.steps) if isinstance(k, Kernel)]


def _conv_graph(b):
    x = b.input("x", (1, 8, 8, 16), "FP32")
    w = np.ones((8, 3, 3, 16), np.float32)
    b.output(b.conv2d(x, b.const(w, "FP32"), b.const(np.zeros(8, np.float32), "FP32"), pad=[1, 1, 1, 1]))


def test_classes_choose_their_kernels():
    graph = graph_of(_conv_graph)
    assert "convolution/conv" in shaders(graph, "lavapipe")  # lavapipe keeps today's kernels
    for klass in GPU_CLASSES:
        assert shaders(graph, klass) == ["convolution/conv_tiled"], klass
    assert "convolution/conv_tiled" not in shaders(graph, "nvidia", frozenset({"shared"}))


@pytest.mark.parametrize("klass", GPU_CLASSES)
@pytest.mark.parametrize("dtype", ["int8", "fp32", "fp16", "bf16", "fp8e4m3"])
def test_conv2d_each_class_and_type(device, forced, klass, dtype):
    forced(klass)
    conv_case(
        device,
        dtype,
        (2, 9, 10, 5),
        (7, 3, 3, 5),
        zps=(-7, 3) if dtype == "int8" else (0, 0),
        pad=[1, 0, 2, 1],
        stride=[1, 2],
        dilation=[2, 1],
    )


@pytest.mark.parametrize("disabled", ["int8dot", "fp16", "shared", "int8dot,fp16"])
@pytest.mark.parametrize("dtype", ["int8", "fp16"])
def test_conv2d_kill_switches(device, forced, disabled, dtype):
    forced("nvidia", disabled)
    conv_case(device, dtype, (1, 7, 6, 12), (9, 3, 3, 12), zps=(5, -2) if dtype == "int8" else (0, 0), pad=[1, 1, 1, 1])


@pytest.mark.parametrize("klass", ["nvidia", "mali", "generic"])
def test_conv2d_int4_weights_and_runtime_zero_points(device, forced, klass):
    forced(klass)
    conv_case(device, "int8", (1, 7, 6, 8), (6, 2, 3, 8), wdtype="int4", zps=(100, 0), pad=[1, 1, 1, 1])
    conv_case(device, "int8", (1, 5, 5, 7), (3, 3, 3, 7), zps=(-128, 127), runtime=True, pad=[1, 1, 1, 1])


@pytest.mark.parametrize("klass", ["nvidia", "mali"])
def test_conv2d_large_and_1x1(device, forced, klass):
    forced(klass)
    conv_case(device, "fp32", (1, 20, 19, 33), (70, 3, 3, 33), pad=[1, 1, 1, 1])
    conv_case(device, "fp32", (3, 5, 6, 24), (40, 1, 1, 24))
    conv_case(device, "int8", (1, 16, 15, 64), (65, 1, 1, 64), zps=(3, 0))


def test_conv2d_skips_padded_taps_with_infinite_weights(device, forced):
    forced("nvidia")
    x = np.ones((1, 4, 4, 3), np.float32)
    w = np.ones((2, 3, 3, 3), np.float32)
    w[0, 0, 0, 0] = np.inf

    def build(b):
        xi = b.input("x", x.shape, "FP32")
        b.output(b.conv2d(xi, b.const(w, "FP32"), b.const(np.zeros(2, np.float32), "FP32"), pad=[1, 1, 1, 1]))

    got, want = run_both(device, graph_of(build), {"x": x})
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("klass", ["nvidia", "generic"])
@pytest.mark.parametrize("dtype", ["int8", "fp32"])
def test_conv3d(device, forced, klass, dtype):
    forced(klass)
    conv_case(
        device,
        dtype,
        (2, 4, 5, 6, 3),
        (4, 2, 3, 2, 3),
        op="conv3d",
        zps=(2, -3) if dtype == "int8" else (0, 0),
        pad=[1, 0, 1, 1, 0, 1],
        stride=[1, 2, 1],
        dilation=[2, 1, 1],
    )


@pytest.mark.parametrize("klass", ["nvidia", "mali", "generic"])
@pytest.mark.parametrize("dtype", ["int8", "fp32", "fp16"])
def test_transpose_conv2d(device, forced, klass, dtype):
    forced(klass)
    conv_case(
        device,
        dtype,
        (2, 5, 4, 6),
        (5, 3, 4, 6),
        op="transpose_conv2d",
        zps=(4, -1) if dtype == "int8" else (0, 0),
        out_pad=[0, 1, -1, 2],
        stride=[2, 3],
    )


@pytest.mark.parametrize("klass", ["nvidia", "mali", "generic"])
@pytest.mark.parametrize("dtype", ["int8", "fp32", "fp16"])
@pytest.mark.parametrize("multiplier", [1, 3])
def test_depthwise(device, forced, klass, dtype, multiplier):
    forced(klass)
    conv_case(
        device,
        dtype,
        (2, 9, 11, 5),
        (3, 3, 5, multiplier),
        op="depthwise_conv2d",
        zps=(-3, 2) if dtype == "int8" else (0, 0),
        pad=[1, 1, 0, 2],
        stride=[2, 1],
        dilation=[1, 2],
    )


def test_loop_budget_passes(device, forced, monkeypatch):
    """A reduction past the loop budget runs in passes through a partial-sum temporary (a small budget here)."""
    forced("nvidia")
    for dtype, budget in (("int8", 300), ("fp32", 600)):  # (about 3 passes each)
        shrink_target(monkeypatch, device, loop_budget=budget)
        conv_case(device, dtype, (1, 6, 6, 64), (5, 3, 3, 64), zps=(1, 2) if dtype == "int8" else (0, 0), pad=[1] * 4)


def test_int8_conv_rescale_clamp_chain_fuses(device, forced):
    """int8 CONV2D + RESCALE + CLAMP: one tiled kernel whose epilogue rescales and clamps, bit-exact."""
    forced("nvidia")
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 9, 9, 12)).astype(np.int8)
    w = rng.integers(-128, 128, (16, 3, 3, 12)).astype(np.int8)
    bias = rng.integers(-500, 500, 16).astype(np.int32)

    def build(b):
        xi = b.input("x", x.shape, "INT8")
        zp8 = b.const(np.array([-5], np.int8), "INT8")
        acc = b.conv2d(
            xi,
            b.const(w, "INT8"),
            b.const(bias, "INT32"),
            zp8,
            b.const(np.array([0], np.int8), "INT8"),
            pad=[1, 1, 1, 1],
        )
        mult = b.const(np.full(16, 1 << 30, np.int32) - np.arange(16, dtype=np.int32) * 1000, "INT32")
        shift = b.const(np.full(16, 40, np.int8), "INT8")
        r = b.rescale(acc, mult, shift, 0, 3, rounding_mode="DOUBLE_ROUND", per_channel=True, out_dtype="int8")
        b.output(b.clamp(r, min_val=-100, max_val=90))

    graph = graph_of(build)
    got, want = run_both(device, graph, {"x": x})
    np.testing.assert_array_equal(got, want)
    assert shaders(graph, "nvidia") == ["convolution/conv_tiled"]


def test_tiles_fit_the_target():
    tile = device_class.get("nvidia").conv_tile
    small = conv_tiled.fit(tile, 10_000, 1_000, 64, 4096, 4, 1, True)
    assert (
        small is not None
        and small.invocations <= 64
        and (small.rows + small.cols) * small.depth * 4 + (small.rows * small.depth * 4) <= 4096
    )
    narrow = conv_tiled.fit(tile, 10_000, 3, 1024, 49152, 4, 1, False)
    assert narrow is not None and narrow.cols == 4 and narrow.thread_cols == 4


@pytest.mark.parametrize("model", ["mobilenetv2_fp32", "resnet_int8"])
def test_shipped_cnns_compile_to_tiled_kernels_for_each_gpu_class(model):
    """Every GPU class compiles the shipped CNNs' convolutions to the tiled family: a Program unlike lavapipe's."""
    from conftest import ROOT

    graph = tosa_vk.load_graph(ROOT / "resources" / "models" / model / "model.tosa")
    own = tosa_vk.compile(graph, LAVAPIPE)
    assert not {k.shader for k in walk(own.steps) if isinstance(k, Kernel)} & {
        "convolution/conv_tiled",
        "convolution/depthwise_tiled",
    }
    for klass in GPU_CLASSES:
        program = tosa_vk.compile(graph, LAVAPIPE.with_class(klass))
        used = {k.shader for k in walk(program.steps) if isinstance(k, Kernel)}
        assert "convolution/conv_tiled" in used and "convolution/conv" not in used, klass
        assert program.to_bytes() != own.to_bytes()


def test_loop_budget_splits_into_passes():
    target = dataclasses.replace(LAVAPIPE.with_class("nvidia"), loop_budget=250)
    program = tosa_vk.compile(graph_of(_conv_graph), target)
    kernels = [k for k in walk(program.steps) if isinstance(k, Kernel)]
    assert len(kernels) == 3 and {k.shader for k in kernels} == {"convolution/conv_tiled"}

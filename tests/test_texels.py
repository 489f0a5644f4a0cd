"""Inputs read through uniform texel buffers (tosa_vk/stages/lower/texels.py): the same bits as storage-buffer reads, so
every result is identical with and without them; tensors past the target's texel limit and VGF exports read storage
buffers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder
from tosa_vk.abi.spirv import reflect
from tosa_vk.ir import load_graph
from tosa_vk.ir.dtype import from_npy
from tosa_vk.program import Kernel, walk
from tosa_vk.reference.host_kernels import run as host
from tosa_vk.stages.lower import texels
from tosa_vk.target import LAVAPIPE, MINIMUM
from tosa_vk.tools.bench import graphs as built
from tosa_vk.vulkan.recorder import view_bytes
from tosa_vk.vulkan.runtime import Runtime
from tosa_vk.vulkan.shaders import ShaderCache
from tosa_vk.vulkan.variant import variant_of

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted((ROOT / "resources" / "models").iterdir())


def _texel_bindings(program) -> list[tuple[str, str]]:
    kernels = [k for k in walk(program.steps) if isinstance(k, Kernel)]
    return [(k.shader, n) for k in kernels for n, t in zip(k.bindings, k.texels) if t]


def _feeds(graph, rng):
    feeds = {}
    for name in graph.main.inputs:
        t = graph.main.tensors[name]
        if t.dtype.is_float:
            feeds[name] = rng.standard_normal(t.shape).astype(t.dtype.numpy)
        else:
            feeds[name] = rng.integers(-100, 100, t.shape).astype(t.dtype.numpy)
    return feeds


def _run_both(device, graph, feeds):
    target = device.info.target
    programs = [tosa_vk.compile(graph, target), tosa_vk.compile(graph, texels.without(target))]
    assert _texel_bindings(programs[0]) and not _texel_bindings(programs[1])
    outs = []
    for program in programs:
        with Runtime(program, device, host=host) as runtime:
            outs.append(runtime.run(feeds))
    for name in outs[0]:
        assert np.array_equal(outs[0][name], outs[1][name], equal_nan=True), name


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_shipped_models_identical_with_and_without_texel_reads(device, model):
    graph = load_graph(model / "model.tosa")
    desc = json.loads((model / "desc.json").read_text())
    files = zip(desc["ifm_name"], desc["ifm_file"])
    feeds = {n: from_npy(np.load(model / f), graph.main.tensors[n].dtype) for n, f in files}
    _run_both(device, graph, feeds)


@pytest.mark.parametrize("name", ["transformer_int8", "resnet_fp32"])
def test_built_graphs_identical_with_and_without_texel_reads(device, name):
    graph = built.build(name)[0]
    _run_both(device, graph, _feeds(graph, np.random.default_rng(0)))


def _matmul_graph(h: int):
    b = Builder()
    a = b.input("a", (1, h, 16), "fp32")
    w = b.input("w", (1, 16, 8), "fp32")
    b.output(b.matmul(a, w))
    return b.build()


def test_a_tensor_past_the_texel_limit_reads_its_storage_buffer(device):
    # A has 64 x 16 floats = 256 texels, B 16 x 8 = 32: a limit of 100 texels keeps A on its storage buffer
    target = dataclasses.replace(device.info.target, max_texel_buffer_elements=100)
    graph = _matmul_graph(64)
    program = tosa_vk.compile(graph, target)
    (kernel,) = [k for k in walk(program.steps) if isinstance(k, Kernel)]
    assert kernel.shader == "tensor_ops/matmul_fast"
    assert kernel.texels[:2] == ("", texels.WORDS[16])
    feeds = _feeds(graph, np.random.default_rng(1))
    with Runtime(program, device, host=host) as runtime:
        got = runtime.run(feeds)
    want = tosa_vk.load(graph, backend="reference").run(feeds)
    np.testing.assert_allclose(list(got.values())[0], list(want.values())[0], rtol=1e-5, atol=1e-5)


def test_the_shader_declares_a_uniform_texel_buffer():
    program = tosa_vk.compile(_matmul_graph(8), "lavapipe")
    (kernel,) = [k for k in walk(program.steps) if isinstance(k, Kernel)]
    spirv = ShaderCache().get_many([variant_of(kernel)])[0]
    found = reflect(spirv).bindings
    assert found[(0, 0)] == found[(0, 1)] == "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER"
    assert found[(0, 2)] == "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER"


def test_vgf_export_reads_storage_buffers(device, tmp_path):
    from tosa_vk.errors import TosaError
    from tosa_vk.formats.vgf_export import export_vgf

    graph = _matmul_graph(8)
    with pytest.raises(TosaError, match="texel buffer.*views=False"):
        export_vgf(tosa_vk.compile(graph, device.info.target))
    assert not _texel_bindings(tosa_vk.compile(graph, device.info.target, views=False))
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=False) as model:
        model.export_vgf(tmp_path / "m.vgf")
    assert (tmp_path / "m.vgf").stat().st_size > 0


def test_lavapipe_texel_views_are_rounded_up_to_one_shader_key():
    # llvmpipe compiles a pipeline again for each pattern of bits 8..15 of its texel views' sizes: views of 256
    # bytes and more are rounded up to 64 KiB where the arena has room; elsewhere exact whole texels
    lavapipe, minimum = LAVAPIPE, MINIMUM
    assert lavapipe.texel_view_quantum == 1 << 16 and minimum.texel_view_quantum == 1
    assert view_bytes(lavapipe, 0, 100, 4, 1 << 20) == 100
    assert view_bytes(lavapipe, 256, 1000, 4, 1 << 20) == 1 << 16
    assert view_bytes(lavapipe, 256, 70_000, 16, 1 << 20) == 2 << 16
    assert view_bytes(lavapipe, 1 << 20, 1000, 4, (1 << 20) + 1000) == 1000  # no room past it: exact
    assert view_bytes(minimum, 256, 1001, 4, 1 << 20) == 1004
    big = dataclasses.replace(lavapipe, max_texel_buffer_elements=300)
    assert view_bytes(big, 0, 1000, 4, 1 << 20) == 1000  # rounding would pass the texel limit

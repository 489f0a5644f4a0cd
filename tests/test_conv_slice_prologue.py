"""A SLICE before a CONV2D read in place (fuse.py prologues, lower/convolution.py in_place_slice): a slice that only
drops bottom rows / right columns the layer never reads (ExecuTorch's stride-2 1x1 projections) costs no kernel;
results equal the unfused program's; any other slice keeps its own kernel."""

from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder
from tosa_vk.program import Kernel, walk

pytestmark = pytest.mark.vulkan


def _graph(start, size, kernel, stride, pad, dtype="fp32"):
    rng = np.random.default_rng(3)
    b = Builder()
    x = b.input("x", (1, 10, 12, 6), dtype)
    cut = b.slice(x, start, size)
    if dtype == "fp32":
        w = rng.standard_normal((5, kernel, kernel, size[3])).astype(np.float32)
        y = b.conv2d(cut, w, rng.standard_normal(5).astype(np.float32), np.float32(0), np.float32(0), pad=pad,
                     stride=[stride, stride])  # fmt: skip
        feeds = {"x": rng.standard_normal((1, 10, 12, 6)).astype(np.float32)}
    else:
        w = rng.integers(-127, 128, (5, kernel, kernel, size[3])).astype(np.int8)
        y = b.conv2d(cut, w, rng.integers(-100, 100, 5).astype(np.int32), np.int8(3), np.int8(0), pad=pad,
                     stride=[stride, stride])  # fmt: skip
        feeds = {"x": rng.integers(-128, 128, (1, 10, 12, 6)).astype(np.int8)}
    b.output(y)
    return b.build(), feeds


def _kernels(model) -> list[str]:
    return [k.op for k in walk(model.program.steps) if isinstance(k, Kernel)]


CASES = [  # (start, size, kernel, stride, pad, taken)
    ([0, 0, 0, 0], [1, 9, 11, 6], 1, 2, [0, 0, 0, 0], True),  # a stride-2 projection's trimmed edge
    ([0, 0, 0, 0], [1, 9, 11, 6], 3, 1, [1, 0, 1, 0], True),  # 3x3, top / left padding only
    ([0, 0, 0, 0], [1, 9, 11, 6], 3, 1, [1, 1, 1, 1], False),  # bottom padding: would read the dropped row
    ([0, 1, 0, 0], [1, 9, 11, 6], 1, 2, [0, 0, 0, 0], False),  # starts inside
    ([0, 0, 0, 0], [1, 10, 12, 4], 1, 1, [0, 0, 0, 0], False),  # channels cut
]


@pytest.mark.parametrize("target", [None, "nvidia"])
@pytest.mark.parametrize("dtype", ["fp32", "int8"])
@pytest.mark.parametrize("start,size,kernel,stride,pad,taken", CASES)
def test_a_slice_before_a_convolution(device, target, dtype, start, size, kernel, stride, pad, taken):
    graph, feeds = _graph(start, size, kernel, stride, pad, dtype)
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=False, target=target) as fused:
        got = fused.run(feeds)
        kernels = _kernels(fused)
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=False, target=target, fuse=False) as plain:
        want = plain.run(feeds)
    assert (len(kernels) == 1 and kernels[0].startswith("SLICE ")) == taken, kernels
    ref = tosa_vk.load(graph, backend="reference").run(feeds)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
        if dtype == "int8":
            np.testing.assert_array_equal(got[name], ref[name])
        else:
            np.testing.assert_allclose(got[name], ref[name], rtol=1e-5, atol=1e-5)

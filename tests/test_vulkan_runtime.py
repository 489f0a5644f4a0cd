"""The Vulkan runtime: recorded once and re-submitted, host fallback, profiles, shader cache, limits, leaks."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
from helpers import host_step_graph

import tosa_vk
from tosa_vk import Builder, TosaError, TosaUnsupportedError
from tosa_vk.vulkan.shaders import ShaderCache
from tosa_vk.vulkan.variant import Variant


def small_graph():
    b = Builder()
    x = b.input("x", (4, 8), "fp32")
    y = b.input("y", (1, 8), "fp32")
    s = b.add(x, y, name="s")
    m = b.maximum(s, b.const(np.zeros((1, 1), np.float32)), name="m")
    b.output(b.reshape(m, [32]))
    return b.build()


def feeds(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((4, 8)).astype(np.float32), "y": rng.standard_normal((1, 8)).astype(np.float32)}


def test_matches_reference_and_reruns_with_new_inputs(device):
    graph = small_graph()
    ref = tosa_vk.load(graph, backend="reference")
    with tosa_vk.load(graph, backend="vulkan", device=device) as model:
        for seed in range(3):
            got, want = model.run(feeds(seed)), ref.run(feeds(seed))
            assert list(got) == list(want)
            for name in want:
                assert np.array_equal(got[name], want[name])
        # ADD and MAXIMUM in one generated kernel (tosa_vk/stages/fuse.py); the RESHAPE shares its input's memory
        assert [where for _, where, _ in model.placement] == ["vulkan", "fused", "alias"]


def test_host_fallback(device):
    """An operator without a Vulkan kernel (here a CUSTOM op with only a numpy implementation) runs on the host,
    on views of the same device memory, between GPU kernels."""

    with tosa_vk.load(host_step_graph("com.example.test"), backend="vulkan", device=device) as model:
        out = model.run(x=np.array([1.5, -1.5, 2.0], np.float32))
        assert out["y"].tolist() == [3.0, -3.0, 4.0]
        assert [where for _, where, _ in model.placement] == ["vulkan", "host", "vulkan"]


def test_strict_names_the_operator_without_a_kernel(device):
    @tosa_vk.custom_op("com.example.test", "negate")
    def negate(inputs, attrs):
        return [-inputs[0]]

    b = Builder()
    x = b.input("x", (3,), "fp32")
    b.output(
        b.custom(
            [b.add(x, x)],
            domain_name="com.example.test",
            operator_name="negate",
            implementation_attrs=b"",
            out_shape=(3,),
            out_dtype="fp32",
        )
    )
    with pytest.raises(TosaError, match=r"CUSTOM #1 'custom'.*no Vulkan kernel"):
        tosa_vk.load(b.build(), backend="vulkan", device=device, strict=True)


def test_profile_has_one_time_per_kernel(device):
    with tosa_vk.load(small_graph(), backend="vulkan", device=device, timestamps=True, fuse=False) as model:
        model.run(feeds())
        prof = model.profile()
    assert [t.op.split()[0] for t in prof] == ["ADD", "MAXIMUM"]
    assert all(t.where == "device" and t.microseconds >= 0 for t in prof)


def test_shader_cache_detects_corruption(tmp_path, monkeypatch):
    from tosa_vk.vulkan import builtin

    monkeypatch.setattr(builtin, "library", lambda: builtin.Library(tmp_path / "none.zip"))  # glslc, not shipped
    cache = ShaderCache(tmp_path)
    variant = Variant(
        "elementwise_binary/binary",
        tuple(
            sorted(
                {
                    "A_T": "float",
                    "A_C": "float",
                    "LOAD_A(v)": "(v)",
                    "STORE_A(v)": "(v)",
                    "B_T": "float",
                    "B_C": "float",
                    "LOAD_B(v)": "(v)",
                    "STORE_B(v)": "(v)",
                    "O_T": "float",
                    "O_C": "float",
                    "LOAD_O(v)": "(v)",
                    "STORE_O(v)": "(v)",
                    "COMPUTE_T": "float",
                    "OP(x, y)": "((x) + (y))",
                    **{f"{x}_T4": "vec4" for x in "ABO"},
                }.items()
            )
        ),
        specs=("A_MODE", "B_MODE", "VEC4"),  # broadcast modes (tosa_vk/stages/lower/elementwise_binary.py)
    )
    first = cache.get(variant)
    assert first[:4] == (0x07230203).to_bytes(4, "little") and cache.compiled == 1
    again = ShaderCache(tmp_path)
    assert again.get(variant) == first and again.compiled == 0  # from disk
    spv = next(tmp_path.glob("*.spv"))
    spv.write_bytes(b"\x00" * 64)  # damage it
    healed = ShaderCache(tmp_path)
    assert healed.get(variant) == first and healed.compiled == 1


def test_shader_compile_error_names_the_variant(tmp_path):
    from tosa_vk.vulkan.shaders import ShaderError

    bad = Variant("elementwise_binary/binary", (("OP(x, y)", "nonsense(x)"),))
    with pytest.raises(ShaderError, match=r"shaders/elementwise_binary/binary\.comp"):
        ShaderCache(tmp_path).get(bad)


def test_tensor_larger_than_storage_range_is_rejected(device):
    limit = device.info.limits["maxStorageBufferRange"]
    n = limit // 4 + 16
    b = Builder()
    x = b.input("x", (n,), "fp32")
    b.output(b.reduce_sum(x, axis=0))
    # a reduction along the axis that would split has no split (stages/passes/split.py; an element-wise operator
    # runs in pieces of rows): refused at compile, naming the tensor
    with pytest.raises(TosaUnsupportedError, match="tensor 'x' takes .* maxStorageBufferRange"):
        tosa_vk.load(b.build(), backend="vulkan", device=device)


def rss_kib() -> int:
    """Current resident set size of this process."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_no_leaks_over_2000_runs(device):
    """Process memory stays flat over 2,000 runs and 50 load / close cycles."""
    graph = small_graph()
    data = feeds()
    with tosa_vk.load(graph, backend="vulkan", device=device) as model:
        for _ in range(200):
            model.run(data)
        gc.collect()
        before = rss_kib()
        for _ in range(2000):
            model.run(data)
        gc.collect()
        after_runs = rss_kib()
        segments = len(model.runtime.segments)
    assert after_runs - before < 8 * 1024, f"RSS grew {after_runs - before} KiB over 2000 runs"
    assert segments == 1  # recorded once, re-submitted
    for _ in range(50):
        with tosa_vk.load(graph, backend="vulkan", device=device) as model:
            model.run(data)
    gc.collect()
    after_cycles = rss_kib()
    assert after_cycles - after_runs < 16 * 1024, f"RSS grew {after_cycles - after_runs} KiB over 50 load/close"


def check_staged(graph, values: dict, device) -> None:
    """Runs `graph` on the discrete-GPU path (device-local arena + host-visible twin, copies in the command buffer),
    forced, and checks it against the reference backend."""
    from tosa_vk.vulkan.runtime import Runtime

    program = tosa_vk.compile(graph, device.info.target, strict=True)
    with Runtime(program, device, force_staging=True) as runtime:
        assert runtime.arena.staged
        got = runtime.run(values)
    want = tosa_vk.load(graph, backend="reference").run(values)
    assert all(np.array_equal(got[k], want[k]) for k in want)


def test_staged_memory_path_matches(device):
    check_staged(small_graph(), feeds(), device)


def test_close_is_idempotent(device):
    with tosa_vk.load(small_graph(), backend="vulkan", device=device) as model:
        model.run(feeds())
        runtime = model.runtime
    runtime.close()  # already closed by the with-block: must do nothing
    model.close()


def test_constants_upload_while_the_pipelines_are_created(device, monkeypatch):
    """Runtime starts creating the pipelines before it uploads the constants (issue 49: the driver's compile
    overlaps the upload), and waits for them before it records a command buffer."""
    import threading

    from tosa_vk.vulkan.pipelines import Pipelines
    from tosa_vk.vulkan.runtime import Runtime

    b = Builder()
    x = b.input("x", (4, 4), "fp32")
    y = b.op("REDUCE_SUM", b.op("ADD", x, b.const(np.ones((4, 4), np.float32))), axis=1)  # two kernels
    b.output(b.op("TRANSPOSE", b.op("ADD", y, b.const(np.ones((4, 1), np.float32))), perms=[1, 0], name="y"))
    program = tosa_vk.compile(b.build())
    started = threading.Event()
    create, reset = Pipelines._create, Runtime.reset_variables
    seen = []

    def creating(self, *args):
        started.set()
        return create(self, *args)

    def uploading(self):
        seen.append(started.wait(10))  # a pipeline is under way while the constants go up
        reset(self)

    monkeypatch.setattr(Pipelines, "_create", creating)
    monkeypatch.setattr(Runtime, "reset_variables", uploading)
    with Runtime(program, device) as runtime:
        x = np.arange(16, dtype=np.float32).reshape(4, 4)
        got = runtime.run({"x": x})
    assert seen == [True]
    assert np.array_equal(got["y"], ((x + 1).sum(axis=1, keepdims=True) + 1).T)

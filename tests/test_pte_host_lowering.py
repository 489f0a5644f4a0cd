"""Host operators with a TOSA equivalent lowered into the program (issue 50, tosa_vk/formats/pte/lower.py): each runs
as a TOSA graph of its own on the model's backend, with the numpy kernel's results (integers bit-exact, floats
within the spec's compliance) — on the committed programs of tests/data/pte_host and tests/data/pte (against
load(..., host_lowering=False) and PyTorch's outputs) and operator by operator; placement says "lowered to TOSA"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import desc_arrays

import tosa_vk
from tosa_vk.formats.pte import Kernel
from tosa_vk.formats.pte.program import IntListValue, Plan, TensorListValue, TensorValue

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = [f"{d.parent.name}/{d.name}" for root in ("pte_host", "pte") for d in sorted((DATA / root).iterdir())
            if (d / "model.pte").is_file()]  # fmt: skip
BACKENDS = ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)]
# host operators per program: without lowering -> with it (the rest: no TOSA form, see lower.HOST_ONLY)
HOST_COUNTS = {
    "pte_host/bitwise_int32": (7, 0),
    "pte_host/casts_fp32": (1, 0),
    "pte_host/embedding_fp32": (1, 0),
    "pte_host/in_place_fp32": (1, 0),  # copy_ (in place): RESHAPE
    "pte_host/indexing_fp32": (6, 1),  # index_put
    "pte_host/permute_host_fp32": (2, 0),
    "pte_host/pool_indices_fp32": (1, 1),  # max_pool2d_with_indices
    "pte_host/reductions_fp32": (4, 0),
    "pte_host/grid_sample_fp32": (2, 2),  # grid_sampler_2d
    "pte_host/leaky_in_place_fp32": (1, 0),  # copy_ (in place): RESHAPE
    "pte_host/rfft2_fp32": (3, 0),  # _fft_r2c + 2 view_as_real_copy: one graph, RFFT2D + RESHAPE + CONCAT
    "pte_host/select_scatter_fp32": (2, 0),
    "pte/cnn_int8": (2, 0),
    "pte/cnn_int8_vgf": (2, 0),
    "pte/two_delegates_int8": (5, 0),
    "pte/two_delegates_int8_channels_last": (5, 0),  # channels-last: TRANSPOSE in and out of the memory layout
}


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype.kind in "iub":
        return got.shape == want.shape and np.array_equal(got.astype(want.dtype), want)
    scale = float(np.abs(want[np.isfinite(want)]).max(initial=1.0))
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-5 * scale, equal_nan=True)


def _host_ops(model) -> list[str]:
    return [p.op for p in model.placement if p.where == "host" and p.reason.startswith("ExecuTorch host operator")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", FIXTURES)
def test_lowered_program_matches_numpy_and_eager(name, backend, request):
    folder = DATA / name
    feeds, expected = desc_arrays(folder)
    options = {"device": request.getfixturevalue("device")} if backend == "vulkan" else {}
    with (
        tosa_vk.load(folder / "model.pte", backend=backend, **options) as lowered,
        tosa_vk.load(folder / "model.pte", backend=backend, host_lowering=False, **options) as host,
    ):
        got, numpy_path = lowered.run(feeds), host.run(feeds)
        before, after = len(_host_ops(host)), len(_host_ops(lowered))
        assert (before, after) == HOST_COUNTS.get(name, (0, 0))
        rows = [p for p in lowered.placement if "lowered to TOSA" in p.reason]
        assert len(rows) == before - after and all(
            p.where == ("vulkan" if backend == "vulkan" else "host") for p in rows
        )
    for (out, g), n, want in zip(got.items(), numpy_path.values(), expected):
        assert _same(g, n), f"{name} {out}: lowered != numpy"
        assert _same(g, want), f"{name} {out}: lowered != PyTorch"


def test_placement_names_the_tosa_operators():
    with tosa_vk.load(DATA / "pte_host/embedding_fp32/model.pte", backend="reference") as model:
        first = model.placement[0]
    assert first.op == "aten::embedding.out #0" and "lowered to TOSA RESHAPE + GATHER" in first.reason
    with tosa_vk.load(DATA / "pte/cnn_int8/model.pte", backend="reference") as model:
        assert "lowered to TOSA MUL + EQUAL + SELECT + CLAMP + CAST + ADD" in model.placement[0].reason


def test_info_says_what_is_lowered(capsys):
    from tosa_vk.tools.cli import main

    assert main(["info", str(DATA / "pte_host/indexing_fp32/model.pte")]) == 0
    out = capsys.readouterr().out
    assert "aten::index.Tensor_out (lowered to TOSA RESHAPE + GATHER)" in out
    assert "aten::remainder.Scalar_out (lowered to TOSA INTDIV + MUL + SUB + GREATER + ADD + SELECT)" in out
    assert "aten::index_put.out (on the host: a scatter" in out


def test_int64_beyond_int32_runs_the_numpy_kernel():
    """An int64 value is INT32 in a lowered graph: one beyond it (casts_fp32 feeds 2**40) runs that call in numpy,
    which wraps as PyTorch; an embedding id out of range is the numpy kernel's error, not a GATHER out of bounds."""
    folder = DATA / "pte_host/casts_fp32"
    x, i = np.load(folder / "input_0.npy"), np.load(folder / "input_1.npy")
    assert i.max() > 2**31
    with tosa_vk.load(folder / "model.pte", backend="reference") as model:
        assert model.run(input_0=x, input_1=i)["output_0"].tolist() == (i.astype(np.int32) + 1).tolist()
        assert model.run(input_0=x, input_1=i[:3] % 7)["output_0"].tolist() == (i % 7 + 1).tolist()
    with tosa_vk.load(DATA / "pte_host/embedding_fp32/model.pte", backend="reference") as model:
        with pytest.raises(tosa_vk.TosaError, match="aten::embedding.out"):
            model.run(input_0=np.array([[1, 5, 25, 0, 7]], np.int64))


@pytest.mark.vulkan
def test_lowered_values_stay_on_the_device(device):
    """relu -> permute -> the delegate: with the host operators lowered, nothing but the input goes to the device."""
    folder = DATA / "pte_host/permute_host_fp32"
    x = np.load(folder / "input_0.npy")
    with tosa_vk.load(folder / "model.pte", backend="vulkan", device=device) as model:
        got = model.run(input_0=x, device_outputs=True)["output_0"]
        assert np.allclose(got.numpy(), np.load(folder / "eager_0.npy"), atol=1e-5)
        assert model.transferred["to_device"] == x.nbytes


@pytest.mark.vulkan
def test_channels_last_values_stay_on_the_device(device):
    """two_delegates_int8_channels_last: quantize, delegate, dequantize, hardtanh, quantize, delegate, dequantize on
    channels-last tensors: the lowered operators read and write the memory layout as the delegates do, so only the
    input goes to the device and nothing comes back before the (device) output."""
    folder = DATA / "pte/two_delegates_int8_channels_last"
    x = np.load(folder / "input_0.npy")
    with tosa_vk.load(folder / "model.pte", backend="vulkan", device=device) as model:
        assert "TRANSPOSE" in model.placement[0].reason  # logical order inside its graph
        got = model.run(input_0=x, device_outputs=True)["output_0"]
        assert model.transferred == {"to_device": x.nbytes, "from_device": 0}
        with tosa_vk.load(folder / "model.pte", backend="reference", host_lowering=False) as host:
            assert np.array_equal(got.numpy(), host.run(input_0=x)["output_0"])


# ---- operator by operator: one-kernel plans, lowered against the numpy kernel ---------------------------------------


def _tensor(shape, dtype, data=None) -> TensorValue:
    return TensorValue(np.dtype(dtype), tuple(shape), tuple(range(len(shape))), data)


def _plan(name: str, args: list, outs: list[tuple[tuple[int, ...], str]]) -> tuple[Plan, dict]:
    """A plan calling host operator `name` once: array arguments are method inputs (fed), a ("const", array) a
    constant tensor, lists of ints IntLists, lists of arrays TensorLists; outs (shape, dtype) are the outputs."""
    values: list = []
    indices: list[int] = []
    inputs: list[int] = []
    feeds: dict = {}

    def tensor(a) -> int:
        if isinstance(a, tuple):
            values.append(_tensor(a[1].shape, a[1].dtype, a[1]))
        else:
            values.append(_tensor(a.shape, a.dtype))
            feeds[f"input_{len(inputs)}"] = a
            inputs.append(len(values) - 1)
        return len(values) - 1

    for a in args:
        if isinstance(a, list) and a and all(isinstance(v, np.ndarray) for v in a):
            values.append(TensorListValue(tuple(tensor(v) for v in a)))
        elif isinstance(a, list) and all(type(v) is int for v in a):
            start = len(values)
            values += a
            values.append(IntListValue(tuple(range(start, start + len(a)))))
        elif isinstance(a, np.ndarray) or isinstance(a, tuple):
            tensor(a)
        else:
            values.append(a)
        indices.append(len(values) - 1)
    first = len(values)
    values += [_tensor(*o) for o in outs]
    written = tuple(range(first, first + len(outs)))
    values += [values[first]] if len(outs) == 1 else [TensorListValue(written)]
    op, _, overload = name.partition(".")
    if not outs:  # an in-place operator (copy_): writes its first argument and returns it
        written = (indices[0],)
        kernel = Kernel(op, overload, (*indices, indices[0]))
        return Plan("forward", values, tuple(inputs), written, [kernel]), feeds
    kernel = Kernel(op, overload, (*indices, *written, len(values) - 1))
    return Plan("forward", values, tuple(inputs), written, [kernel]), feeds


def _lowered_and_host(planned: tuple[Plan, dict], backend: str, request) -> tuple[dict, dict]:
    """The one host operator of `planned` run lowered to TOSA on `backend` (placement saying so) and in numpy on
    the host (placement saying so): both runs' outputs."""
    from tosa_vk.backends.pte import PteModel
    from tosa_vk.backends.reference import ReferenceModel

    plan, feeds = planned
    cls: type = ReferenceModel
    options: dict = {}
    if backend == "vulkan":
        from tosa_vk.backends.vulkan import VulkanModel

        cls, options = VulkanModel, {"device": request.getfixturevalue("device")}
    with PteModel(plan, cls, backend=backend, file="t.pte", options=options) as lowered:
        assert "lowered to TOSA" in lowered.placement[0].reason, lowered.placement[0]
        got = lowered.run(feeds)
    with PteModel(plan, ReferenceModel, backend="reference", file="t.pte", host_lowering=False) as host:
        assert host.placement[0].where == "host" and "lowered" not in host.placement[0].reason
        return got, host.run(feeds)


def _cases():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal((2, 3, 4)).astype(np.float32)
    row = rng.standard_normal((1, 4)).astype(np.float32)
    a = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    b = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    i64 = np.array([[3, 0], [1, 3]], np.int64)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    f32, i32, b8 = "float32", "int32", "bool"
    yield "aten::view_copy.out", [x, [6, 4]], [((6, 4), f32)]
    yield "aten::squeeze_copy.dims_out", [x[:1], [0]], [((3, 4), f32)]
    yield "aten::unsqueeze_copy.out", [x, -1], [((2, 3, 4, 1), f32)]
    yield "aten::clone.out", [x, None], [((2, 3, 4), f32)]
    yield "aten::_to_copy.out", [a, False, None], [((3, 4), f32)]
    yield "dim_order_ops::_to_dim_order_copy.out", [a > 0, False, None], [((3, 4), i32)]
    yield "aten::permute_copy.out", [x, [2, 0, 1]], [((4, 2, 3), f32)]
    yield "aten::relu.out", [x], [((2, 3, 4), f32)]
    yield "aten::hardtanh.out", [x, -0.5, 0.5], [((2, 3, 4), f32)]
    yield "aten::clamp.out", [a, None, 3], [((3, 4), i32)]
    yield "aten::add.out", [x, row, 1], [((2, 3, 4), f32)]
    yield "aten::sub.out", [a, b, 1], [((3, 4), i32)]
    yield "aten::mul.out", [x, 2.5], [((2, 3, 4), f32)]
    yield "aten::neg.out", [x], [((2, 3, 4), f32)]
    yield "aten::sigmoid.out", [x], [((2, 3, 4), f32)]
    yield "aten::tanh.out", [x], [((2, 3, 4), f32)]
    yield "aten::cat.out", [[x, y], 1], [((2, 6, 4), f32)]
    yield "aten::slice_copy.Tensor_out", [x, -1, 1, 2**62, 1], [((2, 3, 3), f32)]
    yield "aten::select_copy.int_out", [x, 1, -1], [((2, 4), f32)]
    yield "aten::expand_copy.out", [row, [3, -1, 4], False], [((3, 1, 4), f32)]
    yield "aten::expand_copy.out", [x[:, :1], [2, 5, 4], False], [((2, 5, 4), f32)]
    yield "aten::where.self_out", [x > 0, x, y], [((2, 3, 4), f32)]
    yield "aten::embedding.out", [("const", w), i64, -1, False, False], [((2, 2, 6), f32)]
    yield "aten::embedding.out", [w, np.array([4, 0, 2], np.int32), -1, False, False], [((3, 6), f32)]
    yield "aten::index.Tensor_out", [x, [np.array([1, 0, 1], np.int64)]], [((3, 3, 4), f32)]
    yield "aten::argmax.out", [x, 1, True], [((2, 1, 4), "int64")]
    yield "aten::argmin.out", [x, None, False], [((), "int64")]
    yield "aten::max.dim_max", [x, -1, False], [((2, 3), f32), ((2, 3), "int64")]
    yield "aten::min.dim_min", [x, 0, True], [((1, 3, 4), f32), ((1, 3, 4), "int64")]
    yield "aten::amax.out", [a, [0, 1], True], [((1, 1), i32)]
    yield "aten::amin.out", [x, [1], False], [((2, 4), f32)]
    yield "aten::sum.IntList_out", [x, [0, -1], False, None], [((3,), f32)]
    yield "aten::mean.out", [x, [1], True, None], [((2, 1, 4), f32)]
    yield "aten::bitwise_and.Tensor_out", [a, b], [((3, 4), i32)]
    yield "aten::bitwise_or.Scalar_out", [a, 5], [((3, 4), i32)]
    yield "aten::bitwise_xor.Tensor_out", [a > 0, b > 0], [((3, 4), b8)]
    yield "aten::bitwise_not.out", [a], [((3, 4), i32)]
    yield "aten::logical_and.out", [a > 0, b > 0], [((3, 4), b8)]
    yield "aten::logical_not.out", [a > 0], [((3, 4), b8)]
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        yield f"aten::{op}.Tensor_out", [a, b], [((3, 4), b8)]
        yield f"aten::{op}.Scalar_out", [x, 0.25], [((2, 3, 4), b8)]
    yield "aten::full.out", [[2, 3], 1.5], [((2, 3), f32)]
    yield "aten::arange.start_out", [2, 9, 3], [((3,), "int64")]
    yield "aten::full_like.out", [x, -2, None], [((2, 3, 4), i32)]
    # copy_(dst, src): dst's new value, src cast and broadcast to dst's dtype and shape (no outs: it writes dst)
    yield "aten::copy_", [y, x, False], []
    yield "aten::copy_", [x, ("const", row), False], []  # broadcast: TILE
    yield "aten::copy_", [x[0].copy(), a, False], []  # int32 -> float32: CAST
    yield "aten::copy_", [a, b > 0, False], []  # bool -> int32
    yield "aten::copy_", [a.astype(np.int64), b[:1].astype(np.int64), False], []  # int64 (INT32 here), broadcast
    yield from _adversarial_int_cases()


def _adversarial_int_cases():
    """Integer operators at the edges (INT_MIN / INT_MAX, ties, wrap-around) and float arg reductions on NaN, -0.0
    and infinities: the lowering bit-exact to the numpy kernel (PyTorch's results)."""
    i32, i8 = np.iinfo(np.int32), np.iinfo(np.int8)
    edge = np.array(
        [[i32.max, i32.min, -1, 0], [i32.min, i32.max, i32.min + 1, 1], [7, -7, i32.max, i32.min]], np.int32
    )
    ones = np.array([[1, -1, i32.min, i32.max], [i32.min, 1, -1, i32.max], [i32.max, i32.min, 0, -1]], np.int32)
    small = np.array([[i8.min, i8.max, 0, i8.min], [-1, 3, i8.max, i8.min]], np.int8)
    f = np.array([[0.0, -0.0, 1.0, np.nan], [-0.0, 0.0, -np.inf, -np.inf], [np.inf, 2.0, np.inf, 1.0]], np.float32)
    i64 = "int64"
    yield "aten::add.out", [edge, ones, 1], [((3, 4), "int32")]  # wraps both ways
    yield "aten::sub.out", [edge, ones, 1], [((3, 4), "int32")]
    yield "aten::sub.out", [edge, -1, 1], [((3, 4), "int32")]
    yield "aten::add.out", [edge[:1].astype(np.int64), edge[1:2].astype(np.int64) // 4, 1], [((1, 4), i64)]
    yield "aten::add.out", [np.full((1, 4), 2**30 - 1, np.int64), np.full((1, 4), 2**30, np.int64), 1], [((1, 4), i64)]
    yield (
        "aten::sub.out",
        [np.array([[2**30 - 1, -(2**30) + 1]]), np.array([[-(2**30) + 1, 2**30 - 1]]), 1],
        [((1, 2), i64)],
    )
    yield "aten::mul.out", [edge, ones], [((3, 4), "int32")]  # the low 32 bits
    yield "aten::add.out", [small, small[::-1], 1], [((2, 4), "int8")]
    yield "aten::mul.out", [small.astype(np.int16) * 200, 300], [((2, 4), "int16")]
    yield "aten::neg.out", [edge], [((3, 4), "int32")]
    yield "aten::neg.out", [small], [((2, 4), "int8")]
    yield "aten::neg.out", [small.astype(np.int16) * 256], [((2, 4), "int16")]
    yield "aten::neg.out", [f], [((3, 4), "float32")]
    for op in ("argmax", "argmin"):
        yield f"aten::{op}.out", [edge, 1, False], [((3,), i64)]
        yield f"aten::{op}.out", [edge, None, True], [((1, 1), i64)]
        yield f"aten::{op}.out", [np.array([[3, 3, 1, 1], [2, 2, 2, 2]], np.int32), 1, False], [((2,), i64)]  # ties
        yield f"aten::{op}.out", [small, 1, False], [((2,), i64)]
        yield f"aten::{op}.out", [small.astype(np.int16) * 256, 0, True], [((1, 4), i64)]
        yield f"aten::{op}.out", [f, 1, False], [((3,), i64)]  # NaN first; -0.0 ties 0.0; infinities tie
        yield f"aten::{op}.out", [f[1:], 0, False], [((4,), i64)]
    yield "aten::max.dim_max", [edge, 0, False], [((4,), "int32"), ((4,), i64)]
    yield "aten::min.dim_min", [edge, 1, True], [((3, 1), "int32"), ((3, 1), i64)]
    yield "aten::min.dim_min", [small, 1, False], [((2,), "int8"), ((2,), i64)]
    yield "aten::sum.IntList_out", [small, [1], False, None], [((2,), i64)]
    yield "aten::sum.IntList_out", [small > 0, [0, 1], True, None], [((1, 1), i64)]
    yield "aten::sum.IntList_out", [edge // 8, [0], False, None], [((4,), i64)]  # within int32: on the device
    yield "aten::sum.IntList_out", [edge, [0], False, None], [((4,), i64)]  # beyond: numpy's kernel runs that call
    for d in (3, -3, 1, 2**30, -(2**30)):
        yield "aten::remainder.Scalar_out", [edge, d], [((3, 4), "int32")]
    yield "aten::remainder.Scalar_out", [np.arange(-6, 6, dtype=np.int64).reshape(3, 4), 4], [((3, 4), i64)]
    w = np.arange(20, dtype=np.float32).reshape(4, 5)
    yield (
        "aten::gather.out",
        [w, 1, np.array([[4, 0, 0], [1, 2, 3], [3, 3, 4]], np.int64), False],
        [((3, 3), "float32")],
    )
    yield "aten::gather.out", [w, 0, np.array([[3, 0], [0, 2]], np.int64), False], [((2, 2), "float32")]
    yield "aten::gather.out", [edge, -1, np.array([[0, 3], [2, 2], [1, 0]], np.int32), False], [((3, 2), "int32")]
    yield "aten::div.out", [f, 0.25], [((3, 4), "float32")]
    yield "aten::div.out", [f, ("const", np.array([2.0, -0.5, 8.0, 2.0**-20], np.float32))], [((3, 4), "float32")]


CASES = list(_cases())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_lowered_operator_matches_numpy(case, backend, request):
    name, args, outs = CASES[case]
    got, want = _lowered_and_host(_plan(name, args, outs), backend, request)
    for out in want:
        assert got[out].dtype == want[out].dtype and _same(got[out], want[out]), (name, out)


# ---- quantize / dequantize: bit-exact to the numpy kernels (ExecuTorch's formula) on adversarial inputs ----------


def _adversarial(scale: float) -> np.ndarray:
    """Ties after scaling (k + 0.5 times the scale, and the floats either side), -0.0, values beyond int16,
    huge magnitudes, infinities, NaN, subnormals."""
    k = np.arange(-300, 300).astype(np.float32) + np.float32(0.5)
    ties = k * np.float32(scale)
    up, down = np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))
    odd = np.array([0.0, -0.0, 1e4, -1e4, 3e38, -3e38, np.inf, -np.inf, np.nan, 1e-45, -1e-40], np.float32)
    return np.concatenate([ties, up, down, odd]).astype(np.float32)


def _qdq_cases():
    i8, i16, i32, f32 = 1, 2, 3, "float32"  # ExecuTorch scalar type codes
    for scale, zp in ((0.1, 0), (0.02, -7), (1 / 3, 5), (0.25, 0)):
        x = _adversarial(scale)
        yield QD + "quantize_per_tensor.out", [x, scale, zp, -128, 127, i8], [(x.shape, "int8")]
        yield QD + "quantize_per_tensor.out", [x, scale, zp, -1000, 1000, i16], [(x.shape, "int16")]
    x = _adversarial(0.05)
    yield QD + "quantize_per_tensor.out", [x, 0.05, 3, -(2**20), 2**20, i32], [(x.shape, "int32")]
    x = _adversarial(0.1)[:1200].reshape(4, 300).T.copy()  # per channel: 4 scales along axis 1
    scales, zps = np.array([0.1, 0.02, 1 / 3, 0.25]), np.array([0, -7, 5, 127])
    yield QD + "quantize_per_channel.out", [x, ("const", scales), ("const", zps), 1, -128, 127, i8], [
        (x.shape, "int8")]  # fmt: skip
    q = np.arange(-128, 128, dtype=np.int8).reshape(64, 4)
    yield QD + "dequantize_per_tensor.out", [q, 0.1, -128, -128, 127, i8, None], [(q.shape, f32)]
    yield QD + "dequantize_per_tensor.out", [q.astype(np.int16) * 200, 1 / 3, 9, -2**15, 2**15 - 1, i16, None], [
        (q.shape, f32)]  # fmt: skip
    yield QD + "dequantize_per_channel.out", [q, ("const", scales), ("const", zps), 1, -128, 127, i8, None], [
        (q.shape, f32)]  # fmt: skip
    yield QD + "dequantize_per_channel.out", [q, ("const", scales), None, -1, -128, 127, i8, None], [(q.shape, f32)]
    # float16 in and out: widened exactly to float32 for the chain, the dequantized product rounded once to float16
    with np.errstate(over="ignore"):  # (+-3e38 become infinities)
        h = np.concatenate([_adversarial(0.1)[:-2], [65504, -65504, 6e-8]]).astype(np.float16)
    yield QD + "quantize_per_tensor.out", [h, 0.1, 3, -128, 127, i8], [(h.shape, "int8")]
    yield QD + "quantize_per_tensor.out", [h, 1 / 3, -9, -1000, 1000, i16], [(h.shape, "int16")]
    yield QD + "dequantize_per_tensor.out", [q, 0.1, -128, -128, 127, i8, None], [(q.shape, "float16")]
    yield QD + "dequantize_per_tensor.out", [q.astype(np.int16) * 200, 1 / 3, 9, -2**15, 2**15 - 1, i16, None], [
        (q.shape, "float16")]  # fmt: skip


QD = "quantized_decomposed::"
QDQ_CASES = list(_qdq_cases())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(QDQ_CASES)), ids=[f"{c[0][len(QD) :]}-{i}" for i, c in enumerate(QDQ_CASES)])
def test_quantize_dequantize_lowered_bit_exact(case, backend, request):
    """The lowered chain gives the numpy kernel's bits: ties round half to even after x * (1 / scale), values beyond
    the range and infinities saturate, NaN gives the zero point, -0.0 and subnormals 0; dequantize's floats equal."""
    name, args, outs = QDQ_CASES[case]
    got, want = _lowered_and_host(_plan(name, args, outs), backend, request)
    for out in want:
        g, w = got[out], want[out]
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g.view(f"u{g.itemsize}"), w.view(f"u{w.itemsize}")), (name, out, np.nonzero(g != w))


def test_quantize_multiplies_by_the_float32_reciprocal():
    """ExecuTorch's quantize_val (and torch.ops.quantized_decomposed) computes x * (1 / scale) in float32, which
    rounds some ties differently from x / scale: -13.549999 / 0.1 rounds to -135, * (1 / 0.1) to -136."""
    from tosa_vk.formats.pte.host_ops import HOST_OPS

    x = np.array([-13.549999, -2.6699998], np.float32)
    quantize = HOST_OPS[QD + "quantize_per_tensor.out"].fn
    assert quantize(x, 0.1, 0, -1000, 1000, 2).tolist() == [-136, -27]
    assert quantize(x, 0.02, 0, -1000, 1000, 2).tolist() == [-677, -133]
    assert quantize(np.array([np.nan, np.inf, -np.inf, -0.0], np.float32), 0.1, 3, -128, 127, 1).tolist() == [
        3, 127, -128, 3]  # fmt: skip


def test_quantize_not_exact_stays_on_the_host():
    """What the chain cannot hold exactly stays on the host, saying why: a float64 input, a scale whose reciprocal
    would meet flushed subnormals, int32 bounds beyond float32's integers, per-channel scales fed at run time."""
    from tosa_vk.formats.pte import lower

    x = np.zeros((2, 3), np.float32)
    for args, out, why in (
        ([x.astype(np.float64), 0.1, 0, -128, 127, 1], "int8", "float64 has no TOSA type"),
        ([x, 2e-38, 0, -128, 127, 1], "int8", "float32 holds exactly"),
        ([x, 0.1, 0, -(2**31), 2**31 - 1, 3], "int32", "float32 holds exactly"),
        ([x, -0.5, 0, -128, 127, 1], "int8", "positive normal"),
    ):
        plan, _ = _plan(QD + "quantize_per_tensor.out", args, [((2, 3), out)])
        assert why in lower.lower(plan.instructions[0], plan)
    plan, _ = _plan(QD + "quantize_per_channel.out", [x, np.ones(3), ("const", np.zeros(3, np.int64)), 1, -128, 127, 1],
                    [((2, 3), "int8")])  # fmt: skip
    assert "run time" in lower.lower(plan.instructions[0], plan)


def test_a_number_where_a_tensor_is_stays_on_the_host():
    """A damaged program's number in a tensor argument (the fuzzer's mutant of two_delegates_int8_channels_last): the
    lowering says why it stays on the host (host_ops.check then refuses it cleanly), never an AttributeError."""
    from tosa_vk.formats.pte import lower

    plan, _ = _plan(QD + "dequantize_per_tensor.out", [-128, 0.1, 0, -128, 127, 1, None], [((2, 3), "float32")])
    assert "int -128 where a tensor argument is" in lower.lower(plan.instructions[0], plan)


def test_quantize_dequantize_match_pytorch():
    """torch.ops.quantized_decomposed on random and tie inputs: the numpy kernels and the lowered chains (reference
    backend) give its results bit for bit (per-channel scales in float32: with float64 ones torch multiplies in
    float64, ExecuTorch's kernel in float32)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.ao.quantization.fx._decomposed")  # registers quantized_decomposed

    from tosa_vk.backends.pte import PteModel
    from tosa_vk.backends.reference import ReferenceModel

    ops = torch.ops.quantized_decomposed
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(4000).astype(np.float32) * 8, _adversarial(0.1)[:-5]]).astype(np.float32)
    x = x[: x.size // 4 * 4].reshape(-1, 4)
    scales, zps = np.array([0.1, 0.02, 1 / 3, 0.05], np.float32), np.array([0, -7, 5, 100])
    cases = [
        (QD + "quantize_per_tensor.out", [x, 0.1, 3, -128, 127, 1], "int8",
         ops.quantize_per_tensor(torch.from_numpy(x), 0.1, 3, -128, 127, torch.int8)),
        (QD + "quantize_per_tensor.out", [x, 0.02, -5, -1000, 1000, 2], "int16",
         ops.quantize_per_tensor(torch.from_numpy(x), 0.02, -5, -1000, 1000, torch.int16)),
        (QD + "quantize_per_channel.out", [x, ("const", scales), ("const", zps), 1, -128, 127, 1], "int8",
         ops.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales), torch.from_numpy(zps), 1, -128,
                                  127, torch.int8)),
    ]  # fmt: skip
    q = rng.integers(-128, 128, x.shape).astype(np.int8)
    cases.append((QD + "dequantize_per_tensor.out", [q, 0.1, 3, -128, 127, 1, None], "float32",
                  ops.dequantize_per_tensor(torch.from_numpy(q), 0.1, 3, -128, 127, torch.int8)))  # fmt: skip
    cases.append((QD + "dequantize_per_channel.out", [q, ("const", scales), ("const", zps), 1, -128, 127, 1, None],
                  "float32", ops.dequantize_per_channel(torch.from_numpy(q), torch.from_numpy(scales),
                                                        torch.from_numpy(zps), 1, -128, 127, torch.int8)))  # fmt: skip
    for name, args, dtype, want in cases:
        plan, feeds = _plan(name, args, [(x.shape, dtype)])
        want = want.numpy()
        for lowering in (True, False):
            with PteModel(plan, ReferenceModel, backend="reference", file="t.pte", host_lowering=lowering) as m:
                got = m.run(feeds)["output_0"]
            assert np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")), (name, lowering)


# ---- rfft2: _fft_r2c + the view_as_real_copy reading its complex out, one RFFT2D graph ------------------------------


def _rfft_plan(shape, dims, normalization=0, onesided=True, readers=1, dtype="float32") -> tuple[Plan, dict]:
    """x -> _fft_r2c(x, dims, normalization, onesided) -> `readers` view_as_real_copy of its complex out, each a
    method output (as ExecuTorch exports torch.fft.rfft2 / rfft)."""
    x = np.random.default_rng(len(shape) + shape[-1]).standard_normal(shape).astype(dtype)
    rank = len(shape)
    half = [s // 2 + 1 if d == dims[-1] % rank and onesided else s for d, s in enumerate(shape)]
    values: list = [_tensor(shape, dtype), _tensor(half, "complex64"), *dims]
    values += [IntListValue(tuple(range(2, 2 + len(dims)))), normalization, onesided]
    lst, complex_out = len(values) - 3, 1
    instructions: list = [Kernel("aten::_fft_r2c", "out", (0, lst, lst + 1, lst + 2, complex_out, complex_out))]
    outs = []
    for _ in range(readers):
        values.append(_tensor([*half, 2], "float32"))
        outs.append(len(values) - 1)
        instructions.append(Kernel("aten::view_as_real_copy", "out", (complex_out, outs[-1], outs[-1])))
    return Plan("forward", values, (0,), tuple(outs), instructions), {"input_0": x}


def _fft_bound(x: np.ndarray, points: int) -> float:
    """The spec's dot-product bound for RFFT2D (local_bound false, as tests/test_vulkan_tensor_ops.py): 2 * KS ulps
    of max|x| * sum|weights|, KS = 2 H W terms, sum |cos| + |sin| <= sqrt(2) H W."""
    return 2 * (2 * points) * 2.0**-24 * max(float(np.abs(x).max()), 2.0**-126) * np.sqrt(2) * points


RFFT_CASES = [
    ((2, 4, 8), [1, 2], 0, 2),  # the fixture's form: two view_as_real_copy of one FFT
    ((3, 16), [-1], 0, 1),  # torch.fft.rfft: H = 1
    ((2, 2, 8, 4), [-2, -1], 2, 1),  # by 1 / n: a MUL by 2**-5
    ((1, 16, 4), [1, 2], 1, 1),  # by 1 / sqrt(n), n = 64: 2**-3
    ((1, 64, 32), [1, 2], 0, 1),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", RFFT_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-norm{c[2]}-{c[3]}")
def test_rfft_lowered_within_the_spec_bound(case, backend, request):
    """The lowered graph (placement: RFFT2D, the view_as_real_copy "with #0") and numpy's kernel both within the
    spec's RFFT2D bound of the float64 transform, and of each other."""
    shape, dims, normalization, readers = case
    planned = _rfft_plan(shape, dims, normalization, readers=readers)
    got, want = _lowered_and_host(planned, backend, request)
    x = planned[1]["input_0"]
    axes = [d % len(shape) for d in dims]
    exact = np.fft.rfftn(x.astype(np.float64), axes=axes, norm=("backward", "ortho", "forward")[normalization])
    exact = np.stack([exact.real, exact.imag], axis=-1)
    points = int(np.prod([shape[a] for a in axes]))
    bound = _fft_bound(x, points) / (1, np.sqrt(points), points)[normalization]
    assert list(got) == list(want) and len(got) == readers
    for out in want:
        assert got[out].shape == want[out].shape == exact.shape and got[out].dtype == np.float32
        assert np.abs(got[out] - exact).max() <= bound and np.abs(want[out] - exact).max() <= bound
        assert np.abs(got[out] - want[out]).max() <= 2 * bound


def test_rfft_placement_and_info(capsys):
    from tosa_vk.backends.pte import PteModel
    from tosa_vk.backends.reference import ReferenceModel
    from tosa_vk.tools.cli import main

    plan, feeds = _rfft_plan((2, 4, 8), [1, 2], readers=2)
    with PteModel(plan, ReferenceModel, backend="reference", file="t.pte") as model:
        rows = [(p.op, p.reason) for p in model.placement]
        assert "value_1" not in [c.name for c in model.capturable]  # the complex value is never made
        got = model.run(feeds, capture=["output_0", "output_1"])
    assert rows == [
        ("aten::_fft_r2c.out #0", "host operator lowered to TOSA RFFT2D + RESHAPE + CONCAT"),
        ("aten::view_as_real_copy.out #1", "host operator lowered to TOSA with #0"),
        ("aten::view_as_real_copy.out #2", "host operator lowered to TOSA with #0"),
    ]
    assert np.array_equal(got["output_0"], got["output_1"])
    assert main(["info", str(DATA / "pte_host/rfft2_fp32/model.pte")]) == 0
    out = capsys.readouterr().out
    assert "aten::_fft_r2c.out (lowered to TOSA RFFT2D + RESHAPE + CONCAT)" in out
    assert "aten::view_as_real_copy.out (lowered to TOSA with #0)" in out


@pytest.mark.parametrize(
    "shape, dims, normalization, onesided, why",
    [
        ((2, 6, 8), [1, 2], 0, True, "H = 6, W = 8 (RFFT2D: powers of two"),
        ((2, 4, 8), [0, 1], 0, True, "over dims [0, 1]"),
        ((2, 4, 8), [1, 2], 0, False, "two-sided FFT"),
        ((1, 2, 4), [1, 2], 1, True, "normalization 1 over 8 points"),
        ((1, 2, 16384), [-1], 0, True, "MAX_KERNEL 8192"),
    ],
)
def test_rfft_without_a_tosa_form_stays_on_the_host(shape, dims, normalization, onesided, why):
    from tosa_vk.formats.pte import lower

    plan, _ = _rfft_plan(shape, dims, normalization, onesided)
    result = lower.lower_all(plan)
    assert isinstance(result[0], str) and why in result[0], result[0]
    assert "complex" in result[1]  # its view_as_real_copy stays with it, saying why


def test_rfft_complex_out_read_elsewhere_stays_on_the_host():
    """An _fft_r2c whose complex out is a method output (or read by anything but view_as_real_copy) stays on the
    host: TOSA has no complex type."""
    from tosa_vk.formats.pte import lower

    plan, _ = _rfft_plan((2, 4, 8), [1, 2])
    plan = Plan(plan.name, plan.values, plan.inputs, (*plan.outputs, 1), plan.instructions)
    assert "complex out is a method output" in lower.lower(plan.instructions[0], plan)


def test_copy_in_place_without_a_tosa_form_stays_on_the_host():
    """copy_ of floats into integers (TOSA's CAST rounds, PyTorch truncates) and of a tensor onto itself stay on
    the host."""
    from tosa_vk.formats.pte import lower

    x, a = np.ones((2, 3), np.float32), np.ones((2, 3), np.int32)
    plan, _ = _plan("aten::copy_", [a, x, False], [])
    assert "float to integer" in lower.lower(plan.instructions[0], plan)
    plan, _ = _plan("aten::copy_", [x, x, False], [])
    itself = Plan(plan.name, plan.values, plan.inputs[:1], plan.outputs, [Kernel("aten::copy_", "", (0, 0, 2, 0))])
    assert "also an input" in lower.lower(itself.instructions[0], itself)


@pytest.mark.vulkan
@pytest.mark.parametrize("name", ["in_place_fp32", "rfft2_fp32"])
def test_copy_and_rfft_values_stay_on_the_device(device, name):
    """in_place_fp32 (buf.add_(x); return buf, buf * 2): with copy_ lowered the written-back buffer never comes
    back to the host before it is returned (before: the delegate's sum came back for numpy's copy_); rfft2_fp32:
    the input goes to the device once, the FFT's parts stay there for the delegate."""
    folder = DATA / "pte_host" / name
    feeds, expected = desc_arrays(folder)
    with tosa_vk.load(folder / "model.pte", backend="vulkan", device=device) as model:
        got = model.run(feeds, device_outputs=True)
        assert model.transferred == {"to_device": sum(v.nbytes for v in feeds.values()), "from_device": 0}
    for g, want in zip(got.values(), expected):
        assert np.allclose(g.numpy(), want, atol=1e-5)

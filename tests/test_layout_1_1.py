"""TOSA 1.1 rows of 1.0 operators that are not INT64: CAST to / from block-scaled types and fp32 <-> bool, CONCAT /
RESHAPE / RESIZE of block-scaled tensors, RESIZE of fp8, GATHER / SCATTER of bool with i32 indices. Edge cases on
the reference backend and on Vulkan (strict), where a block-scaled tensor is its elements and its scales
(tosa_vk/stages/passes/block_scaled.py); the generated conformance tests are in test_conformance_1_1.py."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.graph import Block, Graph, Operator, Region, ResizeMode, Tensor
from tosa_vk.ir.ops import BLOCK_SCALED_TYPES, BlockScaled, matching_types
from tosa_vk.ir.validate import validate

E8M0 = ml_dtypes.float8_e8m0fnu
SCALED: dict[str, Any] = {"scale_dtype": DType.FP8UE8M0, "block_size": 32}
MX_TYPES = [DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2, DType.FP8E4M3, DType.FP8E5M2, DType.MXINT8]


def graph_of(tensors, operators, inputs, outputs, version=(1, 1, 0, False)) -> Graph:
    block = Block("main", operators, {t.name: t for t in tensors}, inputs, outputs)
    return Graph([Region("main", [block])], version)


def run(g: Graph, feeds: dict, device=None) -> dict:
    options = {"backend": "vulkan", "device": device, "strict": True} if device else {"backend": "reference"}
    with tosa_vk.load(g, **options) as model:
        return model.run(feeds)


def both(g: Graph, feeds: dict, device) -> tuple[dict, dict]:
    """(reference results, Vulkan results) of one graph."""
    return run(g, feeds), run(g, feeds, device)


def codes(a: np.ndarray) -> list[int]:
    return np.asarray(a).view(np.uint8).reshape(-1).tolist()


def shape_const(name: str, values) -> tuple[Tensor, Operator]:
    v = np.asarray(values, np.int64)
    return Tensor(name, v.shape, DType.SHAPE, v), Operator("CONST_SHAPE", [], [name])


def random_codes(dtype: DType, shape, seed: int) -> np.ndarray:
    """Every code of `dtype` (NaN / Inf codes of fp8 too), as the storage numpy type."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << min(dtype.bits, 8), shape).astype(np.uint8).view(dtype.numpy)


def random_scales(shape, seed: int) -> np.ndarray:
    s = np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)  # 255: the NaN scale
    return s.view(E8M0)


# ---- catalogue -----------------------------------------------------------------------------------------------------


def test_cast_rows_pair_plain_floats_with_every_block_scaled_type():
    floats = (DType.FP8E4M3, DType.FP8E5M2, DType.FP16, DType.BF16, DType.FP32)
    for bs in BLOCK_SCALED_TYPES.values():
        for f in floats:
            for bound in ({"in_t": f, "out_t": bs}, {"in_t": bs, "out_t": f}):
                rows = matching_types("CAST", bound)
                assert len(rows) == 1 and rows[0].since == (1, 1), bound
                assert not matching_types("CAST", bound, (1, 0))
    assert not matching_types("CAST", {"in_t": BlockScaled(DType.FP4E2M1), "out_t": BlockScaled(DType.FP4E2M1)})
    assert not matching_types("CAST", {"in_t": DType.INT8, "out_t": BlockScaled(DType.MXINT8)})
    (row,) = matching_types("CAST", {"in_t": DType.FP8E4M3, "out_t": BlockScaled(DType.FP6E2M3)})
    assert set(row.needs) == {"EXT-FP8E4M3", "EXT-MX-COMMON", "EXT-MX-FP6E2M3"}  # as Arm's tests require them


def test_resize_block_scaled_rows_keep_the_type_and_fp8_rows_are_1_1():
    for bs in BLOCK_SCALED_TYPES.values():
        assert matching_types("RESIZE", {"in_t": bs, "out_t": bs})
        assert not any(
            matching_types("RESIZE", {"in_t": bs, "out_t": o}) for o in BLOCK_SCALED_TYPES.values() if o != bs
        )
    for fp8 in (DType.FP8E4M3, DType.FP8E5M2):
        (row,) = matching_types("RESIZE", {"in_t": fp8, "out_t": fp8})
        assert row.since == (1, 1) and row.types["resize_t"] == DType.FP32


def test_bool_gather_scatter_with_i32_indices_is_a_1_1_row():
    for op in ("GATHER", "SCATTER"):
        rows = matching_types(op, {"index_t": DType.INT32, "in_out_t": DType.BOOL})
        assert {r.profile for r in rows} == {"PRO-INT", "PRO-FP"} and {r.since for r in rows} == {(1, 1)}


def test_a_1_0_graph_may_not_cast_fp32_to_bool():
    x, y = Tensor("x", (4,), DType.FP32), Tensor("y", (4,), DType.BOOL)
    ops = [Operator("CAST", ["x"], ["y"])]
    validate(graph_of([x, y], ops, ["x"], ["y"]))
    with pytest.raises(TosaError, match="TOSA 1.1 adds fp32 to bool"):
        validate(graph_of([x, y], ops, ["x"], ["y"], version=(1, 0, 0, False)))


# ---- validation ----------------------------------------------------------------------------------------------------


def resize_graph(dtype: DType, mode: ResizeMode, c: int = 32, scaled: bool = True) -> tuple[Graph, dict]:
    extra: dict[str, Any] = SCALED if scaled else {}
    x = Tensor("x", (1, 3, 4, c), dtype, **extra)
    y = Tensor("y", (1, 5, 7, c), dtype, **extra)  # scale 2/1 in both: OH = (3 - 1) * 2 + 1
    consts = [shape_const("scale", [2, 1, 2, 1]), shape_const("offset", [0, 0]), shape_const("border", [0, 0])]
    ops = [op for _, op in consts] + [Operator("RESIZE", ["x", "scale", "offset", "border"], ["y"], {"mode": mode})]
    g = graph_of([x, y, *(t for t, _ in consts)], ops, ["x"], ["y"])
    feeds = {"x": random_codes(dtype, x.shape, 1)}
    if scaled:
        feeds["x_scale"] = random_scales((1, 3, 4, c // 32), 2)
    return g, feeds


def test_bilinear_resize_of_block_scaled_tensors_is_an_error():
    g, _ = resize_graph(DType.FP8E4M3, ResizeMode.BILINEAR)
    with pytest.raises(TosaError, match=r"is_block_scale<in_t>\(\) && mode != NEAREST_NEIGHBOR"):
        validate(g)


def test_concat_of_block_scaled_and_plain_tensors_is_refused():
    a = Tensor("a", (2, 32), DType.FP8E4M3, **SCALED)
    b = Tensor("b", (2, 32), DType.FP8E4M3)
    y = Tensor("y", (4, 32), DType.FP8E4M3, **SCALED)
    with pytest.raises(TosaError, match="Supported Data Types"):
        validate(graph_of([a, b, y], [Operator("CONCAT", ["a", "b"], ["y"], {"axis": 0})], ["a", "b"], ["y"]))


# ---- reference and Vulkan ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", MX_TYPES)
def test_concat_along_the_last_axis_concatenates_scales_there_too(device, dtype):
    a = Tensor("a", (3, 64), dtype, **SCALED)
    b = Tensor("b", (3, 32), dtype, **SCALED)
    y = Tensor("y", (3, 96), dtype, **SCALED)
    g = graph_of([a, b, y], [Operator("CONCAT", ["a", "b"], ["y"], {"axis": 1})], ["a", "b"], ["y"])
    feeds = {"a": random_codes(dtype, (3, 64), 3), "b": random_codes(dtype, (3, 32), 4)}
    feeds |= {"a_scale": random_scales((3, 2), 5), "b_scale": random_scales((3, 1), 6)}
    for out in both(g, feeds, device):
        assert codes(out["y"]) == codes(np.concatenate([feeds["a"], feeds["b"]], axis=1))
        assert codes(out["y_scale"]) == codes(np.concatenate([feeds["a_scale"], feeds["b_scale"]], axis=1))


def test_reshape_regroups_blocks_of_the_last_dimension(device):
    """[2, 3, 64] -> [12, 32]: each block (and its scale) to a row of its own, in row-major order."""
    dtype = DType.FP6E3M2
    x, y = Tensor("x", (2, 3, 64), dtype, **SCALED), Tensor("y", (12, 32), dtype, **SCALED)
    shape, const = shape_const("shape", [12, 32])
    g = graph_of([x, y, shape], [const, Operator("RESHAPE", ["x", "shape"], ["y"])], ["x"], ["y"])
    feeds = {"x": random_codes(dtype, x.shape, 7), "x_scale": random_scales((2, 3, 2), 8)}
    for out in both(g, feeds, device):
        assert out["y_scale"].shape == (12, 1)
        assert codes(out["y"]) == codes(feeds["x"]) and codes(out["y_scale"]) == codes(feeds["x_scale"])


def test_reshape_to_a_last_dimension_of_partial_blocks_is_an_error():
    x, y = Tensor("x", (2, 64), DType.MXINT8, **SCALED), Tensor("y", (8, 16), DType.MXINT8, **SCALED)
    shape, const = shape_const("shape", [8, 16])
    with pytest.raises(TosaError, match=r"tensor 'y' of shape \[8, 16\] is block-scaled in blocks of 32"):
        validate(graph_of([x, y, shape], [const, Operator("RESHAPE", ["x", "shape"], ["y"])], ["x"], ["y"]))


@pytest.mark.parametrize("dtype", [DType.FP4E2M1, DType.MXINT8, DType.FP8E5M2])
def test_nearest_resize_takes_each_value_with_its_blocks_scale(device, dtype):
    g, feeds = resize_graph(dtype, ResizeMode.NEAREST, c=64)
    ref, vk = both(g, feeds, device)
    # scale 2: output (oy, ox) reads input (oy // 2 rounded half up, ...) as the pseudocode picks iy1 at 2 * dy >= 1
    iy = np.minimum((np.arange(5) + 1) // 2, 2)
    ix = np.minimum((np.arange(7) + 1) // 2, 3)
    for out in (ref, vk):
        assert codes(out["y"]) == codes(feeds["x"][:, iy][:, :, ix])
        assert codes(out["y_scale"]) == codes(feeds["x_scale"][:, iy][:, :, ix])


@pytest.mark.parametrize("dtype", [DType.FP8E4M3, DType.FP8E5M2])
@pytest.mark.parametrize("mode", [ResizeMode.NEAREST, ResizeMode.BILINEAR])
def test_fp8_resize_on_vulkan_matches_the_reference(device, dtype, mode):
    g, feeds = resize_graph(dtype, mode, c=5, scaled=False)
    x = feeds["x"].astype(np.float32)
    feeds["x"] = np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0).astype(dtype.numpy)  # numbers only
    ref, vk = both(g, feeds, device)
    assert codes(vk["y"]) == codes(ref["y"])  # one rounding of an (exact here) fp32 interpolation


@pytest.mark.parametrize("dtype", MX_TYPES)
@pytest.mark.parametrize("plain", [DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2])
def test_cast_round_trip_through_block_scaled_on_both_backends(device, dtype, plain):
    """plain -> block-scaled -> plain: the CAST rows share CAST_TO / CAST_FROM_BLOCK_SCALED's conversions, so Vulkan
    and the reference agree on every code (values with NaN / Inf / -0 / tiny blocks included)."""
    rng = np.random.default_rng(9)
    v = rng.normal(size=(6, 64)) * 2.0 ** rng.integers(-20, 20, (6, 1))
    v[1, 3], v[2, 40], v[3] = np.nan, np.inf, -0.0
    x = Tensor("x", (6, 64), plain)
    m = Tensor("m", (6, 64), dtype, **SCALED)
    y = Tensor("y", (6, 64), plain)
    ops = [Operator("CAST", ["x"], ["m"]), Operator("CAST", ["m"], ["y"])]
    g = graph_of([x, m, y], ops, ["x"], ["y", "m"])
    feeds = {"x": v.astype(plain.numpy)}
    ref, vk = both(g, feeds, device)
    assert codes(vk["m_scale"]) == codes(ref["m_scale"])
    assert codes(vk["m"]) == codes(ref["m"])
    want, got = ref["y"].astype(np.float64), vk["y"].astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want))  # (fp8e5m2 has several NaN codes: any is a NaN)
    tiny = np.abs(want) < 2.0**-126  # lavapipe may flush fp32 subnormals
    keep = ~np.isnan(want) & ~tiny
    assert codes(vk["y"][keep]) == codes(ref["y"][keep])


def test_block_scaled_constant_concatenated_on_vulkan(device):
    """A block-scaled CONST keeps its scales on the device (a second constant) through CONCAT."""
    dtype = DType.FP8E4M3
    data = random_codes(dtype, (1, 32), 10)
    c = Tensor("c", (1, 32), dtype, data, scale_data=np.array([[130]], np.uint8).view(E8M0), **SCALED)
    x = Tensor("x", (1, 32), dtype, **SCALED)
    y = Tensor("y", (2, 32), dtype, **SCALED)
    ops = [Operator("CONST", [], ["c"]), Operator("CONCAT", ["x", "c"], ["y"], {"axis": 0})]
    g = graph_of([c, x, y], ops, ["x"], ["y"])
    feeds = {"x": random_codes(dtype, (1, 32), 11), "x_scale": np.array([[7]], np.uint8).view(E8M0)}
    for out in both(g, feeds, device):
        assert codes(out["y"]) == codes(np.concatenate([feeds["x"], data]))
        assert codes(out["y_scale"]) == [7, 130]


def test_cast_fp32_to_bool_and_back_on_both_backends(device):
    v = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -3.0, 0.5], np.float32)
    x, b, y = Tensor("x", (8,), DType.FP32), Tensor("b", (8,), DType.BOOL), Tensor("y", (8,), DType.FP32)
    g = graph_of([x, b, y], [Operator("CAST", ["x"], ["b"]), Operator("CAST", ["b"], ["y"])], ["x"], ["b", "y"])
    want = [False, False, True, True, True, True, True, True]  # (in != 0): NaN too; a subnormal is not zero
    for out in both(g, {"x": v}, device):
        assert out["b"].tolist() == want
        assert out["y"].tolist() == [float(w) for w in want]


def test_bool_gather_and_scatter_with_i32_indices_on_both_backends(device):
    rng = np.random.default_rng(12)
    values = rng.integers(0, 2, (2, 5, 3)).astype(bool)
    idx = np.array([[4, 0], [2, 3]], np.int32)
    data = rng.integers(0, 2, (2, 2, 3)).astype(bool)
    v = Tensor("v", (2, 5, 3), DType.BOOL)
    i = Tensor("i", (2, 2), DType.INT32)
    d = Tensor("d", (2, 2, 3), DType.BOOL)
    g_out, s_out = Tensor("g", (2, 2, 3), DType.BOOL), Tensor("s", (2, 5, 3), DType.BOOL)
    ops = [Operator("GATHER", ["v", "i"], ["g"]), Operator("SCATTER", ["v", "i", "d"], ["s"])]
    g = graph_of([v, i, d, g_out, s_out], ops, ["v", "i", "d"], ["g", "s"])
    scattered = values.copy()
    scattered[np.arange(2)[:, None], idx] = data
    for out in both(g, {"v": values, "i": idx, "d": data}, device):
        assert out["g"].tolist() == np.take_along_axis(values, idx[:, :, None].astype(np.int64), 1).tolist()
        assert out["s"].tolist() == scattered.tolist()

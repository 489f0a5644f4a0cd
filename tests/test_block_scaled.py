"""TOSA 1.1 block-scaled (MX) types and operators: the bs32 type in the catalogue, the reference encode / decode
(CAST_TO_BLOCK_SCALED / CAST_FROM_BLOCK_SCALED) at their edges and the model I/O of block-scaled tensors. Arm's
generated 1.1 tests of the six *_BLOCK_SCALED operators run in tests/test_conformance_1_1.py.

Expected bits of the edge cases are what Arm's reference model (tosa-tools 2026.8) writes for the same inputs.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.graph import Block, BlockSize, Graph, Operator, Region, Tensor
from tosa_vk.ir.mx import largest_rounding_to_normal_max
from tosa_vk.ir.ops import BLOCK_SCALED_TYPES, TYPE_SETS, BlockScaled, matching_types, tensor_type
from tosa_vk.ir.validate import validate
from tosa_vk.reference.numeric import block_scale_exponents, mx_decode, mx_round

E8M0 = ml_dtypes.float8_e8m0fnu


def graph_of(tensors, operators, inputs, outputs) -> Graph:
    block = Block("main", operators, {t.name: t for t in tensors}, inputs, outputs)
    return Graph([Region("main", [block])], (1, 1, 0, False))


def run_op(op: str, inputs: dict[str, Tensor], outputs: list[Tensor], feeds: dict, device=None, **attrs) -> dict:
    g = graph_of(
        [*inputs.values(), *outputs],
        [Operator(op, list(inputs), [t.name for t in outputs], attrs)],
        list(inputs),
        [t.name for t in outputs],
    )
    options = {"backend": "vulkan", "device": device, "strict": True} if device else {"backend": "reference"}
    with tosa_vk.load(g, **options) as model:
        return model.run(feeds)


def cast_to(x: np.ndarray, in_t: DType, out_t: DType, device=None) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, in_t.numpy)
    outs = [Tensor("y", x.shape, out_t), Tensor("s", (*x.shape[:-1], x.shape[-1] // 32), DType.FP8UE8M0)]
    ins = {"x": Tensor("x", x.shape, in_t)}
    r = run_op("CAST_TO_BLOCK_SCALED", ins, outs, {"x": x}, device, block_size=BlockSize.BLOCK_SIZE_32)
    return r["y"], r["s"]


def cast_from(data: np.ndarray, scale: np.ndarray, in_t: DType, out_t: DType, device=None) -> np.ndarray:
    ins = {"x": Tensor("x", data.shape, in_t), "s": Tensor("s", scale.shape, DType.FP8UE8M0)}
    outs = [Tensor("y", data.shape, out_t)]
    return run_op("CAST_FROM_BLOCK_SCALED", ins, outs, {"x": data, "s": scale}, device, block_size=32)["y"]


def codes(a: np.ndarray) -> list[int]:
    return np.asarray(a).view(np.uint8).reshape(-1).tolist()


# ---- the type ------------------------------------------------------------------------------------------------------


def test_block_scaled_type_names_and_sets():
    assert BlockScaled(DType.FP4E2M1).name == "bs32_fp8ue8m0_fp4e2m1_t"
    assert set(BLOCK_SCALED_TYPES) == {
        f"bs32_fp8ue8m0_{v}_t" for v in ("fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1", "mxint8")
    }
    assert TYPE_SETS["bs32_fp8ue8m0_set_t"] == tuple(BLOCK_SCALED_TYPES.values())
    t = Tensor("w", (2, 64), DType.FP8E4M3, scale_dtype=DType.FP8UE8M0, block_size=32)
    assert (
        tensor_type(t) == BlockScaled(DType.FP8E4M3) and tensor_type(Tensor("p", (2,), DType.FP8E4M3)) == DType.FP8E4M3
    )


def test_a_plain_tensor_never_matches_a_block_scaled_row_nor_the_other_way():
    mx = [r for r in matching_types("IDENTITY", {"in_out_t": BlockScaled(DType.FP8E4M3)})]
    assert [(r.mode, r.profile, r.also) for r in mx] == [("MX", "EXT-MX-COMMON", ("EXT-MX-FP8E4M3",))]
    plain = matching_types("IDENTITY", {"in_out_t": DType.FP8E4M3})
    assert plain and all(not isinstance(r.types["in_out_t"], BlockScaled) for r in plain)
    assert matching_types("IDENTITY", {"in_out_t": BlockScaled(DType.FP8E4M3)}, (1, 0)) == []
    # a (values, scales) list: the scales bind scale_t, "-" rows take no scales
    assert [r.mode for r in matching_types("RESHAPE_BLOCK_SCALED", {"in_out_t": DType.FP8E4M3})] == [
        "fp8e4m3",
        "fp8e4m3 with fp8ue8m0 scale factor",
    ]
    assert [
        r.mode for r in matching_types("RESHAPE_BLOCK_SCALED", {"in_out_t": DType.INT8, "scale_t": DType.FP8UE8M0})
    ] == []


def test_validator_refuses_plain_tensors_for_a_block_scaled_row_and_the_other_way():
    def identity(x: Tensor, y: Tensor) -> Graph:
        return graph_of([x, y], [Operator("IDENTITY", ["x"], ["y"])], ["x"], ["y"])

    scaled = {"scale_dtype": DType.FP8UE8M0, "block_size": 32}
    validate(identity(Tensor("x", (2, 64), DType.FP4E2M1, **scaled), Tensor("y", (2, 64), DType.FP4E2M1, **scaled)))
    with pytest.raises(TosaError, match="Supported Data Types"):
        validate(identity(Tensor("x", (2, 64), DType.FP4E2M1), Tensor("y", (2, 64), DType.FP4E2M1)))
    with pytest.raises(TosaError, match="Supported Data Types"):
        validate(identity(Tensor("x", (2, 64), DType.FP8E4M3, **scaled), Tensor("y", (2, 64), DType.FP8E4M3)))


@pytest.mark.parametrize(
    ("shape", "block_size", "rule"),
    [((2, 48), 32, "shape[rank(shape)-1] % block_size != 0"), ((2, 64), 1, "block_size == 1")],
)
def test_cast_to_block_scaled_error_ifs(shape, block_size, rule):
    outs = [Tensor("y", shape, DType.FP4E2M1), Tensor("s", (2, 2), DType.FP8UE8M0)]
    g = graph_of(
        [Tensor("x", shape, DType.FP32), *outs],
        [Operator("CAST_TO_BLOCK_SCALED", ["x"], ["y", "s"], {"block_size": block_size})],
        ["x"],
        ["y", "s"],
    )
    with pytest.raises(TosaError, match=re.escape(rule)):
        validate(g)


# ---- encode / decode edges -----------------------------------------------------------------------------------------


def test_largest_values_rounding_to_normal_max():
    assert [largest_rounding_to_normal_max(t) for t in (DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2)] == [7, 7.75, 30]
    assert (
        largest_rounding_to_normal_max(DType.FP8E4M3) == 464
        and largest_rounding_to_normal_max(DType.MXINT8) == 255 / 128
    )


def test_scale_choice_ceil_for_fp8e4m3_floor_plus_one_for_the_others():
    # max_abs exactly out_max x 2^3: fp8e4m3 keeps 2^3, the others take the next power
    assert block_scale_exponents(np.array(464.0 * 8), DType.FP8E4M3) == 3
    assert block_scale_exponents(np.array(7.0 * 8), DType.FP4E2M1) == 4
    assert block_scale_exponents(np.array([0.0, np.inf, np.nan]), DType.FP4E2M1)[0] == -127
    assert np.isnan(block_scale_exponents(np.array([np.inf, np.nan]), DType.FP4E2M1)).all()
    assert block_scale_exponents(np.array([1e-45, 3.4e38]), DType.FP8E5M2).tolist() == [-127, 113]


@pytest.mark.parametrize(
    "out_t", [DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2, DType.FP8E4M3, DType.FP8E5M2, DType.MXINT8]
)
def test_cast_to_block_scaled_zero_nan_and_infinity_blocks(out_t):
    x = np.zeros((4, 32), np.float32)
    x[1] = -0.0
    x[2, 3] = np.nan
    x[3, 5] = -np.inf
    data, scale = cast_to(x, DType.FP32, out_t)
    assert codes(scale) == [0, 0, 255, 255]  # zero blocks: normal_min (2^-127); NaN / Inf: the NaN scale
    nan_code = {DType.FP4E2M1: 0x6, DType.FP6E2M3: 0x18, DType.FP6E3M2: 0x1C, DType.MXINT8: 0x7F}.get(out_t, 0x7F)
    assert set(codes(data[2:])) == {nan_code if out_t != DType.FP8E5M2 else codes(np.array(np.nan, out_t.numpy))[0]}
    assert set(codes(data[0])) == {0}
    negative_zero = {DType.FP4E2M1: 0x8, DType.FP6E2M3: 0x20, DType.FP6E3M2: 0x20, DType.MXINT8: 0}.get(out_t, 0x80)
    assert set(codes(data[1])) == {negative_zero}  # -0 stays -0 where the type has one


def test_cast_to_block_scaled_saturates_at_the_largest_scale():
    # mxint8: 1.9921875 * 2^127 needs 2^128 -> clipped to 2^127 (code 254), values saturate at 127/64
    data, scale = cast_to(np.full((1, 32), 1.9921875 * 2.0**127, np.float32), DType.FP32, DType.MXINT8)
    assert codes(scale) == [254] and set(np.asarray(data).reshape(-1).tolist()) == {127}
    data, scale = cast_to(np.full((1, 32), 3.0e38, np.float32), DType.FP32, DType.FP8E4M3)
    assert codes(scale) == [246] and set(codes(data)) == {0x7E}  # 448 x 2^119
    data, scale = cast_to(np.full((1, 32), 1e-45, np.float32), DType.FP32, DType.FP4E2M1)
    assert codes(scale) == [0] and set(codes(data)) == {0}  # 2^-149 / 2^-127 rounds to 0


def test_cast_to_block_scaled_rounds_to_nearest_even():
    x = np.zeros((1, 32), np.float32)
    x[0, :4] = [6.0, 5.0, 0.25, 0.75]  # scale 1 (max 6 < 7); 5 ties to 4, 0.25 to 0, 0.75 to 1
    data, scale = cast_to(x, DType.FP32, DType.FP4E2M1)
    assert codes(scale) == [127] and np.asarray(data).astype(np.float32)[0, :4].tolist() == [6.0, 4.0, 0.0, 1.0]


def test_cast_from_block_scaled_scales_nan_and_overflow():
    data = np.array([[1.5, -6.0, 0.5, 0.0] * 8] * 4, np.float32).astype(ml_dtypes.float4_e2m1fn)
    scale = np.array([[0], [127], [254], [255]], np.uint8).view(E8M0)
    out = cast_from(data, scale, DType.FP4E2M1, DType.FP32)
    assert out[0, :3].tolist() == [1.5 * 2.0**-127, -6.0 * 2.0**-127, 0.5 * 2.0**-127]  # fp32 subnormals, exact
    assert out[1, :4].tolist() == [1.5, -6.0, 0.5, 0.0]
    assert out[2, :2].tolist() == [1.5 * 2.0**127, -np.inf]  # -6 x 2^127 overflows fp32
    assert np.isnan(out[3]).all()
    bf16 = cast_from(data, scale, DType.FP4E2M1, DType.BF16)
    assert bf16[2, 2] == 2.0**126 and bf16[2, 1] == -np.inf


def test_decode_keeps_mxint8_codes_over_64():
    v = mx_decode(np.array([[-128, 1] + [0] * 30], np.int8), DType.MXINT8, np.array([[128]], np.uint8).view(E8M0), 32)
    assert v[0, :2].tolist() == [-4.0, 1 / 32]
    assert codes(mx_round(np.array([2.5, -3.0, np.nan]), DType.MXINT8)) == [127, 0x80, 0x7F]


MX_TYPES = [DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2, DType.FP8E4M3, DType.FP8E5M2, DType.MXINT8]


def edge_blocks(rows: int = 64) -> np.ndarray:
    """Blocks of 32: zeros, -0, NaN, +-Inf, fp32's extremes, exact out_max multiples, then wide random ranges."""
    rng = np.random.default_rng(7)
    specials = (np.nan, np.inf, -np.inf)
    blocks = [np.zeros(32), -np.zeros(32), *(np.where(np.arange(32) == 3, v, rng.normal(size=32)) for v in specials)]
    blocks += [np.full(32, v) for v in (3.0e38, -3.4028235e38, 1e-45, 1.9921875 * 2.0**127, 2.0**-127)]
    blocks += [np.full(32, v * 2.0**k) for v in (6, 7, 7.5, 7.75, 28, 30, 448, 464, 57344, 61440) for k in (0, 9)]
    while len(blocks) < rows:
        blocks.append(rng.normal(size=32) * 2.0 ** rng.integers(-130, 120, 32))
    return np.array(blocks[:rows], np.float32)


@pytest.mark.parametrize("out_t", MX_TYPES)
@pytest.mark.parametrize("in_t", [DType.FP32, DType.BF16])
def test_vulkan_cast_to_block_scaled_matches_the_reference_bit_for_bit(device, in_t, out_t):
    x = edge_blocks().astype(in_t.numpy)
    want, got = cast_to(x, in_t, out_t), cast_to(x, in_t, out_t, device)
    assert codes(got[1]) == codes(want[1])
    assert codes(got[0]) == codes(want[0])


@pytest.mark.parametrize("in_t", MX_TYPES)
@pytest.mark.parametrize("out_t", [DType.FP32, DType.BF16])
def test_vulkan_cast_from_block_scaled_matches_the_reference(device, in_t, out_t):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256 if in_t.bits == 8 else 1 << in_t.bits, (12, 64)).astype(np.uint8).view(in_t.numpy)
    scale = np.array([0, 1, 100, 126, 127, 128, 200, 253, 254, 255, 60, 140] * 2, np.uint8).reshape(12, 2).view(E8M0)
    want, got = cast_from(data, scale, in_t, out_t), cast_from(data, scale, in_t, out_t, device)
    # lavapipe may flush fp32 subnormals (results below 2^-126, from scales near 2^-127) to a signed zero
    tiny = np.abs(want.astype(np.float64)) < 2.0**-126
    assert codes(np.where(tiny, 0, got).astype(want.dtype)) == codes(np.where(tiny, 0, want).astype(want.dtype))


@pytest.mark.parametrize("dtype", MX_TYPES)
def test_vulkan_matmul_t_block_scaled_matches_the_reference(device, dtype):
    rng = np.random.default_rng(11)
    n, h, w, c = 2, 3, 5, 64
    a = rng.integers(0, 1 << min(dtype.bits, 8), (n, h, c)).astype(np.uint8).view(dtype.numpy)
    b = rng.integers(0, 1 << min(dtype.bits, 8), (1, w, c)).astype(np.uint8).view(dtype.numpy)  # D = 1: broadcast
    if dtype in (DType.FP8E4M3, DType.FP8E5M2):  # keep NaN / Inf elements out: the sums compare as numbers
        a, b = (np.nan_to_num(x.astype(np.float32), nan=1, posinf=2, neginf=-2).astype(dtype.numpy) for x in (a, b))
    sa = rng.integers(100, 150, (n, h, 2)).astype(np.uint8)
    sb = rng.integers(100, 150, (1, w, 2)).astype(np.uint8)
    sa[0, 0, 1] = 255  # a NaN scale: that output row is NaN
    ins = {
        "a": Tensor("a", a.shape, dtype),
        "sa": Tensor("sa", sa.shape, DType.FP8UE8M0),
        "b": Tensor("b", b.shape, dtype),
        "sb": Tensor("sb", sb.shape, DType.FP8UE8M0),
    }
    feeds = {"a": a, "sa": sa.view(E8M0), "b": b, "sb": sb.view(E8M0)}
    outs = [Tensor("o", (n, h, w), DType.FP32)]
    want = run_op("MATMUL_T_BLOCK_SCALED", ins, outs, feeds, block_size=32)["o"]
    got = run_op("MATMUL_T_BLOCK_SCALED", ins, outs, feeds, device, block_size=32)["o"]
    assert np.isnan(got[0, 0]).all() and not np.isnan(got[1:]).any()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30)


# ---- model I/O: a block-scaled tensor is two arrays -----------------------------------------------------------------


def test_reference_model_feeds_and_returns_block_scaled_tensors_as_two_arrays():
    scaled = {"scale_dtype": DType.FP8UE8M0, "block_size": 32}
    x, y = Tensor("x", (2, 64), DType.FP8E4M3, **scaled), Tensor("y", (2, 64), DType.FP8E4M3, **scaled)
    g = graph_of([x, y], [Operator("IDENTITY", ["x"], ["y"])], ["x"], ["y"])
    rng = np.random.default_rng(0)
    data = rng.normal(size=(2, 64)).astype(ml_dtypes.float8_e4m3fn)
    scales = np.array([[120, 127], [130, 255]], np.uint8).view(E8M0)
    with tosa_vk.load(g, backend="reference") as model:
        assert model.inputs == {"x": ((2, 64), "FP8E4M3"), "x_scale": ((2, 2), "FP8UE8M0")}
        assert list(model.outputs) == ["y", "y_scale"]
        out = model.run({"x": data, "x_scale": scales})
        assert codes(out["y"]) == codes(data) and codes(out["y_scale"]) == codes(scales)
        with pytest.raises(TosaError, match="x_scale"):
            model.run({"x": data})


def test_block_scaled_constant_reaches_the_output_with_its_scales():
    scaled = {"scale_dtype": DType.FP8UE8M0, "block_size": 32}
    data = np.arange(64, dtype=np.uint8).reshape(1, 64).view(ml_dtypes.float6_e3m2fn)
    scales = np.array([[3, 250]], np.uint8).view(E8M0)
    c = Tensor("c", (1, 64), DType.FP6E3M2, data, scale_data=scales, **scaled)
    y = Tensor("y", (1, 64), DType.FP6E3M2, **scaled)
    g = graph_of([c, y], [Operator("CONST", [], ["c"]), Operator("IDENTITY", ["c"], ["y"])], [], ["y"])
    with tosa_vk.load(g, backend="reference") as model:
        out = model.run({})
    assert codes(out["y"]) == codes(data) and codes(out["y_scale"]) == [3, 250]


def test_rows_bind_access_elem_type_and_alternatives(monkeypatch):
    """The mechanism of MATMUL_T's block-scaled rows (catalogued with MATMUL_T): a zero point typed
    access_elem_type<A_t> is fp32_t for a bs32 A_t and A_t itself otherwise; "a_t|b_t" rows stand for both."""
    from tosa_vk.ir import ops

    monkeypatch.setattr(ops, "OPS", dict(ops.OPS))
    ops._op("MX_ROWS_PROBE", "tensor_ops", [], "A_t A_zp_t", [
        ("DEDUCE-EXT", "probe", "bs32_fp8ue8m0_set_t|fp8e4m3_t access_elem_type<A_t>", "1.1"),
    ], since="1.1")  # fmt: skip
    rows = {r.types["A_t"]: (r.types["A_zp_t"], r.needs) for r in ops.OPS["MX_ROWS_PROBE"].types}
    assert rows[BlockScaled(DType.MXINT8)] == (DType.FP32, ("EXT-MX-COMMON", "EXT-MX-INT8"))
    assert rows[DType.FP8E4M3] == (DType.FP8E4M3, ("EXT-FP8E4M3",))
    assert len(rows) == 7


def test_vulkan_runs_block_scaled_identity(device):
    """On Vulkan a block-scaled tensor is its elements and its scales (tosa_vk/stages/passes/block_scaled.py)."""
    scaled = {"scale_dtype": DType.FP8UE8M0, "block_size": 32}
    x, y = Tensor("x", (2, 64), DType.FP8E4M3, **scaled), Tensor("y", (2, 64), DType.FP8E4M3, **scaled)
    g = graph_of([x, y], [Operator("IDENTITY", ["x"], ["y"])], ["x"], ["y"])
    data = np.arange(128, dtype=np.uint8).reshape(2, 64).view(ml_dtypes.float8_e4m3fn)
    scales = np.array([[1, 2], [255, 127]], np.uint8).view(E8M0)
    with tosa_vk.load(g, backend="vulkan", device=device, strict=True) as model:
        out = model.run({"x": data, "x_scale": scales})
    assert codes(out["y"]) == codes(data) and codes(out["y_scale"]) == [1, 2, 255, 127]


def test_vulkan_refuses_other_operators_on_block_scaled_tensors_clearly():
    """An operator the block-scaled pass has no form for (here a made-up use, past validation) is a TosaError."""
    from tosa_vk.stages.passes.block_scaled import split_block_scaled

    scaled = {"scale_dtype": DType.FP8UE8M0, "block_size": 32}
    x, y = Tensor("x", (2, 64), DType.FP8E4M3, **scaled), Tensor("y", (2, 64), DType.FP8E4M3, **scaled)
    g = graph_of([x, y], [Operator("ABS", ["x"], ["y"])], ["x"], ["y"])
    with pytest.raises(TosaError, match="ABS #0: tensor 'x' is block-scaled .*backend='reference'"):
        split_block_scaled(g)

"""Edge cases of the reference reduction, data layout, scatter/gather and image operators (spec 2.9 - 2.12)."""

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk.errors import TosaError
from tosa_vk.reference.executor import Interpreter
from tosa_vk.session import load


def run1(build, **feeds):
    """Builds a one-output graph with `build(b)` -> Value and runs it on the reference backend."""
    b = tosa_vk.Builder()
    b.output(build(b))
    return next(iter(load(b.build(), backend="reference").run(feeds).values()))


# ---- reduction ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode, want", [("PROPAGATE", [np.nan, np.nan, 0.0]), ("IGNORE", [3.0, np.nan, 0.0])])
def test_reduce_max_nan_modes(mode, want):
    x = np.array([[1, 3, np.nan], [np.nan, np.nan, np.nan], [-0.0, 0.0, -1]], np.float32)
    out = run1(lambda b: b.reduce_max(b.input("x", x.shape, "fp32"), axis=1, nan_mode=mode), x=x)
    assert out.shape == (3, 1)
    np.testing.assert_array_equal(out[:, 0], np.array(want, np.float32))  # zero of either sign allowed


def test_reduce_min_integer_extremes_and_bf16():
    x = np.array([[-128, 127, 5]], np.int8)
    out = run1(lambda b: b.reduce_min(b.input("x", x.shape, "int8"), axis=1), x=x)
    assert out.dtype == np.int8 and out.tolist() == [[-128]]
    y = np.array([[1.5, -np.inf], [0.25, 2.0]], ml_dtypes.bfloat16)
    out = run1(lambda b: b.reduce_min(b.input("y", y.shape, "bf16"), axis=0), y=y)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), [[0.25, -np.inf]])


def test_reduce_sum_int32_partial_overflow_is_unpredictable():
    ok = np.array([[2**31 - 1], [-5]], np.int32)
    out = run1(lambda b: b.reduce_sum(b.input("x", ok.shape, "int32"), axis=0), x=ok)
    assert out.tolist() == [[2**31 - 6]]
    # apply_add_s REQUIREs every partial sum in range, even if the total would fit
    bad = np.array([[2**31 - 1], [1], [-5]], np.int32)
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(lambda b: b.reduce_sum(b.input("x", bad.shape, "int32"), axis=0), x=bad)


def test_reduce_sum_fp16_rounds_once_from_float64():
    # 2048 + 1 + 1 in fp16 arithmetic step by step stays 2048 (ties to even); the exact sum is 2050
    x = np.array([2048, 1, 1], np.float16)
    out = run1(lambda b: b.reduce_sum(b.input("x", x.shape, "fp16"), axis=0), x=x)
    assert out.dtype == np.float16 and out.tolist() == [2050.0]


def test_reduce_product_and_logical():
    x = np.array([[2, 0.5, np.inf], [np.inf, 0, 1]], np.float32)
    out = run1(lambda b: b.reduce_product(b.input("x", x.shape, "fp32"), axis=1), x=x)
    assert out[0, 0] == np.inf and np.isnan(out[1, 0])
    m = np.array([[True, False], [True, True]])
    assert run1(lambda b: b.reduce_all(b.input("m", m.shape, "bool"), axis=1), m=m).tolist() == [[False], [True]]
    assert run1(lambda b: b.reduce_any(b.input("m", m.shape, "bool"), axis=0), m=m).tolist() == [[True, True]]


# ---- data layout --------------------------------------------------------------------------------


def test_concat_pad_slice_tile_reverse():
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    c = np.full((2, 1), -1, np.int8)
    out = run1(lambda b: b.concat([b.input("a", a.shape, "int8"), b.input("c", c.shape, "int8")], axis=1), a=a, c=c)
    np.testing.assert_array_equal(out, np.concatenate([a, c], 1))
    out = run1(lambda b: b.pad(b.input("a", a.shape, "int8"), [1, 0, 0, 2], np.int8(-7)), a=a)
    np.testing.assert_array_equal(out, np.pad(a, ((1, 0), (0, 2)), constant_values=-7))
    out = run1(lambda b: b.slice(b.input("a", a.shape, "int8"), [1, 1], [1, 2]), a=a)
    np.testing.assert_array_equal(out, a[1:2, 1:3])
    out = run1(lambda b: b.tile(b.input("a", a.shape, "int8"), [2, 1]), a=a)
    np.testing.assert_array_equal(out, np.tile(a, (2, 1)))
    out = run1(lambda b: b.reverse(b.input("a", a.shape, "int8"), axis=1), a=a)
    np.testing.assert_array_equal(out, a[:, ::-1])


def test_pad_fp8_keeps_bits():
    x = np.array([1.5, -0.0], ml_dtypes.float8_e4m3fn)
    out = run1(
        lambda b: b.pad(b.input("x", x.shape, "fp8e4m3"), [1, 1], np.array([-0.0], ml_dtypes.float8_e4m3fn)), x=x
    )
    assert out.dtype == ml_dtypes.float8_e4m3fn
    assert out.view(np.uint8).tolist() == [0x80, x.view(np.uint8)[0], 0x80, 0x80]


def test_reshape_to_rank0_and_transpose_rank6():
    x = np.array([7], np.int32)
    out = run1(lambda b: b.reshape(b.input("x", (1,), "int32"), []), x=x)
    assert out.shape == () and int(out) == 7
    y = np.arange(2 * 3 * 1 * 2 * 1 * 2, dtype=np.float16).reshape(2, 3, 1, 2, 1, 2)
    perms = [5, 3, 0, 4, 1, 2]
    out = run1(lambda b: b.transpose(b.input("y", y.shape, "fp16"), perms=perms), y=y)
    np.testing.assert_array_equal(out, np.transpose(y, perms))


# ---- scatter / gather ---------------------------------------------------------------------------


def test_gather_and_out_of_range_index():
    values = np.arange(2 * 4 * 3, dtype=np.int16).reshape(2, 4, 3)
    idx = np.array([[3, 0, 3], [1, 1, 2]], np.int32)
    out = run1(
        lambda b: b.gather(b.input("v", values.shape, "int16"), b.input("i", idx.shape, "int32")), v=values, i=idx
    )
    np.testing.assert_array_equal(out, np.stack([values[n, idx[n]] for n in range(2)]))
    with pytest.raises(TosaError, match="REQUIRE"):
        run1(
            lambda b: b.gather(b.input("v", values.shape, "int16"), b.input("i", idx.shape, "int32")),
            v=values,
            i=np.array([[4, 0, 0], [0, 0, 0]], np.int32),
        )


def test_scatter_and_duplicate_index():
    values = np.zeros((2, 4, 2), np.float32)
    data = np.arange(2 * 2 * 2, dtype=np.float32).reshape(2, 2, 2) + 1

    def build(b):
        return b.scatter(
            b.input("v", values.shape, "fp32"),
            b.input("i", (2, 2), "int32"),
            b.input("d", data.shape, "fp32"),
        )

    out = run1(build, v=values, i=np.array([[3, 0], [0, 3]], np.int32), d=data)
    want = values.copy()
    want[0, [3, 0]] = data[0]
    want[1, [0, 3]] = data[1]
    np.testing.assert_array_equal(out, want)
    with pytest.raises(TosaError, match="output_modified"):
        run1(build, v=values, i=np.array([[1, 2], [2, 2]], np.int32), d=data)


# ---- image --------------------------------------------------------------------------------------


def test_resize_nearest_rounds_half_up():
    # scale 2/1 upscale with offset 0: output x = ox / 2, remainder 1 of 2 -> 2*dx >= scale_n picks ix1
    x = np.array([10, 20, 30], np.int8).reshape(1, 1, 3, 1)
    out = run1(lambda b: b.resize(b.input("x", x.shape, "int8"), [1, 1, 2, 1], [0, 0], [0, 0], mode="NEAREST"), x=x)
    assert out.reshape(-1).tolist() == [10, 20, 20, 30, 30]


def test_resize_bilinear_int16_to_int48_is_unscaled():
    x = np.array([[-32768, 32767], [100, -100]], np.int16).reshape(1, 2, 2, 1)
    out = run1(lambda b: b.resize(b.input("x", x.shape, "int16"), [4, 1, 4, 1], [0, 0], [0, 0], mode="BILINEAR"), x=x)
    assert out.dtype == np.int64 and out.shape == (1, 5, 5, 1)
    # corners carry scale_y_n * scale_x_n = 16 times the input; (0, 1/2) interpolates the first row
    assert out[0, 0, 0, 0] == -32768 * 16 and out[0, 4, 4, 0] == -100 * 16
    assert out[0, 0, 2, 0] == (-32768 + 32767) * 4 * 2
    v = x[0, :, :, 0].astype(np.int64)
    assert out[0, 1, 3, 0] == v[0, 0] * 3 * 1 + v[0, 1] * 3 * 3 + v[1, 0] * 1 * 1 + v[1, 1] * 1 * 3


def test_resize_bilinear_fp32_and_bad_output_shape():
    x = np.array([0.0, 1.0], np.float32).reshape(1, 1, 2, 1)
    out = run1(lambda b: b.resize(b.input("x", x.shape, "fp32"), [1, 1, 4, 1], [0, 0], [0, 0], mode="BILINEAR"), x=x)
    np.testing.assert_allclose(out.reshape(-1), [0, 0.25, 0.5, 0.75, 1.0])
    b = tosa_vk.Builder()
    xin = b.input("x", x.shape, "fp32")
    b.output(b.resize(xin, [1, 1, 4, 1], [0, 0], [0, 0], mode="BILINEAR", out_shape=(1, 1, 6, 1), out_dtype="fp32"))
    with pytest.raises(TosaError, match="idiv_check|OW"):
        Interpreter(b.build(check=False), check=False).run({"x": x})

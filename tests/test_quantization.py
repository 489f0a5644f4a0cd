"""tosa_vk.reference.quantization: affine quantize / dequantize as PyTorch defines them (round half to even,
saturating)."""

import numpy as np
import pytest

from tosa_vk import TosaError
from tosa_vk.reference.quantization import QParams, dequantize, quantize


def test_per_tensor_round_trip_and_ties():
    qp = QParams(0.5, 3)
    x = np.array([0.25, 0.75, -0.25, 100.0, -100.0, np.nan], np.float32)
    # 0.25 / 0.5 = 0.5 -> 0 (ties to even), 0.75 / 0.5 = 1.5 -> 2; saturates to int8
    assert quantize(x, qp).tolist() == [3, 5, 3, 127, -128, 3]
    assert dequantize(np.array([3, 5, -128], np.int8), qp).tolist() == [0.0, 1.0, -65.5]


def test_per_channel_along_axis():
    qp = QParams(np.array([1.0, 0.5]), np.array([0, 10]), axis=1)
    x = np.array([[1.0, 1.0], [-2.0, 2.0]], np.float32)
    q = quantize(x, qp)
    assert q.tolist() == [[1, 12], [-2, 14]]
    np.testing.assert_array_equal(dequantize(q, qp), x)


def test_bounds_and_errors():
    assert quantize(np.array([300.0]), QParams(1.0, 0, "int16", qmin=-200, qmax=200)).tolist() == [200]
    with pytest.raises(TosaError, match="scale"):
        quantize(np.ones(2), QParams(0.0, 0))
    with pytest.raises(TosaError, match="per-channel"):
        quantize(np.ones((2, 3)), QParams(np.ones(2), 0, axis=1))
    with pytest.raises(TosaError, match="per-tensor"):
        quantize(np.ones(2), QParams(np.ones(2), 0))

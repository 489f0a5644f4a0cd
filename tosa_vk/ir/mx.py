"""Facts of the TOSA 1.1 MX element types that the reference and the Vulkan kernels share (spec: "Data Types" and
numeric_conversion_helpers' get_largest_value_rounding_to_normal_max)."""

from __future__ import annotations

import math

from .dtype import DType

# normal_max<t>() and normal_frac<t>() (mantissa bits) of the MX element types; MXINT8's ulp is 1/64
NORMAL = {
    DType.FP4E2M1: (6.0, 1),
    DType.FP6E2M3: (7.5, 3),
    DType.FP6E3M2: (28.0, 2),
    DType.FP8E4M3: (448.0, 3),
    DType.FP8E5M2: (57344.0, 2),
    DType.MXINT8: (127 / 64, 0),
}
SCALE_MIN_EXP, SCALE_MAX_EXP = -127, 127  # normal_min / normal_max of fp8ue8m0_t: 2^-127 .. 2^127


def largest_rounding_to_normal_max(dtype: DType) -> float:
    """The spec's get_largest_value_rounding_to_normal_max<dtype>: normal_max plus half its ulp."""
    top, frac = NORMAL[dtype]
    ulp = 1 / 64 if dtype == DType.MXINT8 else 2.0 ** (math.floor(math.log2(top)) - frac)
    return top + 0.5 * ulp

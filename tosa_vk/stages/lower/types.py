"""How each TOSA element type is stored in a device buffer and computed with in GLSL (see
shaders/include/types.glsl): defines X_T, X_C, LOAD_X(v), STORE_X(v) for a binding named X."""

from __future__ import annotations

import re

from ...ir.dtype import DType

# dtype -> (storage type, compute type, load expression, store expression); `v` is the value.
_GLSL = {
    DType.BOOL: ("uint8_t", "bool", "(v != uint8_t(0))", "uint8_t((v) ? 1 : 0)"),
    DType.INT4: ("int8_t", "int", "int(v)", "int8_t(v)"),
    DType.INT8: ("int8_t", "int", "int(v)", "int8_t(v)"),
    DType.INT16: ("int16_t", "int", "int(v)", "int16_t(v)"),
    DType.INT32: ("int", "int", "(v)", "(v)"),
    DType.INT48: ("int64_t", "int64_t", "(v)", "(v)"),
    DType.INT64: ("int64_t", "int64_t", "(v)", "(v)"),
    DType.SHAPE: ("int64_t", "int64_t", "(v)", "(v)"),
    DType.FP32: ("float", "float", "(v)", "(v)"),
    DType.FP16: ("float16_t", "float", "float(v)", "float16_t(v)"),
    DType.BF16: ("uint16_t", "float", "bf16_to_f32(v)", "f32_to_bf16(v)"),
    DType.FP8E4M3: ("uint8_t", "float", "fp8e4m3_to_f32(v)", "f32_to_fp8e4m3(v)"),
    DType.FP8E5M2: ("uint8_t", "float", "fp8e5m2_to_f32(v)", "f32_to_fp8e5m2(v)"),
    # TOSA 1.1 MX types: one code a byte, as numpy holds them (ml_dtypes; MXINT8 its int8 code)
    DType.FP4E2M1: ("uint8_t", "float", "fp4e2m1_to_f32(v)", "f32_to_fp4e2m1(v)"),
    DType.FP6E2M3: ("uint8_t", "float", "fp6e2m3_to_f32(v)", "f32_to_fp6e2m3(v)"),
    DType.FP6E3M2: ("uint8_t", "float", "fp6e3m2_to_f32(v)", "f32_to_fp6e3m2(v)"),
    DType.FP8UE8M0: ("uint8_t", "float", "fp8ue8m0_to_f32(v)", "f32_to_fp8ue8m0(v)"),
    DType.MXINT8: ("int8_t", "float", "(float(v) / 64.0)", "f32_to_mxint8(v)"),
}


def glsl_storage(dtype: DType) -> str:
    return _GLSL[dtype][0]


def glsl_compute(dtype: DType) -> str:
    return _GLSL[dtype][1]


def glsl_store(dtype: DType, value: str) -> str:
    """The storage value of compute value `value` (the STORE_X expression, applied)."""
    return re.sub(r"\bv\b", value, _GLSL[dtype][3])


def binding_defines(name: str, dtype: DType) -> dict[str, str]:
    """The defines that declare binding `name` as holding `dtype`."""
    storage, compute, load, store = _GLSL[dtype]
    defines = {f"{name}_T": storage, f"{name}_C": compute, f"LOAD_{name}(v)": load, f"STORE_{name}(v)": store}
    if dtype == DType.INT64:  # the int64 helpers of the includes (partition.py placed the operator: shaderInt64)
        defines["ELEMENTWISE_INT64"] = "1"
    return defines


def glsl_known(dtype: DType) -> bool:
    """Whether kernels can bind a tensor of `dtype`."""
    return dtype in _GLSL

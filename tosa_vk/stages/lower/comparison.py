"""Comparison operators (spec 2.8) on Vulkan: shaders/elementwise_binary/binary.comp with a bool result.
GLSL float comparisons are ordered (a NaN operand gives false) and -0 == +0, as the spec requires."""

from __future__ import annotations

from ...ir.dtype import DType
from .context import LowerCtx, lowering
from .elementwise_binary import binary

_TYPES = (DType.INT32, DType.INT64, DType.FP16, DType.BF16, DType.FP32)
_SYMBOL = {"EQUAL": "==", "GREATER": ">", "GREATER_EQUAL": ">="}


@lowering("EQUAL", "GREATER", "GREATER_EQUAL")
def COMPARE(ctx: LowerCtx):
    a, b = ctx.inputs
    if a.dtype != b.dtype or a.dtype not in _TYPES or ctx.outputs[0].dtype != DType.BOOL:
        return None
    compute = "float" if a.dtype.is_float else "int64_t" if a.dtype == DType.INT64 else "int"
    return binary(ctx, f"((x) {_SYMBOL[ctx.op.op]} (y))", compute)

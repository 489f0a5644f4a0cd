"""Element-wise ternary operators (spec 2.7) on Vulkan: SELECT in shaders/elementwise_ternary/select.comp."""

from __future__ import annotations

from ...ir.dtype import DType
from .context import LowerCtx, lowering
from .elementwise_binary import broadcast_defines, broadcast_push

_TYPES = (DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.FP16, DType.BF16, DType.FP32)


@lowering("SELECT")
def SELECT(ctx: LowerCtx):
    cond, on_true, on_false = ctx.inputs
    out = ctx.outputs[0]
    if cond.dtype != DType.BOOL or not (on_true.dtype == on_false.dtype == out.dtype) or out.dtype not in _TYPES:
        return None
    values, _ = broadcast_push(out.shape, [cond.shape, on_true.shape, on_false.shape])
    defines, specs = broadcast_defines("ABC", [cond, on_true, on_false], out)
    return [
        ctx.kernel(
            "elementwise_ternary/select",
            {"A": cond.name, "B": on_true.name, "C": on_false.name, "O": out.name},
            defines,
            values,
            invocations=-(-out.size // 4) if specs["VEC4"] else out.size,
            specs=specs,
        )
    ]

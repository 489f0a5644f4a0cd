"""Image operators (spec 2.12) on Vulkan: RESIZE (shaders/image/resize.comp), NEAREST and BILINEAR.

scale / offset / border must be compile-time constants (CONST_SHAPE, as in PRO-INT / PRO-FP); with EXT-DYNAMIC
inputs the operator is not lowered. Integer bilinear is exact (i8 -> i32 in int, i16 -> i48 in int64);
floating-point bilinear computes dy = ry / scale_y_n and the four weighted terms in fp32 (fp64 for fp32 data when
the device has it) and rounds once to the output type, well within the spec's bound (max(|input|) * 0.006).
"""

from __future__ import annotations

import numpy as np

from ...ir.dtype import DType
from ...ir.graph import ResizeMode
from . import push
from .context import LowerCtx, lowering
from .types import glsl_known

# fp8 (TOSA 1.1) interpolates in fp32 (its resize_t) and rounds once to fp8, as the others do
_FLOATS = (DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2)
_INT_BILINEAR = {DType.INT8: (DType.INT32, "int"), DType.INT16: (DType.INT48, "int64_t")}


@lowering("RESIZE")
def RESIZE(ctx: LowerCtx):
    x, out = ctx.inputs[0], ctx.outputs[0]
    consts = [ctx.constant(i) for i in (1, 2)]
    if any(c is None for c in consts) or len(x.shape) != 4:
        return None
    sy_n, sy_d, sx_n, sx_d = (int(v) for v in np.asarray(consts[0]).reshape(-1))
    off_y, off_x = (int(v) for v in np.asarray(consts[1]).reshape(-1))
    n, ih, iw, c = x.shape
    _, oh, ow, _ = out.shape
    if out.size == 0:
        return []
    mode = ctx.attr("mode")
    defines: dict[str, str] = {}
    if mode == ResizeMode.NEAREST:
        if out.dtype != x.dtype or not glsl_known(x.dtype):  # a copy of storage values: any type (MX codes too)
            return None
        defines["NEAREST"] = "1"
    elif mode == ResizeMode.BILINEAR:
        if x.dtype in _FLOATS and out.dtype == x.dtype:
            wide = x.dtype == DType.FP32 and ctx.target.has("shaderFloat64")
            defines.update(BILINEAR_FLOAT="1", ACC_T="double" if wide else "float")
        elif _INT_BILINEAR.get(x.dtype, (None,))[0] == out.dtype:
            if out.dtype == DType.INT48 and not ctx.target.has("shaderInt64"):
                return None
            defines.update(BILINEAR_INT="1", ACC_T=_INT_BILINEAR[x.dtype][1])
        else:
            return None
    else:
        return None
    values = push.RESIZE.pack(out.size, c, ow, oh, iw, ih, sy_n, sy_d, sx_n, sx_d, off_y, off_x)
    return [ctx.kernel("image/resize", {"A": x.name, "O": out.name}, defines, values, invocations=out.size)]

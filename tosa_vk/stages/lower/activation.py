"""Activation functions (spec 2.4) on Vulkan: shaders/activation/activation.comp.

CLAMP is exact (min_val / max_val are representable in the int / fp32 push constants). ERF, SIGMOID and TANH
are computed in fp64 by shaders/include/unary.glsl and rounded once to fp32, then to the output type.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtype import DType
from ...ir.graph import NanPropagationMode
from ...program import Kernel
from . import push
from .context import LowerCtx, lowering
from .elementwise_binary import VEC4
from .push import PushLayout
from .types import glsl_storage

FLOATS = (DType.FP32, DType.FP16, DType.BF16)


def activation(
    ctx: LowerCtx,
    op_expr: str,
    defines: dict[str, str] | None = None,
    bounds: tuple[int, int] | tuple[float, float] = (0, 0),
    block: PushLayout = push.CLAMP_INT,
) -> list[Kernel]:
    a, out = ctx.inputs[0], ctx.outputs[0]
    values = block.pack(out.size, *bounds)
    defines = {"OP(x)": op_expr, **(defines or {})}
    invocations = out.size
    if out.size % 4 == 0:  # 4-vector loads: about twice the bandwidth on lavapipe
        defines.update({"VEC4": "1", "A_T4": VEC4[glsl_storage(a.dtype)], "O_T4": VEC4[glsl_storage(out.dtype)]})
        invocations = out.size // 4
    return [ctx.kernel("activation/activation", {"A": a.name, "O": out.name}, defines, values, invocations=invocations)]


@lowering("CLAMP")
def CLAMP(ctx: LowerCtx):
    t = ctx.inputs[0].dtype
    lo, hi = ctx.attr("min_val"), ctx.attr("max_val")
    if t in FLOATS:
        # apply_clip_s: max with min_val, then min with max_val; nan_mode picks the NaN rule of both
        mode = ctx.attr("nan_mode", NanPropagationMode.PROPAGATE)
        rule = "ignore" if mode == NanPropagationMode.IGNORE else "propagate"
        fbounds = (float(np.asarray(lo).astype(np.float64)), float(np.asarray(hi).astype(np.float64)))
        return activation(
            ctx, f"min_{rule}(max_{rule}(x, p.lo), p.hi)", {"CLAMP_T": "float"}, fbounds, push.CLAMP_FLOAT
        )
    if t in (DType.INT8, DType.INT16, DType.INT32):
        return activation(ctx, "clamp(x, p.lo, p.hi)", {"CLAMP_T": "int"}, (int(lo), int(hi)))
    return None


_FLOAT_OPS = {"ERF": "tosa_erf(x)", "SIGMOID": "tosa_sigmoid(x)", "TANH": "tosa_tanh(x)"}


@lowering(*_FLOAT_OPS)
def FLOAT_ACTIVATION(ctx: LowerCtx):
    if ctx.inputs[0].dtype not in FLOATS:
        return None
    return activation(ctx, _FLOAT_OPS[ctx.op.op])

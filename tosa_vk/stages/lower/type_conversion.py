"""Type conversion (spec 2.13) on Vulkan: CAST (shaders/type_conversion/cast.comp) and RESCALE
(shaders/type_conversion/rescale.comp); helpers in shaders/include/conversion.glsl."""

from __future__ import annotations

import math

from ...ir.dtype import DType
from ...ir.graph import Operator, RoundingMode
from ...ir.mx import largest_rounding_to_normal_max
from . import push
from .context import LowerCtx, lowering

_FLOATS = (DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2)
_INTS = (DType.INT8, DType.INT16, DType.INT32)
# significand bits of the float outputs an integer is rounded to (once, in conversion.glsl::int_to_float_rne)
_SIGNIFICAND = {DType.FP32: 24, DType.FP16: 11, DType.BF16: 8}


def _int_literal(v: int) -> str:
    """A GLSL int expression of v (-2^31 has no literal)."""
    return "(-2147483647 - 1)" if v == -(2**31) else f"({v})"


def cast_expr(in_t: DType, out_t: DType, x: str = "x") -> str | None:
    """CAST's conversion for one row of its type table, of the input's compute value `x` (cast.comp's CONVERT(x);
    an epilogue step's value); None for a row not done here."""
    if DType.INT64 in (in_t, out_t):  # EXT-INT64: bool / i32_t <-> i64_t only
        if in_t == DType.INT64:
            return {DType.BOOL: f"(({x}) != int64_t(0))", DType.INT32: f"int({x})"}.get(out_t)  # the low 32 bits
        return {DType.BOOL: f"int64_t({x})", DType.INT32: f"int64_t({x})"}.get(in_t)  # sign_extend
    if out_t == DType.BOOL:  # fp32_t -> bool_t (TOSA 1.1): NaN != 0, so true
        return f"(({x}) != 0)" if in_t in _INTS else f"(({x}) != 0.0)" if in_t == DType.FP32 else None
    if in_t == DType.BOOL:  # bool_t -> fp32_t (TOSA 1.1)
        return f"int({x})" if out_t in _INTS else f"float({x})" if out_t == DType.FP32 else None
    if in_t in _INTS and out_t in _INTS:
        return f"({x})"  # STORE_O truncates / the load sign-extends
    if in_t in _FLOATS and out_t in _INTS:
        lo, hi = out_t.int_range
        return f"float_to_int_sat({x}, {_int_literal(lo)}, {_int_literal(hi)})"
    if in_t in _INTS and out_t in _SIGNIFICAND:
        return f"int_to_float_rne({x}, {_SIGNIFICAND[out_t]})"
    if in_t in _FLOATS and out_t in _FLOATS:
        return f"({x})"  # the load is exact, the store rounds once
    return None


@lowering("CAST")
def CAST(ctx: LowerCtx):
    a, out = ctx.inputs[0], ctx.outputs[0]
    expr = cast_expr(a.dtype, out.dtype)
    if expr is None:
        return None
    return [
        ctx.kernel(
            "type_conversion/cast",
            {"A": a.name, "O": out.name},
            {"CONVERT(x)": expr},
            push.TOTAL.pack(out.size),
            invocations=out.size,
        )
    ]


def rescale_defines(op: Operator, in_t: DType, out_t: DType) -> dict[str, str]:
    """The defines of one RESCALE's arithmetic (shaders/type_conversion/rescale.comp; the fused form in
    shaders/include/epilogue.glsl takes them with an EP_ prefix)."""
    attrs = op.attrs
    defines = {}
    if attrs.get("scale32"):
        defines["SCALE32"] = "1"
        if RoundingMode(attrs.get("rounding_mode") or RoundingMode.SINGLE_ROUND) == RoundingMode.DOUBLE_ROUND:
            defines["DOUBLE_ROUND"] = "1"
    if attrs.get("input_unsigned"):
        defines["IN_MASK"] = hex((1 << in_t.bits) - 1)
    if attrs.get("output_unsigned"):
        defines["OUT_MASK"] = hex((1 << out_t.bits) - 1)
        lo, hi = 0, (1 << out_t.bits) - 1
    else:
        lo, hi = out_t.int_range
    defines["OUT_MIN"], defines["OUT_MAX"] = _int_literal(lo), _int_literal(hi)
    return defines


@lowering("RESCALE")
def RESCALE(ctx: LowerCtx):
    if not ctx.target.has("shaderInt64"):
        return None
    x, multiplier, shift, input_zp, output_zp = ctx.inputs
    out = ctx.outputs[0]
    in_t, out_t = x.dtype, out.dtype
    if in_t not in (DType.INT8, DType.INT16, DType.INT32, DType.INT48) or out_t not in _INTS:
        return None
    defines = rescale_defines(ctx.op, in_t, out_t)
    channels = 1
    if ctx.attr("per_channel", False) and x.shape:
        defines["PER_CHANNEL"] = "1"
        channels = x.shape[-1]
    bindings = {
        "A": x.name,
        "M": multiplier.name,
        "S": shift.name,
        "IZ": input_zp.name,
        "OZ": output_zp.name,
        "O": out.name,
    }
    return [
        ctx.kernel(
            "type_conversion/rescale", bindings, defines, push.RESCALE.pack(out.size, channels), invocations=out.size
        )
    ]


# ---- TOSA 1.1 block-scaled (MX) casts: data and scales stay one code a byte in storage, decoded in the kernel ------


@lowering("CAST_FROM_BLOCK_SCALED")
def CAST_FROM_BLOCK_SCALED(ctx: LowerCtx):
    data, scale = ctx.inputs
    out = ctx.outputs[0]
    defines = {"BLOCK": str(int(ctx.attr("block_size")))}
    if out.dtype == DType.BF16:
        defines["NAN_KEEPS_VALUE"] = "1"
    return [
        ctx.kernel(
            "type_conversion/cast_from_block_scaled",
            {"A": data.name, "S": scale.name, "O": out.name},
            defines,
            push.TOTAL.pack(out.size),
            invocations=out.size,
        )
    ]


@lowering("CAST_TO_BLOCK_SCALED")
def CAST_TO_BLOCK_SCALED(ctx: LowerCtx):
    x = ctx.inputs[0]
    data, scale = ctx.outputs
    out_max = largest_rounding_to_normal_max(data.dtype)
    defines = {
        "BLOCK": str(int(ctx.attr("block_size"))),
        "OUT_MAX": repr(float(out_max)),
        "OUT_EXP": str(math.floor(math.log2(out_max))),
    }
    if data.dtype == DType.FP8E4M3:
        defines["CEIL_SCALE"] = "1"
    if data.dtype == DType.FP8E5M2:
        defines["NAN_CODE"] = "0x7e"
    return [
        ctx.kernel(
            "type_conversion/cast_to_block_scaled",
            {"A": x.name, "O": data.name, "S": scale.name},
            defines,
            push.TOTAL.pack(scale.size),
            invocations=scale.size,
            writes=(data.name, scale.name),
        )
    ]

"""Element-wise unary operators (spec 2.6) on Vulkan: shaders/elementwise_unary/unary.comp.

Floats are computed in fp32 (fp16 / bf16 loaded into fp32, rounded once on store); the transcendentals go
through fp64 helpers of shaders/include/unary.glsl. ABS and NEGATE of floats only touch the sign bit of the
stored value, so they are exact for every encoding (subnormals, NaN payloads included). Integers are exact.
"""

from __future__ import annotations

from ...ir.dtype import DType
from ...program import Kernel
from . import push
from .context import LowerCtx, lowering

FLOATS = (DType.FP32, DType.FP16, DType.BF16)

# Sign-bit operations on the stored value of each float type: (clear sign, flip sign).
_SIGN_BITS = {
    DType.FP32: (
        "uintBitsToFloat(floatBitsToUint(v) & 0x7fffffffu)",
        "uintBitsToFloat(floatBitsToUint(v) ^ 0x80000000u)",
    ),
    DType.FP16: (
        "uint16BitsToFloat16(float16BitsToUint16(v) & uint16_t(0x7fff))",
        "uint16BitsToFloat16(float16BitsToUint16(v) ^ uint16_t(0x8000))",
    ),
    DType.BF16: ("uint16_t((v) & uint16_t(0x7fff))", "uint16_t((v) ^ uint16_t(0x8000))"),
}

# Float operators -> expression of the fp32 compute value x.
_FLOAT_OPS = {
    "CEIL": "ceil(x)",
    "FLOOR": "floor(x)",
    "EXP": "tosa_exp(x)",
    "LOG": "tosa_log(x)",
    "SIN": "tosa_sin(x)",
    "COS": "tosa_cos(x)",
    "RECIPROCAL": "tosa_reciprocal(x)",
    "RSQRT": "tosa_rsqrt(x)",
}


PER_INVOCATION = 4  # elements per invocation


def unary(ctx: LowerCtx, defines: dict[str, str], extra: dict[str, str] | None = None) -> list[Kernel]:
    """One kernel over every element: bindings A (input), `extra` bindings, O (output)."""
    a, out = ctx.inputs[0], ctx.outputs[0]
    bindings = {"A": a.name, **(extra or {}), "O": out.name}
    per = PER_INVOCATION
    return [
        ctx.kernel(
            "elementwise_unary/unary",
            bindings,
            {**defines, "PER_INVOCATION": f"{per}u"},
            push.TOTAL.pack(out.size),
            invocations=-(-out.size // per),
        )
    ]


def _dtype(ctx: LowerCtx) -> DType:
    return ctx.inputs[0].dtype


@lowering(*_FLOAT_OPS)
def FLOAT_UNARY(ctx: LowerCtx):
    if _dtype(ctx) not in FLOATS:
        return None
    return unary(ctx, {"OP(x)": _FLOAT_OPS[ctx.op.op]})


@lowering("ABS")
def ABS(ctx: LowerCtx):
    t = _dtype(ctx)
    if t in FLOATS:
        return unary(ctx, {"BITS_OP(v)": _SIGN_BITS[t][0]})  # -0 -> +0, NaN stays NaN
    if t in (DType.INT32, DType.INT64):
        return unary(ctx, {"OP(x)": "abs(x)"})  # abs(minimum) violates a REQUIRE: unpredictable
    return None


@lowering("BITWISE_NOT")
def BITWISE_NOT(ctx: LowerCtx):
    if _dtype(ctx) not in (DType.INT8, DType.INT16, DType.INT32, DType.INT64):
        return None
    return unary(ctx, {"OP(x)": "(~(x))"})


@lowering("LOGICAL_NOT")
def LOGICAL_NOT(ctx: LowerCtx):
    if _dtype(ctx) != DType.BOOL:
        return None
    return unary(ctx, {"OP(x)": "(!(x))"})


@lowering("CLZ")
def CLZ(ctx: LowerCtx):
    if _dtype(ctx) == DType.INT64:
        return unary(ctx, {"OP(x)": "clz64(x)"})
    if _dtype(ctx) != DType.INT32:
        return None
    return unary(ctx, {"OP(x)": "(31 - findMSB(uint(x)))"})  # findMSB(0u) = -1: clz(0) = 32


@lowering("NEGATE")
def NEGATE(ctx: LowerCtx):
    t = _dtype(ctx)
    if t in FLOATS:
        return unary(ctx, {"BITS_OP(v)": _SIGN_BITS[t][1]})  # zero points are 0 for floats (ERROR_IF)
    if t == DType.INT64:  # acc_t i64_t, zero points 0 (ERROR_IF); -minimum violates a REQUIRE: it wraps
        return unary(ctx, {"OP(x)": "(-(x))"})
    if t not in (DType.INT8, DType.INT16, DType.INT32):
        return None
    # acc_t = int32: (0 - (value - input1_zp)) + output_zp, REQUIREd not to overflow, clamped to in_out_t
    expr = "(-((x) - (z1)) + (z2))"
    if t != DType.INT32:
        lo, hi = t.int_range
        expr = f"clamp({expr}, {lo}, {hi})"
    zp1, zp2 = ctx.op.inputs[1], ctx.op.inputs[2]
    return unary(ctx, {"ZERO_POINTS": "1", "OP(x, z1, z2)": expr}, {"Z1": zp1, "Z2": zp2})

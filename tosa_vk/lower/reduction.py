"""Reduction operators (spec 2.9) on Vulkan: shaders/reduction/reduce.comp, one invocation per output element
folding the reduced axis in order. Also ARGMAX (spec 2.3.1), which belongs to the tensor_ops chapter but is a
reduction in shape: it lives here (shaders/reduction/argmax.comp) until tosa_vk/lower/tensor_ops.py takes it over.

Floating-point sums and products accumulate in fp64 (as the reference does) and are rounded once to the output
type; without shaderFloat64 they accumulate in fp32 (REDUCE_SUM's acc_t is fp32 or fp16 anyway). int32 sums wrap
(overflow is a REQUIRE violation, so unpredictable).
"""
from __future__ import annotations

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from ..program import Kernel, pack_push
from . import LowerCtx, lowering

_INT_MIN = "(-2147483647 - 1)"
_INT_MAX = "2147483647"
_NAN = "uintBitsToFloat(0x7fc00000u)"
_INF = "uintBitsToFloat(0x7f800000u)"


def _axis_view(shape, axis: int) -> tuple[int, int, int]:
    """(outer, axis length, inner) of `shape` around `axis`."""
    outer = inner = 1
    for d in shape[:axis]:
        outer *= d
    for d in shape[axis + 1:]:
        inner *= d
    return outer, shape[axis], inner


def _axis_kernel(ctx: LowerCtx, shader: str, defines: dict[str, str]) -> list[Kernel] | None:
    x, out = ctx.inputs[0], ctx.outputs[0]
    axis = int(ctx.attr("axis", 0))
    outer, length, inner = _axis_view(x.shape, axis)
    if x.size >= 1 << 32 or out.size == 0:
        return None if x.size >= 1 << 32 else []
    push = pack_push(outer * inner, length, inner, fmt="III")
    return [ctx.kernel(shader, {"A": x.name, "O": out.name}, defines, push, invocations=outer * inner)]


def _reduce(ctx: LowerCtx, acc: str, init: str, step: str, finish: str = "(acc)") -> list[Kernel] | None:
    return _axis_kernel(ctx, "reduction/reduce",
                        {"ACC_T": acc, "INIT": init, "STEP(acc, x)": step, "FINISH(acc)": finish})


@lowering("REDUCE_ALL", "REDUCE_ANY")
def REDUCE_ALL(ctx: LowerCtx):
    if ctx.inputs[0].dtype != DType.BOOL:
        return None
    if ctx.op.op == "REDUCE_ALL":
        return _reduce(ctx, "bool", "true", "((acc) && (x))")
    return _reduce(ctx, "bool", "false", "((acc) || (x))")


@lowering("REDUCE_MAX", "REDUCE_MIN")
def REDUCE_MAX(ctx: LowerCtx):
    dtype = ctx.inputs[0].dtype
    fn = "max" if ctx.op.op == "REDUCE_MAX" else "min"
    if dtype.is_float:
        if dtype not in (DType.FP32, DType.FP16, DType.BF16):
            return None
        # acc starts at NaN for IGNORE (apply_max_s skips it), else at minimum_s (-inf) / maximum_s (+inf).
        if ctx.attr("nan_mode") == NanPropagationMode.IGNORE:
            return _reduce(ctx, "float", _NAN, f"{fn}_ignore(acc, x)")
        return _reduce(ctx, "float", f"(-{_INF})" if fn == "max" else _INF, f"{fn}_propagate(acc, x)")
    if dtype not in (DType.INT8, DType.INT16, DType.INT32):
        return None
    return _reduce(ctx, "int", _INT_MIN if fn == "max" else _INT_MAX, f"{fn}(acc, x)")


def _fp_acc(ctx: LowerCtx) -> tuple[str, str]:
    """Accumulator type and the FINISH expression rounding it once to the output type."""
    out = ctx.outputs[0].dtype
    if not ctx.features.get("shaderFloat64", False):
        return "float", "(acc)"
    return "double", "float(acc)" if out == DType.FP32 else "f64_to_f32_odd(acc)"


@lowering("REDUCE_PRODUCT")
def REDUCE_PRODUCT(ctx: LowerCtx):
    if ctx.inputs[0].dtype not in (DType.FP32, DType.FP16, DType.BF16):
        return None
    acc, finish = _fp_acc(ctx)
    return _reduce(ctx, acc, f"{acc}(1.0)", f"((acc) * {acc}(x))", finish)


@lowering("REDUCE_SUM")
def REDUCE_SUM(ctx: LowerCtx):
    dtype = ctx.inputs[0].dtype
    if dtype == DType.INT32:
        return _reduce(ctx, "int", "0", "((acc) + (x))")
    if dtype not in (DType.FP32, DType.FP16, DType.BF16):
        return None
    acc, finish = _fp_acc(ctx)
    return _reduce(ctx, acc, f"{acc}(0.0)", f"((acc) + {acc}(x))", finish)


# ARGMAX belongs to the tensor_ops chapter (spec 2.3.1); kept here until tosa_vk/lower/tensor_ops.py exists.
@lowering("ARGMAX")
def ARGMAX(ctx: LowerCtx):
    dtype = ctx.inputs[0].dtype
    if ctx.outputs[0].dtype != DType.INT32:
        return None
    defines: dict[str, str] = {}
    if dtype.is_float:
        defines["FLOAT"] = "1"
        if ctx.attr("nan_mode") == NanPropagationMode.IGNORE:
            defines["IGNORE"] = "1"
    elif dtype not in (DType.INT8, DType.INT16, DType.INT32):
        return None
    return _axis_kernel(ctx, "reduction/argmax", defines)

"""Element-wise binary operators (spec 2.5) on Vulkan: shaders/elementwise_binary/binary.comp."""
from __future__ import annotations

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from ..program import Kernel, pack_push
from . import LowerCtx, lowering

MAX_RANK = 6


def broadcast_push(out_shape, in_shapes) -> tuple[bytes, bool]:
    """Push constants (total, rank, shape[6], strides per input[6]) and whether any input is broadcast."""
    rank = len(out_shape)
    total = 1
    for d in out_shape:
        total *= d
    fields = [total, rank] + list(out_shape) + [1] * (MAX_RANK - rank)
    broadcast = False
    for shape in in_shapes:
        strides, step = [0] * rank, 1
        for d in range(rank - 1, -1, -1):
            strides[d] = 0 if shape[d] == 1 and out_shape[d] != 1 else step
            step *= shape[d]
        broadcast |= tuple(shape) != tuple(out_shape)
        fields += strides + [0] * (MAX_RANK - rank)
    return pack_push(*fields, fmt="I" + "i" * (len(fields) - 1)), broadcast


def binary(ctx: LowerCtx, op_expr: str, compute: str) -> list[Kernel]:
    a, b = ctx.inputs[:2]
    out = ctx.outputs[0]
    push, broadcast = broadcast_push(out.shape, [a.shape, b.shape])
    defines = {"COMPUTE_T": compute, "OP(x, y)": op_expr}
    if broadcast:
        defines["BROADCAST"] = "1"
    return [ctx.kernel("elementwise_binary/binary", {"A": a.name, "B": b.name, "O": out.name}, defines, push,
                       invocations=out.size)]


def _is_float(ctx: LowerCtx) -> bool:
    return ctx.inputs[0].dtype.is_float


@lowering("ADD", "SUB")
def ADD(ctx: LowerCtx):
    sign = "+" if ctx.op.op == "ADD" else "-"
    if _is_float(ctx):
        return binary(ctx, f"((x) {sign} (y))", "float")
    if ctx.inputs[0].dtype == DType.INT32:
        return binary(ctx, f"((x) {sign} (y))", "int")
    return None


@lowering("MAXIMUM", "MINIMUM")
def MAXIMUM(ctx: LowerCtx):
    fn = "max" if ctx.op.op == "MAXIMUM" else "min"
    if _is_float(ctx):
        mode = "ignore" if ctx.attr("nan_mode") == NanPropagationMode.IGNORE else "propagate"
        return binary(ctx, f"{fn}_{mode}(x, y)", "float")
    return binary(ctx, f"{fn}(x, y)", "int")

"""Element-wise binary operators (spec 2.5) on Vulkan: shaders/elementwise_binary/binary.comp (broadcasting
OP(a, b)) and table.comp (TABLE). Helpers in shaders/include/elementwise.glsl."""

from __future__ import annotations

from ...ir.dtype import DType
from ...ir.graph import NanPropagationMode
from ...program import Kernel
from . import push
from .context import LowerCtx, lowering
from .push import Push
from .types import glsl_storage

MAX_RANK = 6
_INT = (DType.INT8, DType.INT16, DType.INT32)
_INT64 = (DType.INT64,)  # EXT-INT64 (TOSA 1.1), computed in int64_t
_FLOAT = (DType.FP16, DType.BF16, DType.FP32)


# storage type -> its 4-vector (VEC4 kernels)
VEC4 = {
    "float": "vec4",
    "int": "ivec4",
    "float16_t": "f16vec4",
    "uint16_t": "u16vec4",
    "int16_t": "i16vec4",
    "int8_t": "i8vec4",
    "uint8_t": "u8vec4",
    "int64_t": "i64vec4",
}


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _coalesce(out_shape, in_shapes) -> list[list[int]]:
    """Dimensions as [output size, size in each input]: size-1 output dimensions dropped, neighbours merged where
    every input is broadcast along both or neither."""
    merged: list[list[int]] = []
    prev_key = None
    for d in range(len(out_shape)):
        if out_shape[d] == 1:
            continue
        key = tuple(shape[d] == 1 for shape in in_shapes)  # broadcast along d?
        sizes = [out_shape[d]] + [shape[d] for shape in in_shapes]
        if merged and key == prev_key:
            merged[-1] = [m * s for m, s in zip(merged[-1], sizes)]
        else:
            merged.append(sizes)
        prev_key = key
    return merged


def broadcast_push(out_shape, in_shapes) -> tuple[Push, bool]:
    """Push constants (total, rank, shape[6], strides per input[6]) of the coalesced dimensions, so the
    shader's offset loop runs over as few as possible, and whether any input is broadcast."""
    merged = _coalesce(out_shape, in_shapes)
    rank = len(merged)
    shape = [m[0] for m in merged]
    fields = [_size(out_shape), rank] + shape + [1] * (MAX_RANK - rank)
    for k in range(len(in_shapes)):
        strides, step = [0] * rank, 1
        for d in range(rank - 1, -1, -1):
            strides[d] = 0 if merged[d][k + 1] == 1 and shape[d] != 1 else step
            step *= merged[d][k + 1]
        fields += strides + [0] * (MAX_RANK - rank)
    broadcast = any(tuple(s) != tuple(out_shape) for s in in_shapes)
    return (push.BINARY if len(in_shapes) == 2 else push.SELECT).pack(*fields), broadcast


def broadcast_defines(names: str, tensors, out) -> tuple[dict[str, str], dict[str, int]]:
    """(defines, specialization constants). Per input binding X (`names[k]`) the constant X_MODE: 0 the
    output's shape, 1 one element (scalar), 2 broadcast along some dimensions, 3 that and along the innermost
    coalesced one (its 4 elements for 4 consecutive outputs are equal). VEC4 = 1 (4 elements per invocation through
    the X_T4 4-vector views, always declared) when no input is broadcast or the innermost coalesced dimension is a
    multiple of 4 (4 consecutive outputs then read 4 consecutive or 4 equal input elements). Constants, not defines:
    one module serves every broadcast pattern of the same operator and types."""
    merged = _coalesce(out.shape, [t.shape for t in tensors])
    specs = {}
    for k, (name, t) in enumerate(zip(names, tensors)):
        if tuple(t.shape) == tuple(out.shape):
            specs[f"{name}_MODE"] = 0
        elif t.size == 1:
            specs[f"{name}_MODE"] = 1
        else:
            specs[f"{name}_MODE"] = 3 if merged[-1][k + 1] == 1 else 2
    specs["VEC4"] = int(all(m < 2 for m in specs.values()) or merged[-1][0] % 4 == 0)
    defines = {f"{name}_T4": VEC4[glsl_storage(t.dtype)] for name, t in zip(names + "O", list(tensors) + [out])}
    return defines, specs


def binary(
    ctx: LowerCtx,
    op_expr: str,
    compute: str,
    defines: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
) -> list[Kernel]:
    """out = OP(a, b) with broadcasting; `extra` bindings follow O (binding 3 on: SHIFT_BUFFER's S)."""
    a, b = ctx.inputs[:2]
    out = ctx.outputs[0]
    values, _ = broadcast_push(out.shape, [a.shape, b.shape])
    layout, specs = broadcast_defines("AB", [a, b], out)
    all_defines = {"COMPUTE_T": compute, "OP(x, y)": op_expr, **layout, **(defines or {})}
    return [
        ctx.kernel(
            "elementwise_binary/binary",
            {"A": a.name, "B": b.name, "O": out.name, **(extra or {})},
            all_defines,
            values,
            invocations=-(-out.size // 4) if specs["VEC4"] else out.size,
            specs=specs,
        )
    ]


def _compute(t: DType) -> str:
    """The GLSL compute type of an element-wise kernel on `t`."""
    return "float" if t.is_float else "int64_t" if t == DType.INT64 else "bool" if t == DType.BOOL else "int"


def _types(ctx: LowerCtx) -> tuple[DType, DType, DType]:
    return ctx.inputs[0].dtype, ctx.inputs[1].dtype, ctx.outputs[0].dtype


def _same(ctx: LowerCtx, allowed) -> DType | None:
    """The common type of both inputs and the output if it is one of `allowed`."""
    a, b, o = _types(ctx)
    return a if a == b == o and a in allowed else None


@lowering("ADD", "SUB")
def ADD(ctx: LowerCtx):
    sign = "+" if ctx.op.op == "ADD" else "-"
    t = _same(ctx, _FLOAT + (DType.INT32,) + _INT64)
    if t is None:
        return None
    return binary(ctx, f"((x) {sign} (y))", _compute(t))


@lowering("MAXIMUM", "MINIMUM")
def MAXIMUM(ctx: LowerCtx):
    fn = "max" if ctx.op.op == "MAXIMUM" else "min"
    t = _same(ctx, _FLOAT + (DType.INT32,) + _INT64)
    if t is None:
        return None
    if t.is_float:
        mode = "ignore" if ctx.attr("nan_mode") == NanPropagationMode.IGNORE else "propagate"
        return binary(ctx, f"{fn}_{mode}(x, y)", "float")
    return binary(ctx, f"{fn}(x, y)", _compute(t))


@lowering("BITWISE_AND", "BITWISE_OR", "BITWISE_XOR")
def BITWISE(ctx: LowerCtx):
    t = _same(ctx, _INT + _INT64)
    if t is None:
        return None
    sym = {"BITWISE_AND": "&", "BITWISE_OR": "|", "BITWISE_XOR": "^"}[ctx.op.op]
    return binary(ctx, f"((x) {sym} (y))", _compute(t))  # the store truncates to the 8 / 16-bit type


@lowering("LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR")
def LOGICAL(ctx: LowerCtx):
    if _same(ctx, (DType.BOOL,)) is None:
        return None
    sym = {"LOGICAL_AND": "&&", "LOGICAL_OR": "||", "LOGICAL_XOR": "^^"}[ctx.op.op]
    return binary(ctx, f"((x) {sym} (y))", "bool")


@lowering("ARITHMETIC_RIGHT_SHIFT")
def ARITHMETIC_RIGHT_SHIFT(ctx: LowerCtx):
    t = _same(ctx, _INT + _INT64)
    if t is None:
        return None
    rnd = "true" if ctx.attr("round", False) else "false"
    return binary(ctx, f"arithmetic_right_shift(x, y, {rnd})", _compute(t))


@lowering("LOGICAL_LEFT_SHIFT")
def LOGICAL_LEFT_SHIFT(ctx: LowerCtx):
    t = _same(ctx, _INT + _INT64)
    if t is None:
        return None
    return binary(ctx, "((x) << (y))", _compute(t))  # REQUIRE(0 <= value2 < bits); the store wraps


@lowering("LOGICAL_RIGHT_SHIFT")
def LOGICAL_RIGHT_SHIFT(ctx: LowerCtx):
    t = _same(ctx, _INT + _INT64)
    if t is None:
        return None
    if t == DType.INT64:
        return binary(ctx, "logical_right_shift(x, y)", "int64_t")
    return binary(ctx, f"logical_right_shift(x, y, {(1 << t.bits) - 1:#x}u)", "int")


@lowering("INTDIV")
def INTDIV(ctx: LowerCtx):
    t = _same(ctx, (DType.INT32,) + _INT64)
    if t is None:
        return None
    return binary(ctx, "intdiv_s(x, y)", _compute(t))


@lowering("MUL")
def MUL(ctx: LowerCtx):
    a, b, o = _types(ctx)
    if a != b or len(ctx.inputs) < 3:
        return None
    if a.is_float:
        if a not in _FLOAT or o != a:
            return None
        return binary(ctx, "((x) * (y))", "float")  # exact in fp32 for fp16 / bf16, then one rounding
    if a == o == DType.INT64:  # REQUIRE(shift == 0): apply_mul_s keeps the low 64 bits
        return binary(ctx, "((x) * (y))", "int64_t")
    if a not in _INT or o != DType.INT32:
        return None
    if a != DType.INT32:  # REQUIRE(shift == 0): the int32 product of 8 / 16-bit values is exact
        return binary(ctx, "((x) * (y))", "int")
    shift = ctx.constant(2)
    if shift is not None and int(shift.reshape(-1)[0]) == 0:
        return binary(ctx, "((x) * (y))", "int")  # apply_mul_s: low 32 bits
    if not ctx.target.has("shaderInt64"):
        return None
    defines = {"ELEMENTWISE_INT64": "1"}
    extra = {}
    if shift is not None:
        defines["SHIFT"] = str(int(shift.reshape(-1)[0]))
    else:
        defines["SHIFT_BUFFER"] = "1"
        extra["S"] = ctx.inputs[2].name
    return binary(ctx, "mul_shift(x, y, SHIFT)", "int", defines, extra)


@lowering("POW")
def POW(ctx: LowerCtx):
    if _same(ctx, _FLOAT) is None or not ctx.target.has("shaderFloat64"):
        return None
    return binary(ctx, "pow_f64(x, y)", "float", {"ELEMENTWISE_FP64": "1"})


@lowering("TABLE")
def TABLE(ctx: LowerCtx):
    a, table, o = _types(ctx)
    if not (
        (a, table, o) == (DType.INT8, DType.INT8, DType.INT8)
        or (a, table, o) == (DType.INT16, DType.INT16, DType.INT32)
    ):
        return None
    x, out = ctx.inputs[0], ctx.outputs[0]
    defines = {"A_T4": VEC4[glsl_storage(a)], "O_T4": VEC4[glsl_storage(o)]}
    if a == DType.INT16:
        defines["LOOKUP_INT16"] = "1"
    return [
        ctx.kernel(
            "elementwise_binary/table",
            {"A": x.name, "T": ctx.inputs[1].name, "O": out.name},
            defines,
            push.TOTAL.pack(out.size),
            invocations=-(-out.size // 4),
        )
    ]

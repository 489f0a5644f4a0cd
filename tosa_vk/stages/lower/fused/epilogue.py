"""Epilogues (tosa_vk/stages/fuse.py): the per-element operators a kernel applies to each result before its store, as
the EPILOGUE(v, c, at) define of shaders/include/epilogue.glsl (v: the result's compute value, c: its channel, at:
its element index) and the declarations it needs (EP_DECLS).

Every step computes what the operator's own kernel computes, mostly by calling the same GLSL function of
shaders/include/: RESCALE conversion.glsl's tosa_rescale, as rescale.comp does (its flags come from
tosa_vk/stages/lower/type_conversion.py's rescale_defines), binary operators on int32 / fp32 values with the other
operand read from its buffer (same shape as the result, one value per channel, or one value), CLAMP, the operators of
fuse.NAMED (SIGMOID / TANH / ERF / EXP / RECIPROCAL / RSQRT / ABS) by their GLSL functions, CAST as cast.comp
converts, logical operators on bool values.
Scalars (RESCALE's zero points, CLAMP's bounds) are push-constant words (LowerCtx.word), not literals, so that
layers differing only in them share a pipeline."""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ....ir.graph import NanPropagationMode, Operator, Tensor
from ...fuse import NAMED, tail_start
from .. import texels
from ..context import LowerCtx
from ..type_conversion import cast_expr, rescale_defines
from . import render
from .render import Array

# values a step takes (bool: comparisons and SELECT in element-wise groups)
COMPUTE = {DType.FP32: "float", DType.INT8: "int", DType.INT16: "int", DType.INT32: "int", DType.BOOL: "bool"}
COMPARE = {"EQUAL": "==", "GREATER": ">", "GREATER_EQUAL": ">="}  # ordered: false with a NaN, -0 == +0
BINARY = ("ADD", "SUB", "MUL")
MINMAX = ("MAXIMUM", "MINIMUM")
LOGICAL = ("LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR")
# steps whose code is large (int64 rescaling, fp64 functions, conversions, table reads): a chain with one of them
# (or 3 steps or more) is applied in a loop over the kernel's tile (EP_LOOP), compiled once rather than once per
# result; short light chains stay unrolled, which runs ~4 % faster
HEAVY = {"RESCALE", "CAST", "TABLE", *(name for name, named in NAMED.items() if named.fp64)}


def epilogue_defines(
    ctx: LowerCtx, bindings: dict[str, str], out_map: bool = False, tag: str = "", per: int = 1
) -> dict[str, str] | None:
    """The defines of ctx.epilogue, adding the bindings it reads to `bindings` (call it when `bindings` holds
    everything bound before them); {} without an epilogue, None when a step is not supported here. The chain is
    a function, ep_chain(v, c, at), with each step in its own variable (precise for floats: no contraction into
    fused multiply-adds, every step rounds as its own kernel's store does). A layout tail (fuse.tail_start) is the
    EP_OUT(at) store map, for kernels that store through O_AT / O4_AT (`out_map`); others decline it. `tag` names
    a second chain of one kernel apart (its function ep_chain<tag>, its bindings and declarations). `per`: elements
    per index of the store (a kernel moving raw units of several elements: GATHER), a strided CONCAT's only."""
    if not ctx.epilogue:
        return {}
    start = tail_start(ctx.block, [i for i, _ in ctx.epilogue])
    steps, tail = ctx.epilogue[:start], [op for _, op in ctx.epilogue[start:]]
    decls: list[str] = []
    defines: dict[str, str] = {}
    if tail:
        before = steps[-1][1].outputs[0] if steps else ctx.op.outputs[0]
        stored = _store_map(ctx, tail, before, per) if out_map else None
        if stored is None:
            return None
        decls.append(stored[0])
        defines["EP_OUT(at)"] = "ep_out(at)"
        if not stored[1]:
            defines["EP_OUT_SCALAR"] = "1"
    value = ctx.outputs[0].name
    first = COMPUTE.get(ctx.block.tensors[value].dtype)
    prev, body = "v", []
    for k, (_, op) in enumerate(steps):
        compute = COMPUTE.get(ctx.block.tensors[op.outputs[0]].dtype)
        step = _step(ctx, op, f"{tag}{k}", value, prev, bindings, decls, defines)
        if first is None or compute is None or step is None:
            return None
        body.append((compute, step))
        prev, value = f"t{k}", op.outputs[0]
    if steps and first is not None:  # (a chain of steps has a first type: the loop declines one without)
        decls.append(render.chain(tag, body[-1][0], first, body))
        defines["EPILOGUE(v, c, at)"] = f"ep_chain{tag}(v, c, at)"
        if len(steps) >= 3 or any(op.op in HEAVY for _, op in steps):
            defines["EP_LOOP"] = "1"
    defines["EP_DECLS"] = render.items(decls)
    return defines


def _store_map(ctx: LowerCtx, tail: list[Operator], before: str, per: int = 1) -> tuple[str, bool] | None:
    """ep_out(at): where the result element `at` lands after the layout tail's TRANSPOSEs (its RESHAPEs keep every
    linear index) or in a strided CONCAT's output (tensor `before` its channels from c0 of each row), and whether 4
    consecutive elements from a multiple of 4 stay together there (each TRANSPOSE keeps its last dimension, a
    multiple of 4; the CONCAT's channel counts and c0 are multiples of 4): vector stores stay possible. Indices
    count units of `per` elements (a CONCAT's channel counts multiples of it; no TRANSPOSE then)."""
    tensors = ctx.block.tensors
    if ctx.result.size >= 1 << 31:
        return None
    maps, vector = [], True
    for op in tail:
        if op.op == "CONCAT":  # (fuse._strided_concat: the only tail operator, along the last axis)
            ins = [tensors[n].shape[-1] for n in op.inputs]
            k = op.inputs.index(before)
            if any(n % per for n in ins):
                return None
            width, start, total = ins[k] // per, sum(ins[:k]) // per, tensors[op.outputs[0]].shape[-1] // per
            # width and c0 as push words: the pieces of one split share a pipeline
            w = ctx.word(width)
            maps.append(f"(i / {w}) * {total} + i % {w} + {ctx.word(start)}")
            vector = vector and width % 4 == 0 and start % 4 == 0 and total % 4 == 0
            continue
        if op.op != "TRANSPOSE":
            continue
        if per != 1:
            return None
        shape, perms = tensors[op.inputs[0]].shape, [int(p) for p in op.attrs["perms"]]
        inverse = [perms.index(d) for d in range(len(perms))]
        out_shape = [shape[p] for p in perms]
        maps.append(transposed_index(shape, out_shape, inverse, "i"))  # the input is TRANSPOSE(output)
        vector = vector and perms[-1] == len(perms) - 1 and shape[-1] % 4 == 0
    return render.store_map(maps), vector


def transposed_index(shape, src_shape, perms, i: str) -> str:
    """GLSL: where element `i` of x = TRANSPOSE(src, perms) (x of `shape`, row-major) is stored in src."""
    strides = [int(np.prod(src_shape[d + 1 :])) for d in range(len(src_shape))]
    terms, inner = [], 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != 1:
            coord = f"({i} / {inner}) % {shape[d]}" if d else f"{i} / {inner}"
            terms.append(f"({coord}) * {strides[perms[d]]}")
        inner *= shape[d]
    return "(" + (" + ".join(terms) or "0") + ")"


def bind(
    bindings: dict[str, str], decls: list[str], name: str, tensor: Tensor, access: str = "readonly", ctx=None
) -> Array:
    """Binds `tensor` as `name` after everything bound so far, declaring it; with `ctx` (a LowerCtx) an input is
    read through a texel buffer where the target allows (LowerCtx.texel)."""
    texel = access == "readonly" and ctx is not None and ctx.texel(name, tensor.name, texels.element(tensor.dtype))
    decl, array = render.declare(len(bindings), name, access, texel)
    decls.append(decl)
    bindings[name] = tensor.name
    return array


def _index(other: Tensor, result: Tensor) -> str | None:
    """Where the other operand of a binary step is read for the result element (at, channel c)."""
    if tuple(other.shape) == tuple(result.shape):
        return "at"
    if other.size == 1:
        return "0"
    if result.shape and other.shape[-1] == result.shape[-1] and other.size == result.shape[-1]:
        return "c"
    return None


def _step(ctx, op: Operator, k: int | str, value: str, expr: str, bindings, decls, defines) -> str | None:
    """One chain step on the value `expr` (tensor `value`): a binary operator's other operand is read from its
    buffer at the result element (same shape), at its channel, or at 0."""
    tensors = ctx.block.tensors
    args = [expr]
    if op.op in BINARY or op.op in MINMAX:
        position = op.inputs.index(value)
        if position > 1:
            return None
        other = tensors[op.inputs[1 - position]]
        where = _index(other, tensors[op.outputs[0]])
        if where is None:
            return None
        compute = "float" if other.dtype == DType.FP32 else "int"
        loaded = render.convert(compute, bind(bindings, decls, f"E{k}", other, ctx=ctx)[where])
        args = [expr, loaded] if position == 0 else [loaded, expr]
    return expression(ctx, op, args, k, bindings, decls, defines)


def expression(ctx, op: Operator, args: list[str], k: int | str, bindings, decls, defines) -> str | None:
    """The GLSL value of `op` applied to `args` (compute values of its data inputs, in order), computing what the
    operator's own kernel computes; None for a type or variant not done here. Declarations it needs (a RESCALE's
    multiplier / shift buffers and function) go to `decls`, after `bindings`, named with `k`."""
    tensors = ctx.block.tensors
    x, out = tensors[op.inputs[0]], tensors[op.outputs[0]]
    if op.op == "RESHAPE":  # same linear index and channel (fuse.py): the value passes through
        return args[0]
    if op.op == "RESCALE":
        if not ctx.target.has("shaderInt64") or op.attrs.get("input_unsigned") or op.attrs.get("output_unsigned"):
            return None
        izp, ozp = (tensors[n].data for n in op.inputs[3:5])
        if izp is None or ozp is None or x.dtype not in (DType.INT8, DType.INT16, DType.INT32):
            return None
        d = rescale_defines(op, x.dtype, out.dtype)
        m = bind(bindings, decls, f"EM{k}", tensors[op.inputs[1]], ctx=ctx)
        s = bind(bindings, decls, f"ES{k}", tensors[op.inputs[2]], ctx=ctx)
        c = "c" if op.attrs.get("per_channel") else "0"
        izp_v, ozp_v = (ctx.word(_int(z)) for z in (izp, ozp))
        bounds = (d["OUT_MIN"], d["OUT_MAX"])
        defines["EP_INT64"] = "1"
        return render.rescale(args[0], izp_v, m[c], s[c], "SCALE32" in d, "DOUBLE_ROUND" in d, ozp_v, *bounds)
    if op.op == "CLAMP":
        lo, hi = op.attrs.get("min_val"), op.attrs.get("max_val")
        if x.dtype == DType.FP32:
            lo_v, hi_v = (ctx.word(np.asarray(v).astype(np.float32).reshape(-1)[0], "float") for v in (lo, hi))
            return render.clamp("float", args[0], lo_v, hi_v, _nan_rule(op))
        if x.dtype in (DType.INT8, DType.INT16):
            return render.clamp("int", args[0], ctx.word(_int(lo)), ctx.word(_int(hi)), "")
        return None
    if op.op in COMPARE:
        y = tensors[op.inputs[1]]
        if x.dtype != y.dtype or x.dtype not in (DType.INT32, DType.FP32) or out.dtype != DType.BOOL:
            return None
        return render.compare(op.op, COMPUTE[x.dtype], args[0], args[1])
    if op.op == "CAST":
        return _cast(ctx, x.dtype, out.dtype, args[0], defines)
    if op.op in LOGICAL or op.op == "LOGICAL_NOT":
        if not all(tensors[n].dtype == DType.BOOL for n in [*op.inputs, *op.outputs]):
            return None
        return render.logical(op.op, args[: 1 if op.op == "LOGICAL_NOT" else 2])
    if op.op == "SELECT":
        a, b = (tensors[n] for n in op.inputs[1:3])
        if x.dtype != DType.BOOL or not (a.dtype == b.dtype == out.dtype):
            return None
        return render.select(COMPUTE[out.dtype], args[0], args[1], args[2])
    if op.op == "TABLE":  # int8: table[value + 128], the table read from its buffer
        if not (x.dtype == out.dtype == tensors[op.inputs[1]].dtype == DType.INT8):
            return None
        table = bind(bindings, decls, f"ET{k}", tensors[op.inputs[1]], ctx=ctx)
        return render.table(table, args[0])
    if op.op in NAMED:  # one GLSL function by name (fuse.NAMED)
        named = NAMED[op.op]
        if x.dtype != out.dtype or x.dtype not in named.types:
            return None
        if named.fp64:
            if not ctx.target.has("shaderFloat64"):
                return None
            defines["EP_FP64"] = "1"
        return render.named(named.function, COMPUTE[x.dtype], args[0])
    if op.op in BINARY or op.op in MINMAX:
        y = tensors[op.inputs[1]]
        if not (x.dtype == y.dtype == out.dtype and x.dtype in (DType.INT32, DType.FP32)):
            return None
        if op.op == "MUL" and x.dtype == DType.INT32:
            shift = tensors[op.inputs[2]].data
            if shift is None or int(np.asarray(shift).reshape(-1)[0]) != 0:
                return None
        compute = COMPUTE[x.dtype]
        if op.op in BINARY:
            return render.binary(op.op, compute, args[0], args[1])
        return render.minmax(op.op, compute, args[0], args[1], _nan_rule(op))
    return None


def _cast(ctx, in_t: DType, out_t: DType, value: str, defines) -> str | None:
    """CAST between compute types, as cast.comp converts (its CONVERT expression; the narrowing an int8 / int16
    store does on integers is explicit here, the value staying in a register)."""
    if in_t not in COMPUTE or out_t not in COMPUTE or not ctx.target.has("shaderInt64"):
        return None
    body = cast_expr(in_t, out_t, render.convert(COMPUTE[in_t], value))
    if body is None:
        return None
    if out_t in (DType.INT8, DType.INT16) and in_t in (DType.INT16, DType.INT32) and in_t.bits > out_t.bits:
        body = render.wrap(value, out_t.bits)
    defines["EP_INT64"] = "1"  # conversion.glsl
    return render.convert(COMPUTE[out_t], body)


def _nan_rule(op: Operator) -> str:
    mode = op.attrs.get("nan_mode") or NanPropagationMode.PROPAGATE
    return "ignore" if mode == NanPropagationMode.IGNORE else "propagate"


def _int(v) -> int:
    return int(np.asarray(v).reshape(-1)[0])


def with_bias(ctx, fused: dict[str, str], bindings: dict[str, str], bias) -> dict[str, str]:
    """`fused` (epilogue_defines) with a bias [C] or [1] added to each fp32 result before the chain, as a
    convolution adds it: a 1x1 convolution run as a matrix product (matmul_fast, matmul_tiled)."""
    decls = [fused.get("EP_DECLS", "")]
    array = bind(bindings, decls, "BIAS", bias, ctx=ctx)
    added = render.add_bias("v", array["0" if bias.size == 1 else "c"])
    chain = render.call("ep_chain", added, "c", "at") if "EPILOGUE(v, c, at)" in fused else added
    return {**fused, "EP_DECLS": render.items(decls), "EPILOGUE(v, c, at)": chain}

"""Reduction operators (spec 2.9) on Vulkan: shaders/reduction/reduce.comp. Also ARGMAX (spec 2.3.1), which
belongs to the tensor_ops chapter but is a reduction in shape: it lives here (shaders/reduction/argmax.comp) until
tosa_vk/stages/lower/tensor_ops.py takes it over.

A reduction runs in passes (see _passes): each splits the axis into chunks folded in axis order by one invocation
each, into a temporary of partial results, until one chunk covers the axis. That bounds the loop of every
invocation (lavapipe stops an invocation's loops after 65535 iterations) and spreads long axes over the device.
Partial results combine with the same step as the elements (sum, product, max / min with nan_mode, and / or), so
the result equals the sequential fold up to the summation order of floating-point sums and products.

Floating-point sums and products accumulate in fp64 (as the reference does; partials kept as int64 bit patterns)
and are rounded once to the output type; without fp64 they accumulate in fp32 (REDUCE_SUM's acc_t is fp32 or fp16
anyway). int32 and int64 sums wrap (an overflowing partial sum is a REQUIRE violation, so unpredictable).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...abi.shader_abi import WORKGROUP
from ...ir.dtype import DType
from ...ir.graph import NanPropagationMode
from ...program import Kernel
from ..fuse import tail_start
from . import push
from .context import LowerCtx, axis_view, lowering
from .families import reduction_subgroup
from .fused import render
from .fused.epilogue import bind, epilogue_defines

_INT_MIN = "(-2147483647 - 1)"
_INT_MAX = "2147483647"
# (no 64-bit literals: defines come before the shader's #extension lines, and glslang checks literals in them early)
_INT64_MIN = "(int64_t(1) << 63)"
_INT64_MAX = "(~(int64_t(1) << 63))"
_NAN = "uintBitsToFloat(0x7fc00000u)"
_INF = "uintBitsToFloat(0x7f800000u)"
_FLOATS = (DType.FP32, DType.FP16, DType.BF16)

MAX_CHUNK = 8192  # axis elements one invocation folds at most (well inside every target's loop budget)
MIN_CHUNK = 256  # below this an axis is folded in one pass
PARALLEL = 16384  # invocations per pass worth splitting an axis for
# a head (_with_head) keeps its input channels in shared memory: at most 16 KiB, what every Vulkan device offers
HEAD_MAX_C = 4096
# (input, weight, output) types of a head's convolution -> its compute type
_HEAD_TYPES = {(DType.FP32, DType.FP32, DType.FP32): "float", (DType.INT8, DType.INT8, DType.INT32): "int"}


def _passes(length: int, lanes: int) -> list[tuple[int, int, int]]:
    """(axis length, chunk, chunks) of each pass reducing an axis of `length` for `lanes` = outer * inner outputs;
    the last pass has one chunk."""
    passes = []
    while True:
        if length <= MIN_CHUNK or (lanes >= PARALLEL and length <= MAX_CHUNK):
            chunk = length
        else:
            chunk = min(MAX_CHUNK, max(MIN_CHUNK, -(-length * lanes // PARALLEL)))
        chunks = -(-length // chunk)
        passes.append((length, chunk, chunks))
        if chunks == 1:
            return passes
        length = chunks


def _multipass(ctx: LowerCtx, shader: str, partial, final, carry: str = "O") -> list[Kernel] | None:
    """Kernels of the passes. partial(i, src, shape) and final(i, src) give (bindings, defines, writes) of pass i
    reading tensor `src`: the input, then the partials of the previous pass (its binding `carry`)."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    if out.size == 0:
        return []
    if x.size >= 1 << 32:
        return None
    outer, length, inner = axis_view(x.shape, int(ctx.attr("axis", 0)))
    kernels, src = [], x.name
    plan = _passes(length, outer * inner)
    for i, (axis_len, chunk, chunks) in enumerate(plan):
        total = outer * chunks * inner
        if i == len(plan) - 1:
            bindings, defines, writes = final(i, src)
        else:
            bindings, defines, writes = partial(i, src, (outer, chunks, inner))
        values = push.REDUCE.pack(total, axis_len, inner, chunk, chunks)
        kernels.append(ctx.kernel(shader, bindings, defines, values, invocations=total, writes=writes))
        src = bindings.get(carry, src)
    return kernels


def _reduce(
    ctx: LowerCtx,
    acc: str,
    init: str,
    step: str,
    partial_dtype: DType,
    finish: str = "(acc)",
    bits: bool = False,
    sg: str = "",
) -> list[Kernel] | None:
    """A reduction whose accumulator `acc` folds with `step`; partial results are stored as `partial_dtype`
    (as the bit pattern of a double in int64 when `bits`) and the output as STORE_O(finish), through the fused
    epilogue if any. With a prologue (the same reduction along another axis before this one) the first pass reads
    that one's input and folds its axis first, as its own single pass would. `sg`: the subgroup fold of the same
    step (GPU classes: the subgroup family, reduction_subgroup.py, where the target's class takes it)."""
    base = {"ACC_T": acc, "INIT": init, "STEP(acc, x)": step}
    extra: dict[str, str] = {"A": "", "O": ""}
    head = tail_start(ctx.block, [i for i, _ in ctx.epilogue])  # where a head starts (fuse.py), if any
    own = ctx if head == len(ctx.epilogue) else dataclasses.replace(ctx, epilogue=ctx.epilogue[:head])
    fused = epilogue_defines(own, extra)  # bindings after A and O
    first = _prologue(ctx, base, finish)
    if fused is None or (ctx.prologue and first is None):
        return None
    value = f"EPILOGUE({finish}, int(i % {ctx.outputs[0].shape[-1]}u), int(i))" if fused else finish
    if own is not ctx:
        return _with_head(ctx, head, {**base, **fused, **(first[1] if first else {})}, extra, value)
    extra = {k: v for k, v in extra.items() if k not in ("A", "O")}
    if ctx.target.family("REDUCE") == "subgroup":
        args = (base, sg, partial_dtype, bits, fused, extra, f"STORE_O({value})", first)
        made = ctx.attempt(lambda: reduction_subgroup.reduce(ctx, *args))
        if made is not None:
            return made

    def read(i):
        return "int64BitsToDouble(v)" if bits and i > 0 else "LOAD_A(v)"

    def source(i, src):
        return (first[0], first[1]) if first and i == 0 else (src, {})

    def partial(i, src, shape):
        tmp = ctx.temporary(shape, partial_dtype)
        write = "doubleBitsToInt64(acc)" if bits else "STORE_O(acc)"
        a, pro = source(i, src)
        return {"A": a, "O": tmp}, {**base, **pro, "READ(v)": read(i), "WRITE(acc)": write}, (tmp,)

    def final(i, src):
        a, pro = source(i, src)
        defines = {**base, **pro, **fused, "READ(v)": read(i), "WRITE(acc)": f"STORE_O({value})"}
        return {"A": a, "O": ctx.result.name, **extra}, defines, None

    return _multipass(ctx, "reduction/reduce", partial, final)


def _with_head(ctx: LowerCtx, at: int, defines: dict[str, str], bindings: dict[str, str], value: str) -> list | None:
    """The reduction and its head, ctx.epilogue[at] (a 1x1 CONV2D on the 1x1 image of its results, fuse.py), and
    that convolution's own chain after it, as one kernel: reduce.comp's HEAD main, in one pass. `defines`: the
    reduction's (its prologue and chain too), `bindings` what they bind (from A and O on), `value`: result i of the
    reduction through its chain, as a compute value. The convolution computes what conv.comp does (fp32 sums, or
    int8 products in int32, plus the bias), in channel order."""
    index, conv = ctx.epilogue[at]
    tensors = ctx.block.tensors
    x, w, bias, out = (tensors[n] for n in (*conv.inputs[:3], conv.outputs[0]))
    compute = _HEAD_TYPES.get((x.dtype, w.dtype, out.dtype))
    if compute is None or bias.dtype != out.dtype or ctx.inputs[0].size >= 1 << 32:
        return None
    outer, length, inner = axis_view(ctx.inputs[0].shape, int(ctx.attr("axis", 0)))
    batch, channels, oc = x.shape[0], x.shape[-1], w.shape[0]
    folded = int(defines.get("P_LEN", "0u").rstrip("u"))  # elements of the prologue's axis per element of ours
    loops = -(-channels // WORKGROUP) * length * (folded + 1) + channels
    if channels > HEAD_MAX_C or len(_passes(length, outer * inner)) != 1 or loops > ctx.target.loop_budget:
        return None
    if batch > ctx.target.max_workgroup_count[1]:
        return None
    decls: list[str] = []
    weights = bind(bindings, decls, "HW", w, ctx=ctx)
    b = bind(bindings, decls, "HB", bias, ctx=ctx)["0" if bias.size == 1 else "(oc)"]
    if compute == "float":
        pooled, mac = f"float({value})", f"fma(xv, float({weights['(k)']}), acc)"
    else:
        izp, wzp = (tensors[n].data for n in conv.inputs[3:5])
        if izp is None or wzp is None:
            return None
        izp_v, wzp_v = (ctx.word(int(np.asarray(z).reshape(-1)[0])) for z in (izp, wzp))
        pooled = f"bitfieldExtract(int({value}), 0, 8)"  # as stored in int8
        mac = f"((acc) + ((xv) - {izp_v}) * (int({weights['(k)']}) - {wzp_v}))"
    own = dataclasses.replace(ctx, op=conv, index=index, epilogue=ctx.epilogue[at + 1 :], prologue=None)
    chain = epilogue_defines(own, bindings, tag="h")
    if chain is None:
        return None
    result = f"((acc) + {compute}({b}))"
    if "EPILOGUE(v, c, at)" in chain:
        result = f"H_EPILOGUE({result}, int(oc), int(at))"
    defines = {
        "H_EPILOGUE(v, c, at)": chain.get("EPILOGUE(v, c, at)", "(v)"),
        **defines,
        **{k: v for k, v in chain.items() if k in ("EP_INT64", "EP_FP64")},
        "READ(v)": "LOAD_A(v)",
        "HEAD": "1",
        "HEAD_DECLS": render.items([*decls, chain.get("EP_DECLS", "")]),
        "H_C": f"{channels}u",
        "H_OC": f"{oc}u",
        "H_X_T": compute,
        "H_X(acc)": pooled,
        "H_ACC_T": compute,
        "H_MAC(acc, xv, k)": mac,
        "H_RESULT(acc, oc, at)": f"STORE_O({result})",
    }
    source = ctx.prologue[1].inputs[0] if ctx.prologue else ctx.inputs[0].name
    bindings = {"A": source, "O": ctx.result.name, **{k: v for k, v in bindings.items() if k not in ("A", "O")}}
    values = push.REDUCE.pack(outer * inner, length, inner, length, 1)
    return [ctx.kernel("reduction/reduce", bindings, defines, values, groups=(-(-oc // WORKGROUP), batch, 1))]


def _prologue(ctx: LowerCtx, base: dict[str, str], finish: str) -> tuple[str, dict[str, str]] | None:
    """(the input tensor, defines) of the first pass folding ctx.prologue's axis too; None without one, or when
    that reduction would take more than one pass on its own (its partial sums would differ)."""
    if ctx.prologue is None:
        return None
    index, op = ctx.prologue
    x = ctx.block.tensors[op.inputs[0]]
    outer, length, inner = axis_view(x.shape, int(op.attrs.get("axis") or 0))
    if x.size >= 1 << 32 or len(_passes(length, outer * inner)) != 1:
        return None
    return x.name, {
        "PROLOGUE": "1",
        "P_LEN": f"{length}u",
        "P_INNER": f"{inner}u",
        "P_ACC_T": base["ACC_T"],
        "P_INIT": base["INIT"],
        "P_STEP(acc, x)": base["STEP(acc, x)"],
        "P_FINISH": finish,
    }


@lowering("REDUCE_ALL", "REDUCE_ANY")
def REDUCE_ALL(ctx: LowerCtx):
    if ctx.inputs[0].dtype != DType.BOOL:
        return None
    if ctx.op.op == "REDUCE_ALL":
        return _reduce(ctx, "bool", "true", "((acc) && (x))", DType.BOOL, sg="subgroupAnd(v)")
    return _reduce(ctx, "bool", "false", "((acc) || (x))", DType.BOOL, sg="subgroupOr(v)")


@lowering("REDUCE_MAX", "REDUCE_MIN")
def REDUCE_MAX(ctx: LowerCtx):
    dtype = ctx.inputs[0].dtype
    fn = "max" if ctx.op.op == "REDUCE_MAX" else "min"
    if dtype in _FLOATS:
        # acc starts at NaN for IGNORE (apply_max_s skips it), else at minimum_s (-inf) / maximum_s (+inf);
        # partial maxima are input values, stored exactly in the input type.
        if ctx.attr("nan_mode") == NanPropagationMode.IGNORE:
            return _reduce(ctx, "float", _NAN, f"{fn}_ignore(acc, x)", dtype, sg=f"sg_{fn}_ignore(v)")
        init = f"(-{_INF})" if fn == "max" else _INF
        return _reduce(ctx, "float", init, f"{fn}_propagate(acc, x)", dtype, sg=f"sg_{fn}_propagate(v)")
    if dtype == DType.INT64:  # EXT-INT64
        return _reduce(ctx, "int64_t", _INT64_MIN if fn == "max" else _INT64_MAX, f"{fn}(acc, x)", dtype)
    if dtype not in (DType.INT8, DType.INT16, DType.INT32):
        return None
    sg = f"subgroup{fn.title()}(v)"
    return _reduce(ctx, "int", _INT_MIN if fn == "max" else _INT_MAX, f"{fn}(acc, x)", dtype, sg=sg)


def _fp_reduce(ctx: LowerCtx, init: str, op: str) -> list[Kernel] | None:
    """Sum / product of floats: fp64 accumulation rounded once (fp32 without fp64 support)."""
    if ctx.inputs[0].dtype not in _FLOATS:
        return None
    sg = "subgroupAdd(v)" if op == "+" else "subgroupMul(v)"
    if ctx.target.has("shaderFloat64") and ctx.target.has("shaderInt64"):
        finish = "float(acc)" if ctx.outputs[0].dtype == DType.FP32 else "f64_to_f32_odd(acc)"
        step = f"((acc) {op} double(x))"
        return _reduce(ctx, "double", f"double({init})", step, DType.INT48, finish, bits=True, sg=sg)
    return _reduce(ctx, "float", f"float({init})", f"((acc) {op} float(x))", DType.FP32, sg=sg)


@lowering("REDUCE_PRODUCT")
def REDUCE_PRODUCT(ctx: LowerCtx):
    return _fp_reduce(ctx, "1.0", "*")


@lowering("REDUCE_SUM")
def REDUCE_SUM(ctx: LowerCtx):
    if ctx.inputs[0].dtype == DType.INT32:
        return _reduce(ctx, "int", "0", "((acc) + (x))", DType.INT32, sg="subgroupAdd(v)")
    if ctx.inputs[0].dtype == DType.INT64:  # EXT-INT64: wraps like int32 (a wrapping partial sum is a REQUIRE)
        return _reduce(ctx, "int64_t", "int64_t(0)", "((acc) + (x))", DType.INT64)
    return _fp_reduce(ctx, "0.0", "+")


# ARGMAX belongs to the tensor_ops chapter (spec 2.3.1); kept here until tosa_vk/stages/lower/tensor_ops.py exists.
@lowering("ARGMAX")
def ARGMAX(ctx: LowerCtx):
    x, out = ctx.inputs[0], ctx.outputs[0]
    if out.dtype not in (DType.INT32, DType.INT64):  # i64_t indices: EXT-INT64 (partial indices stay int32)
        return None
    base: dict[str, str] = {}
    if x.dtype.is_float:
        base["FLOAT"] = "1"
        if ctx.attr("nan_mode") == NanPropagationMode.IGNORE:
            base["IGNORE"] = "1"
    elif x.dtype not in (DType.INT8, DType.INT16, DType.INT32, DType.INT64):
        return None
    if ctx.target.family("ARGMAX") == "subgroup":
        made = ctx.attempt(lambda: reduction_subgroup.argmax(ctx, base))
        if made is not None:
            return made
    src_index: list[str] = []  # the indices of the partial maxima read by the next pass

    def bindings_in(i, src):
        b, d = {"A": src}, dict(base)
        if i > 0:
            b["AI"] = src_index[-1]
            d.update(PARTIAL_IN="1", B_AI="1")
        d["B_O"] = str(len(b))
        return b, d

    def partial(i, src, shape):
        b, d = bindings_in(i, src)
        values, index = ctx.temporary(shape, x.dtype), ctx.temporary(shape, DType.INT32)
        b.update(O=index, PV=values)
        d.update(PARTIAL_OUT="1", B_PV=str(len(b) - 1))
        src_index.append(index)
        return b, d, (index, values)

    def final(i, src):
        b, d = bindings_in(i, src)
        b["O"] = out.name
        return b, d, None

    return _multipass(ctx, "reduction/argmax", partial, final, carry="PV")

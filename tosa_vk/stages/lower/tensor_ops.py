"""Tensor operators (spec 2.3) on Vulkan: MATMUL (shaders/tensor_ops/matmul_fast.comp for floating point with
C % 8 == 0 and W % 8 == 0: 16 x 16 register tiles fed by 8-element loads; matmul.comp otherwise: 8 x 4 tiles of
any type, zero points, long C split into passes), MATMUL_T (the same kernels: matmul.comp reads B as [D, W, C],
mixed fp types included; matmul_fast.comp after B is transposed, at load time for a constant B), AVG_POOL2D /
MAX_POOL2D and their _ADAPTIVE forms (pool.comp), FFT2D / RFFT2D (fft.comp: radix-2 Stockham passes over a twiddle
table from fft_twiddle.comp). ARGMAX lives in lower/reduction.py; the convolutions in lower/convolution.py.

Every loop here stays within the target's loop budget (lavapipe ends an invocation's loops after 65535 iterations in
total): MATMUL splits a long C into partial sums (a second pass adds them), pooling windows are bounded, and each FFT
pass is one butterfly per invocation.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...ir.dtype import DType
from ...ir.graph import NanPropagationMode, Tensor
from ...program import Kernel
from . import push, texels
from .context import LowerCtx, lowering
from .data_layout import strided_copy
from .elementwise_binary import VEC4
from .families import matmul_coopmat, matmul_tiled
from .fused.epilogue import epilogue_defines, with_bias
from .types import glsl_storage


def _scalar(ctx: LowerCtx, i: int):
    """Compile-time value of the one-element input i, or None when it is a run-time input."""
    v = ctx.constant(i)
    return None if v is None else v.reshape(-1)[0].item()


# ---- MATMUL --------------------------------------------------------------------------------------------------------

# in_t -> (allowed out_t, accumulator GLSL type, its 4-vector, partial-sum dtype)
_MATMUL = {
    DType.INT8: ((DType.INT32,), "int", "ivec4", DType.INT32),
    DType.INT16: ((DType.INT48,), "int64_t", "i64vec4", DType.INT48),
    DType.FP16: ((DType.FP16, DType.FP32), "float", "vec4", DType.FP32),
    DType.BF16: ((DType.FP32,), "float", "vec4", DType.FP32),
    DType.FP32: ((DType.FP32,), "float", "vec4", DType.FP32),
    DType.FP8E4M3: ((DType.FP16, DType.FP32), "float", "vec4", DType.FP32),
    DType.FP8E5M2: ((DType.FP16, DType.FP32), "float", "vec4", DType.FP32),
}
_FP8 = (DType.FP8E4M3, DType.FP8E5M2)  # MATMUL's mixed pairs (1.1): either fp8 type with the other
MATMUL_FAST = True  # use matmul_fast.comp where it applies
MATMUL_TM = 8  # output rows per invocation (x 4 columns)
MATMUL_LANES = 16  # invocations per workgroup (sharing their rows of A)


# fast floating-point kernel (matmul_fast.comp): in_t -> (8-element load unit, unpack define, fp8 decoder)
_FAST_UNIT = {
    DType.FP32: ("u64vec4", "UNIT_FP32"),
    DType.FP16: ("uvec4", "UNIT_FP16"),
    DType.BF16: ("uvec4", "UNIT_BF16"),
    DType.FP8E4M3: ("uvec2", "UNIT_FP8"),
    DType.FP8E5M2: ("uvec2", "UNIT_FP8"),
}


def _matmul_fast(ctx: LowerCtx) -> list[Kernel] | None:
    """The register-tiled kernel with 8-element loads, when the shapes allow it."""
    a, b = ctx.inputs[:2]
    n, h, c = a.shape
    return matmul_fast(ctx, a, b, (n, h, c, b.shape[2]))


def _fast_applies(ctx: LowerCtx, dtype: DType, c: int, w: int) -> bool:
    """Whether matmul_fast.comp can do a [.., C] x [C, W] product of `dtype` on this target."""
    return (
        dtype in _FAST_UNIT
        and c % 8 == 0
        and w % 8 == 0
        and c // 8 + 64 <= ctx.target.loop_budget  # + the epilogue's store loop (up to 16 x 2 x 2 groups)
        and ctx.target.has("shaderInt64")
    )


# The register tile trades the driver's compile time for run time. lavapipe, a product alone in a model, steady ms
# (first dispatch, LLVM, in s): [1,256,256] x [1,256,256] rows x columns 16 x 16: 5.8 (0.9), 8 x 8: 9.9 (0.4);
# mobilenetv2's 1x1 layers (<= 1.5 M multiply-adds each): whole model 11.4 ms either way, but its first run
# 23 s -> 7.7 s (a 16 x 16 tile with a fused epilogue is 2.5-4.5 s of LLVM each: the epilogue is unrolled per
# result). So the large tile only where a product is big enough to earn it back.
LARGE_TILE_MACS = 1 << 23


def _fast_tile(macs: int, h: int, w: int) -> tuple[int, int]:
    """(TM rows, TNB blocks of 8 columns) per invocation of matmul_fast.comp."""
    if macs >= LARGE_TILE_MACS:
        return (16 if h >= 16 else 8 if h >= 8 else 4), (2 if w % 16 == 0 and w >= 32 else 1)
    return (8 if h >= 8 else 4), 1


def _lanes_w(lanes: int, row_tiles: int, col_blocks: int) -> int:
    """How many of a workgroup's `lanes` lie along W (a power of 2; the rest along H) for `row_tiles` x `col_blocks`
    register tiles: the split with the fewest spare lanes, the widest of equals. lavapipe runs a workgroup as one
    SIMD vector, so a spare lane costs a live one: a 1x1 convolution to 16 or 24 channels with all 8 lanes along W
    left 5 or 6 of them idle."""
    best, spare = lanes, None
    w = lanes
    while w >= 1:
        h = lanes // w
        waste = -(-col_blocks // w) * w * -(-row_tiles // h) * h - col_blocks * row_tiles
        if spare is None or waste < spare:
            best, spare = w, waste
        w //= 2
    return best


def matmul_fast(
    ctx: LowerCtx,
    a: Tensor,
    b: Tensor,
    shape: tuple[int, int, int, int],
    bias: Tensor | None = None,
    broadcast: bool = False,
) -> list[Kernel] | None:
    """matmul_fast.comp on a [N, H, C] x b [N, C, W] (shape = N, H, C, W; the tensors' own shapes may differ, e.g. a
    1x1 convolution's input and its weights laid out as [1, IC, OC]), then `bias` [W] or [1] added to each result
    (in fp32, as a convolution does) before ctx's epilogue; None when the shapes or types do not allow it.
    `broadcast`: b is one [C, W] matrix for every n."""
    n, h, c, w = shape
    if not _fast_applies(ctx, a.dtype, c, w):
        return None
    unit, kind = _FAST_UNIT[a.dtype]
    tm, tnb = _fast_tile(n * h * c * w, h, w)
    # one workgroup width per target, not per layer, so that layers share pipelines (one LLVM compile each on
    # lavapipe); on lavapipe its lanes split between W and H by the layer's shape (a push constant), other classes
    # keep them along W; lanes past W or H return at once
    lanes = max(1, min(64, ctx.target.subgroup_size))
    lavapipe = ctx.target.klass.name == "lavapipe"
    lanes_w = _lanes_w(lanes, -(-h // tm), w // (8 * tnb)) if lavapipe else lanes
    tiles_h, blocks_w = -(-h // (tm * (lanes // lanes_w))), -(-w // (8 * tnb * lanes_w))
    groups = n * tiles_h * blocks_w
    grid = ctx.groups(groups)
    # no spare workgroup, lane or row: the shader's guards compiled out
    exact = lavapipe and grid[0] * grid[1] * grid[2] == groups
    exact = exact and tiles_h * tm * (lanes // lanes_w) == h and blocks_w * 8 * tnb * lanes_w == w
    defines = {
        "UNIT": unit,
        kind: "1",
        "TM": str(tm),
        "TNB": str(tnb),
        "LANES": str(lanes),
        "O_T4": VEC4[glsl_storage(ctx.result.dtype)],
    }
    if kind == "UNIT_FP8":
        defines["DECODE8(v)"] = "LOAD_A(v)"
    if broadcast:
        defines["B_BROADCAST"] = "1"
    if exact:
        defines["EXACT"] = "1"
    bindings = {"A": a.name, "B": b.name, "O": ctx.result.name}
    fused = epilogue_defines(ctx, bindings, out_map=True)
    if fused is None:
        return None
    if bias is not None:
        if bias.dtype != DType.FP32:
            return None
        fused = with_bias(ctx, fused, bindings, bias)
    values = push.MATMUL_FAST_LANES.pack(groups, h, c, w, tiles_h, blocks_w, lanes_w)
    if kind != "UNIT_FP8":  # fp8's 8-byte unit stays a storage load
        for key, t in (("A", a), ("B", b)):
            ctx.texel(key, t.name, texels.words(16 if kind != "UNIT_FP32" else 32))
    return [ctx.kernel("tensor_ops/matmul_fast", bindings, {**defines, **fused}, values, groups=grid)]


@lowering("MATMUL")
def MATMUL(ctx: LowerCtx):
    a, b = ctx.inputs[:2]
    out = ctx.outputs[0]
    spec = _MATMUL.get(a.dtype)
    mixed = b.dtype != a.dtype
    if spec is None or (mixed and not {a.dtype, b.dtype} <= set(_FP8)) or out.dtype not in spec[0]:
        return None
    _, acc, acc4, partial_t = spec
    if acc == "int64_t" and not ctx.target.has("shaderInt64"):
        return None
    n, h, c = a.shape
    w = b.shape[2]
    if out.size == 0:
        return []
    if a.size >= 1 << 32 or b.size >= 1 << 32 or out.size >= 1 << 32:
        return None
    if ctx.target.family("MATMUL") == "coopmat":  # cooperative matrices (lower/matmul_coopmat.py), else on
        made = ctx.attempt(lambda: matmul_coopmat.lower(ctx))
        if made is not None:
            return made
    # B read through the TRANSPOSE before it (fuse.py): bound as that operator's input
    b_source = ctx.prologue[1].inputs[0] if ctx.prologue else b.name
    transposed = ctx.prologue is not None
    tiled = _tiled(ctx, ctx.tensor(b_source), (n, h, c, w), transposed, False)
    if tiled is not None:
        return tiled
    # (the fast kernel decodes A and B alike: a mixed fp8 pair takes matmul.comp, one decoder per operand)
    if a.dtype.is_float and MATMUL_FAST and not mixed and _fast_applies(ctx, a.dtype, c, w):
        if transposed:
            # the fast kernel wants B's rows contiguous: declining (the TRANSPOSE copies, then the fast kernel)
            # measured faster than strided loads in matmul.comp (3.45 vs 3.99 ms, the fp32 transformer block)
            return None
        fast = ctx.attempt(lambda: _matmul_fast(ctx))
        if fast is not None:
            return fast
    return _matmul_generic(ctx, a, b_source, (n, h, c, w), spec, transposed)


def _matmul_generic(
    ctx: LowerCtx,
    a: Tensor,
    b_source: str,
    shape: tuple[int, int, int, int],
    spec: tuple,
    transposed: bool,
    broadcast: bool = False,
) -> list[Kernel] | None:
    """matmul.comp (then matmul_sum.comp when C is split) on A [N, H, C] and B bound as `b_source`: [N, C, W], or
    [N, W, C] when `transposed`; `broadcast`: B has one matrix for every n (MATMUL_T's D == 1)."""
    n, h, c, w = shape
    b = ctx.tensor(b_source)
    out = ctx.outputs[0]
    _, acc, acc4, partial_t = spec
    defines = {
        "ACC": acc,
        "ACC4": acc4,
        "TM": str(MATMUL_TM),
        "MAC(acc, s, v)": "acc = fma(vec4(s), v, acc)" if acc == "float" else "acc += (s) * (v)",
    }
    bindings = {"A": a.name, "B": b_source}
    extra = {}
    if transposed:
        defines["B_TRANSPOSED"] = "1"
    if broadcast:
        defines["B_BROADCAST"] = "1"
    if a.dtype == DType.INT8:
        za, zb = _scalar(ctx, 2), _scalar(ctx, 3)
        if za is None or zb is None:
            defines["ZP_BUFFER"] = "1"
            extra = {"ZA": ctx.inputs[2].name, "ZB": ctx.inputs[3].name}
        else:
            defines.update(A_ZP=ctx.word(int(za)), B_ZP=ctx.word(int(zb)))
    else:
        defines.update(A_ZP="0", B_ZP="0")  # ERROR_IF: zero points only for int8
    if c % 4 == 0:
        defines.update(A_VEC="1", A_T4=VEC4[glsl_storage(a.dtype)])
    lanes = max(4, min(MATMUL_LANES, 1 << max(0, (-(-w // 4) - 1).bit_length())))
    defines["LANES"] = str(lanes)
    tiles_h, blocks_w = -(-h // MATMUL_TM), -(-w // (4 * lanes))
    steps = c // 4 + 4
    splits = 1 if steps <= ctx.target.loop_budget else -(-steps // ctx.target.loop_budget)
    k_len = -(-c // splits)
    k_len += -k_len % 4
    splits = -(-c // k_len) if c else 1
    groups = n * splits * tiles_h * blocks_w
    values = push.MATMUL.pack(groups, h, c, w, tiles_h, blocks_w, k_len, splits)
    if splits == 1:
        if w % 4 == 0 and not transposed:
            defines.update(B_VEC="1", B_T4=VEC4[glsl_storage(b.dtype)], O_T4=VEC4[glsl_storage(ctx.result.dtype)])
        bindings = {**bindings, "O": ctx.result.name, **extra}
        fused = epilogue_defines(ctx, bindings, out_map=True)
        if fused is None:
            return None
        return [ctx.kernel("tensor_ops/matmul", bindings, {**defines, **fused}, values, groups=ctx.groups(groups))]
    if ctx.epilogue:
        return None  # (the sum pass would have to apply it)
    part = ctx.temporary((n, splits, h, w), partial_t)
    if w % 4 == 0 and not transposed:
        defines.update(B_VEC="1", B_T4=VEC4[glsl_storage(b.dtype)], O_T4=acc4)
    defines["PARTIAL"] = "1"
    first = ctx.kernel(
        "tensor_ops/matmul",
        {**bindings, "O": part, **extra},
        defines,
        values,
        groups=ctx.groups(groups),
        writes=(part,),
    )
    total = n * h * w
    second = ctx.kernel(
        "tensor_ops/matmul_sum",
        {"P": part, "O": out.name},
        {},
        push.MATMUL_SUM.pack(total, h * w, splits),
        invocations=total,
    )
    return [first, second]


def _tiled(ctx: LowerCtx, b: Tensor, shape: tuple[int, int, int, int], transposed: bool, broadcast: bool):
    """The tiled family's kernel (lower/matmul_tiled.py) where the target's class takes it; None: the register
    kernels (int16, a C past the loop budget, an epilogue it cannot apply)."""
    if not matmul_tiled.applies(ctx):
        return None
    a = ctx.inputs[0]
    zero_points = (_scalar(ctx, 2), _scalar(ctx, 3)) if a.dtype == DType.INT8 else None
    return ctx.attempt(lambda: matmul_tiled.tiled_matmul(ctx, a, b, shape, transposed, broadcast, None, zero_points))


# ---- MATMUL_T ------------------------------------------------------------------------------------------------------

# every fp pair: fp32 sums
_FLOAT_ACC: tuple[tuple[DType, ...], str, str, DType] = (
    (DType.FP16, DType.BF16, DType.FP32),
    "float",
    "vec4",
    DType.FP32,
)


# B types each A type holds exactly: a constant B of one of them is converted to A's type at load time, so that a
# mixed pair (fp8 weights with bf16 / fp16 / fp32 activations) runs on the fast kernel with the same products
_HOLDS = {
    DType.FP32: (DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2),
    DType.BF16: (DType.FP8E4M3, DType.FP8E5M2),
    DType.FP16: (DType.FP8E4M3, DType.FP8E5M2),
}


def _matmul_t_fast(ctx: LowerCtx, broadcast: bool) -> list[Kernel] | None:
    """matmul_fast.comp on B^T: a constant B is transposed (and converted to A's type, see _HOLDS) at load time, a
    run-time one of A's type copied transposed into a temporary (a copy then the fast kernel beats matmul.comp's
    strided loads, as for MATMUL after a TRANSPOSE)."""
    a, b = ctx.inputs[:2]
    n, h, c = a.shape
    d, w, _ = b.shape
    data = ctx.constant(1)
    if data is not None and (b.dtype == a.dtype or b.dtype in _HOLDS.get(a.dtype, ())):
        values = np.asarray(data).reshape(d, w, c).transpose(0, 2, 1).astype(a.dtype.numpy)
        bt = ctx.add_constant(np.ascontiguousarray(values), a.dtype)
        copy = []
    elif b.dtype == a.dtype:
        bt = ctx.temporary((d, c, w), b.dtype)
        k = strided_copy(ctx, b, ctx.tensor(bt), (d, c, w), (w * c, 1, c))
        if k is None:
            return None
        copy = [dataclasses.replace(k, reads=(ctx.q(b.name),), writes=(bt,))]
    else:
        return None
    fast = matmul_fast(ctx, a, ctx.tensor(bt), (n, h, c, w), broadcast=broadcast)
    return None if fast is None else copy + fast


@lowering("MATMUL_T")
def MATMUL_T(ctx: LowerCtx):
    a, b = ctx.inputs[:2]
    out = ctx.outputs[0]
    # mixed fp precision: each side converted to fp32 on load
    spec = _FLOAT_ACC if a.dtype.is_float and b.dtype.is_float else _MATMUL.get(a.dtype)
    if spec is None or (spec is not _FLOAT_ACC and b.dtype != a.dtype) or out.dtype not in spec[0]:
        return None
    if spec[1] == "int64_t" and not ctx.target.has("shaderInt64"):
        return None
    n, h, c = a.shape
    d, w, _ = b.shape
    if out.size == 0:
        return []
    if a.size >= 1 << 32 or b.size >= 1 << 32 or out.size >= 1 << 32:
        return None
    broadcast = d == 1 and n > 1
    tiled = _tiled(ctx, b, (n, h, c, w), True, broadcast)
    if tiled is not None:
        return tiled
    if a.dtype.is_float and MATMUL_FAST and _fast_applies(ctx, a.dtype, c, w):
        fast = ctx.attempt(lambda: _matmul_t_fast(ctx, broadcast))
        if fast is not None:
            return fast
    return _matmul_generic(ctx, a, b.name, (n, h, c, w), spec, transposed=True, broadcast=broadcast)


# ---- pooling -------------------------------------------------------------------------------------------------------

_POOL_INT = {DType.INT8: (-128, 127), DType.INT16: (-32768, 32767)}
_POOL_FLOAT = (DType.FP16, DType.BF16, DType.FP32, DType.FP8E4M3, DType.FP8E5M2)


Window = tuple[list[int], list[int], list[int]]  # kernel, stride, pad


def _attr_window(ctx: LowerCtx) -> Window:
    return tuple([int(v) for v in ctx.attr(name)] for name in ("kernel", "stride", "pad"))  # type: ignore[return-value]


def _input_window(ctx: LowerCtx, first: int) -> Window | None:
    """The _ADAPTIVE pools' kernel, stride and pad: shape_t inputs first .. first + 2 (CONST_SHAPE values)."""
    values = [ctx.constant(first + i) for i in range(3)]
    if any(v is None for v in values):
        return None
    return tuple([int(x) for x in v.reshape(-1)] for v in values)  # type: ignore[return-value,union-attr]


def _pool(
    ctx: LowerCtx, window: Window | None, defines: dict[str, str], extra: dict[str, str] | None = None
) -> list[Kernel] | None:
    """pool.comp over the window `window` (every output position clips it to the input: padding never counts)."""
    if window is None:
        return None
    x, out = ctx.inputs[0], ctx.outputs[0]
    n, ih, iw, c = x.shape
    _, oh, ow, _ = out.shape
    (kh, kw), (sy, sx), (pt, _, pl, _) = window
    if out.size == 0:
        return []
    if min(kh, ih) * min(kw, iw) + min(kh, ih) > ctx.target.loop_budget or x.size >= 1 << 32:
        return None  # a window too large for one invocation's loop budget
    vec = c % 4 == 0
    bindings = {"A": x.name, "O": ctx.result.name, **(extra or {})}
    fused = epilogue_defines(ctx, bindings)
    if fused is None:
        return None
    defines = {**defines, **fused}
    if vec:
        defines.update(VEC4="1", A_T4=VEC4[glsl_storage(x.dtype)], O_T4=VEC4[glsl_storage(ctx.result.dtype)])
    total = out.size // (4 if vec else 1)
    values = push.POOL.pack(total, ih, iw, c, oh, ow, kh, kw, sy, sx, pt, pl)
    return [ctx.kernel("tensor_ops/pool", bindings, defines, values, invocations=total)]


@lowering("MAX_POOL2D")
def MAX_POOL2D(ctx: LowerCtx):
    return _max_pool2d(ctx, _attr_window(ctx))


@lowering("MAX_POOL2D_ADAPTIVE")
def MAX_POOL2D_ADAPTIVE(ctx: LowerCtx):
    return _max_pool2d(ctx, _input_window(ctx, 1))


def _max_pool2d(ctx: LowerCtx, window: Window | None):
    t = ctx.inputs[0].dtype
    if ctx.outputs[0].dtype != t:
        return None
    if t in _POOL_INT:
        return _pool(ctx, window, {"MAX_INT": "1"})
    if t not in _POOL_FLOAT:
        return None
    defines = {"MAX_FLOAT": "1"}
    if ctx.attr("nan_mode") == NanPropagationMode.IGNORE:
        defines["IGNORE"] = "1"
    return _pool(ctx, window, defines)


@lowering("AVG_POOL2D")
def AVG_POOL2D(ctx: LowerCtx):
    return _avg_pool2d(ctx, _attr_window(ctx))


@lowering("AVG_POOL2D_ADAPTIVE")
def AVG_POOL2D_ADAPTIVE(ctx: LowerCtx):
    return _avg_pool2d(ctx, _input_window(ctx, 3))


def _avg_pool2d(ctx: LowerCtx, window: Window | None):
    t = ctx.inputs[0].dtype
    if ctx.outputs[0].dtype != t:
        return None
    if t in _POOL_FLOAT:
        return _pool(ctx, window, {"AVG_FLOAT": "1"})  # fp32 sums for acc_type fp16 / fp32 alike
    if t not in _POOL_INT or not ctx.target.has("shaderInt64"):
        return None
    lo, hi = _POOL_INT[t]
    defines = {"AVG_INT": "1", "LO": str(lo), "HI": str(hi)}
    zi, zo = _scalar(ctx, 1), _scalar(ctx, 2)
    if zi is None or zo is None:
        defines["ZP_BUFFER"] = "1"
        return _pool(ctx, window, defines, {"ZI": ctx.inputs[1].name, "ZO": ctx.inputs[2].name})
    defines.update(IN_ZP=str(int(zi)), OUT_ZP=str(int(zo)))
    return _pool(ctx, window, defines)


# ---- FFT -----------------------------------------------------------------------------------------------------------


def _fft(ctx: LowerCtx, real: bool) -> list[Kernel] | None:
    """Radix-2 Stockham passes (fft.comp): log2(W) along W, then log2(H) along H, ping-ponging between two complex
    temporaries; the first pass reads the input(s), the last writes both outputs. Twiddles from a table computed
    in fp64 (fft_twiddle.comp)."""
    re = ctx.inputs[0]
    out_re, out_im = ctx.outputs
    if re.dtype != DType.FP32 or out_re.dtype != DType.FP32 or out_im.dtype != DType.FP32:
        return None
    if not real and ctx.inputs[1].dtype != DType.FP32:
        return None
    if not ctx.target.has("shaderFloat64"):
        return None
    n, h, w = re.shape
    if h & (h - 1) or w & (w - 1) or re.size * 2 >= 1 << 32:
        return None
    if out_re.size == 0:
        return []
    passes = [(w, 1, 1 << s) for s in range(w.bit_length() - 1)] + [(h, w, 1 << s) for s in range(h.bit_length() - 1)]
    inputs = {"RE": re.name} if real else {"RE": re.name, "IM": ctx.inputs[1].name}
    outputs = {"OR": out_re.name, "OI": out_im.name}
    in_defines = {"IN_SPLIT": "1", **({"IN_REAL": "1"} if real else {})}
    out_defines = {"OUT_SPLIT": "1", **({"RFFT_OUT": "1"} if real else {})}
    inverse = {} if real or not ctx.attr("inverse", False) else {"INVERSE": "1"}

    def numbered(bindings: dict[str, str]) -> dict[str, str]:
        return {f"B_{name}": str(i) for i, name in enumerate(bindings)}

    if not passes:  # H = W = 1: the transform is the identity
        bindings = {**inputs, **outputs}
        defines = {"IDENTITY": "1", **in_defines, **out_defines, **numbered(bindings)}
        return [
            ctx.kernel(
                "tensor_ops/fft", bindings, defines, push.FFT.pack(re.size, 1, 1, 1, 1, h, w), invocations=re.size
            )
        ]
    tw_len = max(h, w)
    table = ctx.temporary((tw_len // 2, 2), DType.FP32)
    kernels = [
        ctx.kernel(
            "tensor_ops/fft_twiddle",
            {"TW": table},
            {},
            push.FFT_TWIDDLE.pack(tw_len // 2, tw_len),
            invocations=tw_len // 2,
            writes=(table,),
        )
    ]
    temps = [ctx.temporary((n, h, w, 2), DType.FP32) for _ in range(min(2, len(passes) - 1))]
    butterflies = re.size // 2
    for i, (length, stride, ns) in enumerate(passes):
        last = i == len(passes) - 1
        src = inputs if i == 0 else {"X": temps[(i - 1) % 2]}
        dst = outputs if last else {"Y": temps[i % 2]}
        bindings = {**src, **dst, "TW": table}
        defines = {**(in_defines if i == 0 else {}), **(out_defines if last else {}), **inverse, **numbered(bindings)}
        values = push.FFT.pack(butterflies, length, stride, ns, tw_len // (2 * ns), h, w)
        kernels.append(
            ctx.kernel(
                "tensor_ops/fft",
                bindings,
                defines,
                values,
                invocations=butterflies,
                writes=None if last else (temps[i % 2],),
            )
        )
    return kernels


@lowering("FFT2D")
def FFT2D(ctx: LowerCtx):
    return _fft(ctx, real=False)


@lowering("RFFT2D")
def RFFT2D(ctx: LowerCtx):
    return _fft(ctx, real=True)


# ---- TOSA 1.1 block-scaled (MX) ----------------------------------------------------------------------------------


@lowering("MATMUL_T_BLOCK_SCALED")
def MATMUL_T_BLOCK_SCALED(ctx: LowerCtx):
    """One invocation an output (shaders/tensor_ops/matmul_t_block_scaled.comp); MX data stays one code a byte."""
    a, a_scale, b, b_scale = ctx.inputs
    out = ctx.outputs[0]
    n, h, c = a.shape
    d, w, _ = b.shape
    if out.size == 0:
        return []
    if c + c // int(ctx.attr("block_size")) > ctx.target.loop_budget:
        return None  # one invocation loops over all of C (and its blocks): past the budget the driver stops it
    return [
        ctx.kernel(
            "tensor_ops/matmul_t_block_scaled",
            {"A": a.name, "S": a_scale.name, "B": b.name, "T": b_scale.name, "O": out.name},
            {"BLOCK": str(int(ctx.attr("block_size")))},
            push.MATMUL_T_BLOCK_SCALED.pack(out.size, h, w, c, d),
            invocations=out.size,
        )
    ]

"""Convolutions (spec 2.3) on Vulkan: CONV2D, CONV3D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D.

Kernels in shaders/convolution/ are specialised per operator so that index arithmetic folds and the per-tile loops
unroll: the geometry (shapes, pads, strides, dilations), the register tile, the channel-block packing and a scalar
bias are specialization constants (one compiled module per types, each layer's copy specialized:
tosa_vk/vulkan/shaders.py), except depthwise.comp's shapes and pads, which are push constants (no loop depends on
them); constant zero points are push-constant words (LowerCtx.word). Layers that differ only in push constants share
a pipeline. Each invocation computes a register tile of output pixels x output channels; the channel block comes from
gl_WorkGroupID.y (or, packed, from the x index).
"""

from __future__ import annotations

import numpy as np

from ...abi.shader_abi import WORKGROUP
from ...ir.dtype import DType
from . import push, texels
from .context import LowerCtx, lowering, spill
from .conv_common import (
    STORE_LOOP,
    common_defines,
    geometry,
    in_place_slice,
    int_attrs,
    permuted_source,
    skip_padded,
)
from .fused.epilogue import epilogue_defines
from .push import Push


def _bytes4(decode: str) -> str:
    """The 4 one-byte codes of the word g, each decoded by the GLSL function `decode`, as a vec4."""
    return "vec4(" + ", ".join(f"{decode}(uint8_t((g) >> {8 * k}))" for k in range(4)) + ")"


# element type -> (bytes, GLSL 4-vector of the 4 elements packed in the words g: a uvec4 / uvec2 / uint)
_UNPACK4 = {
    DType.FP32: (4, "uintBitsToFloat(g)"),
    DType.FP16: (2, "vec4(unpackHalf2x16((g).x), unpackHalf2x16((g).y))"),
    DType.BF16: (2, "uintBitsToFloat(uvec4((g).x << 16, (g).x & 0xffff0000u, (g).y << 16, (g).y & 0xffff0000u))"),
    DType.FP8E4M3: (
        1,
        "vec4(fp8e4m3_to_f32(uint8_t(g)), fp8e4m3_to_f32(uint8_t((g) >> 8)), "
        "fp8e4m3_to_f32(uint8_t((g) >> 16)), fp8e4m3_to_f32(uint8_t((g) >> 24)))",
    ),
    DType.FP8E5M2: (
        1,
        "vec4(unpackHalf2x16(((g) << 8) & 0xff00u).x, unpackHalf2x16((g) & 0xff00u).x, "
        "unpackHalf2x16(((g) >> 8) & 0xff00u).x, unpackHalf2x16(((g) >> 16) & 0xff00u).x)",
    ),
    DType.INT8: (1, "((ivec4(g) << ivec4(24, 16, 8, 0)) >> 24)"),
    # TOSA 1.1 block-scaled elements (their scales applied by the kernel), one code a byte
    DType.FP4E2M1: (1, _bytes4("fp4e2m1_to_f32")),
    DType.FP6E2M3: (1, _bytes4("fp6e2m3_to_f32")),
    DType.FP6E3M2: (1, _bytes4("fp6e3m2_to_f32")),
    DType.MXINT8: (1, "(vec4((ivec4(g) << ivec4(24, 16, 8, 0)) >> 24) / 64.0)"),
    DType.INT4: (1, "((ivec4(g) << ivec4(24, 16, 8, 0)) >> 24)"),
    DType.INT16: (2, "((ivec4((g).xxyy) << ivec4(16, 0, 16, 0)) >> 16)"),
}
_GROUP = {  # (words per chunk, words per group of 4 elements) -> GLSL words of group q of chunk t
    (1, 1): "(t)",
    (2, 2): "(t)",
    (4, 4): "(t)",
    (2, 1): "(t)[q]",
    (4, 1): "(t)[q]",
    (4, 2): "uvec2((t)[2 * (q)], (t)[2 * (q) + 1])",
    (8, 4): "uvec4(unpackUint2x32((t)[2 * (q)]), unpackUint2x32((t)[2 * (q) + 1]))",
    (8, 2): "unpackUint2x32((t)[q])",
    (8, 1): "uint((t)[(q) / 2] >> (32 * ((q) % 2)))",
}


def chunk_defines(k: int, types: dict[str, DType], limit: int = 16, max_bytes: int = 16) -> dict[str, str]:
    """VE (elements per chunk of a reduction axis of length k) and, for VE > 1, the word-view defines of each
    binding in `types` (name -> element type): the widest chunk of 4-element groups (at most `limit` elements
    and `max_bytes` bytes of each tensor) that divides k; VE = 1 reads single elements."""
    for ve in (32, 16, 8, 4):
        if ve > limit or k % ve or any(_UNPACK4[t][0] * ve > max_bytes for t in types.values()):
            continue
        defines = {"VE": str(ve)}
        for name, t in types.items():
            size, expr = _UNPACK4[t]
            words = size * ve // 4
            defines[f"{name}WORDS"] = str(words)
            defines[f"GROUP_{name}(t, q)"] = _GROUP[(words, size)]
            defines[f"UNPACK4_{name}(g)"] = expr
        return defines
    return {"VE": "1"}


def _grid(ctx: LowerCtx, tiles: int, blocks: int) -> tuple[tuple[int, int, int], int]:
    """(the grid, PACKED_BLOCKS): pixel tiles along x (spilling into z), channel blocks along y; a layer with fewer
    tiles than a workgroup has invocations packs its blocks into x (PACKED_BLOCKS, the number of blocks; 0: not
    packed): otherwise each of its workgroups would be mostly spare invocations."""
    if tiles < WORKGROUP and blocks > 1:
        x, z, _ = spill(-(-(tiles * blocks) // WORKGROUP), ctx.target.max_workgroup_count[0])
        return (x, 1, z), blocks
    x, z, _ = spill(-(-tiles // WORKGROUP), ctx.target.max_workgroup_count[0])
    return (x, blocks, z), 0


def _pixels(p: int, rows: int, width: int, blocks: int) -> int:
    """Shrinks the pixel tile p (a power of 2, at least 4) to the output width and until there are enough
    invocations to keep every core busy."""
    while p > 4 and (p >= 2 * width or rows * -(-width // p) * blocks < 512):
        p //= 2
    return p


def _kernel(
    ctx: LowerCtx,
    shader: str,
    defines: dict,
    extra: dict,
    groups,
    outer: int = 0,
    k: int = 0,
    ve: int = 1,
    source: str | None = None,
    out_map: bool = False,
    values: Push | None = None,
    specs: dict[str, int] | None = None,
) -> list | None:
    """The dispatch, or passes over ranges of the k input channels (VE at a time) when `outer` loop iterations
    around each chunk would exceed the target's loop budget: raw accumulators go through a temporary in the output's
    layout. `source`: the tensor bound as the input (a fused TRANSPOSE's input), if not the operator's; `out_map`:
    the shader stores through an epilogue's layout tail (conv.comp does); `values`: its push constants (the same for
    every pass); `specs`: its specialization constants (likewise)."""
    x, w, bias = ctx.inputs[:3]
    out = ctx.outputs[0]
    bindings = {"X": source or x.name, "W": w.name, "B": bias.name, "O": ctx.result.name, **extra}
    fused = epilogue_defines(ctx, bindings, out_map)
    if fused is None:
        return None
    defines = {key: str(v) for key, v in {**defines, **fused}.items()}
    chunks = max(1, k // ve)
    if int(defines["VE"]) >= 4:  # chunked loads: through texel buffers where the target has them (lower/texels.py)
        for b in ("X", "W"):
            ctx.texel(b, bindings[b], texels.words(4 * int(defines[f"{b}WORDS"])))
    ctx.texel("B", bias.name, texels.element(bias.dtype))
    iterations = outer * (chunks + 1) + STORE_LOOP  # + the epilogue's loop over the tile
    if iterations <= ctx.target.loop_budget:
        return [ctx.kernel(shader, bindings, defines, values, groups=groups, specs=specs)]
    per = max(1, (ctx.target.loop_budget - STORE_LOOP) // max(outer, 1) - 1)  # chunks per pass
    acc = DType.INT48 if out.dtype == DType.INT48 else DType.INT32 if not out.dtype.is_float else DType.FP32
    temp = ctx.temporary(out.shape, acc)
    bindings["P"] = temp
    defines["PARTIAL_AT"] = str(len(bindings) - 1)
    kernels = []
    for begin in range(0, chunks, per):
        end = min(chunks, begin + per)
        d = {**defines, "IC_BEGIN": str(begin * ve), "IC_END": str(end * ve)}
        if begin:
            d["PARTIAL_IN"] = "1"
        if end < chunks:
            d["PARTIAL_OUT"] = "1"
        writes = (temp,) if end < chunks else None
        kernels.append(ctx.kernel(shader, bindings, d, values, groups=groups, writes=writes, specs=specs))
    return kernels


def _tiled(ctx: LowerCtx, operator: str, nd: int = 2):
    """The tiled family's kernels (lower/conv_tiled.py) where the target's class names it for `operator` (coopmat
    too: no cooperative-matrix convolution yet, tiled is its fallback), else None: the register kernels."""
    if ctx.target.family(operator) not in ("tiled", "coopmat"):
        return None
    from .families import conv_tiled

    if operator == "DEPTHWISE_CONV2D":
        return ctx.attempt(lambda: conv_tiled.depthwise(ctx))
    return ctx.attempt(lambda: conv_tiled.conv(ctx, nd, operator == "TRANSPOSE_CONV2D"))


def _conv(ctx: LowerCtx, nd: int):
    tiled = _tiled(ctx, "CONV2D", nd)
    if tiled is not None:
        return tiled
    common = common_defines(ctx)
    if common is None:
        return None
    defines, extra, specs = common
    x, w = ctx.inputs[:2]
    pad, stride, dilation, (xs, ws, os_) = geometry(ctx, nd)
    n, id_, ih, iw, ic = xs
    oc, kd, kh, kw, _ = ws
    _, od, oh, ow, _ = os_
    if (kd, kh, kw) == (1, 1, 1) and set(stride) == {1} and not any(pad):
        # a 1x1 convolution is a matrix product over all pixels, contiguous in NHWC: one long row to tile (a linear
        # layer written as [1, rows, 1, C] would otherwise get one useful pixel per 4-pixel tile)
        pixels = n * id_ * ih * iw
        n, id_, ih, iw, od, oh, ow = 1, 1, 1, pixels, 1, 1, pixels
        if not ctx.prologue and ic >= MATMUL_MIN_IC:
            gemm = _as_matmul(ctx, pixels, ic, oc)
            if gemm is not None:
                return gemm
    # chunks of 8 input channels, fp32 ones in 32-byte loads (lavapipe: ~15% faster than 16)
    defines.update(chunk_defines(ic, {"X": x.dtype, "W": w.dtype}, 8, 32 if ctx.target.has("shaderInt64") else 16))
    ve = int(defines["VE"])
    # 4 output channels per vector-matrix product (fp32 arithmetic; int8 exact per chunk row: |sum| < 2^24)
    floating = "INTEGER" not in defines
    mat = ve >= 4 and (floating or (x.dtype == DType.INT8 and kw * ve * 255 * 255 < 2**24))
    if mat:
        defines["MAT"] = "1"
        tc = 8 if oc > 4 else 4
        tp = 16 if kw <= 3 else 8 if kw <= 7 else 4
    else:
        tc, tp = min(4, oc), 8
    tp = _pixels(tp, n * od * oh, ow, -(-oc // tc))
    if mat and oc % 4 == 0:
        defines["OC4"] = "1"  # 4-channel stores
    # the layer's geometry and tile as specialization constants: layers of the same types share one module
    specs.update({"TILE_P": tp, "TILE_C": tc})
    specs.update({"N": n, "ID": id_, "IH": ih, "IW": iw, "IC": ic, "OC": oc, "KD": kd, "KH": kh, "KW": kw, "OD": od})
    specs.update({"OH": oh, "OW": ow, "SD": stride[0], "SH": stride[1], "SW": stride[2], "DD": dilation[0]})
    specs.update({"DH": dilation[1], "DW": dilation[2], "PD": pad[0], "PT": pad[2], "PL": pad[4]})
    if skip_padded(ctx, any(pad)):
        defines["SKIP_PADDED"] = "1"
    source = None
    if ctx.prologue and ctx.prologue[1].op == "SLICE":
        sliced = in_place_slice(ctx, nd)
        if sliced is None:
            return None
        source, specs["IH"], specs["IW"] = sliced
    elif ctx.prologue:  # a TRANSPOSE whose result only this reads: its input, read through the permutation
        if ve != 1 or nd != 2:
            return None  # (chunked loads want channels contiguous)
        source, defines["X_AT(i)"] = permuted_source(ctx.block.tensors[ctx.prologue[1].inputs[0]], x, ctx.prologue[1])
    grid, specs["PACKED_BLOCKS"] = _grid(ctx, n * od * oh * -(-ow // tp), -(-oc // tc))
    return _kernel(ctx, "convolution/conv", defines, extra, grid, kd * kh, ic, ve, source, out_map=True, specs=specs)


# 1x1 fp32 convolutions with at least this many input channels (and a multiple of 8) run as matmul_fast.comp with
# the weights laid out [IC, OC] at load: measured on lavapipe, 6 layers of 256 pixels 96 -> 96 channels 15.2 -> 6.5
# ms, 64 pixels 256 -> 256 22.9 -> 11.0 ms. With 16 and 24 channels, since matmul_fast's 8 x 8 tiles for small
# products, whole models run as fast either way (mobilenetv2 11.4 / 11.7 ms, lstm 1.27 / 0.99 ms, medians of 40
# interleaved) and share its pipelines instead of compiling one per layer (mobilenetv2's first run 6.6 -> 3.8 s).
MATMUL_MIN_IC = 8


def _as_matmul(ctx: LowerCtx, pixels: int, ic: int, oc: int) -> list | None:
    """A 1x1 convolution with constant fp32 weights as a matrix product [pixels, IC] x [IC, OC] plus bias."""
    from .families import matmul_tiled
    from .tensor_ops import matmul_fast

    x, w, bias = ctx.inputs[:3]
    weights = ctx.constant(1)
    if weights is None or x.dtype != DType.FP32 or w.dtype != DType.FP32 or skip_padded(ctx, True):
        return None
    if matmul_tiled.applies(ctx):  # the class's shared-memory tiles: the [OC, IC] weights read in place as B^T
        shape = (1, pixels, ic, oc)
        tiled = ctx.attempt(lambda: matmul_tiled.tiled_matmul(ctx, x, w, shape, transposed=True, bias=bias))
        if tiled is not None:
            return tiled
    layout = np.ascontiguousarray(np.asarray(weights, np.float32).reshape(oc, ic).T).reshape(1, ic, oc)
    return ctx.attempt(
        lambda: matmul_fast(ctx, x, ctx.tensor(ctx.add_constant(layout, DType.FP32)), (1, pixels, ic, oc), bias)
    )


@lowering("CONV2D")
def CONV2D(ctx: LowerCtx):
    return _conv(ctx, 2)


@lowering("CONV3D")
def CONV3D(ctx: LowerCtx):
    return _conv(ctx, 3)


@lowering("DEPTHWISE_CONV2D")
def DEPTHWISE_CONV2D(ctx: LowerCtx):
    tiled = _tiled(ctx, "DEPTHWISE_CONV2D")
    if tiled is not None:
        return tiled
    common = common_defines(ctx)
    if common is None:
        return None
    defines, extra, specs = common
    x, w = ctx.inputs[:2]
    out = ctx.outputs[0]
    pad = int_attrs(ctx, "pad", 0, 4)
    stride = int_attrs(ctx, "stride", 1, 2)
    dilation = int_attrs(ctx, "dilation", 1, 2)
    n, ih, iw, c = x.shape
    kh, kw, _, m = w.shape
    _, oh, ow, och = out.shape
    defines.update(chunk_defines(c, {"X": x.dtype, "W": w.dtype}, 8) if m == 1 else {"VE": "1"})
    ve = int(defines["VE"])
    tp = _pixels(16 if kw <= 3 else 8, n * oh, ow, och // ve)
    # specialization constants: what shapes the tile and unrolls; shapes and pads are push constants (depthwise.comp)
    specs.update({"M": m, "KH": kh, "KW": kw, "SH": stride[0], "SW": stride[1], "DH": dilation[0]})
    specs.update({"DW": dilation[1], "TILE_P": tp})
    if skip_padded(ctx, any(pad)):
        defines["SKIP_PADDED"] = "1"
    grid, packed = _grid(ctx, n * oh * -(-ow // tp), och // ve)
    values = push.DEPTHWISE.pack(n, ih, iw, c, oh, ow, pad[0], pad[2], packed)
    return _kernel(ctx, "convolution/depthwise", defines, extra, grid, values=values, specs=specs)


@lowering("TRANSPOSE_CONV2D")
def TRANSPOSE_CONV2D(ctx: LowerCtx):
    tiled = _tiled(ctx, "TRANSPOSE_CONV2D")
    if tiled is not None:
        return tiled
    common = common_defines(ctx)
    if common is None:
        return None
    defines, extra, specs = common
    x, w = ctx.inputs[:2]
    out = ctx.outputs[0]
    top, _, left, _ = int_attrs(ctx, "out_pad", 0, 4)
    sy, sx = int_attrs(ctx, "stride", 1, 2)
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    _, oh, ow, _ = out.shape
    defines.update(chunk_defines(ic, {"X": x.dtype, "W": w.dtype}, 8))
    cols = -(-ow // sx)
    tc = min(4, oc)
    tp = _pixels(8, n * oh * sx, cols, -(-oc // tc))
    # the layer's geometry and tile as specialization constants (as conv.comp)
    specs.update({"N": n, "IH": ih, "IW": iw, "IC": ic, "OC": oc, "KH": kh, "KW": kw, "OH": oh, "OW": ow})
    specs.update({"SY": sy, "SX": sx, "PT": top, "PL": left, "TILE_P": tp, "TILE_C": tc})
    if skip_padded(ctx, True):  # output positions no input reaches are "padding" too
        defines["SKIP_PADDED"] = "1"
    grid, specs["PACKED_BLOCKS"] = _grid(ctx, n * oh * sx * -(-cols // tp), -(-oc // tc))
    outer = -(-kh // sy) * -(-kw // sx)
    ve = int(defines["VE"])
    return _kernel(ctx, "convolution/transpose_conv", defines, extra, grid, outer, ic, ve, specs=specs)


# ---- TOSA 1.1 block-scaled (MX) ----------------------------------------------------------------------------------


@lowering("CONV2D_BLOCK_SCALED")
def CONV2D_BLOCK_SCALED(ctx: LowerCtx):
    """One invocation an output (shaders/convolution/conv2d_block_scaled.comp); MX data stays one code a byte."""
    x, x_scale, w, w_scale, bias = ctx.inputs[:5]
    out = ctx.outputs[0]
    geometry = [ctx.constant(i) for i in (5, 6, 7)]  # pad, stride, dilation: shape_t constants
    if any(g is None for g in geometry) or out.size == 0:
        return None if out.size else []
    (pt, _, pl, _), (sy, sx), (dy, dx) = ([int(v) for v in np.asarray(g).reshape(-1)] for g in geometry)
    _, ih, iw, ic = x.shape
    _, oh, ow, oc = out.shape
    kh, kw = w.shape[1:3]
    values = push.CONV2D_BLOCK_SCALED.pack(out.size, ih, iw, ic, oh, ow, oc, kh, kw, bias.size, pt, pl, sy, sx, dy, dx)
    return [
        ctx.kernel(
            "convolution/conv2d_block_scaled",
            {"A": x.name, "S": x_scale.name, "W": w.name, "T": w_scale.name, "C": bias.name, "O": out.name},
            {"BLOCK": str(int(ctx.attr("block_size")))},
            values,
            invocations=out.size,
        )
    ]

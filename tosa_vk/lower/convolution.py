"""Convolutions (spec 2.3) on Vulkan: CONV2D, CONV3D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D.

Kernels in shaders/convolution/ are specialised per operator: the geometry (shapes, pads, strides, dilations,
constant zero points) is compiled in, so index arithmetic folds and the per-tile loops unroll. Each invocation
computes a register tile of output pixels x output channels; the channel block comes from gl_WorkGroupID.y.
"""
from __future__ import annotations

import os

import numpy as np

from ..ir.dtype import DType
from . import LowerCtx, lowering

WORKGROUP = 64
MAX_GROUPS = 65535
# in_t -> (allowed (weight_t, out_t) pairs); acc_type is the attribute (fp16 may accumulate in fp32: the kernels
# always sum floating-point products in fp32, which the dot-product compliance bound allows for either).
_TYPES = {
    DType.INT8: ((DType.INT8, DType.INT32), (DType.INT4, DType.INT32)),
    DType.INT16: ((DType.INT8, DType.INT48),),
    DType.FP16: ((DType.FP16, DType.FP16),),
    DType.BF16: ((DType.BF16, DType.BF16),),
    DType.FP32: ((DType.FP32, DType.FP32),),
    DType.FP8E4M3: ((DType.FP8E4M3, DType.FP16),),
    DType.FP8E5M2: ((DType.FP8E5M2, DType.FP16),),
}


# element type -> (bytes, GLSL 4-vector of the 4 elements packed in the words g: a uvec4 / uvec2 / uint)
_UNPACK4 = {
    DType.FP32: (4, "uintBitsToFloat(g)"),
    DType.FP16: (2, "vec4(unpackHalf2x16((g).x), unpackHalf2x16((g).y))"),
    DType.BF16: (2, "uintBitsToFloat(uvec4((g).x << 16, (g).x & 0xffff0000u, (g).y << 16, (g).y & 0xffff0000u))"),
    DType.FP8E4M3: (1, "vec4(fp8e4m3_to_f32(uint8_t(g)), fp8e4m3_to_f32(uint8_t((g) >> 8)), "
                       "fp8e4m3_to_f32(uint8_t((g) >> 16)), fp8e4m3_to_f32(uint8_t((g) >> 24)))"),
    DType.FP8E5M2: (1, "vec4(unpackHalf2x16(((g) << 8) & 0xff00u).x, unpackHalf2x16((g) & 0xff00u).x, "
                       "unpackHalf2x16(((g) >> 8) & 0xff00u).x, unpackHalf2x16(((g) >> 16) & 0xff00u).x)"),
    DType.INT8: (1, "((ivec4(g) << ivec4(24, 16, 8, 0)) >> 24)"),
    DType.INT4: (1, "((ivec4(g) << ivec4(24, 16, 8, 0)) >> 24)"),
    DType.INT16: (2, "((ivec4((g).xxyy) << ivec4(16, 0, 16, 0)) >> 16)"),
}
_GROUP = {  # (words per chunk, words per group of 4 elements) -> GLSL words of group q of chunk t
    (1, 1): "(t)", (2, 2): "(t)", (4, 4): "(t)", (2, 1): "(t)[q]", (4, 1): "(t)[q]",
    (4, 2): "uvec2((t)[2 * (q)], (t)[2 * (q) + 1])",
}


def chunk_defines(k: int, types: dict[str, DType]) -> dict[str, str]:
    """VE (elements per chunk of a reduction axis of length k) and, for VE > 1, the word-view defines of each
    binding in `types` (name -> element type): the widest chunk of 4-element groups (at most 16 bytes of each
    tensor) that divides k; VE = 1 reads single elements."""
    limit = int(os.environ.get("TOSA_VK_CONV_VE", 16))
    for ve in (16, 8, 4):
        if ve > limit or k % ve or any(_UNPACK4[t][0] * ve > 16 for t in types.values()):
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


def _ints(ctx: LowerCtx, name: str, default: int, n: int) -> list[int]:
    v = ctx.attr(name)
    return [default] * n if v is None else [int(a) for a in np.asarray(v).reshape(-1)]


def _common(ctx: LowerCtx) -> tuple[dict[str, str], dict[str, str]] | None:
    """Type defines and the zero-point / bias bindings shared by every convolution kernel, or None for an
    unsupported type combination."""
    x, w, bias = ctx.inputs[:3]
    out = ctx.outputs[0]
    if (w.dtype, out.dtype) not in _TYPES.get(x.dtype, ()) or bias.dtype != out.dtype:
        return None
    integer = not x.dtype.is_float
    if out.dtype == DType.INT48 and not ctx.features.get("shaderInt64", False):
        return None
    defines = {"ACC_T": "int64_t" if out.dtype == DType.INT48 else "int" if integer else "float"}
    if bias.size == 1:
        defines["BIAS_SCALAR"] = "1"
    extra: dict[str, str] = {}
    if integer:
        defines["INTEGER"] = "1"
        izp, wzp = ctx.constant(3), ctx.constant(4)
        if izp is not None and wzp is not None:
            defines["IZP"] = str(int(np.asarray(izp).reshape(-1)[0]))
            defines["WZP"] = str(int(np.asarray(wzp).reshape(-1)[0]))
        else:
            defines["ZP_BUFFERS"] = "1"
            extra = {"IZ": ctx.inputs[3].name, "WZ": ctx.inputs[4].name}
    return defines, extra


def _skip_padded(ctx: LowerCtx, padded: bool) -> bool:
    """Floating point with padding needs padded taps skipped unless the weights are known finite."""
    if not padded or not ctx.inputs[0].dtype.is_float:
        return False
    wv = ctx.constant(1)
    if wv is None:
        return True
    w = np.asarray(wv)
    return not np.isfinite(w.astype(np.float32) if w.dtype.kind != "f" else w).all()


def _grid(tiles: int, blocks: int) -> tuple[int, int, int]:
    """Pixel tiles along x (spilling into z), channel blocks along y."""
    gx = max(1, -(-tiles // WORKGROUP))
    if gx <= MAX_GROUPS:
        return (gx, blocks, 1)
    return (MAX_GROUPS, blocks, -(-gx // MAX_GROUPS))


def _tile(ic: int, oc: int) -> tuple[int, int]:
    p = int(os.environ.get("TOSA_VK_CONV_P", 4))
    c = int(os.environ.get("TOSA_VK_CONV_C", 4))
    return p, min(c, oc)


def _conv(ctx: LowerCtx, nd: int):
    common = _common(ctx)
    if common is None:
        return None
    defines, extra = common
    x, w, bias = ctx.inputs[:3]
    out = ctx.outputs[0]
    pad = _ints(ctx, "pad", 0, 2 * nd)
    stride = _ints(ctx, "stride", 1, nd)
    dilation = _ints(ctx, "dilation", 1, nd)
    if nd == 2:  # as CONV3D with depth 1
        pad, stride, dilation = [0, 0] + pad, [1] + stride, [1] + dilation
        xs = (x.shape[0], 1, *x.shape[1:])
        ws = (w.shape[0], 1, *w.shape[1:])
        os_ = (out.shape[0], 1, *out.shape[1:])
    else:
        xs, ws, os_ = x.shape, w.shape, out.shape
    n, id_, ih, iw, ic = xs
    oc, kd, kh, kw, _ = ws
    _, od, oh, ow, _ = os_
    tp, tc = _tile(ic, oc)
    defines.update(chunk_defines(ic, {"X": x.dtype, "W": w.dtype}))
    defines.update({"N": n, "ID": id_, "IH": ih, "IW": iw, "IC": ic, "OC": oc, "KD": kd, "KH": kh, "KW": kw,
                    "OD": od, "OH": oh, "OW": ow, "SD": stride[0], "SH": stride[1], "SW": stride[2],
                    "DD": dilation[0], "DH": dilation[1], "DW": dilation[2], "PD": pad[0], "PT": pad[2],
                    "PL": pad[4], "TILE_P": tp, "TILE_C": tc})
    if _skip_padded(ctx, any(pad)):
        defines["SKIP_PADDED"] = "1"
    tiles = n * od * oh * -(-ow // tp)
    bindings = {"X": x.name, "W": w.name, "B": bias.name, "O": out.name, **extra}
    return [ctx.kernel("convolution/conv", bindings, {k: str(v) for k, v in defines.items()},
                       groups=_grid(tiles, -(-oc // tc)))]


@lowering("CONV2D")
def CONV2D(ctx: LowerCtx):
    return _conv(ctx, 2)


@lowering("CONV3D")
def CONV3D(ctx: LowerCtx):
    return _conv(ctx, 3)

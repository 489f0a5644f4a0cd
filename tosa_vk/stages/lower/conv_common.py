"""What the register convolutions (convolution.py) and the tiled family (families/conv_tiled.py) both read of a
convolution: its type combinations, integer attributes, geometry, block scales, zero points, in-place SLICE and
TRANSPOSE prologues."""

from __future__ import annotations

import numpy as np

from ...ir.dtype import DType
from ...ir.graph import BLOCK_SCALED_INPUTS, Operator, Tensor
from .context import LowerCtx
from .elementwise_binary import VEC4
from .fused.epilogue import transposed_index
from .types import glsl_storage

# in_t -> (allowed (weight_t, out_t) pairs); acc_type is the attribute (fp16 may accumulate in fp32: the kernels
# always sum floating-point products in fp32, which the dot-product compliance bound allows for either).
TYPES = {
    DType.INT8: ((DType.INT8, DType.INT32), (DType.INT4, DType.INT32)),
    DType.INT16: ((DType.INT8, DType.INT48),),
    DType.FP16: ((DType.FP16, DType.FP16),),
    DType.BF16: ((DType.BF16, DType.BF16),),
    DType.FP32: ((DType.FP32, DType.FP32),),
    DType.FP8E4M3: ((DType.FP8E4M3, DType.FP16),),
    DType.FP8E5M2: ((DType.FP8E5M2, DType.FP16),),
}


# TOSA 1.1 CONV2D mixed precision: input and weight of any two of these, decoded to fp32 and summed there (as the
# 1.0 floating-point rows are) whatever acc_type says: bf16 / fp16 accumulators are only less precise, and the
# dot-product bound is the accumulator's.
MIXED = frozenset((DType.FP8E4M3, DType.FP8E5M2, DType.FP16, DType.BF16, DType.FP32))


MIXED_OUT = (DType.FP16, DType.BF16, DType.FP32)


def int_attrs(ctx: LowerCtx, name: str, default: int, n: int) -> list[int]:
    v = ctx.attr(name)
    return [default] * n if v is None else [int(a) for a in np.asarray(v).reshape(-1)]


def common_defines(ctx: LowerCtx) -> tuple[dict[str, str], dict[str, str], dict[str, int]] | None:
    """Type defines, the zero-point bindings and the specialization constants shared by every convolution kernel,
    or None for an unsupported type combination."""
    x, w, bias = ctx.inputs[:3]
    out = ctx.outputs[0]
    scales = block_scales(ctx)
    if scales and ctx.op.op != "CONV2D":
        return None
    types = {t.dtype if i not in scales else DType.FP32 for i, t in enumerate((x, w))}  # block-scaled: as fp32
    mixed = ctx.op.op == "CONV2D" and types <= MIXED and out.dtype in MIXED_OUT
    if ((w.dtype, out.dtype) not in TYPES.get(x.dtype, ()) and not mixed) or bias.dtype != out.dtype:
        return None
    integer = not x.dtype.is_float and not scales
    if out.dtype == DType.INT48 and not ctx.target.has("shaderInt64"):
        return None
    acc = "int64_t" if out.dtype == DType.INT48 else "int" if integer else "float"
    defines = {
        "ACC_T": acc,
        "ACC4_T": {"int64_t": "i64vec4", "int": "ivec4", "float": "vec4"}[acc],
        "O_T4": VEC4[glsl_storage(ctx.result.dtype)],  # what is stored: the epilogue's output, if any
    }
    specs = {"BIAS_SCALAR": int(bias.size == 1)}
    extra: dict[str, str] = {}
    for i, b in ((0, "X"), (1, "W")):  # bindings 4 / 5 on (those of integer zero points; never both)
        if i in scales:
            defines[f"{b}_SCALED"], defines[f"{b}S_AT"] = "1", str(4 + len(extra))
            extra[f"{b}S"] = scales[i].name
    if integer:
        defines["INTEGER"] = "1"
        izp, wzp = ctx.constant(3), ctx.constant(4)
        if izp is not None and wzp is not None:
            defines["IZP"] = ctx.word(int(np.asarray(izp).reshape(-1)[0]))
            defines["WZP"] = ctx.word(int(np.asarray(wzp).reshape(-1)[0]))
        else:
            defines["ZP_BUFFERS"] = "1"
            extra = {"IZ": ctx.inputs[3].name, "WZ": ctx.inputs[4].name}
    return defines, extra, specs


def block_scales(ctx: LowerCtx) -> dict[int, Tensor]:
    """The scale tensors of block-scaled inputs (TOSA 1.1): input position -> its scales (passes/block_scaled.py)."""
    at = ctx.op.attrs.get(BLOCK_SCALED_INPUTS) or ()
    return dict(zip(at, ctx.inputs[len(ctx.inputs) - len(at) :]))


def skip_padded(ctx: LowerCtx, padded: bool) -> bool:
    """Floating point with padding must skip the padded taps' multiplies (0 x inf would be NaN) unless the
    weights are known finite (block-scaled weights: a NaN scale, so never known here)."""
    scales = block_scales(ctx)
    if not padded or not (ctx.inputs[0].dtype.is_float or 0 in scales):
        return False
    if 1 in scales:
        return True
    wv = ctx.constant(1)
    if wv is None:
        return True
    w = np.asarray(wv)
    if w.dtype.kind != "f":
        w = w.astype(np.float32)
    return not bool(np.isfinite(w).all())


# iterations of the loop that stores a tile through an epilogue (conv.comp / depthwise.comp): at most 16 pixels x 2
# groups of 4 channels
STORE_LOOP = 32


def geometry(ctx: LowerCtx, nd: int) -> tuple[list[int], list[int], list[int], tuple]:
    """A CONV2D (nd 2) or CONV3D's pads (6: before / after per axis), strides and dilations (3), and the shapes of
    its input, weights and output, all as CONV3D's (a CONV2D is one with depth 1)."""
    x, w = ctx.inputs[:2]
    out = ctx.outputs[0]
    pad = int_attrs(ctx, "pad", 0, 2 * nd)
    stride = int_attrs(ctx, "stride", 1, nd)
    dilation = int_attrs(ctx, "dilation", 1, nd)
    if nd == 3:
        return pad, stride, dilation, (x.shape, w.shape, out.shape)
    shapes = tuple((t.shape[0], 1, *t.shape[1:]) for t in (x, w, out))
    return [0, 0] + pad, [1] + stride, [1] + dilation, shapes


def in_place_slice(ctx: LowerCtx, nd: int) -> tuple[str, int, int] | None:
    """A fused SLICE before a CONV2D (fuse.py) that only drops bottom rows and right columns, which a layer without
    bottom / right padding never reads (ExecuTorch's stride-2 1x1 projections): (the SLICE's input, its height,
    its width) for the kernel to read in place — the same elements at the same (row, column) — else None. Reads
    stop at the sliced edge: (OH - 1) * SH + (KH - 1) * DH - PT = sliced height - 1 when the bottom pad is 0."""
    op = ctx.prologue[1] if ctx.prologue else None
    if op is None or op.op != "SLICE" or nd != 2:
        return None
    src, x = ctx.block.tensors[op.inputs[0]], ctx.inputs[0]
    start = ctx.block.tensors[op.inputs[1]].data
    pad = [int(p) for p in ctx.op.attrs.get("pad", (0, 0, 0, 0))]
    if start is None or any(int(v) for v in np.asarray(start).reshape(-1)) or len(src.shape) != 4 or len(pad) != 4:
        return None
    if (src.shape[0], src.shape[3]) != (x.shape[0], x.shape[3]) or pad[1] or pad[3]:
        return None
    return src.name, int(src.shape[1]), int(src.shape[2])


def permuted_source(src: Tensor, x: Tensor, transpose: Operator) -> tuple[str, str]:
    """(src's name, X_AT(i)): where element i of x = TRANSPOSE(src) (row-major) is stored in src."""
    perms = [int(p) for p in transpose.attrs["perms"]]
    return src.name, "(" + transposed_index(x.shape, src.shape, perms, "(i)") + ")"

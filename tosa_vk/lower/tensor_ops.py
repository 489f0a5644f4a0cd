"""Tensor operators (spec 2.3) on Vulkan: MATMUL (shaders/tensor_ops/matmul.comp, register-blocked tiles),
AVG_POOL2D / MAX_POOL2D (pool.comp), FFT2D / RFFT2D (fft.comp: radix-2 Stockham passes over a twiddle table
from fft_twiddle.comp). ARGMAX lives in lower/reduction.py; the convolutions in lower/convolution.py.

lavapipe ends an invocation's loops after 65535 iterations in total, so every loop here is bounded: MATMUL splits
a long C into partial sums (a second pass adds them), pooling windows are bounded by LOOP_BUDGET, and each FFT pass
is one butterfly per invocation.
"""
from __future__ import annotations

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from ..program import Kernel, pack_push
from . import LowerCtx, lowering
from .elementwise_binary import VEC4
from .types import glsl_storage

LOOP_BUDGET = 60000   # loop iterations one invocation may run (lavapipe's limit is 65535)
_FLOAT8 = (DType.FP8E4M3, DType.FP8E5M2)


def _scalar(ctx: LowerCtx, i: int, default=0):
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
    DType.FP8E4M3: ((DType.FP16,), "float", "vec4", DType.FP32),
    DType.FP8E5M2: ((DType.FP16,), "float", "vec4", DType.FP32),
}
MATMUL_TM = 4          # output rows per invocation (x 4 columns)
MATMUL_LANES = 16      # invocations per workgroup (sharing their rows of A)


def _groups(count: int) -> tuple[int, int, int]:
    """A workgroup grid of `count` groups (x up to 65535, the rest in y; the shader skips the excess)."""
    if count <= 65535:
        return (max(count, 1), 1, 1)
    return (65535, -(-count // 65535), 1)


@lowering("MATMUL")
def MATMUL(ctx: LowerCtx):
    a, b = ctx.inputs[:2]
    out = ctx.outputs[0]
    spec = _MATMUL.get(a.dtype)
    if spec is None or b.dtype != a.dtype or out.dtype not in spec[0]:
        return None
    _, acc, acc4, partial_t = spec
    if acc == "int64_t" and not ctx.features.get("shaderInt64", False):
        return None
    n, h, c = a.shape
    w = b.shape[2]
    if out.size == 0:
        return []
    if a.size >= 1 << 32 or b.size >= 1 << 32 or out.size >= 1 << 32:
        return None
    defines = {"ACC": acc, "ACC4": acc4, "TM": str(MATMUL_TM),
               "MAC(acc, s, v)": "acc = fma(vec4(s), v, acc)" if acc == "float" else "acc += (s) * (v)"}
    bindings = {"A": a.name, "B": b.name}
    extra = {}
    if a.dtype == DType.INT8:
        za, zb = _scalar(ctx, 2), _scalar(ctx, 3)
        if za is None or zb is None:
            defines["ZP_BUFFER"] = "1"
            extra = {"ZA": ctx.inputs[2].name, "ZB": ctx.inputs[3].name}
        else:
            defines.update(A_ZP=str(int(za)), B_ZP=str(int(zb)))
    else:
        defines.update(A_ZP="0", B_ZP="0")   # ERROR_IF: zero points only for int8
    if c % 4 == 0:
        defines.update(A_VEC="1", A_T4=VEC4[glsl_storage(a.dtype)])
    lanes = max(4, min(MATMUL_LANES, 1 << max(0, (-(-w // 4) - 1).bit_length())))
    defines["LANES"] = str(lanes)
    tiles_h, blocks_w = -(-h // MATMUL_TM), -(-w // (4 * lanes))
    steps = c // 4 + 4
    splits = 1 if steps <= LOOP_BUDGET else -(-steps // LOOP_BUDGET)
    k_len = -(-c // splits)
    k_len += -k_len % 4
    splits = -(-c // k_len) if c else 1
    groups = n * splits * tiles_h * blocks_w
    push = pack_push(groups, h, c, w, tiles_h, blocks_w, k_len, splits, fmt="IIIIIIII")
    if splits == 1:
        if w % 4 == 0:
            defines.update(B_VEC="1", B_T4=VEC4[glsl_storage(b.dtype)], O_T4=VEC4[glsl_storage(out.dtype)])
        return [ctx.kernel("tensor_ops/matmul", {**bindings, "O": out.name, **extra}, defines, push,
                           groups=_groups(groups))]
    part = ctx.temporary((n, splits, h, w), partial_t)
    if w % 4 == 0:
        defines.update(B_VEC="1", B_T4=VEC4[glsl_storage(b.dtype)], O_T4=acc4)
    defines["PARTIAL"] = "1"
    first = ctx.kernel("tensor_ops/matmul", {**bindings, "O": part, **extra}, defines, push,
                       groups=_groups(groups), writes=(part,))
    total = n * h * w
    second = ctx.kernel("tensor_ops/matmul_sum", {"P": part, "O": out.name}, {},
                        pack_push(total, h * w, splits, fmt="III"), invocations=total)
    return [first, second]

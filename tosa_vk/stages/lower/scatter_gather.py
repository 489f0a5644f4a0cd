"""Scatter / gather operators (spec 2.11) on Vulkan: GATHER, SCATTER and (TOSA 1.1) ROW_GATHER along K of [N, K, C]
value tensors.

Exact data movement of raw units (see data_layout.py): rows of C elements are copied as wide units when C allows.
GATHER is one kernel (shaders/scatter_gather/gather.comp; a piece of a split table stores its channels of every row
into the whole result through the store map of a strided CONCAT, tosa_vk/stages/fuse.py), ROW_GATHER one too
(row_gather.comp: row_count rows per index, int32 or int64 indices; ROW_GATHER_BLOCK_SCALED runs it for the values
and for the scales); SCATTER copies values_in to values_out (data_layout/copy) and then writes the input rows at
their indices (shaders/scatter_gather/scatter.comp).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...ir.dtype import DType
from ...ir.graph import Tensor
from . import push
from .context import LowerCtx, lowering
from .data_layout import raw_kernel, row_major, strided_copy, unit_ok, width
from .fused.epilogue import epilogue_defines
from .types import glsl_known


def _index(indices: Tensor) -> dict[str, str]:
    """INDEX_T of the shaders: i32_t indices, or i64_t ones (EXT-INT64)."""
    return {"INDEX_T": "int64_t"} if indices.dtype == DType.INT64 else {}


def _rows(ctx: LowerCtx, values: Tensor, n: int, w: int, k: int, c: int, also: int = 0):
    """(unit, push) for kernels walking N*W rows of C elements: the widest unit that divides a row (and `also`
    elements)."""
    size = width(values)
    fits = lambda u: u >= size and (c * size) % u == 0 and (also * size) % u == 0 and unit_ok(ctx, u)  # noqa: E731
    unit = next((u for u in (16, 8, 4, 2, 1) if fits(u)), None)
    if unit is None:
        return None, b""
    cu = c * size // unit
    return unit, push.GATHER.pack(n * w * cu, cu, w, k)


@lowering("GATHER")
def GATHER(ctx: LowerCtx):
    values, indices = ctx.inputs
    out = ctx.outputs[0]
    n, k, c = values.shape
    w = indices.shape[1]
    if out.size == 0:
        return []
    # a strided CONCAT (its only chain): units that divide every piece's channel count (so its first channel and
    # the result's row too), the same for all pieces of the split
    pieces = [ctx.tensor(n).shape[-1] for n in ctx.epilogue[-1][1].inputs] if ctx.epilogue else []
    unit, rows = _rows(ctx, values, n, w, k, c, math.gcd(*pieces))
    if unit is None:
        return None
    stored = epilogue_defines(ctx, {}, out_map=True, per=unit // width(values))
    if stored is None or "EPILOGUE(v, c, at)" in stored:
        return None
    stored.pop("EP_OUT_SCALAR", None)  # (its stores are of single units)
    return [
        raw_kernel(
            ctx,
            "scatter_gather/gather",
            {"V": values.name, "I": indices.name, "O": ctx.result.name},
            unit,
            rows,
            out.size * width(values) // unit,
            {**_index(indices), **stored},
        )
    ]


@lowering("ROW_GATHER")
def ROW_GATHER(ctx: LowerCtx):
    values, indices = ctx.inputs[:2]
    out = ctx.outputs[0]
    row_count = ctx.constant(2)
    if row_count is None:
        return None
    if out.size == 0:
        return []
    kernel = _row_gather(ctx, values, indices, out, int(row_count.reshape(-1)[0]))
    return None if kernel is None else [kernel]


def _row_gather(ctx: LowerCtx, values: Tensor, indices: Tensor, out: Tensor, r: int):
    """The row_gather.comp dispatch gathering `r` rows per index of one [N, K, C] tensor into `out`, or None."""
    if indices.dtype not in (DType.INT32, DType.INT64) or r < 1 or out.size >= 1 << 32:
        return None
    n, k, c = values.shape
    w = indices.shape[1]
    unit, _ = _rows(ctx, values, n, w, k, c)
    if unit is None:
        return None
    cu = c * width(values) // unit
    return raw_kernel(
        ctx,
        "scatter_gather/row_gather",
        {"V": values.name, "I": indices.name, "O": out.name},
        unit,
        push.ROW_GATHER.pack(n * w * r * cu, cu, w, k, r),
        n * w * r * cu,
        {"IDX64": "1"} if indices.dtype == DType.INT64 else {},
    )


@lowering("SCATTER")
def SCATTER(ctx: LowerCtx):
    values_in, indices, data = ctx.inputs
    out = ctx.outputs[0]
    n, k, c = values_in.shape
    w = indices.shape[1]
    if out.size == 0:
        return []
    copy = strided_copy(ctx, values_in, out, values_in.shape, row_major(values_in.shape))
    if copy is None:
        return None
    if data.size == 0:
        return [copy]
    unit, rows = _rows(ctx, values_in, n, w, k, c)
    if unit is None:
        return None
    return [
        copy,
        raw_kernel(
            ctx,
            "scatter_gather/scatter",
            {"I": indices.name, "A": data.name, "O": out.name},
            unit,
            rows,
            data.size * width(data) // unit,
            _index(indices),
        ),
    ]


@lowering("ROW_GATHER_BLOCK_SCALED")
def ROW_GATHER_BLOCK_SCALED(ctx: LowerCtx):
    """TOSA 1.1: ROW_GATHER's kernel once per tensor of the (values, scales) list (the scales are rows of C /
    block_size columns); row_count must be a constant."""
    *values, indices, row_count = ctx.inputs
    rows = ctx.constant(len(values) + 1)
    if rows is None:
        return None
    r = int(np.asarray(rows).reshape(-1)[0])
    kernels = []
    for src, dst in zip(values, ctx.outputs):
        if not glsl_known(src.dtype):
            return None
        if dst.size == 0:
            continue
        kernel = _row_gather(ctx, src, indices, dst, r)
        if kernel is None:
            return None
        target = ctx.q(dst.name)  # one of two outputs: this dispatch writes only its own
        kernels.append(
            dataclasses.replace(kernel, reads=tuple(b for b in kernel.bindings if b != target), writes=(target,))
        )
    return kernels

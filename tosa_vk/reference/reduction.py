"""Reduction operators (spec 2.9): REDUCE_ALL / ANY / MAX / MIN / PRODUCT / SUM.

Every reduction keeps the reduced axis with size 1. Floating-point products and sums are computed in float64 and
rounded once to the output type (within the REDUCE_PRODUCT bound and the dot-product accuracy rules).
"""

from __future__ import annotations

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from .numeric import round_to, to_float64
from .registry import Call, reference


def _axis(call: Call) -> int:
    """The shared ERROR_IFs of every reduction; returns the axis."""
    x = call.inputs[0]
    axis = int(call.attr("axis", 0))
    call.error_if(axis < 0 or axis >= x.ndim, "axis < 0 || axis >= rank(shape1)")
    out_shape = call.out_shapes[0]
    call.error_if(len(out_shape) != x.ndim, "rank(shape) != rank(shape1)")
    call.error_if(out_shape[axis] != 1, "shape[axis] != 1")
    call.error_if(
        any(o != i for d, (o, i) in enumerate(zip(out_shape, x.shape)) if d != axis),
        "shape[i] != shape1[i] for i != axis",
    )
    return axis


@reference("REDUCE_ALL")
def REDUCE_ALL(call: Call):
    axis = _axis(call)
    return np.all(call.inputs[0], axis=axis, keepdims=True)


@reference("REDUCE_ANY")
def REDUCE_ANY(call: Call):
    axis = _axis(call)
    return np.any(call.inputs[0], axis=axis, keepdims=True)


def _extreme(call: Call, propagate, ignore):
    axis = _axis(call)
    x = call.inputs[0]
    dtype = call.in_types[0]
    if not dtype.is_float:
        return propagate(x, axis=axis, keepdims=True)
    # apply_max_s / apply_min_s: PROPAGATE -> any NaN gives NaN; IGNORE -> NaN only when the whole axis is NaN
    # (fmax / fmin skip NaN). Values are exact, so comparing in float32 (bf16 widened) is fine.
    wide = x.astype(np.float32)
    ignore_nan = call.attr("nan_mode") == NanPropagationMode.IGNORE
    result = (ignore.reduce if ignore_nan else propagate)(wide, axis=axis, keepdims=True)
    return result.astype(dtype.numpy)


@reference("REDUCE_MAX")
def REDUCE_MAX(call: Call):
    return _extreme(call, np.max, np.fmax)


@reference("REDUCE_MIN")
def REDUCE_MIN(call: Call):
    return _extreme(call, np.min, np.fmin)


@reference("REDUCE_PRODUCT")
def REDUCE_PRODUCT(call: Call):
    axis = _axis(call)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        acc = np.prod(to_float64(call.inputs[0]), axis=axis, keepdims=True)
    return round_to(acc, call.out_types[0])


@reference("REDUCE_SUM")
def REDUCE_SUM(call: Call):
    axis = _axis(call)
    x = call.inputs[0]
    dtype = call.out_types[0]
    if dtype == DType.INT32:
        # apply_add_s<i32_t> REQUIREs every partial sum (in axis order) to stay within int32.
        partial = np.cumsum(x.astype(np.int64), axis=axis)
        call.require(
            (partial >= -(1 << 31)) & (partial < (1 << 31)),
            "acc >= minimum_s<i32_t>() && acc <= maximum_s<i32_t>() in apply_add_s",
        )
        return np.take(partial, [x.shape[axis] - 1], axis=axis).astype(np.int32)
    if dtype == DType.INT64:
        # the same REQUIRE for i64_t: no partial sum may wrap (cumsum wraps; a step wrapped when the running sum
        # before it and the element agree in sign and the new sum does not)
        v = x.astype(np.int64)
        with np.errstate(over="ignore"):
            partial = np.cumsum(v, axis=axis, dtype=np.int64)
            before = partial - v
        call.require(((before ^ partial) & (v ^ partial)) >= 0, "acc within int64 in apply_add_s<i64_t>")
        return np.take(partial, [x.shape[axis] - 1], axis=axis)
    with np.errstate(over="ignore", invalid="ignore"):
        acc = np.sum(to_float64(x), axis=axis, keepdims=True)
    return round_to(acc, dtype)

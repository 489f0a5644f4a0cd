"""Data layout operators (spec 2.10): CONCAT, PAD, RESHAPE, REVERSE, SLICE, TILE, TRANSPOSE.

All are exact data movement. Shape operands (padding, shape, start, size, multiples) arrive as int64 arrays, the
values of CONST_SHAPE. The spec's value-dependent ERROR_IFs are checked here as well as statically.
"""

from __future__ import annotations

import numpy as np

from .registry import Call, ScaledArray, reference


def _shape_values(call: Call, index: int) -> list[int]:
    return [int(v) for v in np.asarray(call.inputs[index]).reshape(-1)]


@reference("CONCAT")
def CONCAT(call: Call):
    inputs = call.inputs
    out_shape = call.out_shapes[0]
    axis = int(call.attr("axis", 0))
    call.error_if(len(inputs) == 0, "input1 == []")
    rank = inputs[0].ndim
    call.error_if(axis < 0 or axis >= max(1, rank), "axis < 0 || axis >= max(1, rank(shapes1[0]))")
    axis_sum = 0
    for x in inputs:
        call.error_if(x.ndim != rank, "rank(shapes1[shape_index]) != rank(shapes1[0])")
        for d in range(rank):
            if d == axis:
                axis_sum += x.shape[d]
            else:
                call.error_if(
                    x.shape[d] != inputs[0].shape[d], "shapes1[shape_index][axis_index] != shapes1[0][axis_index]"
                )
    call.error_if(len(out_shape) != rank, "rank(shape) != rank(shapes1[0])")
    call.error_if(axis_sum != out_shape[axis], "axis_sum != shape[axis]")
    if call.input_scales:  # TOSA 1.1 block-scaled: the scales (whole blocks of the last dimension) follow their values
        return ScaledArray(np.concatenate(inputs, axis=axis), np.concatenate(call.input_scales, axis=axis))
    return np.concatenate(inputs, axis=axis)


@reference("PAD")
def PAD(call: Call):
    x, _, pad_const = call.inputs
    padding = _shape_values(call, 1)
    out_shape = call.out_shapes[0]
    call.error_if(len(out_shape) != x.ndim, "rank(shape) != rank(shape1)")
    call.error_if(len(padding) != 2 * x.ndim, "length(padding) != 2 * rank(shape1)")
    call.error_if(np.size(pad_const) != 1, "tensor_size(shape(pad_const)) != 1")
    for i in range(x.ndim):
        call.error_if(padding[2 * i] < 0 or padding[2 * i + 1] < 0, "padding[i * 2] < 0 || padding[(i * 2) + 1] < 0")
        call.error_if(
            out_shape[i] != padding[2 * i] + x.shape[i] + padding[2 * i + 1],
            "shape[i] != padding[i * 2] + shape1[i] + padding[(i * 2) + 1]",
        )
    out = np.full(out_shape, np.asarray(pad_const).reshape(-1)[0], dtype=x.dtype)
    out[tuple(slice(padding[2 * i], padding[2 * i] + x.shape[i]) for i in range(x.ndim))] = x
    return out


@reference("RESHAPE")
def RESHAPE(call: Call):
    x = call.inputs[0]
    shape = _shape_values(call, 1)
    call.error_if(any(d < 0 for d in shape), "shape[i] < 0")
    call.error_if(int(np.prod(shape, dtype=np.int64)) != x.size, "tensor_size(shape1) != tensor_size(shape)")
    call.error_if(tuple(shape) != tuple(call.out_shapes[0]), "shape input != shape of output")
    if call.input_scales:  # TOSA 1.1 block-scaled: whole blocks, so the scales keep their row-major order too
        block = call.out_block_size()
        return ScaledArray(x.reshape(shape), call.input_scales[0].reshape(*shape[:-1], shape[-1] // block))
    return x.reshape(shape)


@reference("REVERSE")
def REVERSE(call: Call):
    x = call.inputs[0]
    axis = int(call.attr("axis", 0))
    call.error_if(axis < 0 or axis >= x.ndim, "axis < 0 || axis >= rank(shape)")
    call.error_if(tuple(call.out_shapes[0]) != x.shape, "shape of output != shape of input1")
    return np.flip(x, axis=axis).copy()


@reference("SLICE")
def SLICE(call: Call):
    x = call.inputs[0]
    start, size = _shape_values(call, 1), _shape_values(call, 2)
    out_shape = call.out_shapes[0]
    call.error_if(
        x.ndim != len(start) or x.ndim != len(size), "rank(shape1) != length(start) || rank(shape1) != length(size)"
    )
    call.error_if(x.ndim != len(out_shape), "rank(shape1) != rank(shape)")
    for i in range(x.ndim):
        call.error_if(start[i] < 0, "start[index] < 0")
        call.error_if(size[i] <= 0, "size[index] <= 0")
        call.error_if(start[i] + size[i] > x.shape[i], "start[index] + size[index] > shape1[index]")
        call.error_if(out_shape[i] != size[i], "shape[index] != size[index]")
    return x[tuple(slice(s, s + n) for s, n in zip(start, size))].copy()


@reference("TILE")
def TILE(call: Call):
    x = call.inputs[0]
    multiples = _shape_values(call, 1)
    out_shape = call.out_shapes[0]
    call.error_if(x.ndim != len(out_shape), "rank(shape1) != rank(shape)")
    call.error_if(len(multiples) != x.ndim, "length(multiples) != rank(shape1)")
    call.error_if(any(m < 0 for m in multiples), "multiples[i] < 0")
    call.error_if(
        any(d * m != o for d, m, o in zip(x.shape, multiples, out_shape)), "shape1[i] * multiples[i] != shape[i]"
    )
    return np.tile(x, multiples)


@reference("TRANSPOSE")
def TRANSPOSE(call: Call):
    x = call.inputs[0]
    perms = [int(p) for p in np.asarray(call.attr("perms", [])).reshape(-1)]
    out_shape = call.out_shapes[0]
    call.error_if(x.ndim != len(out_shape), "rank(shape1) != rank(shape)")
    call.error_if(x.size != int(np.prod(out_shape, dtype=np.int64)), "tensor_size(shape1) != tensor_size(shape)")
    call.error_if(len(perms) != x.ndim, "length(perms) != rank(shape1)")
    used = [False] * x.ndim
    for p in perms:
        call.error_if(p >= x.ndim, "index >= rank(shape1)")
        call.error_if(p < 0, "index < 0")
        call.error_if(used[p], "indexes_used[index] == true")
        used[p] = True
    call.error_if(any(x.shape[perms[i]] != out_shape[i] for i in range(x.ndim)), "shape1[perms[i]] != shape[i]")
    return np.ascontiguousarray(np.transpose(x, perms))


@reference("RESHAPE_BLOCK_SCALED")
def RESHAPE_BLOCK_SCALED(call: Call):
    """TOSA 1.1: values (and scales, when given) to the declared shapes, in row-major order."""
    return [np.asarray(v).reshape(shape) for v, shape in zip(call.inputs[:-1], call.out_shapes)]

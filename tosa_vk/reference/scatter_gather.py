"""Scatter / gather operators (spec 2.11): GATHER, SCATTER and (TOSA 1.1) ROW_GATHER along K of [N, K, C] value
tensors."""

from __future__ import annotations

import numpy as np

from .registry import Call, ScaledArray, reference


def _check_shapes(call: Call, values: np.ndarray, indices: np.ndarray, nwc_shape) -> None:
    call.error_if(
        values.ndim != 3 or indices.ndim != 2 or len(nwc_shape) != 3, "values / input must be rank 3 and indices rank 2"
    )
    n, _, c = values.shape
    call.error_if(indices.shape[0] != n or nwc_shape[0] != n, "N differs between values, indices and [N,W,C]")
    call.error_if(indices.shape[1] != nwc_shape[1], "W differs between indices and [N,W,C]")
    call.error_if(nwc_shape[2] != c, "C differs between values and [N,W,C]")


@reference("GATHER")
def GATHER(call: Call):
    values, indices = call.inputs
    _check_shapes(call, values, indices, call.out_shapes[0])
    k = indices.astype(np.int64)
    call.require((k >= 0) & (k < values.shape[1]), "0 <= k && k < K")
    return np.take_along_axis(values, k[:, :, None], axis=1)


@reference("ROW_GATHER")
def ROW_GATHER(call: Call):
    values, indices, row_count = call.inputs
    r = int(np.asarray(row_count).reshape(-1)[0])
    call.error_if(r < 1, "row_count < 1")
    call.error_if(values.ndim != 3 or indices.ndim != 2, "values must be rank 3 and indices rank 2")
    n, k_size, c = values.shape
    w = indices.shape[1]
    call.error_if(indices.shape[0] != n, "N differs between values and indices")
    call.error_if(tuple(call.out_shapes[0]) != (n, w * r, c), "output shape != [N,W*row_count,C]")
    k = indices.astype(np.int64)
    # k + row_count <= K, written so that an index near the int64 maximum cannot wrap around
    call.require((k >= 0) & (k <= k_size - r), "0 <= k && (k+row_count) <= K")
    rows = (k[:, :, None] + np.arange(r)).reshape(n, w * r)  # output row w * row_count + r reads row k + r
    out = np.take_along_axis(values, rows[:, :, None], axis=1)
    scales = call.scales[0] if call.scales else None
    if scales is None:
        return out
    # block-scaled values (1.1): tensor_read_value_scale / tensor_write_value_scale move each row's scales with it
    return ScaledArray(out, np.take_along_axis(scales, rows[:, :, None], axis=1))


@reference("SCATTER")
def SCATTER(call: Call):
    values_in, indices, data = call.inputs
    _check_shapes(call, values_in, indices, data.shape)
    call.error_if(tuple(call.out_shapes[0]) != values_in.shape, "shape of values_out != [N,K,C]")
    k = indices.astype(np.int64)
    call.require((k >= 0) & (k < values_in.shape[1]), "0 <= k && k < K")
    # output_modified: each (n, k) may be written at most once.
    if values_in.shape[2]:
        ordered = np.sort(k, axis=1)
        call.require(ordered[:, 1:] != ordered[:, :-1], "output_modified[n,k,c] == false")
    out = values_in.copy()
    out[np.arange(k.shape[0])[:, None], k] = data
    return out


@reference("ROW_GATHER_BLOCK_SCALED")
def ROW_GATHER_BLOCK_SCALED(call: Call):
    """TOSA 1.1: row_count consecutive rows of values (and of its scales, when given) from each index."""
    *values, indices, row_count = call.inputs
    rows = int(np.asarray(row_count).reshape(-1)[0])
    call.error_if(rows < 1, "row_count < 1")
    k = values[0].shape[1]
    index = indices.astype(np.int64)
    call.require((index >= 0) & (index + rows <= k), "0 <= k && (k+row_count) <= K")
    take = (index[..., None] + np.arange(rows)).reshape(index.shape[0], -1)  # [N, W*row_count]
    return [np.take_along_axis(v, take[..., None], axis=1) for v in values]

"""The host operators an ExecuTorch partitioner leaves around and between its delegates, in numpy: quantize /
dequantize (per tensor and per channel, through tosa_vk.reference.quantization) and the common element-wise and layout
aten operators. Anything else is a TosaUnsupportedError naming the operator, raised when the program is loaded.

ExecuTorch calls out variants: a kernel call's arguments are the schema's inputs, then its `out` tensor, then the
returned value (the same tensor again). Each entry below takes the inputs (values: arrays, numbers, lists, None) and
returns the result, which is converted to the out tensor's dtype and checked against its shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...errors import TosaError, TosaUnsupportedError
from ...reference.quantization import QParams, dequantize, quantize
from .program import SCALAR_TYPES, IntListValue, Kernel, Plan, TensorListValue, TensorValue


class HostOp(NamedTuple):
    inputs: int  # arguments before the out tensor (keyword-only ones included)
    fn: Callable[..., Any]
    outs: int = 1  # out tensors (max.dim_max: values and indices); fn returns a tuple of as many
    in_place: bool = False  # an in-place operator (copy_, index_put_): its first argument is the tensor it writes


def _dtype(code: Any) -> np.dtype:
    if code not in SCALAR_TYPES:
        raise TosaError(f"ExecuTorch scalar type {code} is not one tosa_vk reads")
    return SCALAR_TYPES[code]


def _q_tensor(x, scale, zp, qmin, qmax, dtype):
    return quantize(x, QParams(float(scale), int(zp), _dtype(dtype).name, qmin=qmin, qmax=qmax), reciprocal=True)


def _dq_tensor(q, scale, zp, qmin, qmax, dtype, out_dtype=None):
    return dequantize(q, QParams(float(scale), int(zp), _dtype(dtype).name, qmin=qmin, qmax=qmax))


def _q_channel(x, scales, zps, axis, qmin, qmax, dtype):
    qparams = QParams(np.asarray(scales), np.asarray(zps), _dtype(dtype).name, axis, qmin, qmax)
    return quantize(x, qparams, reciprocal=True)


def _dq_channel(q, scales, zps, axis, qmin, qmax, dtype, out_dtype=None):
    zps = np.zeros(np.size(scales), np.int64) if zps is None else np.asarray(zps)
    return dequantize(q, QParams(np.asarray(scales), zps, _dtype(dtype).name, axis, qmin, qmax))


def _clamp(x, lo, hi):
    return np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi).astype(np.asarray(x).dtype)


def _squeeze(x, dims):
    dims = [dims] if isinstance(dims, int) else dims
    return np.squeeze(x, tuple(d % x.ndim for d in dims if x.shape[d] == 1))


def axes(dims, ndim: int) -> tuple[int, ...] | None:
    """A reduction's dims (an int, a list, None or [] for all) as numpy axes."""
    if dims is None or (isinstance(dims, list) and not dims):
        return None
    return tuple(d % max(ndim, 1) for d in ([dims] if isinstance(dims, int) else dims))


def _expand(x, size, implicit=False):
    lead = len(size) - x.ndim
    shape = [x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(size)]
    return np.broadcast_to(x, shape)


def _slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _index(indices) -> tuple:
    """index.Tensor's optional index list as a numpy index (None: the whole dimension; bool masks as they are)."""
    return tuple(slice(None) if i is None else i for i in indices)


def _index_put(x, indices, values, accumulate=False):
    y = np.array(x)
    index = _index(indices)
    if accumulate:
        np.add.at(y, index, np.asarray(values, y.dtype))
    else:
        y[index] = values
    return y


def _gather(x, dim, index, sparse_grad=False):
    dim %= max(x.ndim, 1)  # torch's index may be smaller than the input in the other dims
    part = x[tuple(slice(None) if d == dim else slice(0, index.shape[d]) for d in range(x.ndim))]
    return np.take_along_axis(part, index.astype(np.int64), axis=dim)


def _arg_reduce(fn):
    def reduce(x, dim=None, keepdim=False):
        if dim is None:
            flat = fn(x.reshape(-1))
            return np.full([1] * x.ndim, flat) if keepdim else flat
        return fn(x, axis=dim, keepdims=keepdim)

    return reduce


def _with_indices(fn, arg):
    def reduce(x, dim, keepdim=False):
        index = arg(x, axis=dim, keepdims=True)
        values = np.take_along_axis(x, index, axis=dim)
        if not keepdim:
            index, values = np.squeeze(index, dim), np.squeeze(values, dim)
        return values, index

    return reduce


def _pair(v) -> tuple[int, int]:
    v = [v] if isinstance(v, int) else list(v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def _max_pool_with_indices(x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    """max_pool2d_with_indices: the maxima and, per channel, the flat h * W + w index of each (the first largest,
    as PyTorch's CPU kernel), over an N, C, H, W or C, H, W input."""
    (kh, kw), (ph, pw), (dh, dw) = _pair(kernel), _pair(padding), _pair(dilation)
    sh, sw = _pair(stride) if stride else (kh, kw)
    h, w = x.shape[-2:]

    def size(n, k, s, p, d):
        span = n + 2 * p - d * (k - 1) - 1
        out = (-(-span // s) if ceil_mode else span // s) + 1
        return out - 1 if ceil_mode and (out - 1) * s >= n + p else out  # the last window starts inside

    oh, ow = size(h, kh, sh, ph, dh), size(w, kw, sw, pw, dw)
    rows = (np.arange(oh) * sh - ph)[:, None] + np.arange(kh) * dh  # (oh, kh)
    cols = (np.arange(ow) * sw - pw)[:, None] + np.arange(kw) * dw  # (ow, kw)
    r = rows[:, None, :, None]  # (oh, ow, kh, kw)
    c = cols[None, :, None, :]
    inside = (r >= 0) & (r < h) & (c >= 0) & (c < w)
    flat = np.where(inside, np.clip(r, 0, h - 1) * w + np.clip(c, 0, w - 1), 0).reshape(oh, ow, kh * kw)
    windows = x.reshape(*x.shape[:-2], h * w)[..., flat]  # (..., oh, ow, kh * kw)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    windows = np.where(inside.reshape(oh, ow, -1), windows, lowest)
    best = np.argmax(windows, axis=-1)
    values = np.take_along_axis(windows, best[..., None], -1)[..., 0].astype(x.dtype)
    return values, np.take_along_axis(np.broadcast_to(flat, windows.shape), best[..., None], -1)[..., 0]


def _reflect(coord: np.ndarray, twice_low: int, twice_high: int) -> np.ndarray:
    """PyTorch's reflect_coordinates: `coord` folded into [twice_low / 2, twice_high / 2] as by mirrors."""
    if twice_low == twice_high:
        return np.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    coord = np.abs(coord - low)
    extra, flips = np.fmod(coord, span), np.floor(coord / span)
    return np.where(flips % 2 == 0, extra + low, span - extra + low).astype(coord.dtype)


def _source_index(coord: np.ndarray, size: int, padding: int, align_corners: bool) -> np.ndarray:
    """PyTorch's grid_sampler_compute_source_index: a grid coordinate in [-1, 1] as a pixel coordinate, padded by
    `padding` (0 zeros: as it is; 1 border: clipped; 2 reflection: mirrored, then clipped)."""
    coord = ((coord + 1) / 2 * (size - 1)) if align_corners else (((coord + 1) * size - 1) / 2)
    if padding == 2:
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
    if padding in (1, 2):
        coord = np.clip(coord, 0, size - 1)
    elif padding != 0:
        raise ValueError(f"padding mode {padding} is not one PyTorch has (0 zeros, 1 border, 2 reflection)")
    return coord


def _grid_sample(x, grid, mode, padding, align_corners):
    """grid_sampler_2d: N, C, H, W `x` sampled at `grid` (N, Ho, Wo, 2: x then y, in [-1, 1]) -> N, C, Ho, Wo, as
    PyTorch's CPU kernel: bilinear (mode 0) or nearest (1, ties to even), a neighbour outside the image 0."""
    if mode not in (0, 1):
        raise ValueError(f"interpolation mode {mode} (bicubic) is not one tosa_vk runs: bilinear (0) or nearest (1)")
    n, _, h, w = x.shape
    ix = _source_index(grid[..., 0].astype(x.dtype), w, padding, align_corners)
    iy = _source_index(grid[..., 1].astype(x.dtype), h, padding, align_corners)
    batch = np.arange(n)[:, None, None]

    def at(row, col):  # (N, Ho, Wo) pixel indices -> (N, C, Ho, Wo), 0 outside the image
        inside = (row >= 0) & (row < h) & (col >= 0) & (col < w)
        picked = np.moveaxis(x[batch, :, np.clip(row, 0, h - 1), np.clip(col, 0, w - 1)], -1, 1)
        return np.where(inside[:, None], picked, np.zeros((), x.dtype))

    with np.errstate(invalid="ignore"):  # (a NaN coordinate: outside, as PyTorch's)
        if mode == 1:
            return at(np.rint(iy).astype(np.int64), np.rint(ix).astype(np.int64))
        x0, y0 = np.floor(ix), np.floor(iy)
        tx, ty = (ix - x0)[:, None], (iy - y0)[:, None]
        c0, r0 = x0.astype(np.int64), y0.astype(np.int64)
    return (at(r0, c0) * (1 - tx) * (1 - ty) + at(r0, c0 + 1) * tx * (1 - ty)
            + at(r0 + 1, c0) * (1 - tx) * ty + at(r0 + 1, c0 + 1) * tx * ty)  # fmt: skip


def _fft_r2c(x, dim, normalization, onesided):
    """_fft_r2c (torch.fft.rfft2 / rfftn): the real-to-complex FFT over `dim`, one-sided in the last of them;
    normalization 0 none, 1 by 1/sqrt(n), 2 by 1/n (PyTorch's fft_norm_mode)."""
    norm = ("backward", "ortho", "forward")[normalization]
    return (np.fft.rfftn if onesided else np.fft.fftn)(x, axes=[d % x.ndim for d in dim], norm=norm)


def _arange(*args):
    start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    return np.arange(start, end, step)


QD = "quantized_decomposed::"
HOST_OPS: dict[str, HostOp] = {
    QD + "quantize_per_tensor.out": HostOp(6, _q_tensor),
    QD + "dequantize_per_tensor.out": HostOp(7, _dq_tensor),
    QD + "quantize_per_channel.out": HostOp(7, _q_channel),
    QD + "dequantize_per_channel.out": HostOp(8, _dq_channel),
    "aten::add.out": HostOp(3, lambda a, b, alpha=1: a + b * alpha if alpha != 1 else a + b),
    "aten::sub.out": HostOp(3, lambda a, b, alpha=1: a - b * alpha if alpha != 1 else a - b),
    "aten::mul.out": HostOp(2, lambda a, b: a * b),
    "aten::div.out": HostOp(2, lambda a, b: a / b),
    "aten::neg.out": HostOp(1, np.negative),
    "aten::relu.out": HostOp(1, lambda x: np.maximum(x, np.zeros((), x.dtype))),
    "aten::hardtanh.out": HostOp(3, _clamp),
    "aten::clamp.out": HostOp(3, _clamp),
    "aten::sigmoid.out": HostOp(1, lambda x: 1 / (1 + np.exp(-x))),
    "aten::tanh.out": HostOp(1, np.tanh),
    "aten::view_copy.out": HostOp(2, lambda x, size: np.reshape(x, size)),
    "aten::permute_copy.out": HostOp(2, lambda x, dims: np.transpose(x, dims)),
    "aten::unsqueeze_copy.out": HostOp(2, lambda x, dim: np.expand_dims(x, dim % (x.ndim + 1))),
    "aten::squeeze_copy.dims_out": HostOp(2, _squeeze),
    "aten::squeeze_copy.dim_out": HostOp(2, _squeeze),
    "aten::cat.out": HostOp(2, lambda xs, dim=0: np.concatenate(xs, axis=dim)),
    "aten::clone.out": HostOp(2, lambda x, memory_format=None: np.array(x)),
    # PyTorch's integer-index and layout kernels
    "aten::embedding.out": HostOp(5, lambda w, ids, padding_idx=-1, scale=False, sparse=False: w[ids]),
    "aten::index.Tensor_out": HostOp(2, lambda x, indices: x[_index(indices)]),
    "aten::index_put.out": HostOp(4, _index_put),
    "aten::index_put_": HostOp(4, _index_put, in_place=True),
    "aten::gather.out": HostOp(4, _gather),
    "aten::expand_copy.out": HostOp(3, _expand),
    "aten::slice_copy.Tensor_out": HostOp(5, _slice),
    "aten::select_copy.int_out": HostOp(3, lambda x, dim, index: np.take(x, index, axis=dim)),
    "aten::arange.out": HostOp(1, _arange),
    "aten::arange.start_out": HostOp(3, _arange),
    "aten::full.out": HostOp(2, lambda size, value: np.full(size, value)),
    "aten::full_like.out": HostOp(3, lambda x, value, memory_format=None: np.full(x.shape, value)),
    "aten::zeros.out": HostOp(1, lambda size: np.zeros(size)),
    "aten::ones.out": HostOp(1, lambda size: np.ones(size)),
    "aten::where.self_out": HostOp(3, np.where),
    "aten::copy.out": HostOp(3, lambda x, src, non_blocking=False: np.broadcast_to(src, x.shape)),
    "aten::copy_": HostOp(3, lambda x, src, non_blocking=False: np.broadcast_to(src, x.shape), in_place=True),
    "aten::_to_copy.out": HostOp(3, lambda x, non_blocking=False, memory_format=None: np.array(x)),
    # reductions (argmax / argmin: the first extreme; max.dim / min.dim: values and indices)
    "aten::argmax.out": HostOp(3, _arg_reduce(np.argmax)),
    "aten::argmin.out": HostOp(3, _arg_reduce(np.argmin)),
    "aten::max.dim_max": HostOp(3, _with_indices(np.max, np.argmax), outs=2),
    "aten::min.dim_min": HostOp(3, _with_indices(np.min, np.argmin), outs=2),
    "aten::max.unary_out": HostOp(1, np.max),
    "aten::min.unary_out": HostOp(1, np.min),
    "aten::amax.out": HostOp(3, lambda x, dims, keepdim=False: np.max(x, axes(dims, x.ndim), keepdims=keepdim)),
    "aten::amin.out": HostOp(3, lambda x, dims, keepdim=False: np.min(x, axes(dims, x.ndim), keepdims=keepdim)),
    "aten::sum.IntList_out": HostOp(
        4, lambda x, dims, keepdim=False, dtype=None: np.sum(x, axes(dims, x.ndim), keepdims=keepdim)
    ),
    "aten::mean.out": HostOp(
        4, lambda x, dims, keepdim=False, dtype=None: np.mean(x, axes(dims, x.ndim), keepdims=keepdim)
    ),
    "aten::max_pool2d_with_indices.out": HostOp(6, _max_pool_with_indices, outs=2),
    # bitwise and logical (bool tensors too), comparisons, remainder (the divisor's sign, as Python's %)
    "aten::bitwise_not.out": HostOp(1, np.invert),
    "aten::logical_not.out": HostOp(1, np.logical_not),
    "aten::remainder.Scalar_out": HostOp(2, np.mod),
    "aten::remainder.Tensor_out": HostOp(2, np.mod),
    # grid sampling; the FFT and the complex view ExecuTorch leaves for rfft2 (complex values stay on the host)
    "aten::grid_sampler_2d.out": HostOp(5, _grid_sample),
    "aten::_fft_r2c.out": HostOp(4, _fft_r2c),
    "aten::view_as_real_copy.out": HostOp(1, lambda x: np.stack([x.real, x.imag], axis=-1)),
}
for _op, _fn in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor),
                 ("logical_and", np.logical_and), ("logical_or", np.logical_or), ("logical_xor", np.logical_xor),
                 ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                 ("gt", np.greater), ("ge", np.greater_equal)):  # fmt: skip
    for _overload in ("Tensor_out", "Scalar_out") if not _op.startswith("logical") else ("out",):
        HOST_OPS[f"aten::{_op}.{_overload}"] = HostOp(2, _fn)
# ExecuTorch's dim-order copies (`x.to(dtype)`, `.clone()`, `.to(memory_format=...)`): (self, non_blocking,
# dim_order) -> out, whose dtype is the target (run casts to it); values here are in logical order, so the copy is
# one whatever the dim order. The kernel is registered under dim_order_ops::, older programs call aten::.
for _name in ("aten::_to_dim_order_copy.out", "dim_order_ops::_to_dim_order_copy.out",
              "aten::_clone_dim_order.out", "dim_order_ops::_clone_dim_order.out"):  # fmt: skip
    HOST_OPS[_name] = HostOp(3, lambda x, non_blocking=False, dim_order=None: np.array(x))


def check(plan: Plan, file: str | None) -> None:
    """Every host operator of `plan` is one of HOST_OPS, with the arguments it takes; else a TosaUnsupportedError
    naming the first that is not (at load, before any run)."""
    for index, ins in enumerate(plan.instructions):
        if not isinstance(ins, Kernel):
            continue
        op = HOST_OPS.get(ins.name)
        if op is None:
            raise TosaUnsupportedError(
                f"host operator {ins.name} (instruction {index}) is not one tosa_vk runs; it runs "
                f"{', '.join(sorted(HOST_OPS))} on the host and TOSA delegates on the backend",
                file=file,
            )
        wanted = op.inputs + (1 if op.in_place else op.outs)  # an in-place operator's out value is its first input
        outs = out_indices(ins)
        if len(ins.args) < wanted or not all(isinstance(plan.values[i], TensorValue) for i in outs):
            raise TosaUnsupportedError(
                f"host operator {ins.name} (instruction {index}): {len(ins.args)} arguments, expected {op.inputs} "
                f"inputs and {op.outs} out tensor(s)",
                file=file,
            )


def out_indices(kernel: Kernel) -> list[int]:
    """The plan values a host operator writes: its out tensors (an in-place one: its first argument)."""
    op = HOST_OPS[kernel.name]
    return list(kernel.args[:1] if op.in_place else kernel.args[op.inputs : op.inputs + op.outs])


def run(kernel: Kernel, env: list[Any], plan: Plan, file: str | None) -> None:
    """One host operator: its inputs read from `env` (the plan's values), its results stored at its out arguments
    and the returned values (the same tensors; a list of them for several). An in-place operator (copy_) writes its
    first argument's value: a method input it changes is changed for the rest of the run (ExecuTorch's write-back
    of an input the module changed), never the caller's array."""
    op = HOST_OPS[kernel.name]
    args = [_arg(env, plan, i) for i in kernel.args[: op.inputs]]
    outs = out_indices(kernel)
    try:
        results = op.fn(*args)
        results = [np.asarray(r) for r in (results if op.outs > 1 else (results,))]
    except (ValueError, TypeError, IndexError, np.exceptions.AxisError) as err:
        raise TosaError(f"host operator {kernel.name}: {err}", file=file) from None
    stored = []
    for index, result in zip(outs, results):
        out = plan.values[index]
        if result.size != int(np.prod(out.sizes, dtype=np.int64)):
            raise TosaError(f"host operator {kernel.name} made shape {list(result.shape)}, its out tensor is "
                            f"{list(out.sizes)}", file=file)  # fmt: skip
        value = result.reshape(out.sizes).astype(out.dtype, copy=False)
        env[index] = value
        stored.append(value)
    returned = kernel.args[op.inputs + (0 if op.in_place else op.outs) :]
    for i in returned:  # the returned value: the out tensor again (several: a list of them, which stays)
        if len(stored) == 1 and isinstance(plan.values[i], TensorValue):
            env[i] = stored[0]


def _arg(env: list[Any], plan: Plan, index: int) -> Any:
    value = env[index]
    if isinstance(value, TensorListValue):
        return [None if i is None else env[i] for i in value.items]
    if isinstance(value, IntListValue):  # ExecuTorch boxes an int list's members: value indices, as method.cpp reads
        return [env[i] for i in value.items]
    return value

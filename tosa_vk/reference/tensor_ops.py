"""Tensor operators (spec 2.3): ARGMAX, AVG_POOL2D, CONV2D, CONV3D, DEPTHWISE_CONV2D, FFT2D, MATMUL, MAX_POOL2D,
RFFT2D, TRANSPOSE_CONV2D; TOSA 1.1's AVG_POOL2D_ADAPTIVE / MAX_POOL2D_ADAPTIVE (the pools with kernel, stride and
pad as shape_t inputs) and MATMUL_T (B as [D,W,C], broadcast when D == 1; A and B of different types, either or
both block-scaled).

Floating-point dot products (convolutions, MATMUL, MATMUL_T) are summed in FLOAT_DOT (float32, see below), then
bias-added and rounded to the output type; FFTs and AVG_POOL2D run in float64 and round once. Integer dot products use
float32 / float64 BLAS, exact while every partial sum is an integer below 2**24 / 2**53 (checked, else int64), and
REQUIRE the int32 / int48 accumulator and output ranges on the final sums. Stride-1 convolutions are one matmul per
kernel tap over contiguous slices of the flattened padded input ("shifted GEMM"); strided ones one matmul per tap over
strided views.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from ..ir.ops import BlockScaled
from .numeric import apply_scale_32, mx_decode, reciprocal_scale, require_range, round_to
from .registry import Call, reference

# Floating-point dot products are summed in float32: products of fp16 / bf16 / fp8 are exact in it, and any summation
# order errs by at most ~KS * 2**-24 * sum|in * w|, inside the dot-product bound 2 * KS * 2**-24 * sum|in * w| of
# spec 1.10.3 (the bound's KS counts one more term for a bias). float64 would be 2-5x slower; set FLOAT_DOT to
# np.float64 to compare.
FLOAT_DOT = np.float32


# ---- helpers -------------------------------------------------------------------------------------------------------


def _ints(call: Call, name: str, default: int, n: int) -> list[int]:
    v = call.attr(name)
    return [default] * n if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def _zp(call: Call, index: int, allowed: bool, name: str) -> int | float:
    """A zero-point input; ERROR_IF it is non-zero for a type that has none ("Zero point only for int8_t")."""
    z = np.asarray(call.inputs[index]).reshape(-1)[:1]
    value = z.astype(np.float64)[0] if call.in_types[index].is_float else int(z.astype(np.int64)[0])
    call.error_if(not allowed and value != 0, f"!is_same<{name}_t,i8_t>() && {name}_zp != 0")
    return value


def _values(x: np.ndarray, zp, ct) -> np.ndarray:
    """x - zp in compute type ct (the zero point is 0 for every floating-point type)."""
    if zp:
        return np.subtract(x, zp, dtype=ct, casting="unsafe")
    return x.astype(ct)


def _finish(acc: np.ndarray, bias: np.ndarray, acc_t: DType, out_t: DType) -> np.ndarray:
    """out = static_cast<out_t>(acc) + bias[(BC == 1) ? 0 : oc]; acc's last axis is the output channel."""
    b = bias.reshape(-1)
    if out_t.is_float:
        if acc.dtype == np.float32 and out_t == DType.FP32:
            # A float32 sum plus bias rounds once more: within the bound, whose KS counts the bias (spec 1.10.3).
            return np.add(acc, b.astype(np.float32), dtype=np.float32)
        return round_to(np.add(acc, b.astype(np.float64), dtype=np.float64), out_t)
    require_range(acc, acc_t, "acc >= minimum_s<acc_t>() && acc <= maximum_s<acc_t>()")
    out = acc + b.astype(np.int64)
    require_range(out, out_t, "apply_add_s<out_t>(out, bias) in range")
    return out.astype(out_t.numpy)


def _bias_check(call: Call, bias: np.ndarray, oc: int) -> None:
    bc = bias.size
    call.error_if(bc != oc and bc != 1, "BC != OC && BC != 1")


def _out_size(call: Call, name: str, got: int, numer: int, stride: int) -> None:
    """ERROR_IF(O != idiv_check(numer, stride) + 1)."""
    call.error_if(numer % stride != 0, f"{name}: idiv_check({numer}, {stride}) has a remainder")
    call.error_if(got != numer // stride + 1, f"{name} != idiv_check({numer}, {stride}) + 1")


def _pad_input(x: np.ndarray, pads: list[tuple[int, int]], value=0) -> np.ndarray:
    """Pads the spatial axes (1 .. -2) of an [N, *spatial, C] array."""
    if not any(lo or hi for lo, hi in pads):
        return x
    return np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=value)


def _padded(x: np.ndarray, pads: list[tuple[int, int]], dtype, zp=0) -> np.ndarray:
    """x - zp as `dtype`, zero-padded on the spatial axes, in one contiguous copy."""
    shape = (x.shape[0], *(s + lo + hi for s, (lo, hi) in zip(x.shape[1:-1], pads)), x.shape[-1])
    out = np.zeros(shape, dtype=dtype)
    inner = tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[1:-1], pads))
    view = out[(slice(None), *inner, slice(None))]
    if zp:
        np.subtract(x, zp, out=view, dtype=dtype, casting="unsafe")
    else:
        view[...] = x
    return out


def _tap_slices(xp: np.ndarray, kernel, stride, dilation, out):
    """For each kernel tap (C order): the view of padded input xp [N, *spatial, C] it reads, [N, *out, C]."""
    for tap in itertools.product(*(range(k) for k in kernel)):
        idx = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, s, o in zip(tap, dilation, stride, out))
        yield tap, xp[(slice(None), *idx, slice(None))]


def _tap_mask(tap, stride, dilation, pads, sizes, out) -> np.ndarray:
    """Output positions whose input for this tap is inside the (unpadded) input; shape [*out] (broadcastable)."""
    mask = np.ones((1,) * len(out), dtype=bool)
    for axis, (t, s, d, (lo, _), size, o) in enumerate(zip(tap, stride, dilation, pads, sizes, out)):
        pos = np.arange(o) * s - lo + t * d
        shape = [1] * len(out)
        shape[axis] = o
        mask = mask & ((pos >= 0) & (pos < size)).reshape(shape)
    return mask


def _compute_type(in_t: DType, x: np.ndarray, w: np.ndarray, izp, wzp, taps):
    """numpy type the products are summed in: FLOAT_DOT for floating point; for integers float32 / float64 (BLAS) while
    every partial sum is an integer below 2**24 / 2**53, so exact in any summation order, else int64."""
    if in_t.is_float:
        return FLOAT_DOT
    if x.size == 0 or w.size == 0:
        return np.int64
    xm = max(abs(int(x.min()) - izp), abs(int(x.max()) - izp))
    wm = max(abs(int(w.min()) - wzp), abs(int(w.max()) - wzp))
    bound = float(xm) * wm * taps * x.shape[-1]  # KS = taps * IC
    return np.float32 if bound < 2.0**24 else np.float64 if bound < 2.0**53 else np.int64


def _to_acc(acc: np.ndarray, integer: bool) -> np.ndarray:
    """Integer sums computed in float32 / float64 back to int64; floating-point sums unchanged."""
    return np.rint(acc).astype(np.int64) if integer and acc.dtype != np.int64 else acc


def _shifted(x: np.ndarray, pads, ct, zp, kernel, dilation, out):
    """Stride-1 convolution layout ("shifted GEMM"): the padded input flattened per batch, xf [N, rows, C]. Output
    position q (flat over the padded grid, the first axis limited to the output rows) reads row q + offset(tap) for
    each tap, so each tap's operand is the contiguous slice xf[:, offset:offset + q_len]. Positions past the output
    width (and height, for 3D) are computed too; crop(acc [N, q_len, C']) drops them -> [N, *out, C']."""
    sizes = x.shape[1:-1]
    padded = [s + lo + hi for s, (lo, hi) in zip(sizes, pads)]
    flat = [int(np.prod(padded[i + 1 :])) for i in range(len(padded))]  # flat stride of each spatial axis
    offsets = [
        sum(t * d * f for t, d, f in zip(tap, dilation, flat)) for tap in itertools.product(*(range(k) for k in kernel))
    ]
    q_len = out[0] * flat[0]
    extra = -(-max(0, offsets[-1] + q_len - padded[0] * flat[0]) // flat[0])  # rows so the last slice fits
    xp = _padded(x, [(pads[0][0], pads[0][1] + extra), *pads[1:]], ct, zp)
    xf = xp.reshape(x.shape[0], -1, x.shape[-1])

    def crop(acc: np.ndarray) -> np.ndarray:
        full = acc.reshape(x.shape[0], out[0], *padded[1:], acc.shape[-1])
        return full[(slice(None), slice(None), *(slice(o) for o in out[1:]))]

    return xf, offsets, q_len, crop


def _weights(call: Call, w: np.ndarray, wzp, ct, taps: int) -> np.ndarray:
    """w - wzp as [taps, IC, OC] in compute type ct; kept on the Call for the next run while the same weight array
    (a constant) comes back (the Call holds it, so its id cannot be reused)."""
    key = (ct, wzp)
    cached = call.extra.get("weights")
    if cached is not None and cached[0] is w and cached[1] == key:
        return cached[2]
    oc, ic = w.shape[0], w.shape[-1]
    wt = np.ascontiguousarray(_values(w, wzp, ct).reshape(oc, taps, ic).transpose(1, 2, 0))
    call.extra["weights"] = (w, key, wt)
    return wt


def _decoded(call: Call, index: int, name: str) -> tuple[np.ndarray, DType]:
    """Input `index` of a convolution and its type; a block-scaled one (TOSA 1.1) as tensor_read<in_t, acc_t> reads
    it: each element value x its block's scale, here in float32 (exact but where fp32 / bf16 overflow, as the spec's
    product in acc_t does), typed FP32 from then on."""
    x, t = call.inputs[index], call.in_types[index]
    scale = call.scales[index] if index < len(call.scales) else None
    if scale is None:
        return x, t
    block = BlockScaled(t).block
    call.error_if(x.shape[-1] % block != 0, f"is_block_scale<{name}_t>() && IC % get_innermost_block_size() != 0")
    with np.errstate(over="ignore"):
        return mx_decode(x, t, scale, block).astype(np.float32), DType.FP32


def _conv_nd(call: Call, nd: int):
    """CONV2D / CONV3D: input [N, *spatial, IC], weight [OC, *kernel, IC]. TOSA 1.1 mixes floating-point input and
    weight types and block-scaled operands (decoded first); products are summed in FLOAT_DOT all the same."""
    (x, in_t), (w, w_t) = _decoded(call, 0, "in"), _decoded(call, 1, "weight")
    bias = call.inputs[2]
    out_t = call.out_types[0]
    acc_t = call.attr("acc_type", out_t)
    izp = _zp(call, 3, in_t == DType.INT8, "in")
    wzp = _zp(call, 4, w_t == DType.INT8, "weight")
    pad = _ints(call, "pad", 0, 2 * nd)
    stride = _ints(call, "stride", 1, nd)
    dilation = _ints(call, "dilation", 1, nd)
    call.error_if(any(p < 0 for p in pad), "pad < 0")
    call.error_if(any(s < 1 for s in stride), "stride < 1")
    call.error_if(any(d < 1 for d in dilation), "dilation < 1")
    n, sizes, ic = x.shape[0], x.shape[1:-1], x.shape[-1]
    oc, kernel = w.shape[0], tuple(w.shape[1:-1])
    out_shape = call.out_shapes[0]
    out = tuple(out_shape[1:-1])
    pads = [(pad[2 * i], pad[2 * i + 1]) for i in range(nd)]
    for i, axis in enumerate("DHW"[-nd:]):
        _out_size(
            call, "O" + axis, out[i], sizes[i] - 1 + pads[i][0] + pads[i][1] - (kernel[i] - 1) * dilation[i], stride[i]
        )
    _bias_check(call, bias, oc)
    call.error_if(out_shape[-1] != oc or out_shape[0] != n or w.shape[-1] != ic, "shape mismatch")
    integer = not in_t.is_float
    taps = int(np.prod(kernel))
    ct = _compute_type(in_t, x, w, izp, wzp, taps)
    wt = _weights(call, w, wzp, ct, taps)
    # Padding reads zeros; a non-finite weight times a padded zero would make a NaN the spec never computes
    # (padded multiplies are skipped), so such graphs mask each tap's products instead.
    masked = not integer and any(lo or hi for lo, hi in pads) and not np.isfinite(wt).all()
    if masked or any(s != 1 for s in stride) or ct == np.int64:
        xp = _padded(x, pads, ct, izp)
        acc = np.zeros((n, *out, oc), dtype=ct)
        with np.errstate(invalid="ignore", over="ignore"):
            for i, (tap, view) in enumerate(_tap_slices(xp, kernel, stride, dilation, out)):
                contrib = np.matmul(view.reshape(-1, ic), wt[i]).reshape(acc.shape)
                if masked:
                    contrib = np.where(_tap_mask(tap, stride, dilation, pads, sizes, out)[None, ..., None], contrib, 0)
                acc += contrib
        return _finish(_to_acc(acc, integer), bias, acc_t, out_t)
    xf, offsets, q_len, crop = _shifted(x, pads, ct, izp, kernel, dilation, out)
    acc = np.empty((n, q_len, oc), dtype=ct)
    with np.errstate(invalid="ignore", over="ignore"):
        for b in range(n):
            np.matmul(xf[b, offsets[0] : offsets[0] + q_len], wt[0], out=acc[b])
            for o, wk in zip(offsets[1:], wt[1:]):
                acc[b] += xf[b, o : o + q_len] @ wk
    return _finish(_to_acc(crop(acc), integer), bias, acc_t, out_t)


# ---- operators -----------------------------------------------------------------------------------------------------


@reference("ARGMAX")
def ARGMAX(call: Call):
    x = call.inputs[0]
    axis = int(call.attr("axis", 0))
    call.error_if(axis < 0 or axis >= x.ndim, "axis < 0 || axis >= rank(shape1)")
    call.error_if(
        tuple(call.out_shapes[0]) != x.shape[:axis] + x.shape[axis + 1 :], "flatten(left_shape, right_shape) != shape"
    )
    out_t = call.out_types[0].numpy  # i32_t, or i64_t (EXT-INT64)
    if not call.in_types[0].is_float:
        return np.argmax(x, axis=axis).astype(out_t)
    v = x.astype(np.float32)  # exact for every TOSA float type
    ignore = call.attr("nan_mode") == NanPropagationMode.IGNORE
    with np.errstate(invalid="ignore"):
        m = (np.fmax if ignore else np.maximum).reduce(v, axis=axis, keepdims=True)
    # First index equal to the maximum (-0 == +0, NaN matches NaN): a NaN maximum means "propagate, first NaN"
    # or "ignore, every value NaN" (then index 0, which the NaN test also gives).
    hit = (v == m) | (np.isnan(v) & np.isnan(m))
    return np.argmax(hit, axis=axis).astype(out_t)


def _pool_args(call: Call, kernel: list[int], stride: list[int], pad: list[int]):
    x = call.inputs[0]
    call.error_if(kernel[0] < 1 or kernel[1] < 1, "kernel_y < 1 || kernel_x < 1")
    call.error_if(stride[0] < 1 or stride[1] < 1, "stride_y < 1 || stride_x < 1")
    call.error_if(min(pad) < 0, "pad_top < 0 || pad_bottom < 0 || pad_left < 0 || pad_right < 0")
    call.error_if(pad[3] >= kernel[1] or pad[2] >= kernel[1], "pad_right >= kernel_x || pad_left >= kernel_x")
    call.error_if(pad[0] >= kernel[0] or pad[1] >= kernel[0], "pad_top >= kernel_y || pad_bottom >= kernel_y")
    n, ih, iw, c = x.shape
    out = call.out_shapes[0]
    _out_size(call, "OH", out[1], ih + pad[0] + pad[1] - kernel[0], stride[0])
    _out_size(call, "OW", out[2], iw + pad[2] + pad[3] - kernel[1], stride[1])
    call.error_if(out[0] != n or out[3] != c, "output shape != [N,OH,OW,C]")
    return kernel, stride, [(pad[0], pad[1]), (pad[2], pad[3])], tuple(out[1:3])


def _pool(xp: np.ndarray, kernel, stride, out, combine):
    acc = None
    for _, view in _tap_slices(xp, kernel, stride, (1, 1), out):
        acc = view.copy() if acc is None else combine(acc, view, out=acc)
    return acc


def _attr_window(call: Call) -> tuple[list[int], list[int], list[int]]:
    """kernel, stride, pad of AVG_POOL2D / MAX_POOL2D (attributes)."""
    return _ints(call, "kernel", 1, 2), _ints(call, "stride", 1, 2), _ints(call, "pad", 0, 4)


def _input_window(call: Call, first: int) -> tuple[list[int], list[int], list[int]]:
    """kernel, stride, pad of the _ADAPTIVE pools: shape_t inputs first .. first + 2."""
    kernel, stride, pad = ([int(v) for v in np.asarray(call.inputs[first + i]).reshape(-1)] for i in range(3))
    call.error_if(len(kernel) != 2 or len(stride) != 2 or len(pad) != 4, "kernel, stride, pad not of [2], [2], [4]")
    return kernel, stride, pad


@reference("AVG_POOL2D")
def AVG_POOL2D(call: Call):
    return _avg_pool2d(call, *_attr_window(call))


@reference("AVG_POOL2D_ADAPTIVE")
def AVG_POOL2D_ADAPTIVE(call: Call):
    return _avg_pool2d(call, *_input_window(call, 3))


def _avg_pool2d(call: Call, kernel: list[int], stride: list[int], pad: list[int]):
    x = call.inputs[0]
    t = call.in_types[0]
    izp = _zp(call, 1, t == DType.INT8, "in_out")
    ozp = _zp(call, 2, t == DType.INT8, "in_out")
    kernel, stride, pads, out = _pool_args(call, kernel, stride, pad)
    # Number of valid (non-padding) input positions per output row / column.
    counts = []
    for o, k, s, (lo, _), size in zip(out, kernel, stride, pads, x.shape[1:3]):
        start = np.arange(o) * s - lo
        counts.append(np.minimum(start + k, size) - np.maximum(start, 0))
    count = counts[0][:, None] * counts[1][None, :]  # [OH, OW]
    if t.is_float:
        acc = _pool(_pad_input(x.astype(np.float64), pads), kernel, stride, out, np.add)
        return round_to(acc / count[None, :, :, None], t)
    acc = _pool(_pad_input(x.astype(np.int64) - izp, pads), kernel, stride, out, np.add)
    require_range(acc, DType.INT32, "apply_add_s<acc_t>(acc, value) in range")
    uniq, inverse = np.unique(count, return_inverse=True)
    scales = np.array([reciprocal_scale(int(c)) for c in uniq], dtype=np.int64)
    mult = scales[inverse.reshape(count.shape), 0][None, :, :, None]
    shift = scales[inverse.reshape(count.shape), 1][None, :, :, None]
    acc = apply_scale_32(acc, mult, shift, False) + ozp
    lo, hi = t.int_range
    return np.clip(acc, lo, hi).astype(t.numpy)


@reference("MAX_POOL2D")
def MAX_POOL2D(call: Call):
    return _max_pool2d(call, *_attr_window(call))


@reference("MAX_POOL2D_ADAPTIVE")
def MAX_POOL2D_ADAPTIVE(call: Call):
    return _max_pool2d(call, *_input_window(call, 1))


def _max_pool2d(call: Call, kernel: list[int], stride: list[int], pad: list[int]):
    x = call.inputs[0]
    t = call.in_types[0]
    kernel, stride, pads, out = _pool_args(call, kernel, stride, pad)
    if not t.is_float:
        return _pool(_pad_input(x, pads, t.int_range[0]), kernel, stride, out, np.maximum)
    ignore = call.attr("nan_mode") == NanPropagationMode.IGNORE
    v = x if x.dtype in (np.float32, np.float16) else x.astype(np.float32)  # exact
    # Padding never wins: -inf under PROPAGATE (maximum), NaN under IGNORE (fmax skips NaN).
    xp = _pad_input(v, pads, np.nan if ignore else -np.inf)
    with np.errstate(invalid="ignore"):
        acc = _pool(xp, kernel, stride, out, np.fmax if ignore else np.maximum)
    return acc.astype(t.numpy)


@reference("CONV2D")
def CONV2D(call: Call):
    return _conv_nd(call, 2)


@reference("CONV3D")
def CONV3D(call: Call):
    return _conv_nd(call, 3)


@reference("DEPTHWISE_CONV2D")
def DEPTHWISE_CONV2D(call: Call):
    x, w, bias = call.inputs[:3]
    in_t, w_t, out_t = call.in_types[0], call.in_types[1], call.out_types[0]
    acc_t = call.attr("acc_type", out_t)
    izp = _zp(call, 3, in_t == DType.INT8, "in")
    wzp = _zp(call, 4, w_t == DType.INT8, "weight")
    pad = _ints(call, "pad", 0, 4)
    stride = _ints(call, "stride", 1, 2)
    dilation = _ints(call, "dilation", 1, 2)
    call.error_if(min(pad) < 0, "pad_top < 0 || pad_bottom < 0 || pad_left < 0 || pad_right < 0")
    call.error_if(min(stride) < 1, "stride_y < 1 || stride_x < 1")
    call.error_if(min(dilation) < 1, "dilation_y < 1 || dilation_x < 1")
    n, ih, iw, c = x.shape
    kh, kw, wc, mult = w.shape
    out_shape = call.out_shapes[0]
    out = tuple(out_shape[1:3])
    pads = [(pad[0], pad[1]), (pad[2], pad[3])]
    _out_size(call, "OH", out[0], ih - 1 + pad[0] + pad[1] - (kh - 1) * dilation[0], stride[0])
    _out_size(call, "OW", out[1], iw - 1 + pad[2] + pad[3] - (kw - 1) * dilation[1], stride[1])
    call.error_if(bias.size != c * mult and bias.size != 1, "BC != C*M && BC != 1")
    call.error_if(wc != c or out_shape[-1] != c * mult, "shape mismatch")
    integer = not in_t.is_float
    ct = _compute_type(in_t, x, w, izp, wzp, kh * kw / max(c, 1))  # a dot product has KH * KW terms
    wv = _values(w, wzp, ct)
    xp = _padded(x, pads, ct, izp)
    masked = not integer and any(lo or hi for lo, hi in pads) and not np.isfinite(wv).all()
    if not masked and stride == [1, 1]:
        xf, offsets, q_len, crop = _shifted(x, pads, ct, izp, (kh, kw), dilation, out)
        acc = np.zeros((n, q_len, c, mult), dtype=ct)
        with np.errstate(invalid="ignore", over="ignore"):
            for o, wk in zip(offsets, wv.reshape(kh * kw, c, mult)):
                acc += xf[:, o : o + q_len, :, None] * wk
        return _finish(_to_acc(crop(acc.reshape(n, q_len, c * mult)), integer), bias, acc_t, out_t)
    acc = np.zeros((n, *out, c, mult), dtype=ct)
    with np.errstate(invalid="ignore", over="ignore"):
        for tap, view in _tap_slices(xp, (kh, kw), stride, dilation, out):
            contrib = view[..., None] * wv[tap]
            if masked:
                mask = _tap_mask(tap, stride, dilation, pads, (ih, iw), out)[None, ..., None, None]
                contrib = np.where(mask, contrib, 0)
            acc += contrib
    return _finish(_to_acc(acc.reshape(n, *out, c * mult), integer), bias, acc_t, out_t)


@reference("TRANSPOSE_CONV2D")
def TRANSPOSE_CONV2D(call: Call):
    x, w, bias = call.inputs[:3]
    in_t, w_t, out_t = call.in_types[0], call.in_types[1], call.out_types[0]
    acc_t = call.attr("acc_type", out_t)
    izp = _zp(call, 3, in_t == DType.INT8, "in")
    wzp = _zp(call, 4, w_t == DType.INT8, "weight")
    top, bottom, left, right = _ints(call, "out_pad", 0, 4)
    sy, sx = _ints(call, "stride", 1, 2)
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    call.error_if(top <= -kh or bottom <= -kh, "out_pad_top <= -KH || out_pad_bottom <= -KH")
    call.error_if(left <= -kw or right <= -kw, "out_pad_left <= -KW || out_pad_right <= -KW")
    call.error_if(sy < 1 or sx < 1, "stride_y < 1 || stride_x < 1")
    _, oh, ow, _ = call.out_shapes[0]
    call.error_if(
        oh != (ih - 1) * sy + top + bottom + kh, "OH != (IH - 1) * stride_y + out_pad_top + out_pad_bottom + KH"
    )
    call.error_if(
        ow != (iw - 1) * sx + left + right + kw, "OW != (IW - 1) * stride_x + out_pad_left + out_pad_right + KW"
    )
    _bias_check(call, bias, oc)
    integer = not in_t.is_float
    ct = _compute_type(in_t, x, w, izp, wzp, kh * kw)
    xv = _values(x, izp, ct).reshape(-1, ic)
    wv = np.ascontiguousarray(_values(w, wzp, ct).transpose(1, 2, 3, 0))  # [KH, KW, IC, OC]
    # Scatter each input pixel's products: input (iy, ix) through tap (ky, kx) lands on
    # (iy * stride_y + ky + out_pad_top, ix * stride_x + kx + out_pad_left).
    fh, fw = (ih - 1) * sy + kh, (iw - 1) * sx + kw
    full = np.zeros((n, fh, fw, oc), dtype=ct)
    with np.errstate(invalid="ignore", over="ignore"):
        for ky in range(kh):
            for kx in range(kw):
                full[:, ky : ky + (ih - 1) * sy + 1 : sy, kx : kx + (iw - 1) * sx + 1 : sx] += (
                    xv @ wv[ky, kx]
                ).reshape(n, ih, iw, oc)
    acc = np.zeros((n, oh, ow, oc), dtype=ct)
    y0, x0 = max(top, 0), max(left, 0)  # first output row / column fed by the full result
    fy0, fx0 = max(-top, 0), max(-left, 0)  # first row / column of the full result kept
    hh, ww = min(fh - fy0, oh - y0), min(fw - fx0, ow - x0)
    if hh > 0 and ww > 0:
        acc[:, y0 : y0 + hh, x0 : x0 + ww] = full[:, fy0 : fy0 + hh, fx0 : fx0 + ww]
    return _finish(_to_acc(acc, integer), bias, acc_t, out_t)


@reference("MATMUL")
def MATMUL(call: Call):
    a, b = call.inputs[:2]
    in_t, out_t = call.in_types[0], call.out_types[0]
    # The spec's ERROR_IF reads is_same<in_t,i8_t>; its comment ("Zero point only for i8_t") means the negation.
    azp = _zp(call, 2, in_t == DType.INT8, "A")
    bzp = _zp(call, 3, in_t == DType.INT8, "B")
    call.error_if(a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1], "A [N,H,C] and B [N,C,W] do not match")
    integer = not in_t.is_float
    ct = _compute_type(in_t, a, b, azp, bzp, 1)
    with np.errstate(invalid="ignore", over="ignore"):
        acc = _to_acc(np.matmul(_values(a, azp, ct), _values(b, bzp, ct)), integer)
    if out_t.is_float:
        return acc if acc.dtype == out_t.numpy else round_to(acc, out_t)
    require_range(acc, out_t, "apply_add_s<out_t>(acc, value1 * value2) in range")
    return acc.astype(out_t.numpy)


@reference("MATMUL_T")
def MATMUL_T(call: Call):
    a, b = call.inputs[:2]
    a_t, b_t, out_t = call.in_types[0], call.in_types[1], call.out_types[0]
    a_scale, b_scale = (call.scales or [None, None])[:2]
    azp = _zp(call, 2, a_t == DType.INT8 and a_scale is None, "A")
    bzp = _zp(call, 3, b_t == DType.INT8 and b_scale is None, "B")
    n, _, c = a.shape
    d, _, c2 = b.shape
    call.error_if(d != n and d != 1, "D != N && D != 1")
    call.error_if(c2 != c, "A [N,H,C] and B [D,W,C] do not match")
    if a_scale is not None or b_scale is not None:
        # block-scaled A and / or B (1.1): tensor_read<A_t, out_t> reads value x scale
        av, bv = _scaled_read(a, a_t, a_scale), _scaled_read(b, b_t, b_scale)
        with np.errstate(invalid="ignore", over="ignore"):
            return round_to(np.matmul(av, bv.transpose(0, 2, 1)), out_t)
    integer = not a_t.is_float
    ct = _compute_type(a_t, a, b, azp, bzp, 1)
    with np.errstate(invalid="ignore", over="ignore"):
        # B^T as a [D, C, W] view; matmul broadcasts its D == 1 over N
        acc = _to_acc(np.matmul(_values(a, azp, ct), _values(b, bzp, ct).transpose(0, 2, 1)), integer)
    if out_t.is_float:
        return acc if acc.dtype == out_t.numpy else round_to(acc, out_t)
    require_range(acc, out_t, "apply_add_s<out_t>(acc, apply_mul_s<out_t>(value1, value2)) in range")
    return acc.astype(out_t.numpy)


def _scaled_read(x: np.ndarray, dtype: DType, scales: np.ndarray | None) -> np.ndarray:
    """float64 values of a MATMUL_T operand: a block-scaled one's value x scale rounded to fp32, its
    access_elem_type (an fp32 overflow is an infinity, as in the spec), a plain one as it is. Products and sums are
    then float64: within the dot-product bound of the spec's out_t sums."""
    if scales is None:
        return x.astype(np.float64)
    decoded = mx_decode(x, dtype, scales, x.shape[-1] // scales.shape[-1] if scales.shape[-1] else 1)
    with np.errstate(over="ignore"):
        return decoded.astype(np.float32).astype(np.float64)


def _fft_shape(call: Call, x: np.ndarray) -> None:
    h, w = x.shape[1:]
    call.error_if(h < 1 or h & (h - 1), "!power_of_two(H)")
    call.error_if(w < 1 or w & (w - 1), "!power_of_two(W)")


@reference("FFT2D")
def FFT2D(call: Call):
    re_, im = call.inputs[:2]
    _fft_shape(call, re_)
    call.error_if(re_.shape != im.shape, "input_real and input_imag shapes differ")
    z = np.empty(re_.shape, dtype=np.complex128)
    z.real, z.imag = re_, im
    # No normalisation either way: numpy's "forward" norm scales only the forward transform.
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.fft.ifft2(z, axes=(1, 2), norm="forward") if call.attr("inverse", False) else np.fft.fft2(z, axes=(1, 2))
    t = call.out_types[0]
    return [round_to(r.real, t), round_to(r.imag, t)]


@reference("RFFT2D")
def RFFT2D(call: Call):
    x = call.inputs[0]
    _fft_shape(call, x)
    n, h, w = x.shape
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.fft.rfft2(x.astype(np.float64), axes=(1, 2))
    imag = r.imag.copy()
    # The imaginary part at (0,0), (0,W/2), (H/2,0), (H/2,W/2) is exactly zero (or skipped, then zero).
    rows, cols = sorted({0, h // 2}), sorted({0, w // 2})
    imag[:, np.ix_(rows, cols)[0], np.ix_(rows, cols)[1]] = 0.0
    t = call.out_types[0]
    return [round_to(r.real, t), round_to(imag, t)]


# ---- TOSA 1.1 block-scaled (MX) operators --------------------------------------------------------------------------
# Elements are decoded with their block's scale into float64 (exact) and summed there: the spec's per-block fp32
# sums scaled by the product of the two scales differ only by rounding, well inside the dot-product bound.


@reference("MATMUL_T_BLOCK_SCALED")
def MATMUL_T_BLOCK_SCALED(call: Call):
    a, a_scale, b, b_scale = call.inputs
    block = int(call.attr("block_size", 0))
    av = mx_decode(a, call.in_types[0], a_scale, block)
    bv = mx_decode(b, call.in_types[2], b_scale, block)  # [D, W, C], D is 1 (broadcast) or N
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(np.matmul(av, bv.transpose(0, 2, 1)), call.out_types[0])


@reference("CONV2D_BLOCK_SCALED")
def CONV2D_BLOCK_SCALED(call: Call):
    x, x_scale, w, w_scale, bias = call.inputs[:5]
    pad, stride, dilation = (np.asarray(v).astype(np.int64).tolist() for v in call.inputs[5:8])
    block = int(call.attr("block_size", 0))
    xv = mx_decode(x, call.in_types[0], x_scale, block)
    wv = mx_decode(w, call.in_types[2], w_scale, block)
    oc, kernel, ic = w.shape[0], tuple(w.shape[1:3]), w.shape[-1]
    out = tuple(call.out_shapes[0][1:3])
    pads = [(pad[0], pad[1]), (pad[2], pad[3])]
    xp = _pad_input(xv, pads)
    acc = np.zeros((x.shape[0], *out, oc), dtype=np.float64)
    masked = any(pad) and not np.isfinite(wv).all()  # padded multiplies are skipped: no 0 x Inf there
    with np.errstate(invalid="ignore", over="ignore"):
        for tap, view in _tap_slices(xp, kernel, stride, dilation, out):
            contrib = np.matmul(view.reshape(-1, ic), wv[:, tap[0], tap[1], :].T).reshape(acc.shape)
            if masked:
                contrib = np.where(
                    _tap_mask(tap, stride, dilation, pads, x.shape[1:3], out)[None, ..., None], contrib, 0
                )
            acc += contrib
        return round_to(acc + bias.astype(np.float64), call.out_types[0])

"""Prepared operators: for the common fp32 cases whose every ERROR_IF / REQUIRE is decided by the graph alone (the
interpreter validated it at load), one closure per operator made once when a block is prepared — no per-run
checks, attribute lookups or float64 detours where float32 arithmetic rounds identically (an fp32 add, subtract,
multiply, maximum or minimum is correctly rounded either way). Each computes exactly what its chapter function
computes, bit for bit (tests/test_reference_prepared.py); anything else gets None and runs the chapter function.

Integer operators keep their value-dependent REQUIREs: where one might not hold, the closure hands the inputs to
the chapter function (`slow`), which reports it as always.

A preparer takes the operator's Call (types, shapes, attributes), the values of its constant inputs (None for
the others) and `slow` (the chapter function on the same inputs), and returns a function of the operator's input
values, in spec order, giving its one output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from .registry import Call, registrar

Run = Callable[..., np.ndarray]
PREPARED: dict[str, Callable[[Call, list[Any], Run], Run | None]] = {}


prepared = registrar(PREPARED, "prepared closures")


def _fp32(call: Call) -> bool:
    """Every tensor input but shape / shift / zero-point parameters, and the output, fp32."""
    return call.out_types == [DType.FP32] and call.in_types[0] == DType.FP32


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


_BINARY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}


@prepared("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM")
def binary(call: Call, constants: list, slow: Run) -> Run | None:
    if call.in_types[:2] == [DType.INT32, DType.INT32] and call.out_types == [DType.INT32]:
        return _int32_binary(call, constants, slow)
    if not _fp32(call) or call.in_types[1] != DType.FP32:
        return None
    if call.name == "MUL" and (constants[2] is None or _ints(constants[2]) != [0]):
        return None  # a shift other than 0 is a REQUIRE failure the chapter function reports
    if call.name in _BINARY:
        fn = _BINARY[call.name]
    else:
        ignore = call.attr("nan_mode") == NanPropagationMode.IGNORE
        fn = {"MAXIMUM": np.fmax if ignore else np.maximum, "MINIMUM": np.fmin if ignore else np.minimum}[call.name]

    def run(a, b, *_):
        with np.errstate(all="ignore"):
            return fn(a, b)

    return run


@prepared("SIGMOID", "TANH")
def activation(call: Call, constants: list, slow: Run) -> Run | None:
    if not _fp32(call):
        return None
    if call.name == "TANH":
        return lambda x: np.tanh(x.astype(np.float64)).astype(np.float32)

    def sigmoid(x):
        with np.errstate(all="ignore"):
            return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)

    return sigmoid


@prepared("SLICE")
def slice_(call: Call, constants: list, slow: Run) -> Run | None:
    if constants[1] is None or constants[2] is None:
        return None
    index = tuple(slice(s, s + n) for s, n in zip(_ints(constants[1]), _ints(constants[2])))
    return lambda x, *_: x[index].copy()


@prepared("RESHAPE")
def reshape(call: Call, constants: list, slow: Run) -> Run | None:
    shape = tuple(call.out_shapes[0])
    return lambda x, *_: x.reshape(shape)


@prepared("CONCAT")
def concat(call: Call, constants: list, slow: Run) -> Run | None:
    axis = int(call.attr("axis", 0))
    return lambda *xs: np.concatenate(xs, axis=axis)


@prepared("CONV2D")
def conv2d(call: Call, constants: list, slow: Run) -> Run | None:
    """A 1x1, stride-1, unpadded CONV2D with constant weights and zero points (a fully connected layer), fp32 or
    int8: the weights laid out once, then the chapter function's per-batch matmul — for int8 in fp32, exact while
    any sum of products stays below 2^24, which the weights alone decide here — and bias add."""
    w, izp, wzp = constants[1], constants[3], constants[4]
    if w is None or izp is None or wzp is None or w.shape[1:3] != (1, 1):
        return None
    if any(_ints(call.attr("pad", [0]))) or set(_ints(call.attr("stride", [1]))) != {1}:
        return None
    oc, ic = w.shape[0], w.shape[-1]
    shape = tuple(call.out_shapes[0])
    x_t, w_t, out_t = call.in_types[0], call.in_types[1], call.out_types[0]
    if x_t == w_t == DType.INT8 and out_t == DType.INT32 and call.attr("acc_type", DType.INT32) == DType.INT32:
        zx, zw = _ints(izp)[0], _ints(wzp)[0]
        wv = w.astype(np.int64).reshape(oc, ic) - zw
        if (128 + abs(zx)) * int(np.abs(wv).max(initial=0)) * ic >= 1 << 24:
            return None
        wt = np.ascontiguousarray(wv.T.astype(np.float32))
        lo, hi = DType.INT32.int_range

        def run_int8(x, _w, bias, *_):
            acc = _per_batch(np.subtract(x, zx, dtype=np.float32), wt)
            out = np.rint(acc).astype(np.int64) + bias.reshape(-1).astype(np.int64)
            if out.size and (out.min() < lo or out.max() > hi):
                return slow(x, _w, bias, *_)
            return out.astype(np.int32).reshape(shape)

        return run_int8
    if not _fp32(call) or w_t != DType.FP32 or call.attr("acc_type", DType.FP32) != DType.FP32:
        return None
    if _ints(izp) != [0] or _ints(wzp) != [0]:
        return None
    wt = np.ascontiguousarray(w.astype(np.float32).reshape(oc, ic).T)

    def run(x, _w, bias, *_):
        with np.errstate(invalid="ignore", over="ignore"):
            acc = _per_batch(np.ascontiguousarray(x, dtype=np.float32), wt)
        return np.add(acc, bias.reshape(-1).astype(np.float32), dtype=np.float32).reshape(shape)

    return run


def _per_batch(x: np.ndarray, wt: np.ndarray) -> np.ndarray:
    """x [N, ..., IC] (fp32) times wt [IC, OC], one matmul per batch as the chapter function does: [N, pixels, OC]."""
    xf = x.reshape(x.shape[0], -1, wt.shape[0])
    acc = np.empty((xf.shape[0], xf.shape[1], wt.shape[1]), dtype=np.float32)
    for b in range(xf.shape[0]):
        np.matmul(xf[b], wt, out=acc[b])
    return acc


def _int32_binary(call: Call, constants: list, slow: Run) -> Run | None:
    """int32 ADD / SUB / MUL (shift 0) / MAXIMUM / MINIMUM in int64; a sum or difference outside int32 (a REQUIRE)
    goes to the chapter function. MUL keeps the product's low 32 bits, as apply_mul_s does."""
    lo, hi = DType.INT32.int_range
    if call.name in ("MAXIMUM", "MINIMUM"):
        pick = np.maximum if call.name == "MAXIMUM" else np.minimum
        return lambda a, b: pick(a, b)
    if call.name == "MUL":
        if constants[2] is None or _ints(constants[2]) != [0]:
            return None
        return lambda a, b, *_: np.multiply(a, b, dtype=np.int64).astype(np.int32)
    fn = _BINARY[call.name]

    def run(a, b):
        c = fn(a, b, dtype=np.int64)
        if c.size and (c.min() < lo or c.max() > hi):
            return slow(a, b)
        return c.astype(np.int32)

    return run


@prepared("RESCALE")
def rescale(call: Call, constants: list, slow: Run) -> Run | None:
    """Signed RESCALE with constant multiplier, shift and zero points: the scale arithmetic of apply_scale_32 /
    apply_scale_16 with its per-channel values broadcast once. The REQUIRE on the input's range is decided when
    the shifts leave room for every input value, else checked per run."""
    from ..ir.graph import RoundingMode

    in_t, out_t = call.in_types[0], call.out_types[0]
    if any(c is None for c in constants[1:5]) or call.attr("input_unsigned") or call.attr("output_unsigned"):
        return None
    if in_t not in (DType.INT8, DType.INT16, DType.INT32) or out_t not in (DType.INT8, DType.INT16, DType.INT32):
        return None
    scale32 = bool(call.attr("scale32", False))
    double = RoundingMode(call.attr("rounding_mode", RoundingMode.SINGLE_ROUND)) == RoundingMode.DOUBLE_ROUND
    in_zp, out_zp = _ints(constants[3])[0], _ints(constants[4])[0]
    if (in_t != DType.INT8 and in_zp) or (out_t != DType.INT8 and out_zp) or (double and not scale32):
        return None  # an ERROR_IF the chapter function reports
    multiplier = np.asarray(constants[1]).astype(np.int64).reshape(-1)
    shift = np.asarray(constants[2]).astype(np.int64).reshape(-1)
    if not call.attr("per_channel", False):
        multiplier, shift = multiplier[:1], shift[:1]
    if (multiplier < 0).any() or ((shift < 2) | (shift > 62)).any():
        return None
    half = np.left_shift(np.int64(1), shift - 1)
    rounding = half
    if double:  # apply_scale_32's double rounding: +-2^30 more when shift > 31
        up = np.where(shift > 31, half + (1 << 30), half)
        down = np.where(shift > 31, half - (1 << 30), half)
    checked = (1 << (in_t.bits - 1)) + abs(in_zp) > int(half.min())  # else |value| < half for every input
    lo, hi = out_t.int_range
    shape = tuple(call.out_shapes[0])  # (a rank-0 input broadcast with the [1] multiplier would be [1])

    def run(x, *rest):
        value = x.astype(np.int64) - in_zp
        if checked and value.size and ((value < -half).any() or (value >= half).any()):
            return slow(x, *rest)
        r = np.where(value >= 0, up, down) if double else rounding
        result = ((value * multiplier + r) >> shift) + out_zp  # |scaled| < 2^30: the int32 REQUIREs hold
        return np.clip(result, lo, hi).astype(out_t.numpy).reshape(shape)

    return run


@prepared("TABLE")
def table(call: Call, constants: list, slow: Run) -> Run | None:
    """int8 TABLE with a constant 256-entry table: one indexed read."""
    if call.in_types[0] != DType.INT8 or constants[1] is None or np.size(constants[1]) != 256:
        return None
    values = np.reshape(constants[1], -1).astype(call.out_types[0].numpy)
    return lambda x, *_: values[x.astype(np.intp) + 128]


@prepared("TRANSPOSE")
def transpose(call: Call, constants: list, slow: Run) -> Run | None:
    perms = [int(p) for p in np.asarray(call.attr("perms", [])).reshape(-1)]
    return lambda x: np.ascontiguousarray(np.transpose(x, perms))

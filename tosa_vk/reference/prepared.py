"""Prepared operators: for the common fp32 cases whose every ERROR_IF / REQUIRE is decided by the graph alone (the
interpreter validated it at load), one closure per operator made once when a block is prepared — no per-run
checks, attribute lookups or float64 detours where float32 arithmetic rounds identically (an fp32 add, subtract,
multiply, maximum or minimum is correctly rounded either way). Each computes exactly what its chapter function
computes, bit for bit (tests/test_reference_prepared.py); anything else gets None and runs the chapter function.

A preparer takes the operator's Call (types, shapes, attributes) and the values of its constant inputs (None for
the others) and returns a function of the operator's input values, in spec order, giving its one output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from .registry import Call

Run = Callable[..., np.ndarray]
PREPARED: dict[str, Callable[[Call, list[Any]], Run | None]] = {}


def prepared(*names: str):
    def register(fn):
        for name in names:
            PREPARED[name] = fn
        return fn

    return register


def _fp32(call: Call) -> bool:
    """Every tensor input but shape / shift / zero-point parameters, and the output, fp32."""
    return call.out_types == [DType.FP32] and call.in_types[0] == DType.FP32


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


_BINARY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}


@prepared("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM")
def binary(call: Call, constants: list) -> Run | None:
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
def activation(call: Call, constants: list) -> Run | None:
    if not _fp32(call):
        return None
    if call.name == "TANH":
        return lambda x: np.tanh(x.astype(np.float64)).astype(np.float32)

    def sigmoid(x):
        with np.errstate(all="ignore"):
            return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)

    return sigmoid


@prepared("SLICE")
def slice_(call: Call, constants: list) -> Run | None:
    if constants[1] is None or constants[2] is None:
        return None
    index = tuple(slice(s, s + n) for s, n in zip(_ints(constants[1]), _ints(constants[2])))
    return lambda x, *_: x[index].copy()


@prepared("RESHAPE")
def reshape(call: Call, constants: list) -> Run | None:
    shape = tuple(call.out_shapes[0])
    return lambda x, *_: x.reshape(shape)


@prepared("CONCAT")
def concat(call: Call, constants: list) -> Run | None:
    axis = int(call.attr("axis", 0))
    return lambda *xs: np.concatenate(xs, axis=axis)


@prepared("CONV2D")
def conv2d(call: Call, constants: list) -> Run | None:
    """A 1x1, stride-1, unpadded fp32 CONV2D with constant weights and zero zero points (a fully connected layer):
    the weights transposed once, then the chapter function's per-batch matmul and bias add."""
    w, izp, wzp = constants[1], constants[3], constants[4]
    if not _fp32(call) or call.in_types[1] != DType.FP32 or call.attr("acc_type", DType.FP32) != DType.FP32:
        return None
    if w is None or izp is None or wzp is None or w.shape[1:3] != (1, 1) or _ints(izp) != [0] or _ints(wzp) != [0]:
        return None
    if any(_ints(call.attr("pad", [0]))) or set(_ints(call.attr("stride", [1]))) != {1}:
        return None
    oc, ic = w.shape[0], w.shape[-1]
    wt = np.ascontiguousarray(w.astype(np.float32).reshape(oc, ic).T)
    shape = tuple(call.out_shapes[0])

    def run(x, _w, bias, *_):
        n = x.shape[0]
        xf = np.ascontiguousarray(x, dtype=np.float32).reshape(n, -1, ic)
        acc = np.empty((n, xf.shape[1], oc), dtype=np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            for b in range(n):
                np.matmul(xf[b], wt, out=acc[b])
        return np.add(acc, bias.reshape(-1).astype(np.float32), dtype=np.float32).reshape(shape)

    return run

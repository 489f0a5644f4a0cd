"""Activation functions (spec 2.4): CLAMP, ERF, SIGMOID, TANH. Floating point in float64, rounded once."""

from __future__ import annotations

import numpy as np

from .elementwise_binary import float_max, float_min, nan_mode
from .numeric import round_to, to_float64
from .registry import Call, reference


@reference("CLAMP")
def CLAMP(call: Call):
    value = call.inputs[0]
    t = call.out_types[0]
    lo, hi = call.attr("min_val"), call.attr("max_val")
    if t.is_float:
        lo, hi = float(to_float64(lo)), float(to_float64(hi))
        call.error_if(np.isnan(lo) or np.isnan(hi), "isNaN(min_val) || isNaN(max_val)")
        call.error_if(hi < lo, "max_val < min_val")
        mode = nan_mode(call)
        # apply_clip_s: max with min_val, then min with max_val; in IGNORE mode a NaN input becomes min_val
        x = float_min(float_max(to_float64(value), lo, mode), hi, mode)
        return round_to(x, t)
    lo, hi = int(lo), int(hi)
    call.error_if(hi < lo, "max_val < min_val")
    return np.clip(value.astype(np.int64), lo, hi).astype(t.numpy)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (no scipy here): erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n (2x^2)^n x / (2n+1)!!.

    Every term is positive, so the series loses no precision to cancellation; it is summed to float64 precision
    for |x| < 6 (beyond, erf rounds to +-1 in float64).
    """
    x = np.asarray(x, dtype=np.float64)
    ax = np.minimum(np.abs(np.nan_to_num(x, nan=0.0)), 6.0)
    two_x2 = 2.0 * ax * ax
    term = ax.copy()
    total = ax.copy()
    n = 0
    while True:
        n += 1
        term = term * two_x2 / (2 * n + 1)
        total = total + term
        if np.all(term <= total * 1e-17) or n > 400:
            break
    result = np.minimum(2.0 / np.sqrt(np.pi) * np.exp(-ax * ax) * total, 1.0)
    result = np.where(np.abs(x) >= 6.0, 1.0, result)
    return np.where(np.isnan(x), np.nan, np.copysign(result, x))


@reference("ERF")
def ERF(call: Call):
    return round_to(_erf(to_float64(call.inputs[0])), call.out_types[0])


@reference("SIGMOID")
def SIGMOID(call: Call):
    with np.errstate(all="ignore"):
        x = to_float64(call.inputs[0])
        return round_to(1.0 / (1.0 + np.exp(-x)), call.out_types[0])


@reference("TANH")
def TANH(call: Call):
    return round_to(np.tanh(to_float64(call.inputs[0])), call.out_types[0])

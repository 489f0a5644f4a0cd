"""Results judged against expected values, output by output or tensor by tensor (`tosa-vk run --check / --compare`,
`tosa-vk compare`).

A result passes when every element is within its dtype's bound: integers and bools exactly; a float when
|got - want| <= k * eps * (|want| + max |want|), eps the dtype's machine epsilon and k how many of them summation
order, approximate exp / tanh / ... and the final rounding may cost (the max |want| term, the tensor's magnitude,
covers cancellation and subnormals). NaN matches NaN, an infinity the same infinity. A `tolerance` T replaces the
bound with |got - want| <= T.

`compare` runs a model on two backends with every intermediate tensor captured (tosa_vk/stages/capture.py) and judges
each tensor in execution order: the first one out of bounds is where the backends part — each backend computes every
tensor from its own earlier ones, so later tensors inherit the difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..backends.model import Model
from ..ir.dtype import DType

FLOAT_TOLERANCE = {
    "FP32": (2**-23, 1024),
    "FP16": (2**-10, 8),
    "BF16": (2**-7, 4),
    "FP8E4M3": (2**-3, 2),
    "FP8E5M2": (2**-2, 2),
    "FP6E2M3": (2**-3, 2),
    "FP6E3M2": (2**-2, 2),
    "FP4E2M1": (2**-1, 2),
}  # fmt: skip  (dtype: eps, k)
# block scales (powers of two): one step, a factor of two, where a block's largest value sits at a power of two and
# the two backends round it to either side; judged on the exponents, not by a bound relative to the magnitude
SCALE_STEPS = {"FP8UE8M0": 1}


class Verdict(NamedTuple):
    ok: bool
    max_abs: float  # max |got - want| over the elements that differ (NaN vs NaN and equal infinities do not)
    max_rel: float  # max_abs relative to the tensor's magnitude, max |want| (0 where that is 0)
    how: str  # what was compared, for a report line


def judge(got: np.ndarray, want: np.ndarray, dtype: DType, tolerance: float | None = None) -> Verdict:
    """One result against the expected values (both storage arrays)."""
    return judged(got, want, dtype, tolerance)[0]


def judged(got: np.ndarray, want: np.ndarray, dtype: DType, tolerance: float | None = None) -> tuple[Verdict, float]:
    """judge()'s verdict and the error ratio: the worst element's |got - want| over its bound (passes <= 1; inf for
    a shape mismatch or NaN against a number). An exact dtype's bound is half a step (any difference is at least
    one), so one step off reads 2."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        shape = f"shape {list(got.shape)}, expected {list(want.shape)}"
        return Verdict(False, float("inf"), float("inf"), shape), float("inf")
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        diff = np.abs(g - w)
    same = (g == w) | (np.isnan(g) & np.isnan(w))  # equal infinities too
    worst = float(np.max(np.where(same, 0.0, diff))) if diff.size else 0.0
    finite = np.isfinite(w)
    scale = float(np.max(np.abs(w[finite]))) if finite.any() else 0.0
    rel = worst / scale if scale else (0.0 if worst == 0 else float("inf"))
    if tolerance is not None:
        ok = bool(np.all(same | (diff <= tolerance)))
        how = f"max |diff| {worst:.3g}, --tolerance {tolerance:.3g}"
        return Verdict(ok, worst, rel, how), _ratio(diff, same, np.full_like(diff, tolerance))
    if dtype.name in SCALE_STEPS:
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = np.abs(np.log2(g) - np.log2(w))
        steps = np.where(same, 0.0, np.where(np.isnan(steps), np.inf, steps))
        limit = SCALE_STEPS[dtype.name]
        ok = bool(np.all(steps <= limit))
        how = f"max |diff| {worst:.3g}, {float(np.max(steps, initial=0.0)):.3g} steps of 2x (bound {limit})"
        return Verdict(ok, worst, rel, how), _ratio(steps, same, np.full_like(steps, limit))
    if dtype.name not in FLOAT_TOLERANCE:
        ratio = _ratio(diff, same, np.full_like(diff, 0.5))
        return Verdict(bool(np.all(same)), worst, rel, f"max |diff| {worst:.3g}, exact"), ratio
    eps, k = FLOAT_TOLERANCE[dtype.name]
    bound = k * eps * (np.abs(w) + scale)
    ok = bool(np.all(same | (finite & (diff <= bound))))
    how = f"max |diff| {worst:.3g}, bound {k} eps x (|want| + {scale:.3g})"
    return Verdict(ok, worst, rel, how), _ratio(diff, same, np.where(finite, bound, 0.0))


def _ratio(diff: np.ndarray, same: np.ndarray, bound: np.ndarray) -> float:
    """max |diff| / bound over the elements that differ (inf where a bound is 0 or a difference NaN)."""
    if not diff.size or bool(np.all(same)):
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        each = np.where(same, 0.0, diff / bound)
    worst = float(np.max(each))
    return float("inf") if np.isnan(worst) else worst


@dataclass(frozen=True)
class Row:
    """One tensor of a comparison: its producer ("CONV2D #36", the operator's index in the main block; "input" for
    a graph input) and the verdict."""

    tensor: str
    producer: str
    dtype: DType
    shape: tuple[int, ...]
    verdict: Verdict
    ratio: float = 0.0  # the error ratio (judged(): the worst |got - want| over its bound; <= 1 passes)


def compare(
    model: Model, expected: Model, feeds: dict, *, tolerance: float | None = None, cast: bool = False
) -> list[Row]:
    """Every capturable tensor of `model` (Model.capturable: a TOSA graph's, or a .pte's host values and its
    delegates' tensors, "delegate_0/<tensor>"), in execution order, judged against `expected`'s."""
    tensors = model.capturable
    got = model.run(feeds, cast=cast, capture="all")
    want = expected.run(feeds, cast=cast, capture="all")
    rows = []
    for t in tensors:
        verdict, ratio = judged(got[t.name], want[t.name], t.dtype, tolerance)
        rows.append(Row(t.name, t.producer, t.dtype, t.shape, verdict, ratio))
    return rows


def first_failure(rows: list[Row]) -> Row | None:
    return next((r for r in rows if not r.verdict.ok), None)


def report(rows: list[Row], width: int = 120) -> list[str]:
    """The comparison as table lines: one per tensor, then the verdict."""
    name_width = min(56, max((len(r.tensor) for r in rows), default=6))
    head = f"{'#':>4}  {'tensor':<{name_width}}  {'dtype':<7} {'max |abs|':>10} {'rel':>9}  {'':4}  produced by"
    lines = [head]
    for i, r in enumerate(rows):
        tensor = r.tensor if len(r.tensor) <= name_width else r.tensor[: name_width - 1] + "~"
        mark = "ok" if r.verdict.ok else "FAIL"
        line = (
            f"{i:>4}  {tensor:<{name_width}}  {r.dtype.name:<7} {r.verdict.max_abs:>10.3g} "
            f"{r.verdict.max_rel:>9.2g}  {mark:4}  {r.producer}"
        )
        lines.append(line if len(line) <= width else line[: width - 1] + "~")
    bad = first_failure(rows)
    failed = sum(not r.verdict.ok for r in rows)
    if bad is None:
        lines.append(f"all {len(rows)} tensors within tolerance")
    else:
        lines.append(
            f"{failed} of {len(rows)} tensors out of bounds; the first: '{bad.tensor}' ({bad.dtype.name} "
            f"{list(bad.shape)}), produced by {bad.producer}: {bad.verdict.how}"
        )
    return lines

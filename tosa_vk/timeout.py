"""The `timeout_s` option of every backend (tosa_vk.load(..., timeout_s=)): the longest one run may take.

Checked where it is given, so a bad value is an error at load, not a model that fails every run (0, -1) or a
ValueError / OverflowError deep in a run (nan, inf)."""

from __future__ import annotations

import math
from numbers import Real

from .errors import TosaError


def checked_timeout(value: object, option: str = "timeout_s") -> float | None:
    """`value` as seconds: a positive finite number, or None for no limit; anything else a TosaError."""
    if value is None:
        return None
    if isinstance(value, Real) and not isinstance(value, bool):
        seconds = float(value)
        if math.isfinite(seconds) and seconds > 0:
            return seconds
    raise TosaError(f"{option}={value!r}: take a positive, finite number of seconds, or None for no limit")


def overrun_text(timeout_s: float | None, where: str) -> str:
    """The error text of a run that passed its timeout_s, on every backend; `where` says what was to run next."""
    return f"the run did not finish within {timeout_s:g} s (timeout_s; {where})"

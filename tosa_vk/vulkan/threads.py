"""The driver's compute threads: whether a program runs better without them (Target.inline_elements), and the
environment a device is opened in to turn them off.

lavapipe-specific: llvmpipe reads LP_NUM_THREADS when vkEnumeratePhysicalDevices makes its screen, once per
instance, so one process can hold devices of either kind (each Device has an instance of its own). With 0 the
queue thread runs every workgroup itself: no hand-off to a worker pool per dispatch.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator

from ..program import Kernel, Program, walk
from ..target import Target

VARIABLE = "LP_NUM_THREADS"


def inline(program: Program, target: Target) -> bool:
    """Whether the program's kernels write at most `target.inline_elements` elements per run (small kernels, where
    the thread pool's hand-offs cost more than its parallel workgroups save), and the user left the driver's thread
    count alone."""
    limit = target.inline_elements
    if not limit or VARIABLE in os.environ:
        return False
    kernels = [k for k in walk(program.steps) if isinstance(k, Kernel)]
    written = sum(math.prod(program.buffers[name].shape) for k in kernels for name in k.writes)
    return bool(kernels) and written <= limit


@contextlib.contextmanager
def compute_threads(threads: int | None) -> Iterator[None]:
    """LP_NUM_THREADS=threads while lavapipe makes its screen (around vkEnumeratePhysicalDevices); None, or a value
    the user set: nothing changes. Process-wide while it lasts, as loader_drivers' variables are."""
    if threads is None or VARIABLE in os.environ:
        yield
        return
    os.environ[VARIABLE] = str(threads)
    try:
        yield
    finally:
        os.environ.pop(VARIABLE, None)

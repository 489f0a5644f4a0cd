"""The compile stages, in the order tosa_vk.compile runs them (compiler.py): passes, partition (with the
user's host_rules), fuse, lower, plan; records.py holds what they pass each other, capture.py the capture twin."""

import os

FUSE_ENV = "TOSA_VK_FUSE"


def fuse_enabled(fuse: bool | None) -> bool:
    """The fuse= option, defaulting to the environment (TOSA_VK_FUSE=0 turns fusion off). Here, not in fuse.py:
    a program-cache hit needs it for the cache key and not the fuse stage."""
    return os.environ.get(FUSE_ENV, "1") != "0" if fuse is None else fuse

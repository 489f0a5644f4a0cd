"""Reading and writing tosa_vk's on-disk caches (the program cache, the SPIR-V cache) defensively: a cache folder is
data anyone with write access to it controls, so nothing in it may hang, exhaust or crash a load (issue 34).

- Folders are created private (0700). A folder that is not a directory owned by this user, or that its group or
  others may write, is not trusted: it is neither read nor written (`untrusted` says why; the callers warn once
  and run without it).
- A file is read only when it is a regular file (not a FIFO, device, directory or symlink: opened with
  O_NOFOLLOW | O_NONBLOCK, then fstat'd) owned by this user and at most `limit` bytes long, checked before reading.
Anything else reads as missing: the caller rebuilds. Imports nothing from tosa_vk.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE = 0o700
PRIVATE_FILE = 0o600  # an entry's mode (files.write_atomic(mode=))
RULE = "a cache folder must be owned by you and writable by no one else"  # for the warnings


def make_private(folder: Path) -> None:
    """Creates `folder` (and missing parents) with mode 0700; an existing folder keeps its mode. OSError as mkdir."""
    if folder.is_dir():
        return
    if not folder.parent.is_dir():
        make_private(folder.parent)
    try:
        folder.mkdir(mode=PRIVATE)
    except FileExistsError:
        pass


def untrusted(folder: Path) -> str:
    """Why `folder` is not trusted as a cache ('' when it is, or when it does not exist yet: it is then created
    private); follows a symlinked folder to what it names."""
    try:
        st = os.stat(folder)
    except (FileNotFoundError, NotADirectoryError):  # not there: made private when first written
        return ""
    except OSError as err:
        return f"it cannot be inspected ({err.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != os.geteuid():
        return f"it is owned by user id {st.st_uid}, not by this user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"its group or other users may write it (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def read_private(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` if it is a regular file owned by this user of at most `limit` bytes; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # missing, a symlink (ELOOP), unreadable
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > limit:
            return None
        chunks, left = [], st.st_size
        while left > 0:  # a file that shrinks meanwhile ends early; one that grows is read to its size then
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if os.read(fd, 1):  # it grew past what fstat said: being rewritten in place, not an entry
            return None
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)

"""Writing a file, the one way every writer in tosa_vk does it (issue 46): the CLI's outputs, saved graphs and VGFs,
traces, node data, reports, and the caches' entries.

`write_atomic(path, data, overwrite=...)`:
- without `overwrite`, a name that is already there (a file, a folder, a link, even a dangling one) is refused with
  a TosaError naming it and --overwrite; the check is the final step itself (a hard link, which fails on an
  existing name), so a file made meanwhile is not clobbered either;
- the data goes to a fresh temporary file in the target's own folder, created exclusively (mkstemp: O_CREAT |
  O_EXCL, so a planted file or symlink of that name is never opened), then renamed over the target. So a reader
  sees the old file or the whole new one, never a part; a fixed `<out>.tmp` beside it is never touched;
- with `overwrite`, the name is replaced, whatever it is (a file, a symlink, a FIFO): a link is replaced by a regular
  file, never written through, so the file it pointed at is left as it was. A folder is not replaced (OSError);
- on any failure the temporary file is removed and the target is left as it was. No fsync: a crashed process
  leaves the old file or the new one, which is all the callers need (a power cut may lose the newest write).
Errors other than the refusal are OSErrors (the CLI reports them; the caches catch them and run without).
Imports only tosa_vk.errors.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import BinaryIO

from ..errors import TosaError


def write_atomic(
    path: str | Path,
    data: bytes | Callable[[BinaryIO], object],
    *,
    overwrite: bool,
    what: str = "the file",
    mode: int | None = None,
) -> os.stat_result:
    """Writes `data` (bytes, or a callback that writes to the open binary file) to `path` as described above;
    returns the new file's stat (its st_dev / st_ino name it). `mode`: the file's permissions, by default
    0666 less the umask (as open() would make it); the caches pass 0600."""
    path = Path(path)
    if not overwrite and os.path.lexists(path):
        raise refused(path, what)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _default_mode() if mode is None else mode)
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            st = os.fstat(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path, what)
        return st
    finally:
        try:
            os.unlink(tmp)  # renamed away already: FileNotFoundError
        except OSError:
            pass


def refused(path: Path, what: str) -> TosaError:
    """The existing-file rule's refusal (Writes.plan says the same before a command's work)."""
    return TosaError(f"{str(path)!r} exists: {what} is not written over it (--overwrite replaces files)")


def _link_new(tmp: str, path: Path, what: str) -> None:
    """`tmp` becomes `path` only if no such name exists: a hard link fails atomically on an existing name (the
    temporary name is then unlinked by the caller). A file system without hard links: checked, then renamed."""
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        raise refused(path, what) from None
    except OSError:  # EPERM / ENOTSUP / EXDEV: no hard links here
        if os.path.lexists(path):
            raise refused(path, what) from None
        os.replace(tmp, path)


@cache
def _default_mode() -> int:
    """0666 less the process's umask (read once: reading it means setting it, which is not thread-safe)."""
    try:
        with open("/proc/self/status") as f:
            line = next(x for x in f if x.startswith("Umask:"))
        umask = int(line.split()[1], 8)
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask

"""The program cache (issue 17; NNAdapter's compiled-model cache): a compiled Program with the SPIR-V of its kernels
and the driver's VkPipelineCache data, stored under a key of everything that decides them, so that a later load
of the same model on the same device skips validate / lower / plan and glslc.

Key: sha256 of the model's content (its .tosa bytes as written by tosa_vk), the compile options, the target (device
name, UUID, driver version, features, limits) and the build (tosa_vk's version and a digest of its own source and
shader files: an edited checkout never reads a stale entry).

Entry file `<key>.tvp`:
    MAGIC, u32 header length, the header (JSON: format, key, version, build, device UUID, driver), u64 payload
    length, sha256 of the payload (the checksum), the stamp (32 bytes), the payload: sections of (u64 length,
    bytes) — the Program (Program.to_bytes), the VkPipelineCache data, then one SPIR-V module per shader variant in
    the program's order.
A header that does not match what this process would write (another device, driver or build), a short file or a
payload whose checksum differs is ignored: the model is compiled again and the entry rewritten — a damaged entry is
never run. Entries are written to a temporary file and renamed into place, so concurrent processes see whole
entries only (the last writer wins). A directory that cannot be written (read-only, full) means running without
storing, with one warning per process. The cache keeps at most `budget` bytes, dropping the least recently used
entries (hits refresh an entry's time) when a running total says it is over. TOSA_VK_CACHE_MAX_MB sets the budget
(a positive number of MiB; anything else is named in one warning and the default kept).

Entries are untrusted input (issue 34): reading one never hangs, exhausts memory or crashes
(tosa_vk/store/cache_files.py). An entry is read only if it is a regular file owned by this user and no larger than
the budget (a FIFO, a symlink to /dev/zero, a huge sparse file, a directory read as missing); its header is compared
byte for byte with the one this process would write (no JSON parsed); the section count is capped; the Program is
decoded with nesting and memory errors caught.

Trust (issue 49): the backend checks a program's modules and kernel interfaces when it compiles them (reflection,
spirv-val where a model brings SPIR-V) and stores the entry `verified`: its stamp is `stamp(checksum, build)`, so a
hit whose checksum and stamp hold for this build runs without checking again (that cost a warm load ~30 %). Any
other entry with a valid checksum — stored unverified (`ProgramCache.store` of an Entry not marked verified: a tool
or a hand that rewrote one) or verified by another build — has every module and kernel checked against what it must
be before the driver sees one (ShaderCache.adopt: built-in kernels' SPIR-V equal to the shipped library's or the
SPIR-V cache's, by hash; other modules through spirv-val; every kernel's interface reflected against its layout),
and is stored verified once it passes. Whatever fails is ignored with one warning and the model compiled again. The
stamp is no secret: it tells an entry this build checked from one it did not, in a folder only this user may write
(below); an entry can at worst be ignored or, if forged by someone who may write the folder, compute what it says.

Sharing: the folder (`programs/` and `spirv/` under $TOSA_VK_CACHE, default ~/.cache/tosa_vk) is created private
(0700). A folder that is not owned by this user or that its group or others may write is not trusted: one warning,
and the model runs without the cache (nothing read, nothing stored). Sharing a cache is the user's choice by
pointing TOSA_VK_CACHE at one; to be read it must still be owned by the user and writable by no one else, so a
cache shared between users is read-only for all but its owner's writes — others run without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import struct
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..paths import SHADER_ROOT, cache_root
from ..version import __version__
from .cache_files import PRIVATE_FILE, RULE, make_private, read_private, untrusted
from .files import write_atomic

MAGIC = b"TOSAVK-PROGRAM\x00\x02"
FORMAT = 2  # 2: the stamp after the checksum
SUFFIX = ".tvp"
USAGE = "usage"  # the running total of the entries' bytes (ProgramCache._account)
DEFAULT_BUDGET = 1 << 30  # bytes; TOSA_VK_CACHE_MAX_MB overrides
TRIM_TO = 0.75  # a trim leaves this share of the budget: room for many stores before the next folder scan
MAX_HEADER = 1 << 12  # bytes: ProgramCache.header's JSON is ~250
MAX_SECTIONS = 1 << 16  # the Program, the pipeline data and one module per shader variant
STAMP = 32  # bytes of the stamp (sha256)
MAX_USAGE = 1 << 62  # a usage total past this is not one the cache wrote
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
_warned: set[str] = set()


def default_dir() -> Path:
    return cache_root() / "programs"


@cache
def build_digest() -> str:
    """tosa_vk's version and a digest of the package's Python and shader sources: their names, sizes and
    modification times (once per process, ~2 ms; reading them all cost ~10 ms of every warm load)."""
    package = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(__version__.encode())
    for root in (package, SHADER_ROOT):
        for name, stat in sorted(_sources(str(root), "")):
            h.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return f"{__version__}+{h.hexdigest()[:16]}"


def _sources(folder: str, prefix: str) -> list[tuple[str, os.stat_result]]:
    """(path relative to the root, stat) of the .py / .comp / .glsl files under `folder`: os.scandir, whose entries
    carry their stat (Path.rglob + stat took ~60 ms of every warm load)."""
    found = []
    with os.scandir(folder) as entries:
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                found += _sources(e.path, f"{prefix}{e.name}/")
            elif e.name.endswith((".py", ".comp", ".glsl")):
                found.append((f"{prefix}{e.name}", e.stat()))
    return found


@dataclass
class Entry:
    """What a hit gives back: the Program's bytes, the driver's pipeline-cache data, SPIR-V per variant (in the
    order the program's kernels first use them)."""

    program: bytes
    pipeline_data: bytes
    spirv: list[bytes]
    verified: bool = False  # checked by this build (stored by the backend after its checks): runs unchecked


class ProgramCache:
    def __init__(self, directory: str | Path | None = None, budget: int | None = None):
        self.dir = Path(directory) if directory else default_dir()
        self.budget = budget if budget is not None else budget_from_env()

    def trusted(self) -> bool:
        """Whether the folder may be read and written (cache_files.untrusted); one warning per folder if not."""
        why = untrusted(self.dir)
        if why:
            _warn_once(
                f"untrusted:{self.dir}",
                f"tosa_vk: the program cache {self.dir} is not trusted ({why}); running without it ({RULE})",
            )
        return not why

    @staticmethod
    def key(model: bytes, options: dict, target: object) -> str:
        """The entry's name: the model's bytes, the compile options and the target (a tosa_vk.Target: device
        name, UUID, driver, features, limits), with this build; sets sorted (their repr changes per process)."""
        h = hashlib.sha256(hashlib.sha256(model).digest())
        for part in (options, dataclasses.asdict(target), build_digest()):  # type: ignore[call-overload]
            h.update(b"\0" + json.dumps(part, sort_keys=True, default=_canonical).encode())
        return h.hexdigest()

    @staticmethod
    def header(key: str, device_uuid: str, driver: str) -> dict:
        return {"format": FORMAT, "key": key, "build": build_digest(), "device_uuid": device_uuid, "driver": driver}

    def path(self, key: str) -> Path:
        return self.dir / f"{key}{SUFFIX}"

    def load(self, header: dict) -> Entry | None:
        """The entry for `header` (ProgramCache.header), or None: missing, written for something else, or damaged
        (with a warning; the caller compiles again and overwrites it)."""
        path = self.path(header["key"])
        if not self.trusted() or not os.path.lexists(path):
            return None
        data = read_private(path, self.budget)  # an entry larger than the whole cache is none this cache keeps
        entry = None if data is None else decode(data, header)
        if entry is None:
            self.damaged(path)
            return None
        try:
            os.utime(path, follow_symlinks=False)  # least recently used goes first
        except OSError:
            pass
        return entry

    def damaged(self, path: Path, why: str = "") -> None:
        """One warning that the entry at `path` cannot be used (and is rebuilt)."""
        detail = f" ({why})" if why else ""
        _warn_once(f"damaged:{path}", f"tosa_vk: program cache entry {path} is damaged or stale{detail}; rebuilding it")

    def store(self, header: dict, entry: Entry) -> bool:
        """Writes the entry atomically; False (with one warning per process) when the directory cannot take it."""
        data = encode(header, entry)
        if not self.trusted():
            return False
        try:
            make_private(self.dir)
            write_atomic(self.path(header["key"]), data, overwrite=True, mode=PRIVATE_FILE)
            self._account(len(data))
        except OSError as err:
            _warn_once(f"store:{self.dir}", f"tosa_vk: the program cache {self.dir} cannot be written ({err}); "
                       "running without it")  # fmt: skip
            return False
        return True

    def entries(self) -> list[Path]:
        try:
            return sorted(self.dir.glob(f"*{SUFFIX}"))
        except OSError:
            return []

    def info(self) -> dict:
        sizes = []
        for p in self.entries():
            try:
                sizes.append(p.stat().st_size)
            except OSError:
                pass
        return {"directory": str(self.dir), "entries": len(sizes), "bytes": sum(sizes), "budget": self.budget}

    def clear(self) -> int:
        """Removes every entry (and leftover temporary files); returns the entries removed."""
        entries = self.entries()
        leftovers = list(self.dir.glob(f".*{SUFFIX}.*.tmp")) + [self.dir / USAGE] if self.dir.is_dir() else []
        for p in entries + leftovers:
            try:
                p.unlink()
            except OSError:
                pass
        return len(entries)

    def _account(self, added: int) -> None:
        """Adds an entry's size to the running total in USAGE and trims when it passes the budget: a scan of the
        folder costs ~15 us an entry (200 ms at 13,000), too much for every store. Concurrent writers may lose an
        addition or count a rewritten entry twice; each trim measures the folder and corrects the total."""
        usage = self.dir / USAGE
        known = _usage(read_private(usage, 32))
        total = self.budget + 1 if known is None else known + added  # unknown: measure
        if total > self.budget:
            total = self._trim()
        try:  # replaced, not opened: a FIFO or a link planted as the usage file is neither waited on nor followed
            write_atomic(usage, str(total).encode(), overwrite=True, mode=PRIVATE_FILE)
        except OSError:
            pass

    def _trim(self) -> int:
        """Drops the least recently used entries until the cache holds at most TRIM_TO of its budget; returns the
        bytes left. Not just under the budget: then every later store would scan the whole folder again (a full
        cache of 31,000 entries made each store ~0.5 s of stat calls)."""
        stats = []
        for p in self.entries():
            try:
                st = p.stat()
            except OSError:
                continue
            stats.append((st.st_mtime, st.st_size, p))
        total = sum(s for _, s, _ in stats)
        if total <= self.budget:
            return total  # (the running total was off)
        for _, size, p in sorted(stats):
            if total <= self.budget * TRIM_TO:
                break
            try:
                p.unlink()
                total -= size
            except OSError:
                pass
        return total


def budget_from_env() -> int:
    """TOSA_VK_CACHE_MAX_MB in bytes; DEFAULT_BUDGET when unset, or with one warning when it is not a positive
    number of MiB."""
    env = os.environ.get("TOSA_VK_CACHE_MAX_MB")
    if env is None or not env.strip():
        return DEFAULT_BUDGET
    try:
        mb = float(env)
    except ValueError:
        mb = math.nan
    if not (0 < mb < 2**40):  # nan, inf, zero and negative fail too
        _warn_once(f"budget:{env}", f"tosa_vk: TOSA_VK_CACHE_MAX_MB={env!r} is not a positive number of MiB; "
                   f"using the default program cache budget ({DEFAULT_BUDGET >> 20} MiB)")  # fmt: skip
        return DEFAULT_BUDGET
    return max(1, int(mb * (1 << 20)))


def _usage(data: bytes | None) -> int | None:
    """The running total in a usage file's bytes; None (unknown: the folder is measured) unless it is the decimal
    non-negative int the cache writes."""
    text = (data or b"").strip()
    if not text.isdigit() or len(text) > 19:  # (isdigit: no sign, no spaces, no underscores)
        return None
    value = int(text)
    return value if value <= MAX_USAGE else None


def encode(header: dict, entry: Entry) -> bytes:
    """An entry file's bytes (the layout in the module's docstring)."""
    payload = b"".join(_U64.pack(len(s)) + s for s in (entry.program, entry.pipeline_data, *entry.spirv))
    head = json.dumps(header, sort_keys=True).encode()
    checksum = hashlib.sha256(payload).digest()
    mark = stamp(checksum, build_digest()) if entry.verified else bytes(STAMP)
    return MAGIC + _U32.pack(len(head)) + head + _U64.pack(len(payload)) + checksum + mark + payload


def stamp(checksum: bytes, build: str) -> bytes:
    """What a verified entry carries after its checksum: says which build checked it (not a secret: see Trust)."""
    return hashlib.sha256(b"tosa_vk verified\0" + build.encode() + b"\0" + checksum).digest()


def decode(data: bytes, header: dict) -> Entry | None:
    """The entry in `data` if it is whole and written for `header`: the header must be byte for byte the one
    store() writes for it (so no untrusted JSON is parsed)."""
    try:
        if not data.startswith(MAGIC):
            return None
        at = len(MAGIC)
        (n,) = _U32.unpack_from(data, at)
        at += _U32.size
        if n > MAX_HEADER or data[at : at + n] != json.dumps(header, sort_keys=True).encode():
            return None
        at += n
        (length,) = _U64.unpack_from(data, at)
        at += _U64.size
        digest, mark, payload = data[at : at + 32], data[at + 32 : at + 32 + STAMP], data[at + 32 + STAMP :]
        if len(payload) != length or hashlib.sha256(payload).digest() != digest:
            return None
        sections, at = [], 0
        while at < len(payload):
            (size,) = _U64.unpack_from(payload, at)
            at += _U64.size
            if at + size > len(payload):
                return None
            sections.append(payload[at : at + size])
            at += size
            if len(sections) > MAX_SECTIONS:
                return None
        if len(sections) < 2:
            return None
        return Entry(sections[0], sections[1], sections[2:], verified=mark == stamp(digest, build_digest()))
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def _canonical(value):
    """JSON for what json.dumps does not know: sets sorted, anything else by its str."""
    return sorted(map(str, value)) if isinstance(value, (set, frozenset)) else str(value)


def _warn_once(what: str, message: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(message, RuntimeWarning, stacklevel=3)

"""Plain data <-> bytes without pickle: tagged JSON for the structure, numpy arrays as raw blobs after it.

Only the dataclasses and NamedTuples named in the caller's type table (and None, bool, int, float, str, bytes, list,
tuple, dict, numpy arrays, scalars and dtypes) can be written, so loading a file never runs code or builds arbitrary
objects.
Layout: MAGIC, u64 length of the JSON, the JSON (utf-8), then every array's bytes, each at the offset it names.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import struct

import ml_dtypes  # noqa: F401 - registers bfloat16 / float8 / int4 dtype names with numpy
import numpy as np

from ..errors import SerialError, TosaError

MAGIC = b"TOSAVK-DATA\x00\x00\x00\x00\x01"
_HEAD = struct.Struct("<Q")


def dumps(obj, types: dict[str, type]) -> bytes:
    names = {cls: name for name, cls in types.items()}
    blobs: list[bytes] = []
    offset = 0

    def enc(x):
        nonlocal offset
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, enum.Enum):
            return {"@e": [names[type(x)], x.name]} if type(x) in names else enc(x.value)
        if isinstance(x, (int, float)) and not isinstance(x, (np.generic,)):
            return x
        if isinstance(x, np.dtype):
            return {"@dt": x.name}
        if isinstance(x, (np.ndarray, np.generic)):
            a = np.ascontiguousarray(x)
            if a.dtype.hasobject:
                raise SerialError("object arrays cannot be serialised")
            data = a.tobytes()
            blobs.append(data)
            ref = {"@a": [offset, len(data), a.dtype.name, list(a.shape), isinstance(x, np.generic)]}
            offset += len(data)
            return ref
        if isinstance(x, bytes):
            return {"@b": base64.b64encode(x).decode()}
        if isinstance(x, tuple) and type(x) in names:  # a NamedTuple of the table
            return {"@c": names[type(x)], "f": {k: enc(v) for k, v in zip(x._fields, x)}}
        if isinstance(x, tuple):
            return {"@t": [enc(v) for v in x]}
        if isinstance(x, list):
            return [enc(v) for v in x]
        if isinstance(x, dict):
            return {"@d": [[enc(k), enc(v)] for k, v in x.items()]}
        if dataclasses.is_dataclass(x) and type(x) in names:
            return {
                "@c": names[type(x)],
                "f": {f.name: enc(getattr(x, f.name)) for f in dataclasses.fields(x) if f.init},
            }
        raise SerialError(f"cannot serialise a {type(x).__name__}")

    text = json.dumps(enc(obj), separators=(",", ":"), allow_nan=True).encode()
    return MAGIC + _HEAD.pack(len(text)) + text + b"".join(blobs)


def loads(data: bytes, types: dict[str, type]):
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _HEAD.size:
        raise SerialError("not tosa_vk serial data (bad magic)")
    (length,) = _HEAD.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _HEAD.size
    blobs = memoryview(data)[start + length :]
    try:
        tree = json.loads(bytes(data[start : start + length]))
    except ValueError as err:
        raise SerialError(f"corrupt structure: {err}") from None

    def dec(x):
        if isinstance(x, list):
            return [dec(v) for v in x]
        if not isinstance(x, dict):
            return x
        (tag,) = [k for k in x if k.startswith("@")] or [None]
        if tag == "@t":
            return tuple(dec(v) for v in x["@t"])
        if tag == "@d":
            return {dec(k): dec(v) for k, v in x["@d"]}
        if tag == "@b":
            return base64.b64decode(x["@b"])
        if tag == "@dt":
            return np.dtype(x["@dt"])
        if tag == "@e":
            cls, name = x["@e"]
            return types[cls][name]
        if tag == "@a":
            off, n, dtype, shape, scalar = x["@a"]
            if off < 0 or off + n > len(blobs):
                raise SerialError("array data out of range")
            a = np.frombuffer(blobs[off : off + n], dtype=np.dtype(dtype)).reshape(shape).copy()
            return a[()] if scalar else a
        if tag == "@c":
            cls = types.get(x["@c"])
            if cls is None:
                raise SerialError(f"unknown type {x['@c']!r}")
            return cls(**{k: dec(v) for k, v in x["f"].items()})
        raise SerialError(f"unknown tag in {sorted(x)}")

    try:
        return dec(tree)
    except (KeyError, TypeError, ValueError) as err:
        raise SerialError(f"corrupt structure: {type(err).__name__}: {err}") from None


def load_npy(path) -> np.ndarray:
    """An input array from a .npy file, never unpickled (a model's inputs are untrusted too); a TosaError naming
    the file when it cannot be read."""
    try:
        return np.load(path, allow_pickle=False)
    except OSError as err:
        raise TosaError(f"cannot read input: {err.strerror or err}", file=str(path)) from None
    except ValueError as err:
        raise TosaError(f"not a readable .npy array ({err})", file=str(path)) from None

"""A user's feeds -> the storage dtype and shape a model's input declares, or an error saying why not: the rules
every backend applies to its inputs (the reference interpreter, the Vulkan, VGF and .pte models). Its own module,
apart from the interpreter: a Vulkan program-cache hit imports this and not the operator registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np

from ..errors import TosaError

if TYPE_CHECKING:
    from ..ir.graph import Tensor


def coerce_scales(t: Tensor, value, file: str | None, *, cast: bool = False) -> np.ndarray:
    """The scales feed of a block-scaled input -> fp8ue8m0 storage of Tensor.scale_shape."""
    assert t.scale_dtype is not None
    return coerce_array(
        t.scale_name, value, t.scale_shape, t.scale_dtype.numpy, t.scale_dtype.name, file=file, cast=cast
    )


def coerce_input(t: Tensor, value, file: str | None, *, cast: bool = False) -> np.ndarray:
    """A user's input array -> the input tensor's storage dtype (DType.numpy) and shape, or a clear error."""
    return coerce_array(t.name, value, t.shape, t.dtype.numpy, t.dtype.name, file=file, cast=cast)


def coerce_array(
    name: str,
    value,
    shape: tuple[int, ...],
    storage: np.dtype,
    type_name: str,
    *,
    file: str | None = None,
    cast: bool = False,
    where: str = "graph",
) -> np.ndarray:
    """A feed -> `storage` dtype and exactly `shape`, as onnxruntime takes inputs.

    A dtype that numpy's `same_kind` rule converts (float64 -> fp32, bool -> int, int -> float, int32 -> int8 when
    the values fit) is converted; one it does not (float -> int, int or float -> bool, int -> unsigned) is an error
    unless `cast` (then numpy's astype decides; the range check of integers stays). bf16 / fp8 count as floats.
    Values the conversion would change beyond a float's rounding are an error unless `cast`: a finite float past
    the largest finite value of a narrower float type (1e300 into FP32 would be inf), an integer a float type
    does not hold exactly (2**24 + 1 into FP32).
    Arm's .npy encodings (from_npy in tosa_vk/ir/dtype.py) are taken as they are: raw void items of the size of a
    bf16 / fp8e4m3 element, and uint8 fed to fp8e5m2 as its bits. `where` names the model in errors ("graph", "VGF").
    """
    storage = np.dtype(storage)
    if type(value) is np.ndarray and value.dtype == storage and value.shape == tuple(shape):
        return value  # the usual feed: nothing to convert or check (every run pays what follows)
    declared = f"{type_name} (numpy {storage.name})" if type_name != storage.name else storage.name
    try:
        given = np.asarray(value)
    except (ValueError, TypeError) as err:  # e.g. a ragged nested list: numpy's "inhomogeneous shape"
        raise TosaError(
            f"input '{name}' is not an array numpy can make (a nested list whose rows differ in length?): {err}; "
            f"the {where} declares {declared} of shape {list(shape)}",
            file=file,
        ) from None
    if given.dtype != storage:
        raw = given.dtype.type is np.void and given.dtype.names is None  # Arm's bf16 / fp8e4m3 files: bytes
        if raw and given.dtype.itemsize == storage.itemsize and storage in _ML_FLOATS:
            given = given.view(storage)
        elif given.dtype == np.uint8 and storage == _FP8E5M2:  # Arm's fp8e5m2 files: the bits
            given = given.view(storage)
        elif raw or _kind(given.dtype) not in _KIND_ORDER:  # complex, objects, strings, dates: no TOSA type
            raise TosaError(f"input '{name}' is a {given.dtype} array; the {where} declares {declared}", file=file)
        else:
            if not cast and _KIND_ORDER[_kind(given.dtype)] > _KIND_ORDER[_kind(storage)]:
                raise TosaError(
                    f"input '{name}' is a {given.dtype} array; the {where} declares {declared}, and numpy's "
                    f"same_kind rule does not convert {given.dtype} to {storage.name}. Convert it first (quantize, "
                    f"or .astype(np.{storage.name}) if that is meant), or run(..., cast=True) to cast it anyway",
                    file=file,
                )
            _check_range(name, given, storage, type_name, file)
            given = given.astype(storage) if cast else _converted(name, given, storage, declared, file)
    if given.shape != tuple(shape):
        raise TosaError(f"input '{name}' has shape {list(given.shape)}, the {where} declares {list(shape)}", file=file)
    return given


# the kinds a feed may have, in numpy's same_kind order: a feed converts to its own kind or a later one
_KIND_ORDER = {"b": 0, "u": 1, "i": 2, "f": 3}
_FP8E5M2 = np.dtype(ml_dtypes.float8_e5m2)
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
_ML_FLOATS = {
    np.dtype(t)
    for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)
    + (ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu)
}


def _kind(dtype: np.dtype) -> str:
    """numpy's kind letter; "f" for ml_dtypes' floats (numpy calls them "V")."""
    return "f" if dtype in _ML_FLOATS else dtype.kind


def _converted(name: str, given: np.ndarray, storage: np.dtype, declared: str, file: str | None) -> np.ndarray:
    """`given` as `storage`, or an error naming the first value a float storage type would not hold (past its
    largest finite value, or an integer it cannot hold exactly): a silent inf or rounding would change the run.
    A feed whose extremes show it fits costs two reductions; only a suspect one is scanned element by element."""
    if _kind(storage) != "f" or given.dtype.kind not in "iuf" and given.dtype not in _ML_FLOATS or not given.size:
        return given.astype(storage)
    limit = float(ml_dtypes.finfo(storage).max)
    exotic = storage == _E8M0  # no zero, no sign: the extremes say nothing
    with np.errstate(over="ignore", invalid="ignore"):
        converted = given.astype(storage)
    flat = given.reshape(-1)
    if _kind(given.dtype) == "f":
        # fmax / fmin skip nan; an inf feed is inf in every float type, so only the scan below tells it apart
        if not exotic and max(-float(np.fmin.reduce(flat)), float(np.fmax.reduce(flat))) <= limit:
            return converted
        finite = np.isfinite(given)
        bad = finite & ((np.abs(given.astype(np.float64)) > limit) | ~np.isfinite(converted))
    else:
        precise = 1 << (ml_dtypes.finfo(storage).nmant + 1)  # every integer up to 2**(mantissa + 1) is exact
        if not exotic and max(-int(flat.min()), int(flat.max())) <= min(precise, limit):
            return converted
        # |value| as uint64 (abs of int64's minimum wraps to itself: 2**63 read unsigned); the float type holds it
        # exactly where it is not past the largest value and its odd part (size / lowest set bit) fits the
        # mantissa: size < low * precise, where that product does not pass 2**64
        size = np.abs(given.astype(np.int64)).view(np.uint64) if given.dtype.kind == "i" else given.astype(np.uint64)
        low = size & (~size + np.uint64(1))
        shift = np.uint64(precise.bit_length() - 1)
        exact = (size == 0) | (low >= np.uint64(1 << (64 - int(shift)))) | (size < (low << shift))
        bad = ~exact | (size > np.uint64(min(int(limit), 2**64 - 1))) | ~np.isfinite(converted)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), given.shape)
        value = _number(given[at])
        reason = (
            f"past the largest finite {declared} value ({limit:g})"
            if abs(value) > limit
            else f"which {declared} does not hold{' exactly' if given.dtype.kind in 'iu' else ''}"
        )
        raise TosaError(
            f"input '{name}' holds {value!r} at {list(map(int, at))}, {reason}: it would become "
            f"{_number(converted[at])!r}. Give values the input's type holds, or run(..., cast=True) to convert anyway",
            file=file,
        )
    return converted


def _number(x) -> int | float:
    return int(x) if np.asarray(x).dtype.kind in "iu" else float(x)


def _check_range(name: str, given: np.ndarray, storage: np.dtype, type_name: str, file: str | None) -> None:
    """An integer feed with values the storage type cannot hold: an error (a silent wrap would change them)."""
    # a cast that can wrap needs the values scanned; one that cannot (e.g. int8 into int16) costs nothing per run
    if given.dtype.kind in "iu" and storage.kind in "iu" and given.size and not np.can_cast(given.dtype, storage):
        info = np.iinfo(storage)
        lo, hi = int(given.min()), int(given.max())
        if lo < info.min or hi > info.max:
            raise TosaError(
                f"input '{name}' holds values {lo}..{hi}, outside {type_name}'s storage range {info.min}..{info.max}",
                file=file,
            )

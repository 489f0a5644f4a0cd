"""Synthetic inputs for any model (issue 39): IREE-like splats and seeded random values.

    --input name=1x8x8x3xf32=0.5   # shape x element type = splat value (iree-benchmark-module's form)
    --input 1x8x8x3xf32=0.5        # the name may be left out when the model has one input
    --input name=0.5               # shape and type: the model's declared ones
    --input name=1x8x8x3xf32       # no value: zeros, or random values with --random
    --input name=file.npy          # an array from a file (run / profile / compare's -i form)
    --random SEED                  # every input not given: reproducible values in its type's sensible range

Element types are IREE's (i1, i4, i8, i16, i32, i48, i64, f16, f32, bf16, f8e4m3, f8e5m2, ...), TOSA's names in any
case (fp32, int8, bool, fp8e4m3, fp4e2m1, mxint8, ...) or numpy's (float32, int8, bool); they are mapped to the
model's declared TOSA type, and a shape or type other than the declared one is a TosaError naming the input and
the rule. Random ranges: floats uniform in [-1, 1); int4 / int8 / int16 (and MXINT8 codes) their whole range;
int32 / int48 / int64 / shape in [0, 16) (indices and counts); bool half true; FP8UE8M0 scales 2^k, k in [-4, 4].
Each input draws from its own stream, numpy's default_rng((SEED, position in the model's inputs)): the same seed
gives the same values, whatever other inputs are given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import TosaError
from ...ir.dtype import DType
from ...store.serial import load_npy

# IREE's element-type spellings -> TOSA types (TOSA names and numpy names are read through DType / _NUMPY_NAMES)
_IREE = {
    "i1": DType.BOOL,
    "bool": DType.BOOL,
    "i4": DType.INT4,
    "si4": DType.INT4,
    "i8": DType.INT8,
    "si8": DType.INT8,
    "i16": DType.INT16,
    "si16": DType.INT16,
    "i32": DType.INT32,
    "si32": DType.INT32,
    "i48": DType.INT48,
    "i64": DType.INT64,
    "si64": DType.INT64,
    "f16": DType.FP16,
    "f32": DType.FP32,
    "bf16": DType.BF16,
    "f8e4m3": DType.FP8E4M3,
    "f8e4m3fn": DType.FP8E4M3,
    "f8e5m2": DType.FP8E5M2,
    "f6e2m3": DType.FP6E2M3,
    "f6e2m3fn": DType.FP6E2M3,
    "f6e3m2": DType.FP6E3M2,
    "f6e3m2fn": DType.FP6E3M2,
    "f4e2m1": DType.FP4E2M1,
    "f4e2m1fn": DType.FP4E2M1,
    "f8e8m0fnu": DType.FP8UE8M0,
}
# numpy / ml_dtypes names a backend may declare (an ExecuTorch program's inputs are numpy dtypes)
_NUMPY_NAMES = {
    "bool": DType.BOOL,
    "int8": DType.INT8,
    "int16": DType.INT16,
    "int32": DType.INT32,
    "int64": DType.INT64,
    "float16": DType.FP16,
    "float32": DType.FP32,
    "bfloat16": DType.BF16,
    "float8_e4m3fn": DType.FP8E4M3,
    "float8_e5m2": DType.FP8E5M2,
}
_IREE_OF: dict[DType, str] = {}
for _name, _dtype in _IREE.items():
    _IREE_OF.setdefault(_dtype, _name)
_TYPE = re.compile(r"^(?:(\d+(?:x\d+)*)x)?([A-Za-z][A-Za-z0-9_]*)$")
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?|inf|nan)$|^(?:true|false)$", re.I)
RULE = "--input takes name=SHAPExTYPE=VALUE (e.g. x=1x8x8x3xf32=0.5), SHAPExTYPE=VALUE for a model of one input, "
RULE += "name=VALUE, name=SHAPExTYPE or name=file.npy"


def element_type(text: str) -> DType | None:
    """An element type's DType: IREE's spelling (f32, i8, i1), TOSA's (fp32, int8, bool) or numpy's (float32);
    None for a word that is none of them."""
    low = text.lower()
    if low in _IREE:
        return _IREE[low]
    if low in _NUMPY_NAMES:
        return _NUMPY_NAMES[low]
    try:
        dtype = DType.of(low)
    except ValueError:
        return None
    return None if dtype in (DType.UNKNOWN,) else dtype


def type_name(dtype: DType) -> str:
    """How the error messages spell a type: TOSA's name with IREE's after it ("FP32 (f32)")."""
    short = _IREE_OF.get(dtype)
    return f"{dtype.name} ({short})" if short else dtype.name


@dataclass(frozen=True)
class Spec:
    """One --input: its name (None: the model's only input), and a file, or a shape / type (None: the declared
    ones) with a splat value (None: zeros, or random with --random)."""

    text: str
    name: str | None = None
    shape: tuple[int, ...] | None = None
    dtype: DType | None = None
    value: str | None = None
    file: Path | None = None


def _type_spec(text: str) -> tuple[tuple[int, ...], DType] | None:
    """'1x8x8x3xf32' -> ((1, 8, 8, 3), FP32); 'f32' -> ((), FP32); None when it is not that form."""
    match = _TYPE.match(text)
    if not match:
        return None
    dtype = element_type(match.group(2))
    if dtype is None:
        return None
    shape = tuple(int(d) for d in match.group(1).split("x")) if match.group(1) else ()
    return shape, dtype


def parse(text: str) -> Spec:
    """One --input value as a Spec (a TosaError naming the rule when it is none of the forms)."""
    name, _, rest = text.partition("=")
    if name and rest.lower().endswith(".npy"):  # name=file.npy (the file's name may hold '=')
        return Spec(text, name, file=Path(rest))
    parts = text.split("=")
    if len(parts) > 3 or not all(parts):
        raise TosaError(f"{RULE}; got {text!r}")
    if len(parts) == 3:
        name, typed, value = parts
        shape_type = _type_spec(typed)
        if shape_type is None:
            raise TosaError(f"{RULE}; {typed!r} in {text!r} is not SHAPExTYPE (an element type: i8, f32, bf16, ...)")
        return Spec(text, name, *shape_type, _value(value, text))
    if len(parts) == 1:
        shape_type = _type_spec(parts[0])
        if shape_type is None:
            raise TosaError(f"{RULE}; got {text!r}")
        return Spec(text, None, *shape_type)
    first, second = parts
    shape_type = _type_spec(first)
    if shape_type is not None:  # SHAPExTYPE=VALUE
        return Spec(text, None, *shape_type, _value(second, text))
    shape_type = _type_spec(second)
    if shape_type is not None:  # name=SHAPExTYPE
        return Spec(text, first, *shape_type)
    if _NUMBER.match(second):  # name=VALUE
        return Spec(text, first, value=second)
    return Spec(text, first, file=Path(second))


def _value(value: str, text: str) -> str:
    if not _NUMBER.match(value):
        raise TosaError(f"{RULE}; the value {value!r} in {text!r} is not a number (or true / false, inf, nan)")
    return value


def declared_type(dtype: str) -> DType | None:
    """A model's declared dtype name (a TOSA name, or numpy's for an ExecuTorch program) as a DType."""
    return element_type(dtype)


def splat(spec: Spec, name: str, shape: tuple[int, ...], dtype: DType, storage: np.dtype) -> np.ndarray:
    """The array a splat spec fills, in the input's storage dtype (a TosaError for a value the type cannot hold)."""
    word = {"true": "1", "false": "0"}.get((spec.value or "0").lower(), (spec.value or "0").lower())
    where = f"input {name!r} ({spec.text!r})"
    if dtype == DType.BOOL:
        if word not in ("0", "1"):
            raise TosaError(f"{where}: a bool input takes 0, 1, true or false, got {spec.value!r}")
        return np.full(shape, word == "1", np.bool_)
    if dtype.is_int or dtype in (DType.SHAPE, DType.MXINT8):
        try:
            number = int(word)
        except ValueError:
            raise TosaError(
                f"{where}: an integer input ({type_name(dtype)}) takes an integer, got {spec.value!r}"
            ) from None
        lo, hi = dtype.int_range if dtype.is_int else (-128, 127) if dtype == DType.MXINT8 else (-(2**63), 2**63 - 1)
        if not lo <= number <= hi:
            raise TosaError(f"{where}: {number} is outside {type_name(dtype)}'s range [{lo}, {hi}]")
        return np.full(shape, number, storage)
    real = float(word)
    with np.errstate(over="ignore", invalid="ignore"):
        stored = np.asarray(real).astype(storage)
    if np.isfinite(real) and not np.isfinite(stored.astype(np.float64)):
        raise TosaError(f"{where}: {real} is outside {type_name(dtype)}'s range (it would be {stored})")
    return np.full(shape, stored, storage)


def random(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType, storage: np.dtype) -> np.ndarray:
    """Values in a type's sensible range (the module's docstring says which)."""
    if dtype == DType.BOOL:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype in (DType.INT4, DType.INT8, DType.INT16, DType.MXINT8):
        lo, hi = dtype.int_range if dtype != DType.MXINT8 else (-128, 127)
        return rng.integers(lo, hi + 1, size=shape).astype(storage)
    if dtype.is_int or dtype == DType.SHAPE:
        return rng.integers(0, 16, size=shape).astype(storage)
    if dtype == DType.FP8UE8M0:
        return np.exp2(rng.integers(-4, 5, size=shape)).astype(storage)
    if storage.kind in "iub":  # a declared type with no TOSA name (numpy's, from a .vgf or .pte)
        return rng.integers(0, 16, size=shape).astype(storage)
    return rng.uniform(-1.0, 1.0, size=shape).astype(storage)


def storage_of(declared: str, dtype: DType | None) -> np.dtype:
    """The numpy dtype a declared input is fed in: its TOSA type's storage, else numpy's own name."""
    if dtype is not None:
        return dtype.numpy
    try:
        return np.dtype(declared)
    except TypeError:
        raise TosaError(f"an input of type {declared!r} cannot be made up: give it as name=file.npy") from None


def feeds(
    signature: Mapping[str, tuple[tuple[int, ...], str]],
    specs: Sequence[Spec] = (),
    seed: int | None = None,
    given: Mapping[str, np.ndarray] | None = None,
    file: str | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every input of `signature` (a Model's `inputs`): from `given` (arrays read already), else its spec, else
    random with `seed`. Returns the feeds and how each was made ("splat 0.5", "random (seed 3)", "file", "zeros").
    A spec naming no input, a second spec for one input, a shape / type other than the declared one, or an input
    with neither a spec nor a seed is a TosaError naming the input."""
    names = list(signature)
    given = dict(given or {})
    chosen: dict[str, Spec] = {}
    for spec in specs:
        name = spec.name
        if name is None:
            if len(names) != 1:
                raise TosaError(
                    f"--input {spec.text!r} names no input and the model takes {len(names)}: {names}; write "
                    "name=SHAPExTYPE=VALUE",
                    file=file,
                )
            name = names[0]
        if name not in signature:
            raise TosaError(
                f"--input {spec.text!r}: the model has no input {name!r}; its inputs are {names}", file=file
            )
        if name in chosen or name in given:
            raise TosaError(f"input {name!r} is given twice (--input {spec.text!r})", file=file)
        chosen[name] = spec
    unknown = sorted(set(given) - set(signature))
    if unknown:
        raise TosaError(f"the model has no input(s) {unknown}; its inputs are {names}", file=file)
    out: dict[str, np.ndarray] = {}
    how: dict[str, str] = {}
    for index, (name, (shape, declared)) in enumerate(signature.items()):
        shape = tuple(int(d) for d in shape)
        dtype = declared_type(declared)
        if name in given:
            out[name], how[name] = given[name], "file"
            continue
        wanted = chosen.get(name)
        if wanted is None and seed is None:
            raise TosaError(
                f"no value for input {name!r} ({'x'.join(map(str, shape))} {declared}): give --input "
                f"{name}=VALUE (a splat), {name}=file.npy, or --random SEED",
                file=file,
            )
        if wanted is not None and wanted.file is not None:
            out[name], how[name] = load_npy(wanted.file), "file"
            continue
        if wanted is not None and declared == "None":  # (a .pte's optional argument exported as None)
            raise TosaError(f"--input {wanted.text!r}: input {name!r} is an argument the program was exported with as "
                            "None, which it only takes as None: leave it out", file=file)  # fmt: skip
        if wanted is not None:
            _check(wanted, name, shape, declared, dtype, file)
        storage = storage_of(declared, dtype)
        if wanted is not None and (wanted.value is not None or seed is None):
            out[name] = splat(wanted, name, shape, dtype, storage) if dtype else _plain(wanted, shape, storage)
            how[name] = f"splat {wanted.value}" if wanted.value is not None else "zeros"
        else:
            rng = np.random.default_rng((int(seed or 0), index))
            out[name] = random(rng, shape, dtype or DType.UNKNOWN, storage)
            how[name] = f"random (seed {seed})"
    return out, how


def _plain(spec: Spec, shape: tuple[int, ...], storage: np.dtype) -> np.ndarray:
    return np.full(shape, float(spec.value or 0), storage)


def _check(spec: Spec, name: str, shape: tuple[int, ...], declared: str, dtype: DType | None, file) -> None:
    """A spec's shape and type against the input's declared ones."""
    said = f"--input {spec.text!r}"
    if spec.shape is not None and spec.shape != shape:
        raise TosaError(
            f"{said}: input {name!r} has shape {'x'.join(map(str, shape)) or 'scalar'} ({list(shape)}), the spec "
            f"says {'x'.join(map(str, spec.shape)) or 'scalar'}: a spec's shape must be the declared one",
            file=file,
        )
    if spec.dtype is not None and spec.dtype != dtype:
        theirs = type_name(dtype) if dtype else declared
        raise TosaError(
            f"{said}: input {name!r} is {theirs}, the spec says {type_name(spec.dtype)}: a spec's element type "
            "must be the declared one",
            file=file,
        )


def summary(value: np.ndarray, first: int = 5) -> str:
    """One output in a line: min / max / mean and its first values (`tosa-vk run`)."""
    array = np.asarray(value)
    if array.size == 0:
        return "empty"
    flat = array.reshape(-1)
    if array.dtype == np.bool_:
        head = ", ".join("true" if v else "false" for v in flat[:first])
        return f"{int(flat.sum())} of {flat.size} true; first [{head}{', ...' if flat.size > first else ''}]"
    wide = flat.astype(np.float64) if array.dtype.kind not in "iu" else flat.astype(np.int64)
    finite = wide[np.isfinite(wide)] if wide.dtype.kind == "f" else wide
    head = ", ".join(f"{v:.6g}" if wide.dtype.kind == "f" else str(v) for v in wide[:first])
    more = ", ..." if flat.size > first else ""
    if finite.size == 0:
        stats = "no finite values"
    else:
        stats = f"min {finite.min():.6g} max {finite.max():.6g} mean {finite.astype(np.float64).mean():.6g}"
        if finite.size < wide.size:
            stats += f" ({wide.size - finite.size} non-finite)"
    return f"{stats}; first [{head}{more}]"

"""TOSA element types (1.0, and 1.1's INT64 and MX types): their numpy storage and byte encoding in .tosa files.

Storage in numpy follows Arm's conformance tooling: int4 in int8, int48 and shape in int64, bf16 / fp8 / fp6 / fp4
/ fp8ue8m0 as ml_dtypes types (one byte an element), MXINT8 as its int8 code (value = code / 64). In a flatbuffer,
constant data is little-endian; int4 and fp4 pack two values per byte (low nibble first), fp6 four values per
three bytes (a little-endian bit stream) and int48 takes six bytes per value (spec section "Data Types"). Arm's
conformance .npy files hold fp6 / fp4 packed the same way.
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np
import numpy.typing as npt


class DType(enum.IntEnum):
    """Element types, numbered as in the .tosa format."""

    UNKNOWN = 0
    BOOL = 1
    INT4 = 2
    INT8 = 3
    INT16 = 4
    INT32 = 5
    INT48 = 6
    FP32 = 7
    FP16 = 8
    BF16 = 9
    SHAPE = 10
    FP8E4M3 = 11
    FP8E5M2 = 12
    # TOSA 1.1
    FP6E2M3 = 13
    FP6E3M2 = 14
    FP4E2M1 = 15
    FP8UE8M0 = 16  # a block scale: 2^(bits - 127), no sign, no zero
    INT64 = 17
    MXINT8 = 18  # an MX element: int8 code / 64

    @classmethod
    def of(cls, value: DTypeLike) -> DType:
        """Accepts a DType, its name in any case ("fp32", "INT8") or its number."""
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise ValueError(f"unknown TOSA dtype {value!r}") from None
        return cls(value)

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype that holds one element."""
        return _NUMPY[self]

    @property
    def is_float(self) -> bool:
        """A floating-point type numpy computes in (ml_dtypes): not MXINT8, whose storage is its int8 code."""
        return self in _FLOATS

    @property
    def is_int(self) -> bool:
        return self in (DType.INT4, DType.INT8, DType.INT16, DType.INT32, DType.INT48, DType.INT64)

    @property
    def since(self) -> tuple[int, int]:
        """The TOSA version that introduced the type."""
        return (1, 1) if self >= DType.FP6E2M3 else (1, 0)

    @property
    def bits(self) -> int:
        return _BITS[self]

    @property
    def int_range(self) -> tuple[int, int]:
        """Signed range of an integer type (the spec's int4_t excludes -8 only for weights; storage holds -8)."""
        b = self.bits
        return -(1 << (b - 1)), (1 << (b - 1)) - 1

    def __str__(self) -> str:
        return self.name


DTypeLike = DType | str | int  # what DType.of accepts: a DType, its name in any case or its number

_NUMPY = {
    DType.BOOL: np.dtype(np.bool_),
    DType.INT4: np.dtype(np.int8),
    DType.INT8: np.dtype(np.int8),
    DType.INT16: np.dtype(np.int16),
    DType.INT32: np.dtype(np.int32),
    DType.INT48: np.dtype(np.int64),
    DType.FP32: np.dtype(np.float32),
    DType.FP16: np.dtype(np.float16),
    DType.BF16: np.dtype(ml_dtypes.bfloat16),
    DType.SHAPE: np.dtype(np.int64),
    DType.FP8E4M3: np.dtype(ml_dtypes.float8_e4m3fn),
    DType.FP8E5M2: np.dtype(ml_dtypes.float8_e5m2),
    DType.FP6E2M3: np.dtype(ml_dtypes.float6_e2m3fn),
    DType.FP6E3M2: np.dtype(ml_dtypes.float6_e3m2fn),
    DType.FP4E2M1: np.dtype(ml_dtypes.float4_e2m1fn),
    DType.FP8UE8M0: np.dtype(ml_dtypes.float8_e8m0fnu),
    DType.INT64: np.dtype(np.int64),
    DType.MXINT8: np.dtype(np.int8),
}
_FLOATS = frozenset(
    (DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2)
    + (DType.FP6E2M3, DType.FP6E3M2, DType.FP4E2M1, DType.FP8UE8M0)
)
# Element types of a block-scaled tensor (the spec's bs32 types: one FP8UE8M0 scale per 32 elements of the last
# dimension)
BLOCK_ELEMENTS = (DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2, DType.FP8E4M3, DType.FP8E5M2, DType.MXINT8)

_BITS = {
    DType.BOOL: 8,
    DType.INT4: 4,
    DType.INT8: 8,
    DType.INT16: 16,
    DType.INT32: 32,
    DType.INT48: 48,
    DType.FP32: 32,
    DType.FP16: 16,
    DType.BF16: 16,
    DType.SHAPE: 64,
    DType.FP8E4M3: 8,
    DType.FP8E5M2: 8,
    DType.FP6E2M3: 6,
    DType.FP6E3M2: 6,
    DType.FP4E2M1: 4,
    DType.FP8UE8M0: 8,
    DType.INT64: 64,
    DType.MXINT8: 8,
}
PACKED = {DType.INT4: 4, DType.FP4E2M1: 4, DType.FP6E2M3: 6, DType.FP6E3M2: 6}  # bits a value, packed


def encoded_size(dtype: DType, count: int) -> int:
    """Bytes that `count` elements of `dtype` take in a .tosa constant."""
    if dtype in PACKED:
        return (count * PACKED[dtype] + 7) // 8
    return count * (_BITS[dtype] // 8)


def unpack_bits(raw: np.ndarray, bits: int, count: int) -> np.ndarray:
    """`count` values of `bits` bits (4 or 6) from a little-endian bit stream of bytes -> one uint8 each."""
    raw = np.asarray(raw, dtype=np.uint8).reshape(-1)
    stream = np.unpackbits(raw, bitorder="little")[: count * bits].reshape(count, bits)
    return np.packbits(stream, axis=1, bitorder="little").reshape(count)


def pack_bits(codes: np.ndarray, bits: int) -> bytes:
    """One code a byte (its low `bits` bits) -> a little-endian bit stream, zero-padded to whole bytes."""
    codes = np.asarray(codes, dtype=np.uint8).reshape(-1, 1)
    stream = np.unpackbits(codes, axis=1, bitorder="little")[:, :bits].reshape(-1)
    return np.packbits(stream, bitorder="little").tobytes()


def decode(dtype: DType, raw: bytes | np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Constant bytes from a .tosa file -> numpy array of `shape` in the storage dtype.

    Raises ValueError when the byte count does not match the shape.
    """
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.frombuffer(raw, dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw.view(np.uint8)
    need = encoded_size(dtype, count)
    if raw.size < need:
        raise ValueError(f"{dtype} tensor of shape {list(shape)} needs {need} bytes of data, file has {raw.size}")
    raw = raw[:need]
    if dtype == DType.INT4:
        nibbles = unpack_bits(raw, 4, count)
        values = ((nibbles.astype(np.int8) << 4) >> 4).astype(np.int8)  # sign-extend 4 -> 8 bits
    elif dtype in PACKED:
        values = unpack_bits(raw, PACKED[dtype], count).view(_NUMPY[dtype])
    elif dtype == DType.INT48:
        padded = np.zeros((count, 8), dtype=np.uint8)
        padded[:, :6] = raw.reshape(count, 6)
        values = (padded.view("<i8").reshape(count) << 16) >> 16  # sign-extend 48 -> 64 bits
    else:
        values = raw.view(_NUMPY[dtype].newbyteorder("<")).astype(_NUMPY[dtype])
    return values.reshape(shape)


def encode(dtype: DType, values: np.ndarray) -> bytes:
    """numpy array -> constant bytes for a .tosa file (the inverse of decode)."""
    values = np.ascontiguousarray(values).reshape(-1)
    if dtype == DType.INT4:
        return pack_bits(values.astype(np.int8).view(np.uint8), 4)
    if dtype in PACKED:
        return pack_bits(values.astype(_NUMPY[dtype]).view(np.uint8), PACKED[dtype])
    if dtype == DType.INT48:
        return values.astype("<i8").view(np.uint8).reshape(-1, 8)[:, :6].tobytes()
    return values.astype(_NUMPY[dtype]).astype(_NUMPY[dtype].newbyteorder("<")).tobytes()


def from_npy(values: np.ndarray, dtype: DType) -> np.ndarray:
    """An array in the encoding of Arm's conformance .npy files -> the storage dtype.

    Those files hold bf16 as raw 2-byte void, fp8e4m3 / fp8ue8m0 as 1-byte void, fp8e5m2 and MXINT8 as uint8
    bits, and fp6 / fp4 packed (uint8, last dimension 3/4 or 1/2 as long).
    """
    values = np.asarray(values)
    target = _NUMPY[dtype]
    if values.dtype == target:
        return values
    if values.dtype == np.uint8 and dtype in PACKED and dtype != DType.INT4 and values.ndim:
        last = values.shape[-1] * 8 // PACKED[dtype]
        count = int(np.prod(values.shape[:-1], dtype=np.int64)) * last
        return unpack_bits(values, PACKED[dtype], count).view(target).reshape(values.shape[:-1] + (last,))
    if values.dtype == np.uint8 and dtype == DType.MXINT8:
        return values.view(target)
    if values.dtype.kind == "V" and values.dtype.itemsize == target.itemsize and dtype.is_float:
        return values.view(target)
    if values.dtype == np.uint8 and dtype == DType.FP8E5M2:  # bits, as Arm's files store fp8e5m2
        return values.view(target)
    return values.astype(target)


def to_npy(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Storage dtype -> the encoding Arm's tools read (fp8e5m2 / MXINT8 as uint8 bits, fp6 / fp4 packed; ml_dtypes
    bf16 / fp8e4m3 / fp8ue8m0 save as '<V2' / '<V1' as they expect)."""
    values = np.asarray(values, dtype=_NUMPY[dtype])
    if dtype in (DType.FP8E5M2, DType.MXINT8):
        return values.view(np.uint8)
    if dtype in PACKED and dtype != DType.INT4 and values.ndim:
        packed = np.frombuffer(pack_bits(values.view(np.uint8), PACKED[dtype]), np.uint8)
        return packed.reshape(values.shape[:-1] + (values.shape[-1] * PACKED[dtype] // 8,))
    return values


def real_values(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Storage array -> float64 values (MXINT8 codes scaled by 1/64)."""
    if dtype == DType.MXINT8:
        return np.asarray(values, dtype=np.int8).astype(np.float64) / 64.0
    return np.asarray(values).astype(np.float64)


# numpy storage dtype -> the TOSA type of that storage: int8 is INT8 (not INT4 / MXINT8, stored in it too), int64 INT64
# (not INT48 / SHAPE)
_OF_NUMPY = {
    np.dtype(d.numpy): d
    for d in reversed(DType)
    if d not in (DType.UNKNOWN, DType.SHAPE, DType.INT4, DType.INT48, DType.MXINT8)
}


def tosa_name(dtype: npt.DTypeLike) -> str:
    """The TOSA name of the element type a numpy dtype holds ("float32" -> "FP32"): how a model's signature names
    its arrays' types whatever its file format (.tosa, .pte, .vgf); numpy's own name where TOSA has no such type
    (float64, uint8)."""
    d = np.dtype(dtype)
    found = _OF_NUMPY.get(d)
    return found.name if found is not None else d.name

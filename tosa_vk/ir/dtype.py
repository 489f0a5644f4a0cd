"""TOSA 1.0 element types: their numpy storage and their byte encoding in .tosa files.

Storage in numpy follows Arm's conformance tooling: int4 in int8, int48 and shape in int64, bf16 / fp8 as
ml_dtypes types. In a flatbuffer, constant data is little-endian; int4 packs two values per byte (low nibble
first) and int48 takes six bytes per value (spec section "Data Types").
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np


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
        return self in (DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2)

    @property
    def is_int(self) -> bool:
        return self in (DType.INT4, DType.INT8, DType.INT16, DType.INT32, DType.INT48)

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
}

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
}


def encoded_size(dtype: DType, count: int) -> int:
    """Bytes that `count` elements of `dtype` take in a .tosa constant."""
    if dtype == DType.INT4:
        return (count + 1) // 2
    return count * (_BITS[dtype] // 8)


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
        nibbles = np.empty(raw.size * 2, dtype=np.uint8)
        nibbles[0::2] = raw & 0xF
        nibbles[1::2] = raw >> 4
        values = ((nibbles[:count].astype(np.int8) << 4) >> 4).astype(np.int8)  # sign-extend 4 -> 8 bits
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
        nibbles = values.astype(np.int8).view(np.uint8) & 0xF
        if nibbles.size % 2:
            nibbles = np.append(nibbles, np.uint8(0))
        return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()
    if dtype == DType.INT48:
        return values.astype("<i8").view(np.uint8).reshape(-1, 8)[:, :6].tobytes()
    return values.astype(_NUMPY[dtype]).astype(_NUMPY[dtype].newbyteorder("<")).tobytes()


def from_npy(values: np.ndarray, dtype: DType) -> np.ndarray:
    """An array in the encoding of Arm's conformance .npy files -> the storage dtype.

    Those files hold bf16 as raw 2-byte void, fp8e4m3 as 1-byte void and fp8e5m2 as uint8 bits.
    """
    values = np.asarray(values)
    target = _NUMPY[dtype]
    if values.dtype == target:
        return values
    if values.dtype.kind == "V" and values.dtype.itemsize == target.itemsize and dtype.is_float:
        return values.view(target)
    if values.dtype == np.uint8 and dtype == DType.FP8E5M2:  # bits, as Arm's files store fp8e5m2
        return values.view(target)
    return values.astype(target)


def to_npy(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Storage dtype -> the encoding Arm's tools read (fp8e5m2 as uint8 bits; ml_dtypes bf16 / fp8e4m3 save
    as '<V2' / '<V1' as they expect)."""
    values = np.asarray(values, dtype=_NUMPY[dtype])
    return values.view(np.uint8) if dtype == DType.FP8E5M2 else values

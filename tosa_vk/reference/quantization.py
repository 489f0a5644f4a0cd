"""Affine quantization between float data and a quantized graph's integer tensors, as PyTorch / ExecuTorch and
TFLite define it (not a TOSA operator: a graph's RESCALEs work inside it; these work at its edges):

    q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)        x = (q - zero_point) * scale

per tensor (one scale and zero point) or per channel (one each along `axis`). Used where float data meets an int8 /
int16 graph: ExecuTorch's quantize / dequantize host ops, and the --input-qparams / --output-qparams options."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TosaError


@dataclass(frozen=True)
class QParams:
    """A tensor's quantization: `scale` and `zero_point` scalars (per tensor) or 1-D arrays along `axis` (per
    channel); `dtype` the integer type (e.g. "int8"); `qmin` / `qmax` default to that type's range."""

    scale: float | np.ndarray
    zero_point: int | np.ndarray
    dtype: str = "int8"
    axis: int | None = None
    qmin: int | None = None
    qmax: int | None = None

    def bounds(self) -> tuple[int, int]:
        info = np.iinfo(np.dtype(self.dtype))
        lo = info.min if self.qmin is None else self.qmin
        hi = info.max if self.qmax is None else self.qmax
        return int(lo), int(hi)

    def _broadcast(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scale = np.asarray(self.scale, np.float64)
        zp = np.asarray(self.zero_point, np.int64)
        if self.axis is None:
            if scale.size != 1 or zp.size != 1:
                raise TosaError("per-tensor quantization takes one scale and one zero point (give axis= per channel)")
            return scale.reshape(()), zp.reshape(())
        axis = self.axis % max(x.ndim, 1)
        if x.ndim == 0 or scale.size != x.shape[axis] or zp.size not in (1, x.shape[axis]):
            raise TosaError(
                f"per-channel quantization along axis {self.axis} needs {x.shape[axis] if x.ndim else '?'} scales "
                f"for shape {list(x.shape)}, got {scale.size}"
            )
        shape = [1] * x.ndim
        shape[axis] = -1
        return scale.reshape(shape), zp.reshape(shape if zp.size > 1 else ())


def quantize(x, qparams: QParams, *, reciprocal: bool = False) -> np.ndarray:
    """Float data -> the integer tensor (round half to even, as torch.round and numpy.rint; saturating). With
    `reciprocal`, x * (1 / scale) with both in float32, as ExecuTorch's quantize kernels and PyTorch's
    quantized_decomposed ops compute it (that product rounds some ties differently from x / scale)."""
    data = np.asarray(x, np.float32)
    scale, zp = qparams._broadcast(data)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise TosaError(f"quantization scale must be positive and finite, got {qparams.scale}")
    lo, hi = qparams.bounds()
    # in float32 (float64 would round some ties differently); a NaN quantizes to the zero point (torch leaves it
    # undefined), an infinity to qmin / qmax
    scale32 = scale.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # a huge x overflows to inf: it saturates
        scaled = data * (np.float32(1) / scale32) if reciprocal else data / scale32
        q = np.nan_to_num(np.rint(scaled).astype(np.float64)) + zp
    return np.clip(q, lo, hi).astype(np.dtype(qparams.dtype))


def dequantize(q, qparams: QParams) -> np.ndarray:
    """The integer tensor -> float32 data."""
    data = np.asarray(q)
    scale, zp = qparams._broadcast(data)
    return ((data.astype(np.int64) - zp).astype(np.float32) * scale.astype(np.float32)).astype(np.float32)

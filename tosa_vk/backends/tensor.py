"""DeviceTensor: a model's output kept where the model ran (`Model.run(feeds, device_outputs=True)`), to feed another
run of a model on the same device with no host copy.

On the Vulkan backend a DeviceTensor owns a buffer of its own on the device (tosa_vk.vulkan.memory.DeviceBuffer),
copied device to device out of the run's arena: a later run never overwrites it. It keeps that memory until
`release()` or garbage collection. A tensor that outlives its device (the model that opened the device closed)
keeps its values: the device copies every tensor still held to the host before it closes, and the tensor then lives
on the host (`device == "host"`, `.numpy()` works, and a Vulkan model refuses it as a feed like any host-backed
tensor). On the reference backend a DeviceTensor holds a numpy array (`device == "host"`), so code written for
one backend runs on the other.

A feed that is a DeviceTensor must live where the model runs (the same Vulkan Device object; the reference backend:
the host) and match the input's shape and storage dtype exactly: anything else is a TosaError, never a silent host
round trip (`tensor.numpy()` makes one explicitly).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import TosaError


class DeviceTensor:
    """An output kept on the device its model ran on: `shape`, `dtype` (numpy, the storage dtype), `device`
    (the tosa_vk.vulkan.Device, or "host"), `numpy()` (a host copy), `release()` (frees the memory now)."""

    def __init__(self, storage: Any, name: str = ""):
        """`storage`: a numpy array (host) or a tosa_vk.vulkan.memory.DeviceBuffer (Vulkan)."""
        self._storage = storage
        self.name = name

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        return tuple(self._storage.shape)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype the values are stored as (what `numpy()` returns)."""
        return np.dtype(self._storage.dtype)

    @property
    def nbytes(self) -> int:
        """The size of the values in bytes."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def device(self) -> Any:
        """The Vulkan Device holding the values, or "host" (the reference backend, or a tensor whose device closed)."""
        if isinstance(self._storage, np.ndarray):
            return "host"
        return self._storage.device or "host"

    @property
    def released(self) -> bool:
        """True once `release()` freed the memory (or its storage is gone)."""
        return self._storage is None or (not isinstance(self._storage, np.ndarray) and self._storage.released)

    def numpy(self) -> np.ndarray:
        """A host copy of the values (a TosaError once released)."""
        storage = self._storage
        if storage is None or self.released:
            raise TosaError(f"device tensor {self.name!r} was released: its values are gone")
        if isinstance(storage, np.ndarray):
            return storage.copy()
        return storage.numpy()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        values = self.numpy()
        return values if dtype is None else values.astype(dtype)

    def release(self) -> None:
        """Frees the memory now (idempotent); the tensor can no longer be read or fed."""
        storage, self._storage = self._storage, None
        if storage is not None and not isinstance(storage, np.ndarray):
            storage.release()

    def buffer_on(self, device: Any, where: str, file: str | None = None) -> Any:
        """The storage, checked to live on `device` (a Vulkan Device, or "host"); `where` names the input."""
        storage = self._storage
        if storage is None or self.released:
            raise TosaError(f"input {where!r}: device tensor {self.name!r} was released", file=file)
        mine = self.device
        if not (mine is device or (isinstance(mine, str) and mine == device)):
            here = "the host" if isinstance(device, str) else f"device {device!r}"
            there = "the host" if isinstance(mine, str) else f"device {mine!r}"
            hint = (
                " (another open device, maybe the same GPU: load both models on one, device=first_model.device)"
                if not isinstance(mine, str) and not isinstance(device, str)
                else ""
            )
            raise TosaError(
                f"input {where!r}: the device tensor lives on {there}, the model runs on {here}{hint}; pass "
                "tensor.numpy() to copy it through the host",
                file=file,
            )
        return storage

    def __repr__(self) -> str:
        state = "released" if self.released else f"on {self.device!r}"
        return f"DeviceTensor({self.name!r}, shape={self.shape if not self.released else '?'}, {state})"


def checked(tensor: DeviceTensor, device: Any, name: str, shape, dtype, file: str | None = None) -> Any:
    """A DeviceTensor feed's storage, checked to live on `device` with the input's exact shape and storage dtype
    (a device tensor is not converted: that would be a host round trip)."""
    storage = tensor.buffer_on(device, name, file)
    if tuple(tensor.shape) != tuple(shape) or tensor.dtype != np.dtype(dtype):
        raise TosaError(
            f"input {name!r} takes shape {tuple(shape)} of {np.dtype(dtype).name}; the device tensor holds "
            f"{tensor.shape} of {tensor.dtype.name} (device tensors are not converted: pass tensor.numpy())",
            file=file,
        )
    return storage

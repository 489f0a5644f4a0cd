"""One Device per physical device per process, shared by every model loaded on it (issue 49).

`acquire(selector, validation, threads)` gives the open shared Device of the physical device the selector picks (an
index, a UUID or a name: tosa_vk.vulkan.select; None: TOSA_VK_DEVICE, else the first by type), opening it on first
use; `release(device)` gives one reference back and closes the device with the last (its device tensors still held
are copied to the host first: Device.close). So two models loaded with default arguments, or with `device=` naming
the same GPU, run on one VkDevice, queue, allocator and instance, and their device tensors pass between them.

A shared device is keyed by (physical device UUID, validation layer on, compute threads):
- the validation layer is a property of the instance, so a model loaded with it gets a device of its own kind;
- lavapipe's compute threads (tosa_vk/vulkan/threads.py) are fixed when the instance makes llvmpipe's screen, so a
  program of small dispatches runs on a second shared device of the same physical device, its *sibling*, opened
  with LP_NUM_THREADS=0 (lavapipe only: GPUs have one). Siblings' memory is the same host memory (lavapipe's one
  memory type is host-visible), so a device tensor crosses between them as a copy out of its mapped memory into
  the arena (`siblings`; counted in Model.transferred["to_device"]), not as an error.
A Device the user opens and passes (`load(..., device=Device())`) is theirs: not in the registry, never closed by
a model. Thread-safe: one lock around the registry, held while a device opens, so concurrent loads get one Device.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from .device import VISIBLE, Device, DeviceInfo, select, validation_requested, visible
from .memory import host_visible_device_local

_LOCK = threading.Lock()


@dataclass
class _Entry:
    device: Device
    references: int


_OPEN: dict[tuple[str, bool, int | None], _Entry] = {}
# every physical device, as an instance the loader was not restricted for saw them (Device.enumerated): a selector
# resolved against it finds an open device without a new instance
_KNOWN: list[DeviceInfo] | None = None
# (selector, TOSA_VK_DEVICE, TOSA_VK_VISIBLE_DEVICES) -> the UUID it opened: a selector that restricted the loader
# to one driver (lavapipe by name) is resolved without an instance the next time
_RESOLVED: dict[tuple[str, str | None, str | None], str] = {}


def _physical(info: DeviceInfo) -> str:
    return info.uuid or f"{info.physical}:{info.name}"


def _asked(selector: int | str | None) -> tuple[str, str | None, str | None]:
    return (str(selector), os.environ.get("TOSA_VK_DEVICE"), os.environ.get(VISIBLE))


def _resolve(selector: int | str | None) -> str | None:
    """The UUID of the device the selector picks, where known without opening one (None: not known)."""
    if _KNOWN is not None:
        return _physical(select(visible(_KNOWN), selector))
    return _RESOLVED.get(_asked(selector))


def acquire(selector: int | str | None = None, validation: bool | None = None, threads: int | None = None) -> Device:
    """The shared Device the selector picks (opened on first use), with one more reference: release() it."""
    global _KNOWN
    validation = validation_requested() if validation is None else bool(validation)
    with _LOCK:
        uuid = _resolve(selector)
        entry = _OPEN.get((uuid, validation, threads)) if uuid is not None else None
        if entry is None:
            device = Device(selector, validation=validation, threads=threads)
            if device.enumerated is not None and _KNOWN is None:
                _KNOWN = device.enumerated
            key = (_physical(device.info), validation, threads)
            _RESOLVED[_asked(selector)] = key[0]
            entry = _OPEN.get(key)
            if entry is not None:  # (its selector was new to the registry) one device per physical device
                device.close()
            else:
                entry = _OPEN[key] = _Entry(device, 0)
                device.shared_key = key
        entry.references += 1
        return entry.device


def sibling(device: Device, threads: int) -> Device:
    """The shared device of `device`'s physical device and validation setting with lavapipe's compute threads set
    to `threads` (one more reference; release() it)."""
    # lavapipe by name: the loader opens its driver alone (device.loader_drivers), ~50 ms less than by UUID
    selector = "lavapipe" if device.info.device_class == "lavapipe" else device.info.uuid or device.info.index
    return acquire(selector, device.shared_key[1] if device.shared_key else False, threads)


def _held(device: Device) -> tuple[str, bool, int | None] | None:
    """The registry's key of `device` while it holds it (call under _LOCK); None for a user's or forgotten one."""
    key = device.shared_key
    entry = _OPEN.get(key) if key is not None else None
    return key if entry is not None and entry.device is device else None


def retain(device: Device) -> bool:
    """One more reference to a shared device a user passed on (`load(..., device=model.device)`); False, and
    nothing done, for a device that is not (or no longer) the registry's."""
    with _LOCK:
        key = _held(device)
        if key is None:
            return False
        _OPEN[key].references += 1
        return True


def release(device: Device) -> None:
    """One reference given back; the last closes the device."""
    with _LOCK:
        key = _held(device)
        if key is None:
            return  # forgotten, or not shared
        _OPEN[key].references -= 1
        if _OPEN[key].references > 0:
            return
        del _OPEN[key]
    device.close()  # outside the lock: it waits for the device to go idle


def forget(device: Device) -> None:
    """A device left busy with abandoned work (a run stopped by close(): it may never end) is never closed, and no
    later load gets it: the next opens a fresh one."""
    with _LOCK:
        key = _held(device)
        if key is not None:
            del _OPEN[key]


def siblings(a: Device, b: Device) -> bool:
    """Whether a device tensor of `a` may be copied into a run on `b` through its mapped memory: two shared devices
    of one physical device and validation setting, differing only in lavapipe's compute threads."""
    ka, kb = getattr(a, "shared_key", None), getattr(b, "shared_key", None)
    return a is not b and ka is not None and kb is not None and ka[:2] == kb[:2] and host_visible_device_local(a)


def open_devices() -> list[Device]:
    """The shared devices open now (tests, diagnostics)."""
    with _LOCK:
        return [e.device for e in _OPEN.values()]

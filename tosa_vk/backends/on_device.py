"""OnDevice: the part of a Model that owns a Runtime on a Device, shared by the Vulkan backend (a compiled graph,
tosa_vk/backends/vulkan.py) and the VGF backend (a .vgf's COMPUTE segments as they are, tosa_vk/backends/vgf.py):
the device opened or borrowed, the validation layer's messages reported, one run at a time, profile(), close()."""

from __future__ import annotations

import queue
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from ..errors import TosaError
from ..vulkan import Device, VulkanError, shared
from ..vulkan.device import validation_warns
from ..vulkan.runtime import ABANDON_AFTER_S, Runtime
from .model import Model, Timing


class OnDevice(Model):
    """A Model that owns a Runtime on a Device: close() frees both; idempotent and safe after a failed __init__.
    The device is the process's shared one for the physical device asked for (tosa_vk/vulkan/shared.py: one per
    GPU, reference counted, closed with the last model using it), or one the user opened and gave, which stays
    theirs.

    One thread at a time uses the runtime (`using()`): a run owns the arena, the recorded command buffers and the
    variables' flags until it returns, so calls from several threads are serialised, and close() waits for a run
    in progress (ABANDON_AFTER_S at most, `settle_s`, then it stops it) instead of freeing memory under it.

    Runs in flight (`max_in_flight` N > 1, `open_slots`): N runtimes of the same program on the device, each with
    its own arena, recorded command buffers and lock, the compiled pipelines made once (the first runtime's); a run
    takes whichever slot is free. `runtime` is slot 0: the variables, set_variable and the capture twins use it
    (a model with variables has one slot)."""

    runtime: Runtime | None = None
    device: Device | None = None
    own_device = False  # tosa_vk chose the device (not a Device the user gave): _placed may move the model
    _shares = False  # holds a reference to `device` in the shared registry: close() gives it back
    _slots: list[tuple[Runtime, threading.RLock]] = []
    _last_slot = 0  # the slot of the last run that ended: transferred and profile() read it

    def attach(self, device: Device | str | int | None, validation: bool | str | None = None) -> Device:
        """Opens the device (or borrows the one given) and the lock; call first in __init__. `validation`: the
        Khronos validation layer on an opened device (None: as TOSA_VK_VALIDATION says); its messages are an error
        (VulkanError) after the load or run that caused them, or a warning with validation="warn" (or
        TOSA_VK_VALIDATION=warn)."""
        if validation not in (None, True, False, "warn"):
            raise TosaError(f"validation={validation!r}: take True, False, 'warn' or None (TOSA_VK_VALIDATION)")
        self.lock = threading.RLock()
        self.own_device = not isinstance(device, Device)
        self.warn_on_validation = validation == "warn" or (validation is None and validation_warns())
        opened = None if validation is None else bool(validation)
        if isinstance(device, Device):
            # a shared device passed on (device=other_model.device) is held like one asked for by name: it stays
            # open while this model uses it; the user's own Device is borrowed
            self._shares = shared.retain(device)
            self.device = device
        else:
            self.device = shared.acquire(device, opened)
            self._shares = True
        return self.device

    def move_to(self, device: Device) -> None:
        """The model's device becomes `device` (a shared one, a reference already taken): the old one's reference
        given back and its validation messages carried over."""
        old = self.device
        self.device = device
        if old is not None and old is not device:
            device.validation_messages.extend(m for m in old.validation_messages if m not in device.validation_messages)
            if self._shares:
                shared.release(old)
        self._shares = True

    def report_validation(self) -> None:
        """The validation layer's messages since the last report reach the caller: a VulkanError, or one warning
        (validation="warn"). A device shared by several models reports to the one that looks next."""
        messages = self.device.validation_messages if self.device is not None else []
        if not messages:
            return
        taken = list(messages)
        messages.clear()
        text = f"the Khronos validation layer reported {len(taken)} message(s): " + " | ".join(taken[:5])
        if self.warn_on_validation:
            warnings.warn(text, RuntimeWarning, stacklevel=3)
        else:
            raise VulkanError(text)

    def open_slots(self, count: int, make: Callable[[Runtime], Runtime]) -> None:
        """`count` runtime slots: `runtime` and count - 1 more made by make(runtime) (sharing its pipelines)."""
        assert self.runtime is not None
        self._slots = [(self.runtime, self.lock)]
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        for _ in range(count - 1):
            self._slots.append((make(self.runtime), threading.RLock()))
        for i in range(len(self._slots)):
            self._free.put(i)
        self.max_in_flight = count

    def slot(self) -> AbstractContextManager[Runtime]:
        """A free runtime slot for one run, held by this thread until the block ends."""
        return self.using() if len(self._slots) < 2 else self._any_slot()

    @contextmanager
    def _any_slot(self) -> Iterator[Runtime]:
        i = self._free.get()
        try:
            runtime, lock = self._slots[i]
            with lock:
                if self.runtime is None or runtime.device is None:
                    raise self.closed_error()
                yield runtime
                self._last_slot = i
        finally:
            self._free.put(i)

    def _last(self) -> tuple[Runtime, threading.RLock]:
        return self._slots[self._last_slot] if len(self._slots) > 1 else (self.runtime, self.lock)  # type: ignore[return-value]

    def using(self) -> AbstractContextManager[Runtime]:
        """The runtime, held by this thread until the block ends; a clear error once the model is closed."""
        return _Using(self)

    def _timings(self) -> list[Timing]:
        """Per-kernel device times (GPU timestamp queries) and host-step wall times of the last run, in
        microseconds, in order. A TosaError unless the model was loaded with timestamps=True (it gave [] before:
        an empty profile read as "nothing ran")."""
        runtime, lock = self._last()
        with lock, self.using():  # slot 0's lock too: a clear error once closed
            if not runtime.timestamps:
                raise TosaError(
                    "profile() needs GPU timestamps: load the model with timestamps=True "
                    "(tosa_vk.load(..., backend='vulkan', timestamps=True))",
                    file=self.file,
                )
            return [Timing(s.op, s.where, float(s.end - s.start) * 1e6) for s in runtime.spans()]

    @property
    def transferred(self) -> dict[str, int]:
        runtime, lock = self._last()
        with lock, self.using():
            return dict(runtime.transferred)

    def __del__(self) -> None:
        # a Model dropped without close(): free its device memory and (own) device, whose driver threads would
        # otherwise outlive it
        try:
            self.close()
        except Exception:  # at interpreter shutdown the Vulkan module may be gone already
            pass

    # close() waits this long for the runs in progress (Model._settle), then stops them: a runaway shader must not
    # keep it waiting until its timeout_s
    settle_s = ABANDON_AFTER_S

    def _release(self) -> None:
        # a run still going after _settle is stopped at once; a slot held otherwise (variables, profile) is brief
        patience = 0.0 if self._active else ABANDON_AFTER_S
        left = False  # a slot's work abandoned on the device: what it uses stays until the process exits
        for other, held in self._slots[1:]:  # the other slots first: slot 0 holds the pipelines they share
            if not held.acquire(timeout=patience):
                other.stop("the model is closed: close() stopped this run")
                held.acquire()
            try:
                other.close()
                left = left or other.abandoned
            finally:
                held.release()
        self._slots = self._slots[:1]
        lock = getattr(self, "lock", None)
        # (a stopped run's device work is left running: Runtime.close)
        if lock is not None and not lock.acquire(timeout=patience):
            runtime = self.runtime
            if runtime is not None:
                runtime.stop("the model is closed: close() stopped this run")
            lock.acquire()
        try:
            abandoned = left  # slot 0's pipelines and the device stay too (a wait for the device would not end)
            if left:
                self.runtime = None
            if self.runtime is not None:
                self.runtime.close()
                abandoned = self.runtime.abandoned
                self.runtime = None
            if abandoned and self.device is not None:
                if self._shares:  # still busy with the abandoned work: never closed, no later load gets it
                    shared.forget(self.device)
                self.device = None  # left to the process exit
            if self._shares and self.device is not None:
                shared.release(self.device)
                self.device = None
            self._shares = False
        finally:
            if lock is not None:
                lock.release()


class _Using:
    """OnDevice.using(): a class, not a generator context manager, as every run takes it (~5 us less a run)."""

    __slots__ = ("model",)

    def __init__(self, model: OnDevice):
        self.model = model

    def __enter__(self) -> Runtime:
        model = self.model
        model.lock.acquire()
        if model.runtime is None:
            model.lock.release()
            raise model.closed_error()
        return model.runtime

    def __exit__(self, *exc) -> None:
        self.model.lock.release()

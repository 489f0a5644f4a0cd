"""The VGF backend: a .vgf of COMPUTE segments run as it is on tosa_vk's Vulkan runtime, the Program translated
from the file by tosa_vk/formats/vgf_run.py (a .vgf of TOSA GRAPH segments is decoded to a graph instead:
session.load)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vgf import VGF, VGFError, read_vgf

from ..errors import TosaFormatError
from ..formats.vgf_run import vgf_program
from ..ir.dtype import tosa_name
from ..reference.feeds import coerce_array
from ..timeout import checked_timeout
from ..vulkan import Device
from ..vulkan.runtime import DEFAULT_TIMEOUT_S, Runtime
from .model import TensorSpec, in_flight
from .on_device import OnDevice


class VGFModel(OnDevice):
    """A .vgf loaded onto a Vulkan device: run(feeds by input name) -> outputs by name. `timestamps=True`: GPU
    times for profile(); `max_in_flight`: runs submit() keeps going at once (a runtime slot each). Device tensors:
    outputs on the host (Model's default), feeds only host-backed ones."""

    source_kind = "VGF"

    backend = "vulkan"

    def __init__(
        self,
        source: str | Path | VGF,
        device: Device | None = None,
        file: str | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        validation: bool | str | None = None,
        timestamps: bool = False,
        max_in_flight: int = 1,
    ):
        checked_timeout(timeout_s)  # before any work (the Runtime keeps it)
        if isinstance(source, VGF):
            self.vgf, self.file = source, file
        else:
            self.file = file or str(source)
            try:
                self.vgf = read_vgf(source, file=self.file)
            except VGFError as err:
                raise TosaFormatError(err.rule, file=err.file) from None
        self.program = vgf_program(self.vgf, self.file)
        dev = self.attach(device, validation)
        try:
            self.runtime = Runtime(self.program, dev, timeout_s=timeout_s, timestamps=timestamps)  # for profile()
            self.open_slots(
                in_flight(max_in_flight, False, self.file),
                lambda first: Runtime(
                    self.program,
                    dev,
                    first.cache,
                    timeout_s=timeout_s,
                    timestamps=timestamps,
                    pipelines=first.pipelines,
                ),
            )
            self.report_validation()
        except BaseException:
            self.close()
            raise

    @property
    def inputs(self) -> dict[str, TensorSpec]:
        return {n: self._signature(n) for n in self.program.inputs}

    @property
    def outputs(self) -> dict[str, TensorSpec]:
        return {n: self._signature(n) for n in self.program.outputs}

    def _signature(self, name: str) -> TensorSpec:
        """(shape, TOSA dtype name) of a resource, the type read from its storage format (as the other backends
        name their inputs; a format no TOSA type stores keeps the numpy name)."""
        buf = self.program.buffer(name)
        return TensorSpec(buf.shape, tosa_name(buf.dtype))

    def _run(self, feeds: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
        values = {}
        for name in self.program.inputs:
            buf = self.program.buffer(name)
            shape, type_name = self._signature(name)
            values[name] = coerce_array(
                name,
                feeds[name],
                shape,
                np.dtype(buf.dtype),
                type_name,
                file=self.file,
                cast=cast,
                where=self.source_kind,
            )
        with self.slot() as runtime:
            results = runtime.run(values)
        self.report_validation()
        return results

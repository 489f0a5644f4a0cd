"""Errors a user can act on: each names the file, the operator and the rule that failed.

Every exception tosa_vk raises on purpose is a TosaError, so `except tosa_vk.TosaError` catches anything tosa_vk
refused; the subclasses say which kind (all exported from tosa_vk). Classes that code caught by a builtin base
before keep that base too (VulkanError is still a RuntimeError, SerialError a ValueError):

    TosaError
    ├── TosaFormatError         a file is not a readable .tosa / .vgf / tosa_vk data file
    │   └── SerialError         bytes that are not tosa_vk's serialized data (a Program, a cache entry)
    ├── TosaValidationError     the graph breaks a rule of the spec (ERROR_IF, REQUIRE, level)
    ├── TosaUnsupportedError    a valid graph this build cannot run or export as asked
    ├── VulkanError             no usable Vulkan loader / driver / device, or the device failed
    ├── ShaderError             glslc rejected a shader, or a SPIR-V module is unusable
    │   └── ReflectError        a SPIR-V module reflection trips over
    ├── TosaTimeoutError        a run did not finish within timeout_s (also a TimeoutError)
    │   └── DeviceTimeout       ... on the device (also a VulkanError)
    └── TosaCacheError          the program / SPIR-V cache cannot be used as configured

The bottom layer: imports nothing from the package.
"""

from __future__ import annotations

from typing import TypedDict


class Site(TypedDict, total=False):
    """Where in a graph an error is: keyword arguments of TosaError / TosaError.located, passed along as `**site`."""

    op: str | None
    index: int | None
    output: str | None
    region: str | None


class TosaError(Exception):
    """A graph breaks a rule of the TOSA specification (an ERROR_IF, REQUIRE or level check) or of the format.

    str(err) reads like `model.tosa: CONV2D #12 'conv_1': ERROR_IF(OH != ...)`.
    """

    def __init__(
        self,
        rule: str,
        *,
        op: str | None = None,
        index: int | None = None,
        output: str | None = None,
        file: str | None = None,
        region: str | None = None,
    ):
        self.rule = rule
        self.op = op
        self.index = index
        self.output = output
        self.file = file
        self.region = region
        super().__init__(self._text())

    def _text(self) -> str:
        where = []
        if self.file:
            where.append(f"{self.file}:")
        if self.region and self.region != "main":
            where.append(f"region '{self.region}'")
        if self.op:
            site = self.op + (f" #{self.index}" if self.index is not None else "")
            if self.output:
                site += f" '{self.output}'"
            where.append(site + ":")
        return " ".join(where + [self.rule])

    def located(
        self,
        *,
        op: str | None = None,
        index: int | None = None,
        output: str | None = None,
        file: str | None = None,
        region: str | None = None,
    ) -> TosaError:
        """The same error with more context filled in (fields already set are kept)."""
        return type(self)(
            self.rule,
            op=self.op if self.op is not None else op,
            index=self.index if self.index is not None else index,
            output=self.output if self.output is not None else output,
            file=self.file if self.file is not None else file,
            region=self.region if self.region is not None else region,
        )


class TosaFormatError(TosaError):
    """A file is not a readable TOSA 1.0 flatbuffer (truncated, wrong identifier, wrong version, corrupt)."""


class SerialError(TosaFormatError, ValueError):
    """Bytes that are not data written by serial.dumps() with the same type table."""


class TosaValidationError(TosaError):
    """The graph breaks a rule of the TOSA specification: an ERROR_IF, a REQUIRE or a level check."""


class TosaUnsupportedError(TosaError):
    """A valid graph that tosa_vk cannot run or export as asked (no kernel for an operator, a strict placement,
    a VGF that cannot hold it)."""


class VulkanError(TosaError, RuntimeError):
    """No usable Vulkan loader, driver or device, or the device failed, said in words a user can act on."""


class ShaderError(TosaError, RuntimeError):
    """glslc rejected a shader (the message names the shader variant and quotes glslc), or a SPIR-V module is
    unusable."""


class ReflectError(ShaderError, ValueError):
    """The SPIR-V module is malformed in a way reflection trips over (spirv-val reports the details)."""


class TosaTimeoutError(TosaError, TimeoutError):
    """A run did not finish within its timeout_s (tosa_vk.load(..., timeout_s=)); the model cannot run again."""


class DeviceTimeout(VulkanError, TosaTimeoutError):
    """A submitted command buffer did not finish by its deadline (it may still be running)."""


class TosaCacheError(TosaError):
    """The program cache or the SPIR-V cache cannot be used as configured ($TOSA_VK_CACHE, its size budget)."""

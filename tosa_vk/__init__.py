"""tosa_vk: run TOSA 1.0 graphs on Vulkan GPUs as GLSL compute shaders compiled to SPIR-V.

graph = tosa_vk.load_graph("model.tosa")      # or build one: b = tosa_vk.Builder()
model = tosa_vk.load("model.tosa", backend="vulkan"); outputs = model.run({"x": array})
program = tosa_vk.compile(graph, "lavapipe")  # the compile pipeline alone: a Program (plain data)
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from typing import TYPE_CHECKING

from .errors import (
    DeviceTimeout,
    ReflectError,
    SerialError,
    ShaderError,
    TosaCacheError,
    TosaError,
    TosaFormatError,
    TosaTimeoutError,
    TosaUnsupportedError,
    TosaValidationError,
    VulkanError,
)
from .version import __version__ as __version__

if TYPE_CHECKING:  # what the names below are, for mypy and editors; imported on first use (__getattr__)
    from .backends.model import Model, Timing
    from .backends.tensor import DeviceTensor
    from .builder import Builder
    from .custom import custom_op
    from .ir import DType, Graph, load_graph, save_graph, validate
    from .program import Program
    from .session import devices, load
    from .stages.compiler import compile
    from .target import Target
    from .tools.torch_export import from_torch

# public name -> its module, imported when the name is first used (PEP 562): `import tosa_vk` stays a few
# milliseconds (issue 49: numpy, the flatbuffer accessors, the catalogue and the backends took ~350 ms)
LAZY = {
    "Model": ".backends.model",
    "Timing": ".backends.model",
    "DeviceTensor": ".backends.tensor",
    "Builder": ".builder",
    "custom_op": ".custom",
    "DType": ".ir",
    "Graph": ".ir",
    "load_graph": ".ir",
    "save_graph": ".ir",
    "validate": ".ir",
    "Program": ".program",
    "devices": ".session",
    "load": ".session",
    "compile": ".stages.compiler",
    "Target": ".target",
    "from_torch": ".tools.torch_export",
}


def __getattr__(name: str) -> object:
    module = LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tosa_vk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next use is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})


# Module paths the README documented before the package took folders (issue 47), kept importable as the modules
# they are now (the same module object, not a copy): old name -> where it lives
MOVED = {
    "tosa_vk.cli": "tosa_vk.tools.cli",  # `tosa-vk` scripts installed before it import tosa_vk.cli:entry
    "tosa_vk.compare": "tosa_vk.tools.compare",
    "tosa_vk.custom_payload": "tosa_vk.abi.custom_payload",
    "tosa_vk.node_data": "tosa_vk.tools.node_data",
    "tosa_vk.quantization": "tosa_vk.reference.quantization",
    "tosa_vk.ray": "tosa_vk.tools.ray",
    "tosa_vk.tflite_import": "tosa_vk.formats.tflite_import",
}


class _Moved:
    """Imports a MOVED name as its new module (a meta path finder and loader by duck typing: importlib.abc costs
    ~25 ms to import)."""

    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name in MOVED else None

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        self.spec = module.__spec__  # the import system sets the alias's spec on it: put the module's own back
        return module

    def exec_module(self, module):
        module.__spec__ = self.spec


sys.meta_path.insert(0, _Moved())

__all__ = [
    "Builder",
    "DType",
    "DeviceTensor",
    "DeviceTimeout",
    "Graph",
    "Model",
    "Program",
    "ReflectError",
    "SerialError",
    "ShaderError",
    "Target",
    "Timing",
    "TosaCacheError",
    "TosaError",
    "TosaFormatError",
    "TosaTimeoutError",
    "TosaUnsupportedError",
    "TosaValidationError",
    "VulkanError",
    "compile",
    "custom_op",
    "devices",
    "from_torch",
    "load",
    "load_graph",
    "save_graph",
    "validate",
]

"""tosa_vk: run TOSA 1.0 graphs on Vulkan GPUs as GLSL compute shaders compiled to SPIR-V.

graph = tosa_vk.load_graph("model.tosa")      # or build one: b = tosa_vk.Builder()
model = tosa_vk.load("model.tosa", backend="vulkan"); outputs = model.run({"x": array})
program = tosa_vk.compile(graph, "lavapipe")  # the compile pipeline alone: a Program (plain data)
"""

import importlib
import importlib.abc
import importlib.machinery
import sys

from .backends.model import Model, Timing
from .backends.tensor import DeviceTensor
from .builder import Builder
from .custom import custom_op
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
from .ir import DType, Graph, load_graph, save_graph, validate
from .program import Program
from .session import devices, load
from .stages.compiler import compile
from .target import Target
from .tools.torch_export import from_torch
from .version import __version__ as __version__

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


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a MOVED name as its new module."""

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

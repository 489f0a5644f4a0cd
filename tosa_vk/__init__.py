"""tosa_vk: run TOSA 1.0 graphs on Vulkan GPUs as GLSL compute shaders compiled to SPIR-V.

graph = tosa_vk.load_graph("model.tosa")      # or build one: b = tosa_vk.Builder()
model = tosa_vk.load("model.tosa", backend="vulkan"); outputs = model.run({"x": array})
program = tosa_vk.compile(graph, "lavapipe")  # the compile pipeline alone: a Program (plain data)
"""

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

"""tosa_vk: run TOSA 1.0 graphs on Vulkan GPUs as GLSL compute shaders compiled to SPIR-V.

    graph = tosa_vk.load_graph("model.tosa")      # or build one: b = tosa_vk.Builder()
    tosa_vk.ir.validate(graph)
    model = tosa_vk.load("model.tosa", backend="reference"); outputs = model.run({"x": array})
"""
from .builder import Builder
from .custom import custom_op
from .errors import TosaError, TosaFormatError
from .ir import DType, Graph, load_graph, save_graph, validate
from .session import Model, load

__version__ = "0.1.0"
__all__ = ["Builder", "DType", "Graph", "Model", "TosaError", "TosaFormatError", "custom_op", "load", "load_graph",
           "save_graph", "validate"]

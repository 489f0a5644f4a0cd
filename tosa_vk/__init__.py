"""tosa_vk: run TOSA 1.0 graphs on Vulkan GPUs as GLSL compute shaders compiled to SPIR-V.

    graph = tosa_vk.load_graph("model.tosa")      # or build one: b = tosa_vk.Builder()
    tosa_vk.ir.validate(graph)
"""
from .builder import Builder
from .errors import TosaError, TosaFormatError
from .ir import DType, Graph, load_graph, save_graph, validate

__version__ = "0.1.0"
__all__ = ["Builder", "DType", "Graph", "TosaError", "TosaFormatError", "load_graph", "save_graph", "validate"]

"""The TOSA graph IR: types, .tosa flatbuffer I/O, the operator catalogue and validation."""

from .dtype import DType
from .flatbuffer import load_graph, read_graph, save_graph, write_graph
from .graph import Block, BlockSize, Graph, NanPropagationMode, Operator, Region, ResizeMode, RoundingMode, Tensor
from .validate import validate

__all__ = [
    "DType",
    "Graph",
    "Region",
    "Block",
    "Tensor",
    "Operator",
    "NanPropagationMode",
    "ResizeMode",
    "RoundingMode",
    "BlockSize",
    "load_graph",
    "save_graph",
    "read_graph",
    "write_graph",
    "validate",
]

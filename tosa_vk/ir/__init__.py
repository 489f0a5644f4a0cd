"""The TOSA graph IR: types, .tosa flatbuffer I/O, the operator catalogue and validation."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

from .dtype import DType
from .graph import Block, BlockSize, Graph, NanPropagationMode, Operator, Region, ResizeMode, RoundingMode, Tensor

if TYPE_CHECKING:
    from .flatbuffer import load_graph, read_graph, save_graph, write_graph
    from .validate import validate

# imported on first use (PEP 562): the flatbuffer accessors and the catalogue behind validate take ~150 ms to
# import, which a program-cache hit never needs (issue 49)
LAZY = {
    "load_graph": ".flatbuffer",
    "read_graph": ".flatbuffer",
    "save_graph": ".flatbuffer",
    "write_graph": ".flatbuffer",
    "validate": ".validate",
}


class _Package(types.ModuleType):
    """This package's module: importing the submodule `validate` sets the package's attribute of that name to the
    module, which would shadow the function `tosa_vk.ir.validate` (eagerly imported before, it was rebound)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "validate" and isinstance(value, types.ModuleType):
            value = value.validate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    module = LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


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

"""The numpy reference backend: every TOSA 1.0 operator, one module per spec chapter."""

from __future__ import annotations

import importlib

CHAPTERS = (
    "tensor_ops",
    "activation",
    "elementwise_binary",
    "elementwise_unary",
    "elementwise_ternary",
    "comparison",
    "reduction",
    "data_layout",
    "scatter_gather",
    "image",
    "type_conversion",
    "data_node",
    "control_flow",
    "variable",
    "custom",
    "shape",
)


def load_all() -> None:
    """Imports every chapter module so its operators register (idempotent)."""
    for chapter in CHAPTERS:
        importlib.import_module(f"{__name__}.{chapter}")

"""How a reference operator is called: `Call` carries one operator's inputs, types and attributes.

Each spec chapter module registers its operators with `@reference("ADD")`; a function takes a Call and returns
the output array (or a list of arrays for multi-output operators) in the storage dtype of the declared output
(DType.numpy). Value-dependent ERROR_IF / REQUIRE rules are raised with `call.error_if` / `call.require`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Operator

OPS: dict[str, Callable[[Call], Any]] = {}


def registrar(table: dict[str, Callable], what: str):
    """A decorator maker: `@made("ADD", ...)` puts a function into `table` for the named operators (two for one name
    is an error)."""

    def named(*names: str):
        def register(fn):
            for name in names:
                if name in table:
                    raise RuntimeError(f"two {what} of {name}")
                table[name] = fn
            return fn

        return register

    return named


reference = registrar(OPS, "reference implementations")  # registers a reference implementation


@dataclass
class ScaledArray:
    """A block-scaled output (TOSA 1.1): its elements and its scales (one per block of the last dimension)."""

    data: np.ndarray
    scale: np.ndarray


@dataclass
class Call:
    """One operator invocation on concrete values."""

    op: Operator
    inputs: list[np.ndarray]  # values in spec input order, storage dtypes (DType.numpy)
    in_types: list[DType]
    out_types: list[DType]
    out_shapes: list[tuple[int, ...]]
    run_region: Callable[[str, list[np.ndarray]], list[np.ndarray]] | None = None  # control flow: runs a sub-graph
    state: Any = None  # the session's variable store (VARIABLE ops)
    extra: dict = field(default_factory=dict)
    scales: list[np.ndarray | None] = field(default_factory=list)  # per input: a block-scaled one's scales (1.1)

    @property
    def name(self) -> str:
        return self.op.op

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.op.attrs.get(name, default)
        return default if value is None else value

    @property
    def input_scales(self) -> list[np.ndarray]:
        """The scales of the block-scaled inputs, in input order (TOSA 1.1; none for plain ones)."""
        return [s for s in self.scales if s is not None]

    def out_block_size(self, index: int = 0) -> int:
        """The block size of output `index` when it is block-scaled (TOSA 1.1; its result is a ScaledArray), else 0."""
        block = self.extra.get("block")
        t = block.tensors[self.op.outputs[index]] if block is not None else None
        return t.block_size if t is not None and t.block_scaled else 0

    def error_if(self, condition, rule: str) -> None:
        """ERROR_IF(rule): the graph is invalid for these values."""
        if condition if isinstance(condition, (bool, np.bool_)) else np.any(condition):
            raise TosaError(f"ERROR_IF({rule})")

    def require(self, condition, rule: str) -> None:
        """REQUIRE(rule): the result would be unpredictable unless `condition` holds everywhere."""
        if not (condition if isinstance(condition, (bool, np.bool_)) else np.all(condition)):
            raise TosaError(f"REQUIRE({rule}) does not hold: the result is unpredictable")

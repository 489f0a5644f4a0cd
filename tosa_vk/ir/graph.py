"""The TOSA graph IR: Graph -> Region -> Block -> Operator / Tensor, as in the .tosa format.

Names are the spec's: operators by their spec name ("DEPTHWISE_CONV2D"), attributes by the spec's argument names
(`pad`, `acc_type`, `rounding_mode`). Shape values (CONST_SHAPE outputs) are tensors of dtype SHAPE whose shape
is [rank]. Constant data is numpy in the storage dtype of `DType.numpy`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dtype import DType


class NanPropagationMode(enum.IntEnum):
    UNKNOWN = 0  # as written by producers that leave the field out; the spec's default is PROPAGATE
    PROPAGATE = 1
    IGNORE = 2


class ResizeMode(enum.IntEnum):
    UNKNOWN = 0
    NEAREST = 1
    BILINEAR = 2


class RoundingMode(enum.IntEnum):
    UNKNOWN = 0
    SINGLE_ROUND = 1
    INEXACT_ROUND = 2
    DOUBLE_ROUND = 3


def version_text(version: tuple[int, ...]) -> str:
    """(1, 1) -> "1.1"."""
    return ".".join(str(v) for v in version[:2])


# An operator attribute the compiler's block-scaled pass adds (tosa_vk/stages/passes/block_scaled.py): the positions of
# the spec inputs whose scales follow the operator's inputs. Host steps read it too, so it lives at the bottom.
BLOCK_SCALED_INPUTS = "block_scaled_inputs"
# attribute a compiler pass sets on a SLICE / CONCAT that must share its tensor's memory (a view: no kernel): the
# pieces of a tensor past maxStorageBufferRange (tosa_vk/stages/passes/split.py), which no kernel may bind whole
IN_PLACE = "in_place"


class BlockSize(enum.IntEnum):
    """A block-scaled operator's block_size attribute (TOSA 1.1): elements per scale."""

    UNKNOWN = 0
    BLOCK_SIZE_1 = 1
    BLOCK_SIZE_32 = 32


def _same_value(a: Any, b: Any) -> bool:
    """Equality that treats numpy values bitwise (so NaN equals NaN and -0.0 differs from 0.0)."""
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a == b


@dataclass(eq=False)
class Tensor:
    """A named tensor of a block. `data` is set for constants (CONST / CONST_SHAPE outputs, VARIABLE initial values).

    A TOSA 1.1 block-scaled tensor (`scale_dtype` set) holds its elements in `dtype` and one scale of `scale_dtype`
    per `block_size` elements along the last dimension (`scale_data` for constants); a model's feeds and results
    carry the scales as a second array named `scale_name` (Arm's conformance files: `<name>_scale.npy`).
    """

    name: str
    shape: tuple[int, ...]
    dtype: DType
    data: np.ndarray | None = None
    variable: bool = False
    variable_name: str = ""
    unranked: bool = False
    scale_dtype: DType | None = None
    block_size: int = 0
    scale_data: np.ndarray | None = None

    def __post_init__(self):
        self.shape = tuple(int(d) for d in self.shape)
        self.dtype = DType.of(self.dtype)
        if self.scale_dtype is not None:
            self.scale_dtype = DType.of(self.scale_dtype)

    @property
    def block_scaled(self) -> bool:
        return self.scale_dtype is not None

    @property
    def scale_name(self) -> str:
        return f"{self.name}_scale"

    @property
    def array_names(self) -> tuple[str, ...]:
        """The arrays a model's feeds / results hold for it: its elements, then a block-scaled tensor's scales."""
        return (self.name, self.scale_name) if self.block_scaled else (self.name,)

    @property
    def scale_shape(self) -> tuple[int, ...]:
        """The shape of the scales: the last dimension counted in blocks."""
        return (*self.shape[:-1], self.shape[-1] // self.block_size) if self.shape else ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (
            (self.name, self.shape, self.dtype, self.variable, self.variable_name, self.unranked)
            == (other.name, other.shape, other.dtype, other.variable, other.variable_name, other.unranked)
            and (self.scale_dtype, self.block_size) == (other.scale_dtype, other.block_size)
            and (self.data is None) == (other.data is None)
            and (self.data is None or _same_value(self.data, other.data))
            and (self.scale_data is None or _same_value(self.scale_data, other.scale_data))
            and (self.scale_data is None) == (other.scale_data is None)
        )

    def __repr__(self) -> str:
        const = ", const" if self.data is not None else ""
        scaled = f" x {self.scale_dtype.name}/{self.block_size}" if self.scale_dtype is not None else ""
        return f"Tensor({self.name!r}, {list(self.shape)}, {self.dtype.name}{scaled}{const})"


@dataclass(eq=False)
class Operator:
    """One operator: spec name, input / output tensor names, attributes by spec argument name."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    location: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Operator):
            return NotImplemented
        return (
            (self.op, list(self.inputs), list(self.outputs), self.location)
            == (other.op, list(other.inputs), list(other.outputs), other.location)
            and self.attrs.keys() == other.attrs.keys()
            and all(_same_value(v, other.attrs[k]) for k, v in self.attrs.items())
        )

    def __repr__(self) -> str:
        return f"Operator({self.op}, {self.inputs} -> {self.outputs})"

    def label(self, index: int, prefix: str = "") -> str:
        """How errors, placements and profiles name it: "REGION::ADD #3 'out'" (prefix: the region's, or "")."""
        where = f"{prefix}{self.op} #{index}"
        return f"{where} '{self.outputs[0]}'" if self.outputs else where


@dataclass
class Block:
    name: str
    operators: list[Operator] = field(default_factory=list)
    tensors: dict[str, Tensor] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def add_tensor(self, tensor: Tensor) -> Tensor:
        self.tensors[tensor.name] = tensor
        return tensor

    def producers(self) -> dict[str, int]:
        """Output tensor name -> index of the operator that writes it."""
        return {name: i for i, op in enumerate(self.operators) for name in op.outputs}


@dataclass
class Region:
    name: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Graph:
    """A whole TOSA program. regions[0] is the main graph; control-flow bodies are further regions."""

    regions: list[Region] = field(default_factory=list)
    version: tuple[int, int, int, bool] = (1, 0, 0, False)  # major, minor, patch, draft: decides which rules apply

    @property
    def tosa_version(self) -> tuple[int, int]:
        """(major, minor): (1, 0) or (1, 1)."""
        return self.version[0], self.version[1]

    @property
    def main(self) -> Block:
        return self.regions[0].blocks[0]

    def region(self, name: str) -> Region:
        for region in self.regions:
            if region.name == name:
                return region
        raise KeyError(name)

    def blocks(self) -> Iterator[tuple[Region, Block]]:
        for region in self.regions:
            for block in region.blocks:
                yield region, block

    @property
    def inputs(self) -> list[Tensor]:
        return [self.main.tensors[n] for n in self.main.inputs]

    @property
    def outputs(self) -> list[Tensor]:
        return [self.main.tensors[n] for n in self.main.outputs]

    def op_counts(self) -> dict[str, int]:
        """Operators by spec name over every region, sorted by name (CONST and CONST_SHAPE included)."""
        counts: dict[str, int] = {}
        for _, block in self.blocks():
            for op in block.operators:
                counts[op.op] = counts.get(op.op, 0) + 1
        return dict(sorted(counts.items()))

"""The values of TOSA 1.1's shape operators (spec chapter "Shape Operators", EXT-SHAPE) and DIM, on Python ints.

shape_t values must be resolvable to constants at backend compile time, so they are computed once, here, from
their constant inputs: the validator (through shapes.py) to infer the shapes that RESHAPE, TILE, PAD, ... take
from them, the Vulkan backend's folding pass (tosa_vk/stages/passes/shape.py) to replace each operator by a CONST_SHAPE,
and the reference backend (tosa_vk/reference/shape.py). Each function follows its operator's pseudocode; a rule
that does not hold raises TosaError with the spec's ERROR_IF / REQUIRE text. tensor_size_t is held as int64.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import TosaError

Values = list[int]

# Operators whose output is a shape value, and ASSERT_EQUAL_SHAPE (no output: a check of two shape values).
VALUE_OPS = (
    "DIM",
    "ADD_SHAPE",
    "SUB_SHAPE",
    "MUL_SHAPE",
    "DIV_CEIL_SHAPE",
    "DIV_FLOOR_SHAPE",
    "MOD_SHAPE",
    "MIN_SHAPE",
    "MAX_SHAPE",
    "EXP2_SHAPE",
    "LOG2_CEIL_SHAPE",
    "LOG2_FLOOR_SHAPE",
    "CONCAT_SHAPE",
    "SLICE_SHAPE",
)
SHAPE_OPS = (*VALUE_OPS, "ASSERT_EQUAL_SHAPE")
FOLDED = "folded"  # attribute of a CONST_SHAPE that a compiler pass made of a shape operator: the operator's name

_INT64 = (-(1 << 63), (1 << 63) - 1)  # tensor_size_t as tosa_vk holds it
MAX_LOG2_SIZE_8K = 31  # level 8K's MAX_LOG2_SIZE (EXP2_SHAPE's bound) where no level is given


def _error_if(cond: bool, rule: str, detail: str) -> None:
    if cond:
        raise TosaError(f"ERROR_IF({rule}): {detail}")


def _require(cond: bool, rule: str, detail: str) -> None:
    if not cond:
        raise TosaError(f"REQUIRE({rule}) does not hold: {detail}")


def _fits(values: Values, what: str) -> Values:
    for v in values:
        _require(_INT64[0] <= v <= _INT64[1], f"the result of {what} fits tensor_size_t", f"{v}")
    return values


def _pairwise(fn: Callable[[int, int], int], checks: Callable[[int, int], None] | None = None):
    def op(a: Values, b: Values) -> Values:
        _error_if(len(a) != len(b), "length(input1) != length(input2)", f"input1={a}, input2={b}")
        for x, y in zip(a, b):
            if checks is not None:
                checks(x, y)
        return [fn(x, y) for x, y in zip(a, b)]

    return op


def _divisible(x: int, y: int) -> None:
    _require(x >= 0, "input1[index] >= 0", f"input1 value {x}")
    _require(y >= 1, "input2[index] >= 1", f"input2 value {y}")


def _exp2(a: Values, max_log2_size: int) -> Values:
    for v in a:
        _require(v >= 0, "input[index] >= 0", f"input value {v}")
        _require(v < max_log2_size, "input[index] < MAX_LOG2_SIZE", f"input value {v}, MAX_LOG2_SIZE={max_log2_size}")
    return [1 << v for v in a]


def _log2(a: Values, ceil: bool) -> Values:
    out = []
    for v in a:
        _require(v >= 1, "in >= 1", f"input value {v}")
        floor = v.bit_length() - 1
        out.append(floor + (1 if ceil and v != 1 << floor else 0))
    return out


def _concat(parts: Sequence[Values]) -> Values:
    _error_if(len(parts) == 0, "input == []", "CONCAT_SHAPE has no input")
    out: Values = []
    for i, p in enumerate(parts):
        _error_if(len(p) == 0, "input[i] == []", f"input {i} is the shape of a zero-dimensional tensor")
        out += p
    return out


def _slice(a: Values, start: Values, size: Values) -> Values:
    s, n = start[0], size[0]
    _error_if(n <= 0, "size_value <= 0", f"size={n}")
    _error_if(s < 0, "start_value < 0", f"start={s}")
    _error_if(s + n > len(a), "start_value + size_value > length(input)", f"start={s}, size={n}, input={a}")
    return a[s : s + n]


def _assert_equal(a: Values, b: Values, allow_broadcast: bool) -> Values:
    _error_if(len(a) != len(b), "length(input1) != length(input2)", f"input1={a}, input2={b}")
    for x, y in zip(a, b):
        if allow_broadcast:  # (the pseudocode's `input[index]` is input1's)
            _error_if(
                x != 1 and y != 1 and y != x, "input2[index] != 1 && input2[index] != input1[index]", f"{a} vs {b}"
            )
        else:
            _error_if(x != y, "input1[index] != input2[index]", f"{a} vs {b}")
    return []


def dim(shape: Sequence[int], axis: int, block_size: int = 0) -> Values:
    """DIM of a tensor of `shape` (block_size: its scales' block, 0 when it is not block-scaled)."""
    rank = len(shape)
    _error_if(axis >= rank, "axis >= rank(shape)", f"axis={axis}, shape {list(shape)}")
    _error_if(axis < 0, "axis < 0", f"axis={axis}")
    if block_size:
        _error_if(rank == 0, "is_block_scale<in_t>() && rank(shape) == 0", "a block-scaled input of rank 0")
        _error_if(
            shape[-1] % block_size != 0,
            "is_block_scale<in_t>() && shape[rank(shape) - 1] % get_innermost_block_size<in_t>() != 0",
            f"shape {list(shape)}, block size {block_size}",
        )
    return [int(shape[axis])]


_BINARY: dict[str, Callable[[Values, Values], Values]] = {
    "ADD_SHAPE": _pairwise(lambda x, y: x + y),
    "SUB_SHAPE": _pairwise(lambda x, y: x - y),
    "MUL_SHAPE": _pairwise(lambda x, y: x * y),
    "DIV_CEIL_SHAPE": _pairwise(lambda x, y: -(-x // y), _divisible),
    "DIV_FLOOR_SHAPE": _pairwise(lambda x, y: x // y, _divisible),
    "MOD_SHAPE": _pairwise(lambda x, y: x % y, _divisible),
    "MIN_SHAPE": _pairwise(min),
    "MAX_SHAPE": _pairwise(max),
}


def evaluate(
    op: str,
    values: Sequence[Sequence[int] | None],
    attrs: Mapping[str, Any],
    shape: Sequence[int] | None = None,
    block_size: int = 0,
    max_log2_size: int = MAX_LOG2_SIZE_8K,
) -> Values | None:
    """The output value of shape operator `op` ([] for ASSERT_EQUAL_SHAPE, once it holds), or None while an input's
    value is unknown. values: each input's values (shape_t values; SLICE_SHAPE's start and size); shape and
    block_size: DIM's input tensor."""
    if op == "DIM":
        return None if shape is None else dim(shape, int(attrs["axis"]), block_size)
    if any(v is None for v in values):
        return None
    vals = [[int(x) for x in v] for v in values if v is not None]
    if op in _BINARY:
        return _fits(_BINARY[op](vals[0], vals[1]), op)
    if op == "EXP2_SHAPE":
        return _exp2(vals[0], max_log2_size)
    if op in ("LOG2_CEIL_SHAPE", "LOG2_FLOOR_SHAPE"):
        return _log2(vals[0], op == "LOG2_CEIL_SHAPE")
    if op == "CONCAT_SHAPE":
        return _concat(vals)
    if op == "SLICE_SHAPE":
        return _slice(vals[0], vals[1], vals[2])
    if op == "ASSERT_EQUAL_SHAPE":
        return _assert_equal(vals[0], vals[1], bool(attrs.get("allow_broadcast", False)))
    raise TosaError(f"{op} is not a shape operator")

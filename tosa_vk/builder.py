"""Build TOSA graphs in Python.

    b = tosa_vk.Builder()
    x = b.input("x", (1, 8, 8, 4), "fp32")
    w = b.const(np.ones((8, 3, 3, 4), np.float32))
    y = b.conv2d(x, w, np.zeros(8, np.float32), pad=(1, 1, 1, 1))
    b.output(b.clamp(y, min_val=0.0, max_val=6.0))
    graph = b.build()          # a tosa_vk.ir.Graph, validated

Every operator of the catalogue (tosa_vk.ir.ops) is a method named after it in lower case, taking the spec's inputs
in spec order and its attributes as keywords. Attributes default as the spec describes (stride / dilation 1, pad 0,
nan_mode PROPAGATE, acc_type from the supported-types table, ...); zero-point and pad_const inputs default to 0.
A numpy array given for a tensor input becomes a CONST, a list of ints for a shape input a CONST_SHAPE, and a
Python number for a one-element input a CONST of the dtype the op's type table implies. Output shapes and dtypes are
inferred (tosa_vk.ir.shapes); pass `out_dtype=` where the inputs do not determine it (CAST, RESCALE, CUSTOM).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from .errors import TosaError
from .ir import ops as catalogue
from .ir.dtype import DType
from .ir.graph import Block, Graph, NanPropagationMode, Operator, Region, ResizeMode, RoundingMode, Tensor
from .ir.shapes import infer_from
from .ir.validate import validate

_FROM_NUMPY = {
    np.dtype(np.bool_): DType.BOOL,
    np.dtype(np.int8): DType.INT8,
    np.dtype(np.int16): DType.INT16,
    np.dtype(np.int32): DType.INT32,
    np.dtype(np.float32): DType.FP32,
    np.dtype(np.float16): DType.FP16,
    np.dtype(ml_dtypes.bfloat16): DType.BF16,
    np.dtype(ml_dtypes.float8_e4m3fn): DType.FP8E4M3,
    np.dtype(ml_dtypes.float8_e5m2): DType.FP8E5M2,
}
_ENUMS = {"acc_type": DType, "nan_mode": NanPropagationMode, "mode": ResizeMode, "rounding_mode": RoundingMode}
# Spec defaults for attributes a caller may leave out (list lengths come from the operand's shape, e.g. "[4]").
_DEFAULT_FILL = {"pad": 0, "out_pad": 0, "stride": 1, "dilation": 1}
_DEFAULTS = {
    "local_bound": False,
    "nan_mode": NanPropagationMode.PROPAGATE,
    "round": False,
    "scale32": True,
    "rounding_mode": RoundingMode.SINGLE_ROUND,
    "per_channel": False,
    "input_unsigned": False,
    "output_unsigned": False,
    "inverse": False,
}
_DEFAULT_ZERO_INPUTS = re.compile(r"(_zp|^pad_const|^shift)$")  # inputs that default to 0 (MUL's shift too)


@dataclass(frozen=True)
class Value:
    """A tensor of the graph being built."""

    name: str
    shape: tuple[int, ...]
    dtype: DType


class Builder:
    """Builds one Graph (main region, main block) operator by operator."""

    def __init__(self, version: tuple[int, int, int, bool] = (1, 0, 0, False)):
        self.block = Block("main")
        self.graph = Graph([Region("main", [self.block])], version)
        self._used: set[str] = set()
        self._next: dict[str, int] = {}  # base name -> the next suffix to try (names stay unique in O(1))

    # -- names and tensors
    def _name(self, base: str) -> str:
        n = self._next.get(base, 0)
        name = base if n == 0 else f"{base}_{n}"
        while name in self._used or name in self.block.tensors:
            n += 1
            name = f"{base}_{n}"
        self._next[base] = n + 1
        self._used.add(name)
        return name

    def _tensor(self, name: str, shape, dtype: DType, data=None) -> Value:
        t = self.block.add_tensor(Tensor(name, tuple(shape), dtype, data))
        return Value(t.name, t.shape, t.dtype)

    def input(self, name: str, shape: Sequence[int], dtype: DType | str) -> Value:
        """A graph input."""
        value = self._tensor(self._name(name), shape, DType.of(dtype))
        self.block.inputs.append(value.name)
        return value

    def output(self, *values: Value) -> None:
        """Marks values as graph outputs, in order."""
        for v in values:
            self.block.outputs.append(v.name)

    def const(self, values, dtype: DType | str | None = None, name: str = "const") -> Value:
        """A CONST operator holding `values` (dtype from the array when not given)."""
        arr = np.asarray(values)
        dt = DType.of(dtype) if dtype is not None else _FROM_NUMPY.get(arr.dtype)
        if dt is None:
            raise TosaError(f"CONST: cannot tell the TOSA dtype of a numpy {arr.dtype} array; pass dtype=")
        value = self._tensor(self._name(name), arr.shape, dt, np.asarray(arr, dtype=dt.numpy))
        self.block.operators.append(Operator("CONST", [], [value.name]))
        return value

    def const_shape(self, values: Sequence[int], name: str = "shape") -> Value:
        """A CONST_SHAPE operator (a shape_t value)."""
        data = np.asarray(values, dtype=np.int64).reshape(-1)
        value = self._tensor(self._name(name), (data.size,), DType.SHAPE, data)
        self.block.operators.append(Operator("CONST_SHAPE", [], [value.name]))
        return value

    # -- variables (EXT-VARIABLE): state that persists across runs of one session
    def variable(self, name: str, shape: Sequence[int], dtype: DType | str, initial_value=None) -> Value:
        """Declares a variable (a VARIABLE op naming a variable tensor whose data is the initial value)."""
        dt = DType.of(dtype)
        data = None if initial_value is None else np.asarray(initial_value, dt.numpy).reshape(tuple(shape))
        t = self.block.add_tensor(Tensor(self._name(name), tuple(shape), dt, data, variable=True, variable_name=name))
        self.block.operators.append(Operator("VARIABLE", [], [t.name]))
        return Value(t.name, t.shape, t.dtype)

    def variable_write(self, var: Value, value: Value) -> None:
        self.block.operators.append(Operator("VARIABLE_WRITE", [value.name], [var.name]))

    def variable_read(self, var: Value, name: str | None = None) -> Value:
        out = self._tensor(self._name(name or f"{var.name}_read"), var.shape, var.dtype)
        self.block.operators.append(Operator("VARIABLE_READ", [var.name], [out.name]))
        return out

    # -- control flow (EXT-CONTROLFLOW): regions built by Python functions
    def cond_if(
        self, condition: Value, inputs: Sequence[Value], then_fn, else_fn, name: str = "cond_if"
    ) -> Value | tuple[Value, ...]:
        """COND_IF: `then_fn(builder, *values)` / `else_fn(...)` build the two regions (each returns its
        result values, alike in shape and dtype) from values shaped like `inputs`."""
        then_name, results = self._region(f"{name}_then", inputs, then_fn)
        else_name, _ = self._region(f"{name}_else", inputs, else_fn)
        return self._control(
            name, "COND_IF", [condition, *inputs], results, {"then_graph": then_name, "else_graph": else_name}
        )

    def while_loop(
        self, inputs: Sequence[Value], cond_fn, body_fn, name: str = "while_loop"
    ) -> Value | tuple[Value, ...]:
        """WHILE_LOOP: `cond_fn(builder, *values)` returns a bool [1]-shaped value, `body_fn(builder, *values)`
        the next values; the loop's outputs are the values when the condition turns false."""
        cond_name, _ = self._region(f"{name}_cond", inputs, cond_fn)
        body_name, _ = self._region(f"{name}_body", inputs, body_fn)
        return self._control(
            name, "WHILE_LOOP", list(inputs), list(inputs), {"cond_graph": cond_name, "body_graph": body_name}
        )

    def _region(self, base: str, inputs: Sequence[Value], fn) -> tuple[str, tuple[Value, ...]]:
        names = {r.name for r in self.graph.regions}
        name, n = base, 0
        while name in names:
            n += 1
            name = f"{base}_{n}"
        sub = Builder.__new__(Builder)
        sub.graph, sub.block, sub._used, sub._next = self.graph, Block(name), set(), {}
        self.graph.regions.append(Region(name, [sub.block]))
        results = fn(sub, *[sub.input(v.name, v.shape, v.dtype) for v in inputs])
        results = tuple(results) if isinstance(results, (list, tuple)) else (results,)
        sub.output(*results)
        return name, results

    def _control(self, name: str, op: str, inputs: list[Value], results, attrs) -> Value | tuple[Value, ...]:
        outs = [self._tensor(self._name(name), r.shape, r.dtype) for r in results]
        self.block.operators.append(Operator(op, [v.name for v in inputs], [v.name for v in outs], attrs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- operators
    def op(
        self, op_name: str, *args, out_dtype=None, out_shape=None, name: str | None = None, **attrs
    ) -> Value | tuple[Value, ...]:
        """Adds operator `op_name` with the spec's inputs in order and attributes by name."""
        spec = catalogue.op_spec(op_name)
        try:
            inputs, bound = self._inputs(spec, _inputs_by_keyword(spec, list(args), attrs), out_dtype)
            full_attrs = self._attributes(spec, attrs, bound, inputs)
            tensors = [self.block.tensors[n] for n in inputs]
            outs = self._outputs(spec, tensors, full_attrs, out_dtype, out_shape)
        except TosaError as err:
            raise err.located(op=op_name, index=len(self.block.operators)) from None
        base = name or op_name.lower()
        values = [self._tensor(self._name(base), shape, dtype) for shape, dtype in outs]
        self.block.operators.append(Operator(op_name, inputs, [v.name for v in values], full_attrs))
        return values[0] if len(values) == 1 else tuple(values)

    def __getattr__(self, attr: str):
        if attr.upper() in catalogue.OPS and attr.islower():
            return lambda *args, **kw: self.op(attr.upper(), *args, **kw)
        raise AttributeError(attr)

    def _inputs(self, spec: catalogue.OpSpec, args: list, out_dtype=None) -> tuple[list[str], dict[str, DType]]:
        operands = spec.inputs
        if any(o.is_list for o in operands):  # CONCAT, CUSTOM, control flow: flatten the list argument
            flat: list[Any] = []  # Values or array-likes, as the caller passed them
            for o, a in zip(operands, args):
                flat.extend(a if o.is_list else [a])
            return [self._as_value(a, None, o).name for a, o in zip(flat, _repeat_list(operands, len(flat)))], {}
        if len(args) > len(operands):
            raise TosaError(f"takes {len(operands)} inputs ({', '.join(o.name for o in operands)}), got {len(args)}")
        args = args + [None] * (len(operands) - len(args))
        bound = {
            o.type: a.dtype
            for o, a in zip(operands, args)
            if isinstance(a, Value) and o.type.endswith("_t") and o.type not in catalogue.SPEC_TYPES
        }
        if out_dtype is not None and not isinstance(out_dtype, (list, tuple)) and spec.outputs:
            bound.setdefault(spec.outputs[0].type, DType.of(out_dtype))  # e.g. RESCALE's output_zp is out_t
        rows = catalogue.matching_types(spec.name, bound) if spec.types else []
        row = _preferred(rows)
        names = []
        for o, a in zip(operands, args):
            if a is None and _DEFAULT_ZERO_INPUTS.search(o.name):
                a = 0
            if a is None:
                raise TosaError(f"input '{o.name}' is required")
            dtype = catalogue.SPEC_TYPES.get(o.type) or bound.get(o.type) or (row.types.get(o.type) if row else None)
            names.append(self._as_value(a, dtype, o).name)
        if row is not None:
            bound = {**dict(row.types), **bound}
        return names, bound

    def _as_value(self, a, dtype: DType | None, operand) -> Value:
        if isinstance(a, Value):
            return a
        if operand.type == "shape_t":
            return self.const_shape(a, name=operand.name)
        arr = np.asarray(a)
        if dtype is None:
            dtype = _FROM_NUMPY.get(arr.dtype)
        if dtype is None:
            raise TosaError(f"input '{operand.name}': cannot tell its dtype; pass a Value or a typed numpy array")
        if arr.ndim == 0 and operand.shape == "[1]":
            arr = arr.reshape(1)
        return self.const(arr, dtype, name=operand.name)

    def _attributes(self, spec: catalogue.OpSpec, given: dict, bound: dict, inputs: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for o in spec.attributes:
            if o.name in given:
                value = given.pop(o.name)
            elif o.name in _DEFAULT_FILL:
                value = (_DEFAULT_FILL[o.name],) * int(re.sub(r"\D", "", o.shape))
            elif o.name in _DEFAULTS:
                value = _DEFAULTS[o.name]
            elif o.name == "acc_type" and "acc_t" in bound:
                value = bound["acc_t"]
            else:
                raise TosaError(f"attribute '{o.name}' is required")
            out[o.name] = self._attribute(o.name, value, inputs)
        if given:
            raise TosaError(
                f"unknown attribute(s) {sorted(given)}; {spec.name} has {[o.name for o in spec.attributes]}"
            )
        return out

    def _attribute(self, key: str, value, inputs: list[str]):
        if key in _ENUMS:
            enum = _ENUMS[key]
            if enum is DType:
                return DType.of(value)
            return enum[value.upper()] if isinstance(value, str) else enum(value)
        if key in ("min_val", "max_val"):
            return np.asarray(value, dtype=self.block.tensors[inputs[0]].dtype.numpy)[()]
        if key == "implementation_attrs" and isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (list, tuple, np.ndarray)):
            return tuple(int(v) for v in value)
        return value

    def _outputs(self, spec, tensors: list[Tensor], attrs: dict, out_dtype, out_shape):
        if out_shape is not None:  # CUSTOM and other ops whose shape the caller knows
            dtypes = out_dtype if isinstance(out_dtype, (list, tuple)) else [out_dtype]
            shapes = out_shape if out_shape and isinstance(out_shape[0], (list, tuple)) else [out_shape]
            return [(tuple(s), DType.of(d)) for s, d in zip(shapes, dtypes)]
        outs = infer_from(spec.name, tensors, attrs, out_dtype, graph=self.graph)
        for shape, dtype in outs:
            if shape is None or dtype is None:
                raise TosaError(
                    "cannot infer the output "
                    + ("dtype: pass out_dtype=" if dtype is None else "shape: pass out_shape=")
                )
        return outs

    def build(self, check: bool = True) -> Graph:
        """The Graph built so far (validated unless check=False)."""
        if not self.block.outputs:
            raise TosaError("the graph has no outputs: call Builder.output(...)")
        if check:
            validate(self.graph)
        return self.graph


def _inputs_by_keyword(spec: catalogue.OpSpec, args: list, attrs: dict) -> list:
    """Moves inputs given by name (`input_zp=-3`) from the keywords into their spec position."""
    names = [o.name for o in spec.inputs]
    for key in [k for k in attrs if k in names]:
        i = names.index(key)
        args += [None] * (i + 1 - len(args))
        if args[i] is not None:
            raise TosaError(f"input '{key}' given twice")
        args[i] = attrs.pop(key)
    return args


def _preferred(rows: list[catalogue.TypeSupport]) -> catalogue.TypeSupport | None:
    """The row to take defaults from: the most precise accumulator (fp16 inputs accumulate in fp32 by default)."""
    if not rows:
        return None
    return max(rows, key=lambda r: r.types.get("acc_t", DType.UNKNOWN) == DType.FP32)


def _repeat_list(operands, count: int) -> list:
    """Operand descriptor per flattened input: a list operand covers the inputs the fixed ones leave."""
    fixed = sum(1 for o in operands if not o.is_list)
    out = []
    for o in operands:
        out.extend([o] * (count - fixed) if o.is_list else [o])
    return out

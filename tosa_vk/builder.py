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

import dataclasses
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import TosaError
from .ir import ops as catalogue
from .ir.dtype import DType
from .ir.graph import Block, Graph, NanPropagationMode, Operator, Region, ResizeMode, RoundingMode, Tensor
from .ir.shapes import infer_from, shape_value_from
from .ir.validate import validate

# numpy dtype -> TOSA type: the storage table of tosa_vk.ir.dtype read backwards, less the types whose storage is
# shared (int4 and MXINT8 codes live in int8, int48 and shape in int64: a numpy int8 is INT8, an int64 INT64).
_FROM_NUMPY: dict[np.dtype, DType] = {
    dt.numpy: dt for dt in DType if dt not in (DType.UNKNOWN, DType.INT4, DType.INT48, DType.SHAPE, DType.MXINT8)
}
_NO_TOSA_TYPE = {  # why a numpy dtype has no TOSA type, where a hint helps
    "uint": "TOSA has no unsigned types; RESCALE's input_unsigned / output_unsigned read int8 / int16 as unsigned",
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
_REQUIRED = inspect.Parameter.empty


def as_dtype(value: DTypeArg) -> DType:
    """A TOSA element type from a DType, its name in any case ("fp32", "INT8") or number, or a numpy dtype, scalar
    type or dtype name ("float32", np.int8, np.dtype("int16"), ml_dtypes.bfloat16). A numpy type without a TOSA
    counterpart (uint8, int64, float64, ...) raises TosaError naming the accepted names."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value.upper() in DType.__members__:
        return DType[value.upper()]
    if isinstance(value, int) and not isinstance(value, bool) and value in DType._value2member_map_:
        return DType(value)
    np_dtype = None
    if value is not None and not isinstance(value, int):
        try:
            np_dtype = np.dtype(value)
        except (TypeError, ValueError):
            pass
    if np_dtype is not None and np_dtype in _FROM_NUMPY:
        return _FROM_NUMPY[np_dtype]
    why = next(
        (text for key, text in _NO_TOSA_TYPE.items() if np_dtype is not None and np_dtype.name.startswith(key)), ""
    )
    raise TosaError(
        f"dtype {value!r} has no TOSA type{f' ({why})' if why else ''}; accepted: the TOSA names "
        f"{', '.join(d.name.lower() for d in DType if d != DType.UNKNOWN)} or the numpy dtypes "
        f"{', '.join(d.name for d in _FROM_NUMPY)} (as a dtype, its scalar type or its name)"
    )


@dataclass(frozen=True)
class Value:
    """A tensor of the graph being built."""

    name: str
    shape: tuple[int, ...]
    dtype: DType


DTypeArg = DType | str | int | np.dtype | type  # what the Builder takes as a dtype: see as_dtype
TensorArg = Value | npt.ArrayLike  # a tensor input: a Value, or an array / number that becomes a CONST
ShapeArg = Value | Sequence[int]  # a shape_t input: a Value, or a list of ints that becomes a CONST_SHAPE


class Builder:
    """Builds one Graph (main region, main block) operator by operator.

    Every TOSA operator is a method in lower case (`conv2d`, `clamp`, `matmul`, ...) taking its operands as the
    Builder's tensors or numpy constants and its attributes as keywords, with the specification's defaults;
    output shapes are inferred. Example: `b = Builder(); x = b.input("x", (1, 8, 8, 4), "fp32");
    b.output(b.clamp(x, min_val=0.0, max_val=6.0)); graph = b.build()`."""

    block: Block
    graph: Graph

    def __init__(self, version: tuple[int, int, int, bool] | None = None) -> None:
        """version: the graph's TOSA version; by default 1.0, or 1.1 (draft) once a 1.1 operator, type or type row
        is used."""
        self.block = Block("main")
        self.graph = Graph([Region("main", [self.block])], version or (1, 0, 0, False))
        self._auto_version = version is None
        self._used: set[str] = set()
        self._next: dict[str, int] = {}  # base name -> the next suffix to try (names stay unique in O(1))

    # -- names and tensors
    def _name(self, base: str) -> str:
        """A fresh name made from `base` (for names the caller did not choose)."""
        n = self._next.get(base, 0)
        name = base if n == 0 else f"{base}_{n}"
        while name in self._used or name in self.block.tensors:
            n += 1
            name = f"{base}_{n}"
        self._next[base] = n + 1
        self._used.add(name)
        return name

    def _claim(self, name: str) -> str:
        """A name the caller chose: taken as it is, or TosaError when a tensor of the block already has it."""
        self._check_free(name)
        self._used.add(name)
        return name

    def _check_free(self, name: str | None) -> None:
        if name and (name in self._used or name in self.block.tensors):
            raise TosaError(f"tensor name {name!r} is already used in block {self.block.name!r}")

    def _tensor(self, name: str, shape, dtype: DType, data=None) -> Value:
        t = self.block.add_tensor(Tensor(name, tuple(shape), dtype, data))
        return Value(t.name, t.shape, t.dtype)

    def input(self, name: str, shape: Sequence[int], dtype: DTypeArg) -> Value:
        """A graph input named `name` (TosaError if the name is taken)."""
        return self._input(self._claim(name), shape, dtype)

    def _input(self, name: str, shape: Sequence[int], dtype: DTypeArg) -> Value:
        value = self._tensor(name, shape, as_dtype(dtype))
        self.block.inputs.append(value.name)
        return value

    def output(self, *values: Value, name: str | None = None) -> None:
        """Marks values as graph outputs, in order. `name` (with one value) renames its tensor, so the output is
        called that in results and files; that Value is then spent (read the output by its new name)."""
        if name is not None:
            if len(values) != 1:
                raise TosaError(f"Builder.output(name={name!r}) names one value, not {len(values)}")
            values = (self._rename(values[0], self._claim(name)),)
        for v in values:
            self.block.outputs.append(v.name)

    def _rename(self, value: Value, name: str) -> Value:
        """`value`'s tensor, everywhere in the block, called `name`."""
        old = value.name
        if old in self.block.inputs:
            raise TosaError(f"Builder.output(name={name!r}): {old!r} is a graph input; name it in input()")
        tensor = self.block.tensors.pop(old)
        self.block.tensors[name] = dataclasses.replace(tensor, name=name)
        for op in self.block.operators:
            op.inputs[:] = [name if n == old else n for n in op.inputs]
            op.outputs[:] = [name if n == old else n for n in op.outputs]
        self.block.outputs[:] = [name if n == old else n for n in self.block.outputs]
        return Value(name, value.shape, value.dtype)

    def const(self, values: npt.ArrayLike, dtype: DTypeArg | None = None, name: str | None = None) -> Value:
        """A CONST operator holding `values` (dtype from the array when not given; name made up when not given)."""
        return self._const(values, dtype, self._claim(name) if name is not None else self._name("const"))

    def _const(self, values, dtype: DTypeArg | None, name: str) -> Value:
        arr = np.asarray(values)
        dt = as_dtype(dtype) if dtype is not None else _FROM_NUMPY.get(arr.dtype)
        if dt is None:
            raise TosaError(f"CONST: cannot tell the TOSA dtype of a numpy {arr.dtype} array; pass dtype=")
        value = self._tensor(name, arr.shape, dt, np.asarray(arr, dtype=dt.numpy))
        self.block.operators.append(Operator("CONST", [], [value.name]))
        return value

    def const_shape(self, values: Sequence[int], name: str | None = None) -> Value:
        """A CONST_SHAPE operator (a shape_t value)."""
        return self._const_shape(values, self._claim(name) if name is not None else self._name("shape"))

    def _const_shape(self, values: Sequence[int], name: str) -> Value:
        data = np.asarray(values, dtype=np.int64).reshape(-1)
        value = self._tensor(name, (data.size,), DType.SHAPE, data)
        self.block.operators.append(Operator("CONST_SHAPE", [], [value.name]))
        return value

    # -- variables (EXT-VARIABLE): state that persists across runs of one session
    def variable(
        self, name: str, shape: Sequence[int], dtype: DTypeArg, initial_value: npt.ArrayLike | None = None
    ) -> Value:
        """Declares a variable (a VARIABLE op naming a variable tensor whose data is the initial value)."""
        if any(t.variable and t.variable_name == name for t in self.block.tensors.values()):
            raise TosaError(f"VARIABLE {name!r} declared twice in block {self.block.name!r}")
        dt = as_dtype(dtype)
        data = None if initial_value is None else np.asarray(initial_value, dt.numpy).reshape(tuple(shape))
        t = self.block.add_tensor(Tensor(self._claim(name), tuple(shape), dt, data, variable=True, variable_name=name))
        self.block.operators.append(Operator("VARIABLE", [], [t.name]))
        return Value(t.name, t.shape, t.dtype)

    def variable_write(self, var: Value, value: Value) -> None:
        """VARIABLE_WRITE: `value` becomes the variable's state."""
        self.block.operators.append(Operator("VARIABLE_WRITE", [value.name], [var.name]))

    def variable_read(self, var: Value, name: str | None = None) -> Value:
        """VARIABLE_READ: the variable's state as a tensor."""
        out = self._tensor(self._claim(name) if name else self._name(f"{var.name}_read"), var.shape, var.dtype)
        self.block.operators.append(Operator("VARIABLE_READ", [var.name], [out.name]))
        return out

    # -- control flow (EXT-CONTROLFLOW): regions built by Python functions
    def cond_if(
        self,
        condition: Value,
        inputs: Sequence[Value],
        then_fn: Callable[..., Any],
        else_fn: Callable[..., Any],
        name: str | None = None,
    ) -> Value | tuple[Value, ...]:
        """COND_IF: `then_fn(builder, *values)` / `else_fn(...)` build the two regions (each returns its
        result values, alike in shape and dtype) from values shaped like `inputs`."""
        self._check_free(name)
        base = name or "cond_if"
        then_name, results = self._region(f"{base}_then", inputs, then_fn)
        else_name, _ = self._region(f"{base}_else", inputs, else_fn)
        attrs = {"then_graph": then_name, "else_graph": else_name}
        return self._control(name, base, "COND_IF", [condition, *inputs], results, attrs)

    def while_loop(
        self, inputs: Sequence[Value], cond_fn: Callable[..., Any], body_fn: Callable[..., Any], name: str | None = None
    ) -> Value | tuple[Value, ...]:
        """WHILE_LOOP: `cond_fn(builder, *values)` returns a bool [1]-shaped value, `body_fn(builder, *values)`
        the next values; the loop's outputs are the values when the condition turns false."""
        self._check_free(name)
        base = name or "while_loop"
        cond_name, _ = self._region(f"{base}_cond", inputs, cond_fn)
        body_name, _ = self._region(f"{base}_body", inputs, body_fn)
        attrs = {"cond_graph": cond_name, "body_graph": body_name}
        return self._control(name, base, "WHILE_LOOP", list(inputs), list(inputs), attrs)

    def _region(self, base: str, inputs: Sequence[Value], fn) -> tuple[str, tuple[Value, ...]]:
        names = {r.name for r in self.graph.regions}
        name, n = base, 0
        while name in names:
            n += 1
            name = f"{base}_{n}"
        sub = Builder.__new__(Builder)
        sub.graph, sub.block, sub._used, sub._next = self.graph, Block(name), set(), {}
        self.graph.regions.append(Region(name, [sub.block]))
        results = fn(sub, *[sub._input(sub._name(v.name), v.shape, v.dtype) for v in inputs])
        results = tuple(results) if isinstance(results, (list, tuple)) else (results,)
        sub.output(*results)
        return name, results

    def _control(
        self, name: str | None, base: str, op: str, inputs: list[Value], results, attrs
    ) -> Value | tuple[Value, ...]:
        outs = [self._tensor(self._out_name(name, base, i), r.shape, r.dtype) for i, r in enumerate(results)]
        self.block.operators.append(Operator(op, [v.name for v in inputs], [v.name for v in outs], attrs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _out_name(self, name: str | None, base: str, index: int) -> str:
        """Output `index`'s name: the caller's `name` for the first (never renamed), made up for the rest."""
        return self._claim(name) if name and index == 0 else self._name(name or base)

    # -- operators
    def op(
        self,
        op_name: str,
        *args: TensorArg | Sequence[TensorArg],
        out_dtype: DTypeArg | Sequence[DTypeArg] | None = None,
        out_shape: Sequence[int] | Sequence[Sequence[int]] | None = None,
        name: str | None = None,
        **attrs: Any,
    ) -> Any:
        """Adds operator `op_name` with the spec's inputs in order and attributes by name.

        Returns a Value, or a tuple of Values for an operator with several outputs (typed Any: which one depends on
        the name, a runtime string; the generated methods such as `b.conv2d` are typed precisely)."""
        spec = catalogue.op_spec(op_name)
        try:
            dtype = _out_dtypes(out_dtype)
            self._check_free(name)  # before any CONST for an input is added
            inputs, bound = self._inputs(spec, _inputs_by_keyword(spec, list(args), attrs), dtype)
            full_attrs = self._attributes(spec, attrs, bound, inputs)
            stale = [n for n in inputs if n not in self.block.tensors]
            if stale:  # a Value of another Builder, or one output(name=) renamed
                raise TosaError(f"input {stale[0]!r} is no tensor of this graph (renamed by output(name=)?)")
            tensors = [self.block.tensors[n] for n in inputs]
            outs = self._outputs(spec, tensors, full_attrs, dtype, out_shape)
        except TosaError as err:
            raise err.located(op=op_name, index=len(self.block.operators)) from None
        base = op_name.lower()
        values = [self._tensor(self._out_name(name, base, i), shape, dt) for i, (shape, dt) in enumerate(outs)]
        shape_value = shape_value_from(op_name, tensors, full_attrs)
        if shape_value is not None:  # a shape operator's value: the shape input of the operators that follow
            self.block.tensors[values[0].name].data = np.asarray(shape_value, dtype=np.int64)
        self.block.operators.append(Operator(op_name, inputs, [v.name for v in values], full_attrs))
        if not values:  # ASSERT_EQUAL_SHAPE
            return None
        return values[0] if len(values) == 1 else tuple(values)

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
            bound.setdefault(spec.outputs[0].type, out_dtype)  # e.g. RESCALE's output_zp is out_t
        for o, a in zip(operands, args):  # an array's own type, where a row allows it (MATMUL_T's constant B)
            dt = _FROM_NUMPY.get(a.dtype) if isinstance(a, np.ndarray) else None
            if dt is not None and o.type.endswith("_t") and o.type not in bound and o.type not in catalogue.SPEC_TYPES:
                if spec.types and catalogue.matching_types(spec.name, {**bound, o.type: dt}):
                    bound[o.type] = dt
        rows = catalogue.matching_types(spec.name, bound) if spec.types else []
        row = _preferred(rows)
        # the row's element types (a block-scaled one is not a type a constant can be made of)
        plain = {k: v for k, v in row.types.items() if isinstance(v, DType)} if row else {}
        names = []
        for o, a in zip(operands, args):
            if a is None and _DEFAULT_ZERO_INPUTS.search(o.name):
                a = 0
            if a is None:
                raise TosaError(f"input '{o.name}' is required")
            dtype = catalogue.SPEC_TYPES.get(o.type) or bound.get(o.type) or (plain.get(o.type) if row else None)
            names.append(self._as_value(a, dtype, o).name)
        if row is not None:
            bound = {**plain, **bound}
        return names, bound

    def _as_value(self, a, dtype: DType | None, operand) -> Value:
        if isinstance(a, Value):
            return a
        if operand.type == "shape_t":
            return self._const_shape(a, self._name(operand.name))
        arr = np.asarray(a)
        if dtype is None:
            dtype = _FROM_NUMPY.get(arr.dtype)
        if dtype is None:
            raise TosaError(f"input '{operand.name}': cannot tell its dtype; pass a Value or a typed numpy array")
        if arr.ndim == 0 and operand.shape == "[1]":
            arr = arr.reshape(1)
        return self._const(arr, dtype, self._name(operand.name))

    def _attributes(self, spec: catalogue.OpSpec, given: dict, bound: dict, inputs: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for o in spec.attributes:
            value = given.pop(o.name, None)  # None: the default (as the generated signatures show it)
            if value is None:
                value = _attribute_default(o)
            if value is None and o.name == "acc_type":
                value = bound.get("acc_t")
            if value is None or value is _REQUIRED:
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
                return as_dtype(value)
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
            return [(tuple(s), as_dtype(d)) for s, d in zip(shapes, dtypes)]
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
        if self._auto_version:
            self.graph.version = (1, 1, 0, True) if catalogue.needs_1_1(self.graph) else (1, 0, 0, False)
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
    """The row to take defaults from: one of the oldest TOSA version (a later version's rows, e.g. TOSA 1.1's fp8
    CONV2D with fp32 accumulate, would make a 1.0 graph need 1.1), then the most precise accumulator (fp16 inputs
    accumulate in fp32 by default)."""
    if not rows:
        return None
    oldest = min(r.since for r in rows)
    return max((r for r in rows if r.since == oldest), key=lambda r: r.types.get("acc_t", DType.UNKNOWN) == DType.FP32)


def _repeat_list(operands, count: int) -> list:
    """Operand descriptor per flattened input: a list operand covers the inputs the fixed ones leave."""
    fixed = sum(1 for o in operands if not o.is_list)
    out = []
    for o in operands:
        out.extend([o] * (count - fixed) if o.is_list else [o])
    return out


def _out_dtypes(out_dtype):
    """out_dtype as the caller gave it (one dtype, or one per output for CUSTOM) -> DType(s)."""
    if out_dtype is None:
        return None
    if isinstance(out_dtype, (list, tuple)):
        return [None if d is None else as_dtype(d) for d in out_dtype]
    return as_dtype(out_dtype)


def _attribute_default(o: catalogue.Operand) -> Any:
    """The value the Builder gives attribute `o` when the caller leaves it out: None for acc_type (the type table's
    accumulator for the inputs' types), _REQUIRED when there is none."""
    if o.name in _DEFAULT_FILL:
        return (_DEFAULT_FILL[o.name],) * int(re.sub(r"\D", "", o.shape))
    if o.name in _DEFAULTS:
        return _DEFAULTS[o.name]
    return None if o.name == "acc_type" else _REQUIRED


# ==== One method per operator of the catalogue ================================================================
# Generated at import from tosa_vk.ir.ops.OPS (so help() and dir() list them), with signatures that
# tosa_vk/builder.pyi spells out for editors and type checkers (`python scripts/gen_builder_stub.py` rewrites it;
# tests/test_builder.py checks it is current).


class _Text(str):
    """Source text that help() shows as written (a signature's annotations and defaults)."""

    def __repr__(self) -> str:
        return str(self)


_ATTRIBUTE_TYPES = {
    "bool_t": "bool",
    "acc_type_t": "DTypeArg | None",
    "nan_propagation_mode_t": "NanPropagationMode | str",
    "resize_mode_t": "ResizeMode | str",
    "rounding_mode_t": "RoundingMode | str",
    "tosa_graph_t": "str",
}


def _attribute_type(o: catalogue.Operand) -> str:
    if o.name == "implementation_attrs":
        return "str | bytes"
    if o.type in _ATTRIBUTE_TYPES:
        return _ATTRIBUTE_TYPES[o.type]
    if o.type == "String":
        return "str"
    if o.name in ("min_val", "max_val"):
        return "float | np.number"
    if o.type == "i32_t":
        return "int" if o.shape == "-" else "Sequence[int]"
    return "Any"


def _default_text(value: Any) -> str:
    return (
        f"{type(value).__name__}.{value.name}" if isinstance(value, (NanPropagationMode, RoundingMode)) else repr(value)
    )


def _op_signature(spec: catalogue.OpSpec) -> tuple[list[inspect.Parameter], str]:
    """The parameters (annotations and defaults as _Text) and return annotation of the method for `spec`."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    by_name = False  # a required input after zero points (AVG_POOL2D_ADAPTIVE's kernel) is passed by name
    for o in spec.inputs:
        shape = "ShapeArg" if o.type == "shape_t" else "TensorArg"
        ann = f"Sequence[{shape}]" if o.is_list else shape
        default = _Text("0") if _DEFAULT_ZERO_INPUTS.search(o.name) else P.empty
        by_name = by_name or (default is P.empty and params[-1].default is not P.empty)
        kind = P.KEYWORD_ONLY if by_name else P.POSITIONAL_OR_KEYWORD
        params.append(P(o.name, kind, default=default, annotation=_Text(ann)))
    for o in spec.attributes:
        value = _attribute_default(o)
        default = P.empty if value is _REQUIRED else _Text(_default_text(value))
        params.append(P(o.name, P.KEYWORD_ONLY, default=default, annotation=_Text(_attribute_type(o))))
    several = any(o.is_list for o in spec.outputs)
    common = {
        "out_dtype": "DTypeArg | Sequence[DTypeArg] | None" if several else "DTypeArg | None",
        "out_shape": "Sequence[int] | Sequence[Sequence[int]] | None" if several else "Sequence[int] | None",
        "name": "str | None",
    }
    params += [P(k, P.KEYWORD_ONLY, default=_Text("None"), annotation=_Text(v)) for k, v in common.items()]
    if several:  # CUSTOM: a Value, or a tuple when out_shape lists several (known at run time only, as for op())
        returns = "Any"
    elif not spec.outputs:  # ASSERT_EQUAL_SHAPE
        returns = "None"
    elif len(spec.outputs) == 1:
        returns = "Value"
    else:
        returns = f"tuple[{', '.join(['Value'] * len(spec.outputs))}]"
    return params, returns


def _op_doc(spec: catalogue.OpSpec) -> str:
    outs = ", ".join(o.name for o in spec.outputs)
    return f"TOSA {spec.name} (spec chapter {spec.chapter}): returns {outs}."


def _op_method(spec: catalogue.OpSpec) -> Callable[..., Any]:
    op_name = spec.name

    def method(self: Builder, *args: Any, **kwargs: Any) -> Any:
        return self.op(op_name, *args, **kwargs)

    params, returns = _op_signature(spec)
    method.__name__ = spec.name.lower()
    method.__qualname__ = f"Builder.{method.__name__}"
    method.__doc__ = _op_doc(spec)
    method.__signature__ = inspect.Signature(params, return_annotation=_Text(returns))  # type: ignore[attr-defined]
    method._tosa_op = op_name  # type: ignore[attr-defined]
    return method


# Operators with a hand-written method (CONST, CONST_SHAPE, VARIABLE*, COND_IF, WHILE_LOOP) keep it.
_HAND_WRITTEN = frozenset(k for k, v in vars(Builder).items() if inspect.isfunction(v))
_HAND_WRITTEN_ORDER = [k for k in vars(Builder) if k in _HAND_WRITTEN and (k == "__init__" or not k.startswith("_"))]


def _generated_ops() -> list[catalogue.OpSpec]:
    """The operators that get a generated method, in catalogue order."""
    return [s for s in catalogue.OPS.values() if s.name.lower() not in _HAND_WRITTEN]


for _spec in _generated_ops():
    setattr(Builder, _spec.name.lower(), _op_method(_spec))
del _spec


# ---- the stub


def _def_lines(name: str, params: list[str], returns: str, doc: str, indent: str = "    ") -> list[str]:
    """One `def` as ruff format writes it (line length 120): on one line, else the parameters on one indented line,
    else one parameter per line."""
    one = f"{indent}def {name}({', '.join(params)}) -> {returns}:"
    inner = f"{indent}    {', '.join(params)}"
    if len(one) <= 120:
        head = [one]
    elif len(inner) <= 120:
        head = [f"{indent}def {name}(", inner, f"{indent}) -> {returns}:"]
    else:
        head = [f"{indent}def {name}(", *(f"{indent}    {p}," for p in params), f"{indent}) -> {returns}:"]
    if not doc:
        return [*head[:-1], head[-1] + " ..."]
    body = doc.split("\n")
    body[0] = '"""' + body[0]
    body[-1] += '"""'
    return [*head, *(f"{indent}    {line}" for line in body)]


def _param_text(p: inspect.Parameter) -> str:
    star = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
    text = star + p.name + ("" if p.annotation is p.empty else f": {p.annotation}")
    if p.default is not p.empty:
        text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
    return text


def _params_text(sig: inspect.Signature) -> list[str]:
    out, star = [], False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            out.append("*")
        star = star or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        out.append(_param_text(p))
    return out


def _first_line(doc: str | None) -> str:
    """A docstring's first paragraph, its lines as written (dedented)."""
    return "\n".join(line.strip() for line in inspect.cleandoc(doc or "").split("\n\n")[0].split("\n"))


_STUB_HEAD = '''# Generated by `python scripts/gen_builder_stub.py` from tosa_vk/builder.py and the operator catalogue
# (tosa_vk.ir.ops.OPS): do not edit. tests/test_builder.py checks it is current.
"""{doc}"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .ir.dtype import DType
from .ir.graph import Block, Graph, NanPropagationMode, ResizeMode, RoundingMode

@dataclass(frozen=True)
class Value:
    """{value_doc}"""

{value_fields}

DTypeArg = DType | str | int | np.dtype | type
TensorArg = Value | npt.ArrayLike
ShapeArg = Value | Sequence[int]
'''


def stub_text() -> str:
    """The text of tosa_vk/builder.pyi: Value, the public functions, and Builder's methods (hand-written, then one
    per catalogue operator) with their signatures and first docstring lines."""
    fields = "\n".join(f"    {f.name}: {f.type}" for f in dataclasses.fields(Value))
    lines = _STUB_HEAD.format(doc=_first_line(__doc__), value_doc=_first_line(Value.__doc__), value_fields=fields)
    lines_out = lines.split("\n")
    public: tuple[Callable[..., Any], ...] = (as_dtype, stub_text)
    for i, fn in enumerate(public):
        sig = inspect.signature(fn)
        doc = _first_line(fn.__doc__)
        lines_out += [""] * (i > 0) + _def_lines(fn.__name__, _params_text(sig), str(sig.return_annotation), doc, "")
    lines_out += ["", "class Builder:", f'    """{_first_line(Builder.__doc__)}"""', ""]
    lines_out += [f"    {k}: {v}" for k, v in Builder.__annotations__.items()]
    for key in _HAND_WRITTEN_ORDER:
        f: Callable[..., Any] = vars(Builder)[key]
        sig = inspect.signature(f)
        lines_out += _def_lines(key, _params_text(sig), str(sig.return_annotation), _first_line(f.__doc__))
    for spec in _generated_ops():
        params, returns = _op_signature(spec)
        sig = inspect.Signature(params)
        lines_out += _def_lines(spec.name.lower(), _params_text(sig), returns, _op_doc(spec))
    return "\n".join(lines_out) + "\n"

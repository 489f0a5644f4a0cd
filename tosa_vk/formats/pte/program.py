"""An ExecuTorch program (.pte) read into plain data: its execution plans (values, inputs, outputs, instructions)
and the delegates' processed bytes. Read with the accessors flatc generates from ExecuTorch's own schema
(tosa_vk/formats/pte/schema/program.fbs, file identifier ET12; never pickle).

The file: a flatbuffer whose bytes 8..32 may hold ExecuTorch's extended header ("eh00", its length, the program's
size, the offset of the data segments that follow it); delegate data and constant tensors live inline in the
flatbuffer or in those segments. Every length and offset is checked against the file, and every index the plan
follows (value indices of calls, inputs, outputs and tensor lists; operator and delegate indices; dim orders against
sizes; tensors where tensors are needed) when it is read: a .pte is untrusted input, and a defect is one
TosaFormatError naming the file and the field (`m.pte: execution_plan[0].chains[0].instructions[3].delegate_call.
args[2]: value index 99 out of range (57 values)`), never a traceback later. `info` and `load` share this reader.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from ...errors import TosaError, TosaFormatError, TosaUnsupportedError
from ...ir.flatbuffer import BoundedReader
from .fbs import (
    BackendDelegateInlineData,
    Bool,
    BoolList,
    DelegateCall,
    Double,
    DoubleList,
    Int,
    IntList,
    KernelCall,
    OptionalTensorList,
    String,
    TensorList,
)
from .fbs import Program as fb_program
from .fbs import Tensor as fb_tensor
from .fbs.DataLocation import DataLocation
from .fbs.InstructionArguments import InstructionArguments
from .fbs.KernelTypes import KernelTypes

FILE_IDENTIFIER = b"ET12"
HEADER_MAGIC = b"eh00"

# ExecuTorch's ScalarType codes (scalar_type.fbs) -> numpy dtypes; the quantized and sub-byte codes are not read,
# nor ComplexHalf (numpy has no complex32). Complex values only pass between host operators (rfft2's _fft_r2c ->
# view_as_real_copy): TOSA has no complex type, a delegate takes real / imaginary parts as two tensors
SCALAR_TYPES: dict[int, np.dtype] = {
    0: np.dtype(np.uint8),
    1: np.dtype(np.int8),
    2: np.dtype(np.int16),
    3: np.dtype(np.int32),
    4: np.dtype(np.int64),
    5: np.dtype(np.float16),
    6: np.dtype(np.float32),
    7: np.dtype(np.float64),
    9: np.dtype(np.complex64),
    10: np.dtype(np.complex128),
    11: np.dtype(np.bool_),
    15: np.dtype(ml_dtypes.bfloat16),
    27: np.dtype(np.uint16),
    28: np.dtype(np.uint32),
    29: np.dtype(np.uint64),
}


@dataclass(frozen=True)
class TensorValue:
    """A tensor value of a plan: its element type, shape (`sizes`) and memory order (`dim_order`, outer to inner);
    `data`: a constant's elements in logical (PyTorch) order, None for one that a run fills; `storage`: where
    ExecuTorch's memory planner put one that a run fills (memory id, byte offset; its allocation_info), None where
    it did not (a constant, or a program planned at run time)."""

    dtype: np.dtype
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]
    data: np.ndarray | None = None
    storage: tuple[int, int] | None = None

    @property
    def nbytes(self) -> int:
        return math.prod(self.sizes) * self.dtype.itemsize


@dataclass(frozen=True)
class TensorListValue:
    """A list of tensors: the indices of its members among the plan's values (None: an optional left out)."""

    items: tuple[int | None, ...]


@dataclass(frozen=True)
class IntListValue:
    """A list of ints as ExecuTorch stores it (an IntList: permute dims, view sizes): the indices of its members among
    the plan's values, each an Int value (ExecuTorch boxes them so a run may change one); BoolList and DoubleList
    hold their values themselves and are read as Python lists."""

    items: tuple[int, ...]


@dataclass(frozen=True)
class Kernel:
    """A call of a host operator: `op` is "namespace::name" ("aten::add"), `overload` ("out"); `args` index the plan's
    values, the outputs last (ExecuTorch's out variants)."""

    op: str
    overload: str
    args: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.op}.{self.overload}" if self.overload else self.op


@dataclass(frozen=True)
class Delegate:
    """A backend's part of the program: `backend` is its id ("TOSABackend", "VgfBackend"), `processed` the bytes the
    backend's preprocess wrote (a TOSA flatbuffer for TOSABackend), `compile_specs` its key -> value bytes."""

    backend: str
    processed: bytes
    compile_specs: dict[str, bytes]


@dataclass(frozen=True)
class DelegateRun:
    """A call of delegate `index`: `args` index the plan's values, the delegate's inputs then its outputs."""

    index: int
    args: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """One method of the program (an ExecutionPlan): `values` (None, int, float, bool, str, lists of floats or
    bools, TensorValue, TensorListValue, IntListValue), `inputs` / `outputs` (indices into values, in the method's
    order), `instructions` in order and the `delegates` its DelegateRuns call."""

    name: str
    values: list[Any]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    instructions: list[Kernel | DelegateRun]
    delegates: list[Delegate] = field(default_factory=list)


class _Reader(BoundedReader):
    def __init__(self, buf: bytes):
        super().__init__(buf)
        self.segment_base = 0
        if len(buf) >= 32 and buf[8:12] == HEADER_MAGIC:
            length, _size, self.segment_base = struct.unpack_from("<IQQ", buf, 12)
            if length < 24 or self.segment_base > len(buf):
                raise TosaFormatError(f"corrupt extended header: segments at byte {self.segment_base}, "
                                      f"the file has {len(buf)}")  # fmt: skip

    def program(self) -> list[Plan]:
        root = fb_program.Program.GetRootAs(self.buf, 0)
        self.root = root
        self.segments = [
            (root.Segments(i).Offset(), root.Segments(i).Size())
            for i in range(self.count(root.SegmentsLength(), 4, "segments"))
        ]
        if root.ConstantBufferLength():
            raise TosaUnsupportedError("constants in the deprecated constant_buffer (a .pte from before 2024-09)")
        const = root.ConstantSegment()
        self.constants: tuple[int, list[int]] | None = None
        if const is not None and const.OffsetsLength():
            n = self.count(const.OffsetsLength(), 8, "constant offsets")
            self.constants = (const.SegmentIndex(), [const.Offsets(i) for i in range(n)])
        n = self.count(root.ExecutionPlanLength(), 4, "execution_plan")
        return [self.plan(root.ExecutionPlan(i), f"execution_plan[{i}]") for i in range(n)]

    def segment(self, index: int, what: str) -> bytes:
        if not 0 <= index < len(self.segments):
            raise TosaFormatError(f"{what}: segment {index} of {len(self.segments)}")
        offset, size = self.segments[index]
        start = self.segment_base + offset
        if start + size > len(self.buf):
            raise TosaFormatError(
                f"truncated: {what} needs bytes {start}..{start + size}, the file has {len(self.buf)}"
            )
        return self.buf[start : start + size]

    def plan(self, p, where: str) -> Plan:
        name = _text(p.Name())
        values = [self.value(p.Values(i), f"{where}.values[{i}]")
                  for i in range(self.count(p.ValuesLength(), 4, f"{where}.values"))]  # fmt: skip
        ops = [
            (_text(p.Operators(i).Name()), _text(p.Operators(i).Overload()))
            for i in range(self.count(p.OperatorsLength(), 4, f"{where}.operators"))
        ]
        delegates = [self.delegate(p.Delegates(i), f"{where}.delegates[{i}]")
                     for i in range(self.count(p.DelegatesLength(), 4, f"{where}.delegates"))]  # fmt: skip
        for i, v in enumerate(values):
            if isinstance(v, TensorListValue):
                self.tensors(v.items, values, f"{where}.values[{i}].items")
            elif isinstance(v, IntListValue):
                self.ints(v.items, values, f"{where}.values[{i}].items")
        instructions: list[Kernel | DelegateRun] = []
        for c in range(self.count(p.ChainsLength(), 4, f"{where}.chains")):
            chain = p.Chains(c)
            at = f"{where}.chains[{c}].instructions"
            for i in range(self.count(chain.InstructionsLength(), 4, at)):
                instructions.append(self.instruction(chain.Instructions(i), ops, delegates, values, f"{at}[{i}]"))
        inputs = self.indices(p.InputsAsNumpy() if p.InputsLength() else [], values, f"{where}.inputs")
        outputs = self.indices(p.OutputsAsNumpy() if p.OutputsLength() else [], values, f"{where}.outputs")
        for what, indices in (("inputs", inputs), ("outputs", outputs)):
            for i, v in enumerate(indices):  # info and load show each input's and output's shape and type
                if not isinstance(values[v], TensorValue) and (what == "outputs" or not _input_kind(values[v])):
                    raise TosaUnsupportedError(
                        f"{where}.{what}[{i}]: value {v} is {_kind(values[v])}, not a tensor (tosa_vk runs methods "
                        "whose inputs are tensors, tensor lists, ints, floats, bools or None and whose outputs are "
                        "tensors)"
                    )
        return Plan(name, values, inputs, outputs, instructions, delegates)

    def indices(self, items, values: list, what: str) -> tuple[int, ...]:
        """Value indices, each checked against the plan's values."""
        out = tuple(int(i) for i in items)
        self.count(len(out), 0, what)
        for i, v in enumerate(out):
            if not 0 <= v < len(values):
                raise TosaFormatError(f"{what}[{i}]: value index {v} out of range ({len(values)} values)")
        return out

    def tensors(self, items: tuple[int | None, ...], values: list, what: str) -> None:
        """A tensor list's members: each a tensor value (None: an optional left out)."""
        for i, v in enumerate(items):
            if v is None:
                continue
            if not 0 <= v < len(values):
                raise TosaFormatError(f"{what}[{i}]: value index {v} out of range ({len(values)} values)")
            if not isinstance(values[v], TensorValue):
                raise TosaFormatError(f"{what}[{i}]: value {v} is {_kind(values[v])}, not a tensor")

    def ints(self, items: tuple[int, ...], values: list, what: str) -> None:
        """An int list's members: each an Int value of the plan (method.cpp's IntList: value indices)."""
        for i, v in enumerate(items):
            if not 0 <= v < len(values):
                raise TosaFormatError(f"{what}[{i}]: value index {v} out of range ({len(values)} values)")
            if type(values[v]) is not int:
                raise TosaFormatError(f"{what}[{i}]: value {v} is {_kind(values[v])}, not an int")

    def instruction(self, ins, ops, delegates: list[Delegate], values: list, where: str) -> Kernel | DelegateRun:
        kind = ins.InstrArgsType()
        table = ins.InstrArgs()
        if kind in (InstructionArguments.KernelCall, InstructionArguments.DelegateCall) and table is None:
            raise TosaFormatError(f"{where}: instruction of kind {kind} without its arguments")
        if kind == InstructionArguments.KernelCall:
            call = KernelCall.KernelCall()
            call.Init(table.Bytes, table.Pos)
            if not 0 <= call.OpIndex() < len(ops):
                raise TosaFormatError(f"{where}.kernel_call.op_index: operator {call.OpIndex()} out of range "
                                      f"({len(ops)} operators)")  # fmt: skip
            name, overload = ops[call.OpIndex()]
            args = self.indices(call.ArgsAsNumpy() if call.ArgsLength() else [], values, f"{where}.kernel_call.args")
            return Kernel(name, overload, args)
        if kind == InstructionArguments.DelegateCall:
            dcall = DelegateCall.DelegateCall()
            dcall.Init(table.Bytes, table.Pos)
            if not 0 <= dcall.DelegateIndex() < len(delegates):
                raise TosaFormatError(f"{where}.delegate_call.delegate_index: delegate {dcall.DelegateIndex()} out "
                                      f"of range ({len(delegates)} delegates)")  # fmt: skip
            at = f"{where}.delegate_call.args"
            args = self.indices(dcall.ArgsAsNumpy() if dcall.ArgsLength() else [], values, at)
            for i, v in enumerate(args):  # a delegate takes and writes tensors (a list: its members, in order)
                if not isinstance(values[v], (TensorValue, TensorListValue)):
                    raise TosaFormatError(f"{at}[{i}]: value {v} is {_kind(values[v])}, not a tensor")
                if isinstance(values[v], TensorListValue) and None in values[v].items:
                    raise TosaFormatError(f"{at}[{i}]: value {v} is a tensor list with an item left out")
            return DelegateRun(dcall.DelegateIndex(), args)
        names = {v: k for k, v in vars(InstructionArguments).items() if not k.startswith("_")}
        raise TosaUnsupportedError(
            f"{where}: instruction {names.get(kind, kind)} (control flow or memory moves in the plan)"
        )

    def delegate(self, d, where: str) -> Delegate:
        backend = _text(d.Id())
        ref = d.Processed()
        if ref is None:
            raise TosaFormatError(f"{where} ({backend!r}).processed: missing")
        if ref.Location() == DataLocation.SEGMENT:
            data = self.segment(ref.Index(), f"{where} ({backend!r}).processed")
        else:
            n = self.root.BackendDelegateDataLength()
            if not 0 <= ref.Index() < n:
                raise TosaFormatError(f"{where} ({backend!r}).processed.index: inline data {ref.Index()} out of "
                                      f"range ({n} in backend_delegate_data)")  # fmt: skip
            inline: BackendDelegateInlineData.BackendDelegateInlineData = self.root.BackendDelegateData(ref.Index())
            data = inline.DataAsNumpy().tobytes() if inline.DataLength() else b""
        specs = {}
        for i in range(self.count(d.CompileSpecsLength(), 4, f"{where}.compile_specs")):
            spec = d.CompileSpecs(i)
            specs[_text(spec.Key())] = spec.ValueAsNumpy().tobytes() if spec.ValueLength() else b""
        return Delegate(backend, bytes(data), specs)

    def value(self, ev, where: str) -> Any:
        kind, table = ev.ValType(), ev.Val()
        if kind == KernelTypes.NONE or kind == KernelTypes.Null:
            return None
        if kind not in _VALUE_CLASSES or table is None:
            raise TosaFormatError(f"{where}: value of kind {kind}" + ("" if table is None else " (not in the schema)"))
        obj: Any = _VALUE_CLASSES[kind]()
        obj.Init(table.Bytes, table.Pos)
        if kind == KernelTypes.Int:
            return int(obj.IntVal())
        if kind == KernelTypes.Bool:
            return bool(obj.BoolVal())
        if kind == KernelTypes.Double:
            return float(obj.DoubleVal())
        if kind == KernelTypes.String:
            return _text(obj.StringVal())
        if kind == KernelTypes.IntList:  # value indices (checked once all values are read)
            n = self.count(obj.ItemsLength(), 8, f"{where}.items")
            return IntListValue(tuple(int(obj.Items(i)) for i in range(n)))
        if kind in (KernelTypes.DoubleList, KernelTypes.BoolList):
            n = self.count(obj.ItemsLength(), 1, f"{where}.items")
            convert = float if kind == KernelTypes.DoubleList else bool
            return [convert(obj.Items(i)) for i in range(n)]
        if kind in (KernelTypes.TensorList, KernelTypes.OptionalTensorList):
            n = self.count(obj.ItemsLength(), 4, f"{where}.items")
            items = [int(obj.Items(i)) for i in range(n)]
            if kind == KernelTypes.TensorList and any(v < 0 for v in items):  # only an optional may leave one out
                i = next(i for i, v in enumerate(items) if v < 0)
                raise TosaFormatError(f"{where}.items[{i}]: value index {items[i]} in a TensorList")
            return TensorListValue(tuple(None if v < 0 else v for v in items))  # (checked once all values are read)
        return self.tensor(obj, where)

    def tensor(self, t, where: str) -> TensorValue:
        code = t.ScalarType()
        if code not in SCALAR_TYPES:
            raise TosaUnsupportedError(f"{where}.scalar_type: tensor of ExecuTorch scalar type {code}")
        dtype = SCALAR_TYPES[code]
        sizes = tuple(int(s) for s in (t.SizesAsNumpy() if t.SizesLength() else []))
        self.count(len(sizes), 0, f"{where}.sizes")
        order = tuple(int(s) for s in (t.DimOrderAsNumpy() if t.DimOrderLength() else range(len(sizes))))
        if any(s < 0 for s in sizes):
            raise TosaFormatError(f"{where}.sizes: {list(sizes)} has a negative size")
        if sorted(order) != list(range(len(sizes))):
            raise TosaFormatError(f"{where}.dim_order: {list(order)} is not an order of the {len(sizes)} dimensions "
                                  f"of sizes {list(sizes)}")  # fmt: skip
        data, storage = None, None
        planned = t.AllocationInfo()
        if t.DataBufferIdx() > 0 and planned is None:  # a constant
            data = self.constant(t.DataBufferIdx(), dtype, sizes, order, where)
        elif planned is not None:
            storage = (int(planned.MemoryId()), int(planned.MemoryOffsetLow()) | int(planned.MemoryOffsetHigh()) << 32)
        return TensorValue(dtype, sizes, order, data, storage)

    def constant(self, buffer: int, dtype: np.dtype, sizes, order, where: str) -> np.ndarray:
        at = f"{where}.data_buffer_idx"
        if self.constants is None:
            raise TosaFormatError(f"{at}: constant data {buffer}, but the program has no constant segment")
        segment, offsets = self.constants
        if not 0 < buffer < len(offsets):
            raise TosaFormatError(f"{at}: constant data {buffer} out of range ({len(offsets)} offsets)")
        data = self.segment(segment, "constant_segment")
        n = math.prod(sizes) * dtype.itemsize  # (Python integers: a product of int32 sizes may pass int64)
        start = offsets[buffer]
        if start + n > len(data):
            raise TosaFormatError(f"{at}: truncated: the constant needs bytes {start}..{start + n} of the constant "
                                  f"segment, which has {len(data)}")  # fmt: skip
        stored = np.frombuffer(data, dtype, count=n // dtype.itemsize, offset=start)
        physical = stored.reshape([sizes[d] for d in order])  # memory order: dim_order[0] outermost
        return np.transpose(physical, np.argsort(order)).copy()


_VALUE_CLASSES: dict[int, type] = {
    KernelTypes.Int: Int.Int, KernelTypes.Bool: Bool.Bool, KernelTypes.Double: Double.Double,
    KernelTypes.String: String.String, KernelTypes.IntList: IntList.IntList,
    KernelTypes.DoubleList: DoubleList.DoubleList, KernelTypes.BoolList: BoolList.BoolList,
    KernelTypes.TensorList: TensorList.TensorList,
    KernelTypes.Tensor: fb_tensor.Tensor, KernelTypes.OptionalTensorList: OptionalTensorList.OptionalTensorList,
}  # fmt: skip


def _input_kind(value: Any) -> bool:
    """A value a method input may be here: a tensor, a tensor list, an Int, a Double or a Bool, or None (an optional
    argument exported as None, `div(x, y, rounding_mode=None)`: ExecuTorch's set_input refuses to set one, but its
    plan reads the value as None, so it runs as exported); not a string or a list of numbers (set_input refuses
    those too)."""
    return value is None or isinstance(value, (TensorValue, TensorListValue, int, float))


def describe(value: Any) -> tuple[tuple[int, ...], str]:
    """A method input's (shape, dtype name), as Model.inputs gives it: a tensor's own; an ExecuTorch Int, Double or
    Bool as a 0-d int64 / float64 / bool; a tensor list as ((n,), "tensor list"); None (an optional argument
    exported as None) as ((), "None")."""
    if isinstance(value, TensorValue):
        return value.sizes, value.dtype.name
    if isinstance(value, TensorListValue):
        return (len(value.items),), "tensor list"
    if isinstance(value, bool):
        return (), "bool"
    if isinstance(value, int):
        return (), "int64"
    if isinstance(value, float):
        return (), "float64"
    return (), _kind(value)


def _kind(value: Any) -> str:
    """A plan value's kind in words, for messages."""
    if value is None:
        return "None"
    if isinstance(value, TensorListValue):
        return "a tensor list"
    if isinstance(value, IntListValue):
        return "an int list"
    return f"{type(value).__name__} {value!r}"[:60]


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def read_program(buf: bytes, file: str | None = None) -> list[Plan]:
    """Parse a .pte file's bytes into its execution plans. Any defect raises TosaFormatError naming `file`."""
    where = file or "<buffer>"
    if len(buf) < 8:
        raise TosaFormatError(f"truncated: {len(buf)} bytes is too short for an ExecuTorch program", file=where)
    if bytes(buf[4:8]) != FILE_IDENTIFIER:
        raise TosaFormatError(
            f"not an ExecuTorch program (file identifier {bytes(buf[4:8])!r}, expected {FILE_IDENTIFIER!r})",
            file=where,
        )
    try:
        return _Reader(bytes(buf)).program()
    except TosaError as err:
        raise err.located(file=where) from None
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, UnicodeDecodeError, MemoryError,
            AttributeError) as err:  # fmt: skip
        raise TosaFormatError(f"corrupt or truncated ExecuTorch program ({type(err).__name__}: {err})",
                              file=where) from None  # fmt: skip


def load_program(path: str | Path) -> list[Plan]:
    """Read a .pte file into its execution plans."""
    try:
        buf = Path(path).read_bytes()
    except OSError as err:
        raise TosaFormatError(f"cannot read: {err.strerror}", file=str(path)) from None
    return read_program(buf, file=str(path))

""".tosa flatbuffer I/O: read_graph / write_graph over tosa_vk/ir/schema/tosa.fbs (accessors in tosa_vk/ir/fbs).

The Python flatbuffers runtime has no verifier, so the reader bounds every vector by the buffer size and caps the
total number of elements it visits: a corrupt file fails with one TosaFormatError line, never a traceback from the
runtime and never a long loop.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np

from ..errors import TosaError, TosaFormatError
from ..store.files import write_atomic
from . import dtype as dtypes
from . import mlir
from .dtype import DType
from .fbs import Attribute as fb_attribute
from .fbs import OpLocation as fb_location
from .fbs import TosaBasicBlock as fb_block
from .fbs import TosaGraph as fb_graph
from .fbs import TosaOperator as fb_operator
from .fbs import TosaRegion as fb_region
from .fbs import TosaShape as fb_shape
from .fbs import TosaTensor as fb_tensor
from .fbs import Version as fb_version
from .fbs.Op import Op as _OpCodes
from .graph import (
    Block,
    BlockSize,
    Graph,
    NanPropagationMode,
    Operator,
    Region,
    ResizeMode,
    RoundingMode,
    Tensor,
    version_text,
)

FILE_IDENTIFIER = b"TOSA"
SUPPORTED_VERSIONS = ((1, 0), (1, 1))
BLOCK_SHAPES = {32: 32}  # BlockShape enum value -> elements a scale covers (the only one TOSA 1.1 has)

OP_CODES: dict[str, int] = {k: v for k, v in vars(_OpCodes).items() if k.isupper() and k != "UNKNOWN"}
OP_NAMES: dict[int, str] = {v: k for k, v in OP_CODES.items()}
# Attribute union member per op code (the union lists one table per op, in op order).
_ATTR_CLASS = {v: k for k, v in vars(fb_attribute.Attribute).items() if k.endswith("Attribute")}
# enum-typed attributes and their types (also host_kernels: a Program read back from bytes holds them as ints)
ENUM_FIELDS = {
    "acc_type": DType,
    "nan_mode": NanPropagationMode,
    "mode": ResizeMode,
    "rounding_mode": RoundingMode,
    "block_size": BlockSize,
}
FIRST_1_1_OP = OP_CODES["MATMUL_T_BLOCK_SCALED"]  # codes from here on are TOSA 1.1's operators
_STRING_FIELDS = {"operator_name", "domain_name", "then_graph", "else_graph", "cond_graph", "body_graph"}
_BYTES_FIELDS = {"min_val", "max_val", "implementation_attrs"}  # [ubyte] vectors
_CLAMP_FIELDS = ("min_val", "max_val")  # encoded in the input's dtype


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


class BoundedReader:
    """A flatbuffer walk whose vector lengths are checked against the buffer, and whose element visits in total
    are bounded by its size (a valid file references each element from at least one byte): a crafted file cannot
    make a reader loop or allocate beyond its own size. The .tosa and .pte readers share it."""

    def __init__(self, buf: bytes):
        self.buf = buf
        self.budget = len(buf) + 1024

    def count(self, n: int, elem_size: int, what: str) -> int:
        if n < 0 or n * elem_size > len(self.buf):
            raise TosaFormatError(f"corrupt flatbuffer: {what} claims {n} elements, more than the file holds")
        self.budget -= n
        if self.budget < 0:
            raise TosaFormatError("corrupt flatbuffer: references more elements than the file holds")
        return n


class _Reader(BoundedReader):
    """Walks a TosaGraph buffer into the IR with every length checked against the buffer."""

    def __init__(self, buf: bytes):
        super().__init__(buf)
        self.version = (1, 0)

    def strings(self, obj, field: str) -> list[str]:
        n = self.count(getattr(obj, field + "Length")(), 4, field)
        return [_text(getattr(obj, field)(i)) for i in range(n)]

    def graph(self) -> Graph:
        root = fb_graph.TosaGraph.GetRootAs(self.buf, 0)
        ver = root.Version()
        if ver is None:
            raise TosaFormatError("no version table: not a TOSA flatbuffer")
        version = (ver._major(), ver._minor(), ver._patch(), bool(ver._draft()))
        if version[:2] not in SUPPORTED_VERSIONS:
            raise TosaFormatError(
                f"TOSA version {'.'.join(map(str, version[:3]))} is not supported: "
                f"tosa_vk reads TOSA {' and '.join(version_text(v) + '.x' for v in SUPPORTED_VERSIONS)} files"
            )
        self.version = version[:2]
        regions = [self.region(root.Regions(i)) for i in range(self.count(root.RegionsLength(), 4, "regions"))]
        if not regions or not regions[0].blocks:
            raise TosaFormatError("the graph has no main region / block")
        return Graph(regions=regions, version=version)

    def region(self, reg) -> Region:
        name = _text(reg.Name())
        try:
            blocks = [self.block(reg.Blocks(i)) for i in range(self.count(reg.BlocksLength(), 4, "blocks"))]
        except TosaError as err:
            raise err.located(region=name) from None
        return Region(name, blocks)

    def block(self, blk) -> Block:
        block = Block(_text(blk.Name()))
        for i in range(self.count(blk.TensorsLength(), 4, "tensors")):
            block.add_tensor(self.tensor(blk.Tensors(i)))
        for i in range(self.count(blk.ShapesLength(), 4, "shapes")):
            block.add_tensor(self.shape(blk.Shapes(i)))
        block.inputs = self.strings(blk, "Inputs")
        block.outputs = self.strings(blk, "Outputs")
        for i in range(self.count(blk.OperatorsLength(), 4, "operators")):
            block.operators.append(self.operator(blk.Operators(i), i, block))
        return block

    def dtype(self, code: int, what: str) -> DType:
        """An element type code, valid in the file's TOSA version."""
        if code not in DType._value2member_map_ or code == 0:
            raise TosaFormatError(f"{what} has element type {code}, which is not a TOSA type")
        dtype = DType(code)
        if dtype.since > self.version:
            raise TosaFormatError(
                f"{what} has element type {dtype.name}, which TOSA {version_text(dtype.since)} added; "
                f"the file says TOSA {version_text(self.version)}"
            )
        return dtype

    def tensor(self, t) -> Tensor:
        name = _text(t.Name())
        dtype = self.dtype(t.Type(), f"tensor '{name}'")
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if self.count(t.ShapeLength(), 4, "shape") else ()
        if t.Offset() or t.Size() or t.ScaleOffset() or t.ScaleSize():
            raise TosaFormatError(f"tensor '{name}' keeps its data in a separate file, which tosa_vk does not read")
        data = None
        # An empty data vector means "no constant data" unless the tensor itself is empty.
        if self.count(t.DataLength(), 1, "data") or (not t.DataIsNone() and 0 in shape and min(shape) >= 0):
            try:
                data = dtypes.decode(dtype, t.DataAsNumpy(), shape)
            except ValueError as err:
                raise TosaFormatError(f"tensor '{name}': {err}") from None
        tensor = Tensor(
            name,
            shape,
            dtype,
            data,
            variable=bool(t.Variable()),
            variable_name=_text(t.VariableName()),
            unranked=bool(t.IsUnranked()),
        )
        if t.ScaleType() or t.BlockShape():
            self.block_scale(t, tensor)
        return tensor

    def block_scale(self, t, tensor: Tensor) -> None:
        """A block-scaled tensor's scale type, block and scale constants (TOSA 1.1)."""
        what = f"tensor '{tensor.name}'"
        tensor.scale_dtype = self.dtype(t.ScaleType(), f"{what}'s scale")
        tensor.block_size = BLOCK_SHAPES.get(t.BlockShape(), 0)
        if not tensor.block_size:
            raise TosaFormatError(f"{what} is block-scaled with block shape {t.BlockShape()}, not a TOSA block shape")
        if not tensor.shape or tensor.shape[-1] % tensor.block_size:
            raise TosaFormatError(
                f"{what} is block-scaled in blocks of {tensor.block_size}, but its shape is {list(tensor.shape)} "
                "(the last dimension must be a multiple of the block)"
            )
        if self.count(t.ScaleDataLength(), 1, "scale data"):
            try:
                tensor.scale_data = dtypes.decode(tensor.scale_dtype, t.ScaleDataAsNumpy(), tensor.scale_shape)
            except ValueError as err:
                raise TosaFormatError(f"{what}'s scales: {err}") from None

    def shape(self, s) -> Tensor:
        name = _text(s.Name())
        rank = s.Rank()
        data = None
        if self.count(s.DataLength(), 1, "shape data") or (not s.DataIsNone() and rank == 0):
            try:
                data = dtypes.decode(DType.SHAPE, s.DataAsNumpy(), (rank,))
            except ValueError as err:
                raise TosaFormatError(f"shape '{name}': {err}") from None
        return Tensor(name, (rank,), DType.SHAPE, data)

    def operator(self, o, index: int, block: Block) -> Operator:
        code = o.Op()
        outputs = self.strings(o, "Outputs")
        first = outputs[0] if outputs else None
        if code not in OP_NAMES:
            raise TosaFormatError(
                f"unknown operator code {code} (TOSA codes are 1..{max(OP_NAMES)})",
                op="operator",
                index=index,
                output=first,
            )
        name = OP_NAMES[code]
        if code >= FIRST_1_1_OP and self.version < (1, 1):
            raise TosaFormatError(
                f"{name} is a TOSA 1.1 operator; the file says TOSA {version_text(self.version)}",
                op=name,
                index=index,
                output=first,
            )
        kind = o.AttributeType()
        if kind not in (0, code):
            raise TosaFormatError(
                f"attribute table {_ATTR_CLASS.get(kind, kind)} does not belong to {name}",
                op=name,
                index=index,
                output=first,
            )
        attrs = self.attributes(code, o.Attribute()) if kind else {}
        inputs = self.strings(o, "Inputs")
        if name == "CLAMP":
            _decode_clamp(attrs, block, inputs, name, index, first)
        loc = o.Location()
        return Operator(name, inputs, outputs, attrs, None if loc is None else _text(loc.Text()))

    def attributes(self, code: int, table) -> dict[str, Any]:
        if table is None:
            return {}
        obj = fb_attribute.AttributeCreator(code, table)
        attrs = {}
        for field, value in vars(obj).items():
            key = _snake(field)
            if isinstance(value, np.ndarray):
                self.count(value.size, value.itemsize, key)
                value = value.tobytes() if key in _BYTES_FIELDS else tuple(int(v) for v in value)
            elif key in _STRING_FIELDS:
                value = _text(value)
            elif key in ENUM_FIELDS:
                enum = ENUM_FIELDS[key]
                if value not in enum._value2member_map_:
                    raise TosaFormatError(f"attribute {key} has value {value}, not a valid {enum.__name__}")
                value = enum(value)
            elif isinstance(value, bool) or value is None:
                pass
            elif isinstance(value, int):
                value = int(value)
            attrs[key] = value
        return attrs


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _decode_clamp(attrs: dict, block: Block, inputs: list[str], op: str, index: int, output: str | None) -> None:
    """CLAMP's min_val / max_val are stored as bytes of the input's dtype: decode them to numpy scalars."""
    src = block.tensors.get(inputs[0]) if inputs else None
    for key in _CLAMP_FIELDS:
        raw = attrs.get(key)
        if raw is None or src is None:
            continue
        try:
            attrs[key] = dtypes.decode(src.dtype, raw, ())[()]
        except ValueError as err:
            raise TosaFormatError(f"attribute {key}: {err}", op=op, index=index, output=output) from None


def read_graph(buf: bytes, file: str | None = None) -> Graph:
    """Parse a .tosa flatbuffer, or TOSA MLIR text / bytecode (serialized to one by tosa-tools' tosa-opt: ir/mlir.py).
    Any defect raises TosaFormatError naming `file`."""
    where = file or "<buffer>"
    if len(buf) == 0:
        raise TosaFormatError("empty file, expected a TOSA flatbuffer", file=where)
    if bytes(buf[4:8]) != FILE_IDENTIFIER and mlir.kind(bytes(buf)):
        buf = mlir.serialize(bytes(buf), file=where)
    if len(buf) < 12:
        raise TosaFormatError(f"truncated: {len(buf)} bytes is too short for a TOSA flatbuffer", file=where)
    if bytes(buf[4:8]) != FILE_IDENTIFIER:
        hint = (
            "; an ExecuTorch program (.pte): tosa_vk.load() and tosa-vk run / info take it"
            if buf[4:8] == b"ET12"
            else ""
        )
        raise TosaFormatError(
            f"not a TOSA flatbuffer (file identifier {bytes(buf[4:8])!r}, expected b'TOSA') nor TOSA MLIR text or "
            f"bytecode{hint}",
            file=where,
        )
    try:
        return _Reader(bytes(buf)).graph()
    except TosaError as err:
        raise err.located(file=where) from None
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, UnicodeDecodeError, MemoryError) as err:
        raise TosaFormatError(f"corrupt or truncated flatbuffer ({type(err).__name__}: {err})", file=where) from None


def load_graph(path: str | Path) -> Graph:
    """Read a .tosa file (or a TOSA MLIR file: read_graph) into a Graph."""
    try:
        buf = Path(path).read_bytes()
    except OSError as err:
        raise TosaFormatError(f"cannot read: {err.strerror}", file=str(path)) from None
    return read_graph(buf, file=str(path))


# ---------------------------------------------------------------- writing


def _byte_vector(b: flatbuffers.Builder, data: bytes, align: int = 8) -> int:
    """A [ubyte] vector whose payload starts on an `align`-byte boundary (the schema's force_align)."""
    b.StartVector(1, len(data), align)
    b.head -= len(data)
    b.Bytes[b.head : b.head + len(data)] = data
    return b.EndVector()


def _string_vector(b: flatbuffers.Builder, items: list[str]) -> int:
    offsets = [b.CreateString(s) for s in items]
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _table_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _write_attributes(b: flatbuffers.Builder, op: Operator, block: Block) -> int | None:
    code = OP_CODES[op.op]
    cls_name = _ATTR_CLASS[code]
    module = __import__(f"{__package__}.fbs.{cls_name}", fromlist=[cls_name])
    obj = getattr(module, cls_name + "T")()
    for key, value in op.attrs.items():
        if key in _CLAMP_FIELDS and value is not None and not isinstance(value, bytes):
            value = dtypes.encode(block.tensors[op.inputs[0]].dtype, np.asarray(value))
        if isinstance(value, bytes):
            value = np.frombuffer(value, dtype=np.uint8)
        elif isinstance(value, tuple):
            value = np.asarray(value, dtype=np.int32)
        elif key in _STRING_FIELDS:
            value = value.encode("utf-8")
        elif isinstance(value, np.generic):
            value = value.item()
        setattr(obj, _camel(key), value)
    return obj.Pack(b)


def _write_tensor(b: flatbuffers.Builder, t: Tensor) -> int:
    name = b.CreateString(t.name)
    var_name = b.CreateString(t.variable_name) if t.variable_name else None
    shape = b.CreateNumpyVector(np.asarray(t.shape, dtype=np.int32))
    data = _byte_vector(b, dtypes.encode(t.dtype, t.data)) if t.data is not None else None
    scales = None
    if t.scale_dtype is not None and t.scale_data is not None:
        scales = _byte_vector(b, dtypes.encode(t.scale_dtype, t.scale_data))
    fb_tensor.Start(b)
    fb_tensor.AddName(b, name)
    fb_tensor.AddShape(b, shape)
    fb_tensor.AddType(b, int(t.dtype))
    if data is not None:
        fb_tensor.AddData(b, data)
    fb_tensor.AddVariable(b, t.variable)
    fb_tensor.AddIsUnranked(b, t.unranked)
    if var_name is not None:
        fb_tensor.AddVariableName(b, var_name)
    if t.scale_dtype is not None:
        fb_tensor.AddScaleType(b, int(t.scale_dtype))
        fb_tensor.AddBlockShape(b, {v: k for k, v in BLOCK_SHAPES.items()}[t.block_size])
        if scales is not None:
            fb_tensor.AddScaleData(b, scales)
    return fb_tensor.End(b)


def _write_shape(b: flatbuffers.Builder, t: Tensor) -> int:
    name = b.CreateString(t.name)
    data = _byte_vector(b, dtypes.encode(DType.SHAPE, t.data)) if t.data is not None else None
    fb_shape.Start(b)
    fb_shape.AddName(b, name)
    fb_shape.AddRank(b, t.shape[0] if t.shape else 0)
    if data is not None:
        fb_shape.AddData(b, data)
    return fb_shape.End(b)


def _write_operator(b: flatbuffers.Builder, op: Operator, block: Block) -> int:
    attr = _write_attributes(b, op, block)
    inputs = _string_vector(b, op.inputs)
    outputs = _string_vector(b, op.outputs)
    loc = None
    if op.location is not None:
        text = b.CreateString(op.location)
        fb_location.Start(b)
        fb_location.AddText(b, text)
        loc = fb_location.End(b)
    fb_operator.Start(b)
    fb_operator.AddOp(b, OP_CODES[op.op])
    fb_operator.AddAttributeType(b, OP_CODES[op.op])
    fb_operator.AddAttribute(b, attr)
    fb_operator.AddInputs(b, inputs)
    fb_operator.AddOutputs(b, outputs)
    if loc is not None:
        fb_operator.AddLocation(b, loc)
    return fb_operator.End(b)


def _write_block(b: flatbuffers.Builder, block: Block) -> int:
    name = b.CreateString(block.name)
    ops = _table_vector(b, [_write_operator(b, op, block) for op in block.operators])
    tensors = _table_vector(b, [_write_tensor(b, t) for t in block.tensors.values() if t.dtype != DType.SHAPE])
    shapes = _table_vector(b, [_write_shape(b, t) for t in block.tensors.values() if t.dtype == DType.SHAPE])
    inputs = _string_vector(b, block.inputs)
    outputs = _string_vector(b, block.outputs)
    fb_block.Start(b)
    fb_block.AddName(b, name)
    fb_block.AddOperators(b, ops)
    fb_block.AddTensors(b, tensors)
    fb_block.AddInputs(b, inputs)
    fb_block.AddOutputs(b, outputs)
    fb_block.AddShapes(b, shapes)
    return fb_block.End(b)


def write_graph(graph: Graph) -> bytes:
    """Serialise a Graph to .tosa flatbuffer bytes."""
    b = flatbuffers.Builder(1 << 16)
    regions = []
    for region in graph.regions:
        name = b.CreateString(region.name)
        blocks = _table_vector(b, [_write_block(b, blk) for blk in region.blocks])
        fb_region.Start(b)
        fb_region.AddName(b, name)
        fb_region.AddBlocks(b, blocks)
        regions.append(fb_region.End(b))
    region_vec = _table_vector(b, regions)
    major, minor, patch, draft = graph.version
    fb_version.Start(b)
    fb_version.Add_major(b, major)
    fb_version.Add_minor(b, minor)
    fb_version.Add_patch(b, patch)
    fb_version.Add_draft(b, draft)
    version = fb_version.End(b)
    fb_graph.Start(b)
    fb_graph.AddVersion(b, version)
    fb_graph.AddRegions(b, region_vec)
    b.Finish(fb_graph.End(b), file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


def save_graph(graph: Graph, path: str | Path, *, overwrite: bool = True) -> None:
    """Write a Graph as a .tosa file (files.write_atomic: a partial file never replaces a good one, no link is
    written through; `overwrite=False` refuses an existing file)."""
    write_atomic(path, write_graph(graph), overwrite=overwrite, what="the TOSA graph")

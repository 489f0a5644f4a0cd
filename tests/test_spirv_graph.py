"""tosa_vk/formats/spirv_graph against Arm's model-converter and spirv-val: model-converter's graph modules decode to
the .tosa graph they came from, our own modules pass spirv-val and decode back to the graph they encode, and a broken
module fails with a TosaError naming the instruction and the rule.

Graphs compare structurally (tosa_vk.ir names differ between the two sides): every graph output by the operators,
attributes, shapes, dtypes and constant data it is computed from (so model-converter's merging of duplicate
constants and operators does not matter), and the compute operators in order. Both sides are normalised for what
SPIR-V cannot tell apart: rank-0 tensors are [1], INT4 is stored in 8 bits, IDENTITY forwards its input.
model-converter also folds no-op operators (identity TRANSPOSE / TILE / PAD, CLAMP to the full range, the LSTM's
zero initial state); where its module has fewer operators, the two graphs must compute the same outputs on the
reference backend instead.
"""

from __future__ import annotations

import json
import struct
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import one_positive_test_per_class
from helpers import graph_spirv_val

import tosa_vk
from tosa_vk import Builder
from tosa_vk.abi.spirv import instructions
from tosa_vk.errors import TosaError
from tosa_vk.formats.spirv_graph import INLINE_ELEMENTS, INSTRUCTIONS, decode, encode, tensor_bytes
from tosa_vk.formats.spirv_graph import instructions as si
from tosa_vk.ir import dtype as dtypes
from tosa_vk.ir.dtype import DType
from tosa_vk.ir.flatbuffer import load_graph, write_graph
from tosa_vk.ir.graph import Block, Graph, NanPropagationMode, Operator, Region
from tosa_vk.ir.ops import OPS
from tosa_vk.ir.validate import validate

MODELS = sorted((Path(__file__).resolve().parent.parent / "resources" / "models").iterdir())


# ---- tools -------------------------------------------------------------------------------------------------------


def _model_converter() -> str:
    try:
        from tosa_vk.tools.bench.anchors import arm_sdk

        return arm_sdk._tool("model_converter", "model-converter")
    except (ImportError, FileNotFoundError) as err:
        pytest.skip(f"Arm's model-converter is not installed ({err})")


def _convert(tosa: Path, tmp: Path, *options: str) -> tuple[bytes, dict[int, bytes]]:
    """model-converter's module for a .tosa file and its graph constants (id -> data)."""
    from vgf import read_vgf

    out = tmp / (tosa.parent.name + ".vgf")
    command = [_model_converter(), *options, "-i", str(tosa), "-o", str(out)]
    done = subprocess.run(command, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    vgf = read_vgf(out.read_bytes())
    (segment,) = vgf.segments
    assert segment.type == "GRAPH"
    data = {gid: vgf.constants[index].data for gid, index in segment.constant_bindings}
    code = vgf.modules[segment.module_index].code
    assert isinstance(code, bytes)
    return code, data


# ---- structural comparison ---------------------------------------------------------------------------------------


def _shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if shape else (1,)


def _dtype(dtype: DType) -> DType:
    return DType.INT8 if dtype == DType.INT4 else dtype


def _attr(value: Any) -> Any:
    if isinstance(value, np.ndarray | np.generic):
        return ("array", np.asarray(value).dtype.str, np.asarray(value).tobytes())
    if isinstance(value, NanPropagationMode) and value == NanPropagationMode.UNKNOWN:
        return int(NanPropagationMode.PROPAGATE)  # the spec's default, what a module must say
    if isinstance(value, tuple | list):
        return tuple(_attr(v) for v in value)
    if isinstance(value, bool):
        return value
    return int(value) if isinstance(value, int) else value


def _forwards(block: Block, op: Operator) -> bool:
    """IDENTITY, and a RESHAPE to the same shape (rank 0 into [1] or back, once rank 0 reads as [1])."""
    if op.op == "IDENTITY":
        return True
    a, b = (block.tensors[n] for n in (op.inputs[0], op.outputs[0])) if op.op == "RESHAPE" else (None, None)
    return a is not None and b is not None and _shape(a.shape) == _shape(b.shape)


def _structure(block: Block) -> tuple[list, list]:
    """(a signature per graph output, the compute operators in order) with names abstracted away."""
    producer = {n: op for op in block.operators for n in op.outputs}
    memo: dict[str, Any] = {}

    def tensor(name: str) -> tuple:
        t = block.tensors[name]
        return _shape(t.shape), _dtype(t.dtype)

    def sig(name: str) -> Any:
        if name not in memo:
            t = block.tensors[name]
            op = producer.get(name)
            if name in block.inputs:
                memo[name] = ("input", block.inputs.index(name), *tensor(name))
            elif op is None or op.op in ("CONST", "CONST_SHAPE"):
                assert t.data is not None, f"constant {name} has no data"
                storage = _dtype(t.dtype).numpy
                memo[name] = ("const", *tensor(name), np.asarray(t.data).astype(storage).tobytes())
            elif _forwards(block, op):
                memo[name] = sig(op.inputs[0])
            else:
                attrs = tuple(sorted((k, _attr(v)) for k, v in op.attrs.items()))
                memo[name] = (op.op, attrs, tuple(sig(n) for n in op.inputs), op.outputs.index(name), *tensor(name))
        return memo[name]

    ordered = [
        (op.op, tuple(sorted((k, _attr(v)) for k, v in op.attrs.items())), [tensor(n) for n in op.inputs + op.outputs])
        for op in block.operators
        if op.op not in ("CONST", "CONST_SHAPE") and not _forwards(block, op)
    ]
    return [sig(n) for n in block.outputs], ordered


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, tuple | list) and isinstance(b, tuple | list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {str(a)[:400]} != {str(b)[:400]}"


def assert_same_graph(expected: Block, got: Block, merged: bool = False) -> None:
    """The same outputs from the same computation; unless `merged` (model-converter merges duplicate operators),
    also the same operators in the same order."""
    (want_out, want_ops), (got_out, got_ops) = _structure(expected), _structure(got)
    if not merged:
        assert [o for o, *_ in got_ops] == [o for o, *_ in want_ops]
        assert got_ops == want_ops, "operators: " + _first_difference(want_ops, got_ops)
    assert got_out == want_out, "outputs: " + _first_difference(want_out, got_out)


def _valid(block: Block) -> None:
    validate(Graph([Region("main", [block])]))


def _feeds(folder: Path, graph: Graph) -> dict[str, np.ndarray]:
    """The inputs a conformance test or shipped model comes with, in the IR's storage."""
    desc = json.loads((folder / "desc.json").read_text())
    return {
        name: dtypes.from_npy(np.load(folder / file), graph.main.tensors[name].dtype)
        for name, file in zip(desc["ifm_name"], desc["ifm_file"])
    }


def _assert_same_results(expected: Graph, got: Block, feeds: dict[str, np.ndarray]) -> None:
    """What model-converter's folding must preserve: the outputs on the reference backend."""
    shaped = {n: np.asarray(v).reshape(got.tensors[n].shape) for n, v in feeds.items()}
    want = tosa_vk.load(expected, backend="reference").run(feeds)
    have = tosa_vk.load(Graph([Region("main", [got])]), backend="reference").run(shaped)
    for name in expected.main.outputs:
        a = np.asarray(want[name]).astype(np.float64)
        b = np.asarray(have[name]).astype(np.float64).reshape(a.shape)
        if expected.main.tensors[name].dtype.is_float:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


def _graph_constants(block: Block, names: list[str]) -> dict[int, bytes]:
    """What the VGF constant section holds for encode's graph constants."""
    data = {}
    for i, name in enumerate(names):
        t = block.tensors[name]
        assert t.data is not None
        data[i] = tensor_bytes(t.dtype, t.data)
    return data


# ---- the two directions --------------------------------------------------------------------------------------------


def _check_model_converter(folder: Path, tosa: Path, tmp: Path) -> str:
    """model-converter's module decodes to the .tosa graph (or, where it folded operators, to an equivalent one)."""
    graph = load_graph(tosa)
    code, data = _convert(tosa, tmp)
    block = decode(code, data, graph.main.inputs, graph.main.outputs, file=tosa.parent.name)
    _valid(block)
    inputs = [(block.tensors[n].shape, block.tensors[n].dtype) for n in block.inputs]
    assert inputs == [(_shape(t.shape), _dtype(t.dtype)) for t in graph.inputs]
    want, got = _structure(graph.main), _structure(block)
    if got[0] != want[0] and len(got[1]) < len(want[1]):  # folded: fewer operators, of the same kinds
        assert not Counter(op for op, *_ in got[1]) - Counter(op for op, *_ in want[1])
        _assert_same_results(graph, block, _feeds(folder, graph))
        return "folded"
    assert_same_graph(graph.main, block, merged=len(got[1]) < len(want[1]))
    return "same"


def _check_round_trip(tosa: Path) -> None:
    """encode passes spirv-val and decodes back to the same graph."""
    graph = load_graph(tosa)
    try:
        spirv, names = encode(graph.main, "graph_partition_0")
    except TosaError as err:
        assert {op.op for op in graph.main.operators} & {"COND_IF", "WHILE_LOOP"}, err
        assert "use --segments compute" in str(err)
        return
    complaint = graph_spirv_val(spirv)
    assert not complaint, complaint
    assert all(graph.main.tensors[n].size > INLINE_ELEMENTS for n in names)
    block = decode(spirv, _graph_constants(graph.main, names), graph.main.inputs, graph.main.outputs, file=tosa.name)
    _valid(block)
    assert_same_graph(graph.main, block)


# ---- the conformance selection: one test per (operators, dtypes) class covers all 66 instructions ------------------


@pytest.mark.conformance
def test_model_converter_module_decodes_to_the_tosa_graph(class_test: Path, tmp_path: Path):
    graph = load_graph(class_test / "test.tosa")
    ops = {op.op for op in graph.main.operators}
    if ops & {"COND_IF", "WHILE_LOOP"}:
        pytest.skip("model-converter refuses control flow (no TOSA.001000.1 instruction)")
    if ops & {"GATHER", "SCATTER"} and DType.BOOL in {t.dtype for t in graph.main.tensors.values()}:
        pytest.skip("model-converter refuses bool GATHER / SCATTER")
    _check_model_converter(class_test, class_test / "test.tosa", tmp_path)


@pytest.mark.conformance
def test_encode_passes_spirv_val_and_decodes_back(class_test: Path):
    _check_round_trip(class_test / "test.tosa")


@pytest.mark.conformance
def test_selection_covers_every_instruction_and_dtype() -> None:
    covered: dict[str, set[DType]] = {}
    tests = one_positive_test_per_class()
    for main in [load_graph(f / "test.tosa").main for f in tests] + [g.main for g in _special_graphs()]:
        for op in main.operators:
            covered.setdefault(op.op, set()).update(main.tensors[n].dtype for n in op.inputs + op.outputs)
    assert set(INSTRUCTIONS) <= set(covered)
    for name in INSTRUCTIONS:  # every tensor element type of the operator's TOSA 1.0 type table (TOSA.001000.1)
        tensor_types = {o.type for o in OPS[name].inputs + OPS[name].outputs}
        rows = [row for row in OPS[name].types if row.since == (1, 0)]
        table = {dtype for row in rows for var, dtype in row.types.items() if var in tensor_types}
        assert table <= covered[name], f"{name}: no test of {sorted(t.name for t in table - covered[name])}"


# ---- the shipped models -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_model_converter_model(model: Path, tmp_path: Path):
    kind = _check_model_converter(model, model / "model.tosa", tmp_path)
    assert kind == ("folded" if model.name == "lstm_unrolled_fp32" else "same")  # its zero initial state folds


def test_model_converter_debug_info(tmp_path: Path):
    """--emit-debug-info adds NonSemantic.Graph.DebugInfo.1 instructions (and OpTypeVoid, OpString): skipped."""
    tosa = MODELS[-1] / "model.tosa"
    main = load_graph(tosa).main
    plain, debug = (
        decode(*_convert(tosa, tmp_path, *o), main.inputs, main.outputs) for o in ((), ("--emit-debug-info",))
    )
    assert_same_graph(plain, debug)


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_model_round_trip(model: Path):
    _check_round_trip(model / "model.tosa")


# ---- graphs the selection does not reach ---------------------------------------------------------------------------


def _tiny() -> Graph:
    b = Builder()
    x = b.input("x", (4, 5), "fp32")
    y = b.add(x, b.const(np.arange(20, dtype=np.float32).reshape(4, 5)))  # 20 > 16: a graph constant
    b.output(b.clamp(y, min_val=-1.5, max_val=6.0))
    return b.build()


def _round_trip(graph: Graph) -> Block:
    spirv, names = encode(graph.main, "g")
    complaint = graph_spirv_val(spirv)
    assert not complaint, complaint
    block = decode(spirv, _graph_constants(graph.main, names), graph.main.inputs, graph.main.outputs)
    _valid(block)
    assert_same_graph(graph.main, block)
    return block


def _special_graphs() -> list[Graph]:
    """What the conformance selection lacks or reaches only by chance: two results (an OpTypeStruct), a bool
    graph constant, INT48 data, a rank-0 result, RESIZE int8 bilinear (int32 out)."""
    b = Builder()
    x = b.input("x", (1, 8, 8), "fp32")
    real, imag = b.fft2d(x, b.input("im", (1, 8, 8), "fp32"), inverse=True)
    mask = b.input("mask", (4, 5), "bool")
    both = b.logical_and(mask, b.const(np.arange(20).reshape(4, 5) % 3 == 0))
    acc = b.input("acc", (24,), "int48")
    scaled = b.rescale(
        acc, np.full(24, 1 << 14, np.int16), np.full(24, 20, np.int8), np.zeros(1, np.int64), np.int8(-70),
        scale32=False, per_channel=True, out_dtype="int8",
    )  # fmt: skip
    best = b.argmax(b.input("v", (7,), "int8"), axis=0)
    b.output(real, imag, both, scaled, best)
    first = b.build()
    b = Builder()
    image = b.input("image", (1, 5, 6, 3), "int8")
    b.output(b.resize(image, [4, 2, 4, 2], [0, 0], [2, 2], mode="BILINEAR", out_dtype="int32"))
    return [first, b.build()]


def test_round_trip_special_cases():
    for graph in _special_graphs():
        _round_trip(graph)
    b = Builder()
    x = b.input("x", (3,), "int16")
    b.output(x, b.negate(x), x)  # an input passed straight out, twice (model-converter drops such outputs)
    block = _round_trip(b.build())
    assert block.outputs == ["x", block.outputs[1], "x"] and block.inputs == ["x"]


def test_model_converter_special_cases(tmp_path: Path):
    for i, graph in enumerate(_special_graphs()):
        folder = tmp_path / f"special_{i}"
        folder.mkdir()
        (folder / "model.tosa").write_bytes(write_graph(graph))
        assert _check_model_converter(folder, folder / "model.tosa", tmp_path) == "same"


def test_graph_constant_layout():
    """Graph constants are dense in the element type's SPIR-V storage: bool one byte (true 0xFF, as model-converter
    writes it), INT48 eight bytes."""
    assert tensor_bytes(DType.BOOL, np.array([True, False])) == b"\xff\x00"
    assert tensor_bytes(DType.INT48, np.array([-2], np.int64)) == struct.pack("<q", -2)
    assert si.tensor_array(DType.INT8, (2,), b"\xba\x01").tolist() == [-70, 1]  # signless 186 is INT8 -70


def test_instruction_table_follows_the_grammar():
    """Spot checks against extinst.tosa.001000.1.grammar.json: opcodes and operand names in order."""
    assert (INSTRUCTIONS["ARGMAX"].opcode, INSTRUCTIONS["CONV2D"].opcode, INSTRUCTIONS["RESCALE"].opcode) == (0, 2, 65)
    assert [o.name for o in INSTRUCTIONS["CONV2D"].operands] == [
        "pad", "stride", "dilation", "acc_type", "local_bound", "input", "weight", "bias", "input_zp", "weight_zp",
    ]  # fmt: skip
    assert [o.name for o in INSTRUCTIONS["RESIZE"].operands] == ["mode", "input", "scale", "offset", "border"]
    assert [o.name for o in INSTRUCTIONS["CONCAT"].operands] == ["axis", "input1"] and INSTRUCTIONS["CONCAT"].variadic
    assert [o.name for o in INSTRUCTIONS["NEGATE"].operands] == ["input1", "input1_zp", "output_zp"]


# ---- errors --------------------------------------------------------------------------------------------------------


def test_encode_refuses_what_a_graph_module_cannot_hold():
    b = Builder()
    x = b.input("x", (2,), "fp32")
    b.variable("v", (2,), "fp32")
    b.output(b.abs(x))
    graph = b.build()
    with pytest.raises(TosaError, match=r"VARIABLE #0.*use --segments compute"):
        encode(graph.main, "g")
    main = _tiny().main
    main.tensors["add"].unranked = True
    with pytest.raises(TosaError, match=r"ADD #\d+ 'add': tensor 'add' is unranked.*use --segments compute"):
        encode(main, "g")
    main.tensors["add"].unranked, main.tensors["x"].unranked = False, True
    with pytest.raises(TosaError, match=r"^tensor 'x' is unranked"):  # a graph input
        encode(main, "g")


def _parse(spirv: bytes) -> list[list[int]]:
    return [[opcode, *ops] for opcode, ops in instructions(spirv)]


def _module(insts: list[list[int]], header: bytes) -> bytes:
    words = [((len(i)) << 16) | i[0] for i in insts]
    out = bytearray(header)
    for inst, first in zip(insts, words):
        out += struct.pack(f"<{len(inst)}I", first, *inst[1:])
    return bytes(out)


def _find(insts: list[list[int]], opcode: int, which: int = 0) -> list[int]:
    return [i for i in insts if i[0] == opcode][which]


def _decode(spirv: bytes, data: dict[int, bytes] | None = None, names: tuple[list, list] = (["x"], ["out"])):
    main = _tiny().main
    constants = _graph_constants(main, encode(main, "g")[1]) if data is None else data
    return decode(spirv, constants, *names, file="bad.spv")


@pytest.fixture
def tiny_module() -> tuple[list[list[int]], bytes]:
    spirv, _ = encode(_tiny().main, "g")
    return _parse(spirv), spirv[:20]


def _broken(tiny_module, change) -> bytes:
    insts, header = tiny_module
    insts = [list(i) for i in insts]
    change(insts)
    return _module(insts, header)


def _ext(insts, name):
    return next(i for i in insts if i[0] == si.OP_EXT_INST and i[4] == INSTRUCTIONS[name].opcode)


def test_decode_of_the_tiny_module(tiny_module):
    block = _decode(_module(*tiny_module))
    assert [(op.op, op.outputs) for op in block.operators] == [
        ("CONST", ["const"]),
        ("ADD", ["add"]),
        ("CLAMP", ["out"]),
    ]
    assert block.operators[2].attrs["min_val"] == np.float32(-1.5)  # names from OpName, outputs as given


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.pop(), r"bad\.spv: the graph has no OpGraphEndARM"),
        (lambda m: _ext(m, "ADD").__setitem__(4, 99), r"OpExtInst #\d+: TOSA.001000.1 has no instruction 99"),
        (lambda m: _ext(m, "ADD").pop(), r"^bad\.spv: OpExtInst ADD #\d+: takes 2 operands, the instruction has 1$"),
        (lambda m: _ext(m, "ADD").__setitem__(5, 100000), r"ADD #\d+: input input1 \(%100000\) is not defined"),
        (lambda m: _ext(m, "ADD").__setitem__(5, _ext(m, "CLAMP")[2]), r"input1 \(%\d+\) is not defined before"),
        (lambda m: _ext(m, "CLAMP").__setitem__(7, _ext(m, "ADD")[2]), r"CLAMP #\d+: attribute nan_mode %\d+ is no"),
        (lambda m: _ext(m, "CLAMP").__setitem__(5, _ext(m, "CLAMP")[7]), r"min_val %\d+ has type OpTypeInt 32 0, exp"),
        (lambda m: _find(m, si.OP_TYPE_GRAPH_ARM).__setitem__(2, 0xFFFFFFFF), r"declares 4294967295 inputs"),
        (lambda m: _find(m, si.OP_TYPE_TENSOR_ARM).__delitem__(slice(3, None)), r"unranked tensor types"),
        (lambda m: _find(m, si.OP_CONSTANT).__setitem__(2, _find(m, si.OP_TYPE_INT)[1]), r"defined twice"),
        (lambda m: _find(m, si.OP_EXT_INST_IMPORT).__setitem__(2, 0x41534F54 + 1), r"'UOSA.001000.1' is not TOSA"),
        (lambda m: _find(m, si.OP_GRAPH_INPUT_ARM).append(1), r"ElementIndex operands"),
    ],
    ids=[
        "no-graph-end", "unknown-opcode", "operand-count", "bad-id", "forward-ref", "attr-not-constant",
        "attr-type", "huge-count", "unranked", "duplicate-id", "unknown-set", "element-index",
    ],
)  # fmt: skip
def test_decode_rejects_broken_modules(tiny_module, change, message):
    with pytest.raises(TosaError, match=message):
        _decode(_broken(tiny_module, change))


def test_decode_rejects_bad_words_data_and_names(tiny_module):
    spirv = _module(*tiny_module)
    for raw, message in [
        (spirv[:-2], r"truncated: \d+ bytes is not a SPIR-V module"),
        (spirv[:-8], r"bad word count"),
        (b"\0\0\0\0" + spirv[4:], r"not a SPIR-V module \(magic number 0x00000000"),
        (spirv[:12] + struct.pack("<I", 3) + spirv[16:], r"outside the module's id bound 3"),
    ]:
        with pytest.raises(TosaError, match=message):
            _decode(raw)
    with pytest.raises(TosaError, match=r"graph constant 0 \(%\d+\) has no data"):
        _decode(spirv, {})
    with pytest.raises(TosaError, match=r"takes 80 bytes, the data has 4"):
        _decode(spirv, {0: b"\0" * 4})
    with pytest.raises(TosaError, match=r"the graph has 1 inputs and 1 outputs; 2 input and 1 output names"):
        _decode(spirv, None, (["x", "y"], ["out"]))


def test_decode_bounds_inline_constants(tiny_module):
    """A 65536 x 65536 OpConstantNull would be 16 GiB: refused, not allocated."""

    def huge(m):
        _find(m, si.OP_CONSTANT, 1)[3] = _find(m, si.OP_CONSTANT, 2)[3] = 65536  # the tensor type [4, 5]
        _find(m, si.OP_GRAPH_CONSTANT_ARM)[:] = [si.OP_CONSTANT_NULL, *_find(m, si.OP_GRAPH_CONSTANT_ARM)[1:3]]

    with pytest.raises(TosaError, match=r"has 4294967296 elements, more than 16777216"):
        _decode(_broken(tiny_module, huge))

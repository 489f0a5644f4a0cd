"""A TFLite model -> a TOSA graph (`tosa-vk import model.tflite -o model.tosa`, `import_model(path)`), through Arm's
tools found in the environment (tosa_vk's `tflite` extra installs both):

1. tosa-converter-for-tflite legalizes the .tflite flatbuffer to TOSA MLIR text (standard input to a private
   temporary folder, removed afterwards; within CONVERT_TIMEOUT_S);
2. tosa-tools' `tosa-opt --tosa-serialize` turns the MLIR into a TOSA flatbuffer (tosa_vk/ir/mlir.py);
3. the graph's inputs and outputs take the TFLite model's tensor names (the converter's `tf.entry_function`
   attribute), which the serializer would call TosaInput_0 / TosaOutput_0.

TOSA MLIR text or bytecode given in place of a .tflite starts at step 2. Every failure is a TosaError naming the
file: a tool's refusal quotes its first error line; a missing tool says what to install.

A quantized model's graph takes and gives integer tensors; their scales and zero points stay in the .tflite:
`tflite_qparams(path)` reads them (with the `tflite` schema package) as load()'s input_qparams / output_qparams,
and `tosa-vk import` prints them as --input-qparams / --output-qparams.
"""

from __future__ import annotations

import importlib
import re
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..errors import TosaError, TosaFormatError, TosaUnsupportedError
from ..ir import Graph, mlir, read_graph
from ..paths import find_tool
from ..reference.quantization import QParams

# the release this was tested with (the `tflite` extra pins the same)
TFLITE_CONVERTER_VERSION = "2026.2.0"
CONVERTER = "tosa-converter-for-tflite"
CONVERT_TIMEOUT_S = 600.0
TFLITE_IDENTIFIER = b"TFL3"  # a .tflite flatbuffer's file identifier (bytes 4-8)
TFLITE_SCHEMA_VERSION = "2.18.0"  # the `tflite` package: the .tflite schema's generated Python classes
# TFLite tensor types (tflite.TensorType) whose quantization tflite_qparams reports -> QParams dtype
_QUANTIZED = {9: "int8", 7: "int16"}

_ENTRY = re.compile(r"tf\.entry_function\s*=\s*\{([^}]*)\}")
_NAMES = re.compile(r'\b(inputs|outputs)\s*=\s*"([^"]*)"')


def import_model(path: str | Path, *, verbose: bool = False) -> Graph:
    """A .tflite file (or TOSA MLIR text / bytecode) as a Graph. The tools' own messages (their standard error) are
    shown only with `verbose` (else only a refusal's first error line, in the TosaError)."""
    file = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise TosaFormatError(f"cannot read: {err.strerror}", file=file) from None
    if data[4:8] == TFLITE_IDENTIFIER:
        text = to_mlir(data, file=file, verbose=verbose)
        graph = read_graph(mlir.serialize(text.encode(), file=file, verbose=verbose), file=file)
        return with_tflite_names(graph, text)
    if mlir.kind(data):
        return read_graph(data, file=file)
    raise TosaFormatError(
        f"not a TFLite flatbuffer (file identifier {data[4:8]!r}, expected {TFLITE_IDENTIFIER!r}) nor TOSA MLIR "
        "text or bytecode",
        file=file,
    )


def to_mlir(data: bytes, *, file: str, verbose: bool = False) -> str:
    """A .tflite flatbuffer's bytes -> TOSA MLIR text (tosa-converter-for-tflite)."""
    tool = find_tool(CONVERTER)
    if tool is None:
        raise TosaUnsupportedError(
            f"a TFLite model is legalized to TOSA by {CONVERTER}, which is not installed: pip install "
            f"{CONVERTER}=={TFLITE_CONVERTER_VERSION} tosa-tools=={mlir.TOSA_TOOLS_VERSION} (or tosa_vk's `tflite` "
            "extra)",
            file=file,
        )
    with tempfile.TemporaryDirectory(prefix="tosa_vk-tflite-") as folder:
        out = Path(folder) / "model.mlir"
        command = [tool, "-", "--text", "-o", out.name]  # "-": the model on standard input
        try:
            done = subprocess.run(
                command, input=data, capture_output=True, cwd=folder, timeout=CONVERT_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise TosaError(f"{CONVERTER} did not finish within {CONVERT_TIMEOUT_S:g} s", file=file) from None
        except OSError as err:
            raise TosaError(f"cannot run {tool}: {err.strerror or err}", file=file) from None
        if done.returncode != 0 or not out.is_file():
            stderr = done.stderr.decode("utf-8", "replace")
            mlir.show_messages(stderr, CONVERTER, verbose)
            raise TosaFormatError(
                f"{CONVERTER} cannot convert it (exit code {done.returncode}): {mlir.first_error(stderr)}", file=file
            )
        mlir.show_messages(done.stderr.decode("utf-8", "replace"), CONVERTER, verbose)
        return out.read_text(encoding="utf-8", errors="replace")


def tflite_names(text: str) -> tuple[list[str], list[str]] | None:
    """The TFLite model's input and output tensor names, from the MLIR's tf.entry_function attribute (None
    without one)."""
    entry = _ENTRY.search(text)
    if entry is None:
        return None
    fields = dict(_NAMES.findall(entry.group(1)))
    return (
        [n for n in fields.get("inputs", "").split(",") if n],
        [n for n in fields.get("outputs", "").split(",") if n],
    )


def with_tflite_names(graph: Graph, text: str) -> Graph:
    """The graph with its main block's inputs and outputs renamed to the TFLite names, where those are there, one
    per tensor, and clash with no other tensor (else the graph as the serializer named it)."""
    names = tflite_names(text)
    block = graph.main
    if names is None or len(names[0]) != len(block.inputs) or len(names[1]) != len(block.outputs):
        return graph
    mapping: dict[str, str] = {}
    for old, new in zip(block.inputs + block.outputs, names[0] + names[1]):
        if mapping.setdefault(old, new) != new:  # one tensor both an input and an output, named twice
            return graph
    renamed = set(mapping.values())
    if len(renamed) != len(mapping) or renamed & (set(block.tensors) - set(mapping)):
        return graph

    def name(n: str) -> str:
        return mapping.get(n, n)

    for tensor in block.tensors.values():
        tensor.name = name(tensor.name)
    block.tensors = {name(n): t for n, t in block.tensors.items()}
    block.inputs = [name(n) for n in block.inputs]
    block.outputs = [name(n) for n in block.outputs]
    for op in block.operators:
        op.inputs = [name(n) for n in op.inputs]
        op.outputs = [name(n) for n in op.outputs]
    return graph


def tflite_qparams(path: str | Path) -> tuple[dict[str, QParams], dict[str, QParams]]:
    """The .tflite's quantized inputs and outputs (int8 / int16 with scales) by TFLite name -> QParams, as
    load(..., input_qparams=, output_qparams=) takes them (per channel where the file has several scales). Needs
    the `tflite` package (the `tflite` extra); a TosaFormatError for a file it cannot read."""
    file = str(path)
    try:
        model_class = importlib.import_module("tflite.Model").Model
    except ImportError:
        raise TosaUnsupportedError(
            f"reading a .tflite's quantization needs the tflite schema package: pip install "
            f"tflite=={TFLITE_SCHEMA_VERSION} (or tosa_vk's `tflite` extra)",
            file=file,
        ) from None
    try:
        data = Path(path).read_bytes()
        if data[4:8] != TFLITE_IDENTIFIER:
            raise TosaFormatError(f"not a TFLite flatbuffer (file identifier {data[4:8]!r})", file=file)
        subgraph = model_class.GetRootAsModel(data, 0).Subgraphs(0)
        found: tuple[dict[str, QParams], dict[str, QParams]] = ({}, {})
        for found_in, indices in ((found[0], subgraph.InputsAsNumpy()), (found[1], subgraph.OutputsAsNumpy())):
            for index in np.atleast_1d(indices):
                tensor = subgraph.Tensors(int(index))
                quantization = tensor.Quantization()
                if tensor.Type() not in _QUANTIZED or quantization is None or quantization.ScaleLength() == 0:
                    continue
                scales = quantization.ScaleAsNumpy().astype(np.float64)
                zero_points = quantization.ZeroPointAsNumpy().astype(np.int64)
                zero_points = zero_points if np.size(zero_points) else np.zeros(1, np.int64)
                per_channel = scales.size > 1
                found_in[tensor.Name().decode("utf-8", "replace")] = QParams(
                    scales if per_channel else float(scales[0]),
                    zero_points if per_channel else int(zero_points[0]),
                    _QUANTIZED[tensor.Type()],
                    axis=int(quantization.QuantizedDimension()) if per_channel else None,
                )
        return found
    except OSError as err:
        raise TosaFormatError(f"cannot read: {err.strerror}", file=file) from None
    except (struct.error, IndexError, ValueError, TypeError, AttributeError, UnicodeDecodeError) as err:
        raise TosaFormatError(f"corrupt TFLite flatbuffer ({type(err).__name__}: {err})", file=file) from None


def qparams_flags(input_qparams: dict[str, QParams], output_qparams: dict[str, QParams]) -> list[str]:
    """`tosa-vk run` options for per-tensor parameters (--input-qparams NAME=SCALE,ZP ...)."""
    flags = []
    for option, given in (("--input-qparams", input_qparams), ("--output-qparams", output_qparams)):
        for name, q in given.items():
            if q.axis is None:
                scale = np.format_float_positional(np.float32(q.scale), trim="-")
                flags.append(f"{option} {name}={scale},{q.zero_point}")
    return flags

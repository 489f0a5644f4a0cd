"""What the commands share: exit codes, feeds from files and desc.json, synthetic inputs, safe output files
(Writes), outputs and their expected values."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import numpy as np

from ...errors import TosaError, TosaFormatError
from ...store.files import refused, write_atomic
from ...store.serial import load_npy as _load_npy

if TYPE_CHECKING:
    from vgf import VGF

    from ...ir.graph import Tensor

EXIT_ERROR = 2  # the input, the options or the machine: the message says what to change


EXIT_INTERNAL = 3  # a bug in tosa_vk: "internal error, please report"
EXIT_OUTPUT_CLOSED = 128 + 13  # the output's reader closed the pipe (`| head`): as a process SIGPIPE ended


class Desc(NamedTuple):
    """What `run` / `profile` / `compare` take from a desc.json (or the command line)."""

    model: Path
    feeds: dict[str, np.ndarray]
    results: dict[str, str]  # output name -> the file its result is written to (ofm_file)
    expected: dict[str, str]  # output name -> the file of its expected result (--compare reads it)


def _feeds_from_desc(desc_path: Path) -> Desc:
    """A conformance-style desc.json -> Desc; every defect a TosaError naming the file and the key. Results are
    written to `ofm_file`; the expected results are `expected_result_file` where it is given (Arm's conformance
    layout: two files, so a run never writes over what it is compared with), else `ofm_file` (a test as
    tosa_verif_build_tests writes it, the reference model's results in the files a run would write)."""
    where = str(desc_path)
    try:
        desc = json.loads(desc_path.read_text())
    except OSError as err:
        raise TosaError(f"cannot read: {err.strerror}", file=where) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TosaError(f"not JSON ({err})", file=where) from None
    if not isinstance(desc, dict):
        raise TosaError(f"a desc.json is a JSON object, got {type(desc).__name__}", file=where)
    if not isinstance(desc.get("tosa_file"), str):
        raise TosaError("'tosa_file' must name the model file (a string)", file=where)
    lists: dict[str, list[str]] = {}
    for key in ("ifm_name", "ifm_file", "ofm_name", "ofm_file", "expected_result_file"):
        value = desc.get(key, lists["ofm_file"] if key == "expected_result_file" else [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TosaError(f"'{key}' must be a list of strings, got {value!r}", file=where)
        lists[key] = value
    for names, files in (("ifm_name", "ifm_file"), ("ofm_name", "ofm_file"), ("ofm_name", "expected_result_file")):
        if len(lists[names]) != len(lists[files]):
            raise TosaError(f"'{names}' has {len(lists[names])} entries, '{files}' {len(lists[files])}", file=where)
    for key, named in (("tosa_file", [desc["tosa_file"]]), *((k, lists[k]) for k in lists if k.endswith("_file"))):
        for f in named:
            if not f or "\0" in f or f.endswith(("/", os.sep)):
                raise TosaError(f"'{key}' entry {f!r} is not a file name (empty, a folder, a NUL)", file=where)
    folder = desc_path.parent
    feeds = {name: _load_npy(folder / f) for name, f in zip(lists["ifm_name"], lists["ifm_file"])}
    outputs = lists["ofm_name"]
    return Desc(
        folder / desc["tosa_file"],
        feeds,
        dict(zip(outputs, lists["ofm_file"])),
        dict(zip(outputs, lists["expected_result_file"])),
    )


FILE_NAMES = (
    "a tensor's file is its name with each character outside A-Z a-z 0-9 . _ - (and a leading '.') written as %%XX, "
    "its UTF-8 bytes in hex: y/1 -> y%%2F1.npy, y_1 -> y_1.npy, y:1 -> y%%3A1.npy, so two outputs never share a file"
)


def safe_name(name: str) -> str:
    """A tensor name as a file name, one to one (FILE_NAMES): distinct names never share a file, and no name climbs
    out of the output folder (model files are untrusted). The empty name is "%"."""

    def quote(m: re.Match) -> str:
        return "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "surrogatepass"))

    quoted = re.sub(r"[^A-Za-z0-9._-]", quote, name)
    return "%2E" + quoted[1:] if quoted.startswith(".") else quoted or "%"


def confined(folder: Path, relative: str) -> Path:
    """`folder / relative`, refused when it would leave the folder (an absolute path, `..`, or a symlink out)."""
    path = Path(relative)
    if not relative or "\0" in relative or path.name in ("", ".", ".."):
        raise TosaError(f"output file {relative!r} is not a file name")
    if path.is_absolute() or ".." in path.parts:
        raise TosaError(f"output file {relative!r} would be written outside the output folder {str(folder)!r}")
    target = folder / path
    if target.is_symlink() or not target.resolve().is_relative_to(folder.resolve()):
        raise TosaError(f"output file {relative!r} resolves outside the output folder {str(folder)!r}")
    return target


class Writes:
    """The files one command writes. Each is planned before the command's work: a file that is already there is
    refused (unless --overwrite), and so are two planned to one path; then, as each is written, one that has become
    a file this command wrote (a case-insensitive or aliasing file system) is refused too. So a run never writes
    over a file it did not create, nor one output over another."""

    def __init__(self, overwrite: bool = False):
        self.overwrite = overwrite
        self.planned: dict[Path, str] = {}
        self.written: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) -> what

    def plan(self, path: Path, what: str) -> Path:
        key = Path(os.path.abspath(path))
        if key in self.planned:
            raise TosaError(f"{what} and {self.planned[key]} would both be written to {str(path)!r}")
        if not self.overwrite and os.path.lexists(path):
            raise refused(path, what)
        self.planned[key] = what
        return path

    def save(self, path: Path, array: np.ndarray) -> None:
        """np.save to exactly `path` (np.save(name) would add .npy to a name without it)."""
        self.write(path, lambda f: np.save(f, array, allow_pickle=False))

    def write(self, path: Path, data: bytes | Callable[[BinaryIO], object]) -> None:
        """A planned file, written with files.write_atomic (no link written through, no `<out>.tmp` clobbered)."""
        what = self.planned[Path(os.path.abspath(path))]
        try:
            st = path.stat()
        except FileNotFoundError:
            pass
        else:
            if (st.st_dev, st.st_ino) in self.written:
                other = self.written[(st.st_dev, st.st_ino)]
                raise TosaError(f"{what} and {other} are the same file {str(path)!r} on this file system")
        st = write_atomic(path, data, overwrite=self.overwrite, what=what)
        self.written[(st.st_dev, st.st_ino)] = what


def output_folder(path: Path) -> None:
    """An output folder, made before the command's work (with its parents)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise TosaError(f"output folder {str(path)!r} is a file") from None


def backend_or_default() -> str:
    """`tosa-vk run` without --backend: tosa_vk.load's default (session.default_backend: vulkan when there is a
    Vulkan device, else reference), with a note on stderr in place of load()'s warning."""
    from ...session import default_backend

    backend = default_backend()
    if backend == "reference":
        print("tosa-vk: no Vulkan device, running on the reference backend (--backend chooses)", file=sys.stderr)
    return backend


def model_and_feeds(args) -> Desc:
    """`run` / `profile` / `compare`'s model and inputs: from --test-desc desc.json, else the model argument and its
    -i name=file.npy inputs (no result or expected files)."""
    if args.test_desc:
        return _feeds_from_desc(Path(args.test_desc))
    if not args.model:
        raise TosaError("give a model file or --test-desc desc.json")
    from ..bench.inputs import parse

    feeds = {}
    for item in args.input or []:  # the splats are made once the model is loaded (synthetic)
        spec = parse(item)
        if spec.file is not None and spec.name:
            feeds[spec.name] = _load_npy(spec.file)
    return Desc(Path(args.model), feeds, {}, {})


def synthetic(args, model, feeds: dict) -> dict:
    """The feeds with -i's splats (name=1x8xf32=0.5, name=0.5) and --random SEED's inputs made for `model`'s
    signature (tosa_vk/tools/bench/inputs.py); as they were without either, or with --test-desc."""
    if args.test_desc or (not args.input and args.random is None):  # (the bench module: not imported to say so)
        return feeds
    from ..bench.inputs import feeds as made
    from ..bench.inputs import parse

    specs = [s for s in map(parse, args.input or []) if s.file is None]
    if not specs and args.random is None:
        return feeds
    quantized = getattr(model, "input_qparams", {})  # these take float data (--input-qparams)
    signature = {n: (shape, "FP32" if n in quantized else dtype) for n, (shape, dtype) in model.inputs.items()}
    said = {s.name for s in specs}  # an ExecuTorch program's exported scalars, for those no -i gives
    given = {**{n: v for n, v in getattr(model, "input_defaults", {}).items() if n not in said}, **feeds}
    return made(signature, specs, args.random, given=given, file=str(model.file or args.model))[0]


def print_values(args, value) -> None:
    """`run`'s line under each output: min / max / mean and its first values (not with --test-desc, whose output
    stays the drop-in's)."""
    if not args.test_desc:
        from ..bench.inputs import summary

        print(f"  {summary(value)}")


class GraphIO(NamedTuple):
    """What `run` / `profile` need of a graph model's signature for its files: its tensors by name (a desc.json's
    inputs are decoded for their types) and its output tensors (a block-scaled one's scales are a file of their own)."""

    tensors: Mapping[str, Tensor]
    outputs: list[Tensor]


def graph_io(model) -> GraphIO | None:
    """A graph model's GraphIO (None for another model: a .pte, a .vgf of COMPUTE segments). From the model's
    signature, so a program-cache hit does not parse the .tosa (Program.input_types / output_types); from the graph
    where an array NAME_scale beside an array NAME may be a block-scaled tensor's scales (TOSA 1.1), which only
    the graph tells from a tensor of that name."""
    from ...backends.model import GraphModel
    from ...ir.dtype import DType
    from ...ir.graph import Tensor

    if not isinstance(model, GraphModel):
        return None
    inputs, outputs = model.inputs, model.outputs
    arrays = {**inputs, **outputs}
    if any(f"{name}_scale" in arrays for name in arrays):
        graph = model.graph
        return GraphIO(graph.main.tensors, graph.outputs)
    plain = lambda specs: [Tensor(n, spec.shape, DType.of(spec.dtype)) for n, spec in specs.items()]  # noqa: E731
    return GraphIO({t.name: t for t in plain(inputs)}, plain(outputs))


def desc_inputs(args, io: GraphIO | None, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A desc.json's inputs as tosa_reference_model reads them (ir/arm_files.py): Arm's encodings decoded for the
    graph's input types (fp6 / fp4 packed, raw bytes, bits), a block-scaled input's scales from `<file>_scale.npy`."""
    from ...ir.arm_files import read_inputs

    if not args.test_desc or io is None:
        return feeds
    desc = json.loads(Path(args.test_desc).read_text())  # read and checked by _feeds_from_desc already
    folder = Path(args.test_desc).parent
    read = {folder / f: feeds[n] for n, f in zip(desc.get("ifm_name", []), desc.get("ifm_file", []))}
    load = lambda path: read[path] if path in read else _load_npy(path)  # noqa: E731
    return read_inputs(folder, desc.get("ifm_name", []), desc.get("ifm_file", []), io.tensors, load)


def output_files(model, io: GraphIO | None, out_files: dict[str, str]) -> dict[str, str]:
    """Output array -> its file: the desc.json's ofm_file, a block-scaled output's scales beside it as
    tosa_reference_model writes them (ir/arm_files.py), else <name>.npy."""
    from ...ir.arm_files import result_files

    names = dict(out_files)
    if io is not None:
        outputs = {t.name: t for t in io.outputs}
        given = {n: f for n, f in out_files.items() if n in outputs}
        names.update({n: f for n, (f, _) in result_files(outputs, given).items()})
    return {name: names.get(name) or f"{safe_name(name)}.npy" for name in model.outputs}


def expected_scales(io: GraphIO, folder: Path, files: dict[str, str], expected: dict[str, np.ndarray]) -> None:
    """--compare: a block-scaled output's expected scales, from the file beside its expected result (as
    tosa_reference_model writes them, ir/arm_files.py)."""
    from ...ir.arm_files import scale_file

    for t in io.outputs:
        if t.scale_dtype is not None and t.name in files and t.scale_name not in files:
            files[t.scale_name] = scale_file(files[t.name])
            if (folder / files[t.scale_name]).is_file():
                expected[t.scale_name] = _load_npy(folder / files[t.scale_name])


def dequantized_npy(array: np.ndarray, dtype, qparams) -> np.ndarray:
    """An expected integer result as the float32 values a dequantized output is compared with."""
    from ...ir.dtype import from_npy
    from ...reference.quantization import dequantize

    return dequantize(from_npy(array, dtype), qparams)


def pte_bound(model, name: str, want: np.ndarray, tolerance: float | None) -> tuple[float, str]:
    """The largest |diff| a .pte's float output may have against PyTorch's: --tolerance, else 1e-4 of the largest
    magnitude, or one quantization step for an output an int8 program dequantizes (issue 36's bounds)."""
    if tolerance is not None:
        return tolerance, f"--tolerance {tolerance:.3g}"
    step = model.output_steps.get(name, 0.0)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    if step:
        return step * (1 + 1e-6), f"one quantization step {step:.3g}"
    return 1e-4 * scale, f"1e-4 x max |want| {scale:.3g}"


class NodeDataFile(NamedTuple):
    """One file --node-data writes: the TOSA graph whose node ids key it, and the delegate it is of (a .pte's)."""

    graph: Any
    path: Path
    delegate: str | None


def is_pte_model(model) -> bool:
    """`model` is a PteModel: its module (the .pte reader, ~0.2 s of imports) is loaded only where a .pte was, so a
    `tosa-vk run` of a .tosa does not import it to ask."""
    pte = sys.modules.get("tosa_vk.backends.pte")
    return pte is not None and isinstance(model, pte.PteModel)


def node_data_files(model, args, writes: Writes) -> list[NodeDataFile]:
    """--node-data's files (none without it), planned before the runs: a TOSA graph's one; a .pte's one per
    delegate, FILE with ".delegate_N" before its suffix, keyed by the node ids of that delegate's graph (the
    delegate_N.tosa `tosa-vk extract` writes). A model without a TOSA graph is refused."""
    from ...backends.model import GraphModel
    from ...backends.pte import PteModel, delegate_name

    if not args.node_data:
        return []
    path = Path(args.node_data)
    if isinstance(model, GraphModel):
        return [NodeDataFile(model.graph, writes.plan(path, "the node data"), None)]
    if isinstance(model, PteModel):
        files = []
        for i, delegate in enumerate(model.delegates):
            name = delegate_name(i)
            target = writes.plan(path.with_name(f"{path.stem}.{name}{path.suffix}"), f"the node data of {name}")
            files.append(NodeDataFile(delegate.graph, target, name))
        return files
    raise TosaError(
        f"--node-data keys operators by the TOSA graph's node ids: this {model.source_kind} has none "
        "(profile its .tosa)",
        file=str(model.file),
    )


def read_vgf_file(path: str) -> VGF:
    """A .vgf file; its defects are TosaFormatErrors (tosa_vk's boundary with the vgf package, as in load())."""
    from vgf import VGFError, read_vgf  # (the VGF reader: only for a .vgf)

    try:
        return read_vgf(path)
    except VGFError as err:
        raise TosaFormatError(err.rule, file=err.file) from None


def print_progress(done: int, total: int) -> None:
    if sys.stderr.isatty() or done == total:
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done == total else "\r"
        print(f"  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end, file=sys.stderr, flush=True)

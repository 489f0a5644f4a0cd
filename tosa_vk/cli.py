"""The `tosa-vk` command line. Errors are one line on stderr (`tosa-vk: error: ...`) and exit code 2; anything
else that escapes a command is a bug in tosa_vk: `tosa-vk: internal error, please report: ...` and exit code 3
(--debug shows the traceback)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, NoReturn

import numpy as np

from vgf import VGF, VGFError, read_vgf, write_vgf

from .errors import TosaError, TosaFormatError
from .files import refused, write_atomic
from .serial import load_npy as _load_npy

EXIT_ERROR = 2  # the input, the options or the machine: the message says what to change
EXIT_INTERNAL = 3  # a bug in tosa_vk: "internal error, please report"


def _summary(path: str) -> dict:
    from .ir import load_graph, ops, validate

    if Path(path).suffix.lower() == ".vgf":
        raise TosaFormatError(
            "a VGF container, not a .tosa file: `tosa-vk inspect` prints it, `tosa-vk vgf2tosa` writes the TOSA graph "
            "its GRAPH segments hold",
            file=path,
        )
    graph = load_graph(path)
    problem = None
    try:
        validate(graph, file=path)
    except TosaError as err:
        problem = str(err)
    profiles, extensions = ops.requirements(graph)
    dtypes: dict[str, int] = {}
    const_bytes = 0
    for _, block in graph.blocks():
        for t in block.tensors.values():
            dtypes[t.dtype.name] = dtypes.get(t.dtype.name, 0) + 1
            const_bytes += t.data.nbytes if t.data is not None else 0
    major, minor, patch, draft = graph.version

    def described(names: list[str]) -> list[dict]:
        """The main block's inputs / outputs; a name that is no tensor of the block (an invalid graph, which the
        validation line names) is listed with no shape or dtype."""
        tensors = graph.main.tensors
        return [
            {"name": n, "shape": list(tensors[n].shape), "dtype": tensors[n].dtype.name}
            if n in tensors
            else {"name": n, "shape": None, "dtype": None}
            for n in names
        ]

    return {
        "file": path,
        "tosa_version": f"{major}.{minor}.{patch}" + ("-draft" if draft else ""),
        "regions": [r.name for r in graph.regions],
        "inputs": described(graph.main.inputs),
        "outputs": described(graph.main.outputs),
        "num_operators": sum(graph.op_counts().values()),
        "op_counts": graph.op_counts(),
        "tensor_dtypes": dict(sorted(dtypes.items())),
        "const_bytes": const_bytes,
        "profiles": profiles,
        "extensions": extensions,
        "valid": problem is None,
        "validation_error": problem,
    }


def _print_summary(s: dict) -> None:
    def tensors(items):
        return ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" if t["dtype"] else f"{t['name']} (no such tensor)"
                         for t in items)  # fmt: skip

    print(f"{s['file']}: TOSA {s['tosa_version']}, regions: {', '.join(s['regions'])}")
    print(f"  inputs:     {tensors(s['inputs'])}")
    print(f"  outputs:    {tensors(s['outputs'])}")
    print(f"  operators:  {s['num_operators']}")
    for name, n in s["op_counts"].items():
        print(f"    {name:<24}{n:>6}")
    print("  dtypes:     " + ", ".join(f"{k} x{v}" for k, v in s["tensor_dtypes"].items()))
    print(f"  constants:  {s['const_bytes']} bytes")
    print("  needs:      " + " ".join(s["profiles"] + s["extensions"]))
    print("  validation: " + ("ok" if s["valid"] else s["validation_error"]))


def cmd_info(args) -> int:
    from .session import is_pte

    if is_pte(args.model):
        return _info_pte(args)
    summary = _summary(args.model)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        _print_summary(summary)
    return 0 if summary["valid"] else 1


def cmd_devices(args) -> int:
    from .vulkan import enumerate_devices, select

    devices = enumerate_devices()
    try:
        chosen = select(devices).index if devices else None
    except TosaError as e:  # TOSA_VK_DEVICE names none of them: list them anyway
        print(f"tosa-vk: warning: TOSA_VK_DEVICE: {e}", file=sys.stderr)
        chosen = None
    if args.json:
        print(json.dumps([d.as_dict() for d in devices], indent=1))
        return 0
    for d in devices:
        mark = "*" if d.index == chosen else " "
        feats = " ".join(k for k, v in d.features.items() if v)
        print(
            f"{mark} #{d.index} {d.name} ({d.kind}, Vulkan {d.api_version}, subgroup {d.subgroup_size}, "
            f"class {d.device_class})"
        )
        print(f"      uuid {d.uuid}, driver {d.driver}")
        print(f"      features: {feats}")
        print(
            f"      maxStorageBufferRange {d.limits['maxStorageBufferRange']}, "
            f"maxComputeWorkGroupCount {d.limits['maxComputeWorkGroupCount']}"
        )
    if not devices:
        print("no Vulkan devices")
    return 0


def cmd_targets(args) -> int:
    from . import device_class
    from .target import NAMED

    if args.json:
        rows = [
            {
                "name": c.name,
                "summary": c.summary,
                "vendor_ids": [f"0x{v:04x}" for v in c.vendor_ids],
                "families": {op: list(f) for op, f in c.families.items()},
                "features": sorted(c.uses),
                "matmul_tile": c.matmul_tile.__dict__,
                "conv_tile": c.conv_tile.__dict__,
                "reduce_workgroup": c.reduce_workgroup,
                "named_target": c.name in NAMED,
            }
            for c in device_class.CLASSES.values()
        ]
        print(json.dumps(rows, indent=1))
        return 0
    for c in device_class.CLASSES.values():
        print(c.describe())
    print(
        f"(load(..., target=NAME) or {device_class.ENV_TARGET}=NAME compiles for a class on any device; "
        f"{device_class.ENV_DISABLE}={','.join(device_class.FEATURES)} switches kernel features off)"
    )
    return 0


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


def _folder(path: Path) -> None:
    """An output folder, made before the command's work (with its parents)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise TosaError(f"output folder {str(path)!r} is a file") from None


def _default_backend() -> str:
    """`tosa-vk run` without --backend: tosa_vk.load's default (session.default_backend: vulkan when there is a
    Vulkan device, else reference), with a note on stderr in place of load()'s warning."""
    from .session import default_backend

    backend = default_backend()
    if backend == "reference":
        print("tosa-vk: no Vulkan device, running on the reference backend (--backend chooses)", file=sys.stderr)
    return backend


def _model_and_feeds(args) -> Desc:
    """`run` / `profile` / `compare`'s model and inputs: from --test-desc desc.json, else the model argument and its
    -i name=file.npy inputs (no result or expected files)."""
    if args.test_desc:
        return _feeds_from_desc(Path(args.test_desc))
    if not args.model:
        raise TosaError("give a model file or --test-desc desc.json")
    from .bench.inputs import parse

    feeds = {}
    for item in args.input or []:  # the splats are made once the model is loaded (_synthetic)
        spec = parse(item)
        if spec.file is not None and spec.name:
            feeds[spec.name] = _load_npy(spec.file)
    return Desc(Path(args.model), feeds, {}, {})


def _synthetic(args, model, feeds: dict) -> dict:
    """The feeds with -i's splats (name=1x8xf32=0.5, name=0.5) and --random SEED's inputs made for `model`'s
    signature (tosa_vk/bench/inputs.py); as they were without either, or with --test-desc."""
    from .bench.inputs import feeds as made
    from .bench.inputs import parse

    specs = [s for s in map(parse, args.input or []) if s.file is None]
    if args.test_desc or (not specs and args.random is None):
        return feeds
    quantized = getattr(model, "input_qparams", {})  # these take float data (--input-qparams)
    signature = {n: (shape, "FP32" if n in quantized else dtype) for n, (shape, dtype) in model.inputs.items()}
    return made(signature, specs, args.random, given=feeds, file=str(model.file or args.model))[0]


def _print_values(args, value) -> None:
    """`run`'s line under each output: min / max / mean and its first values (not with --test-desc, whose output
    stays the drop-in's)."""
    from .bench.inputs import summary

    if not args.test_desc:
        print(f"  {summary(value)}")


def _desc_inputs(args, graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A desc.json's inputs as tosa_reference_model reads them (ir/arm_files.py): Arm's encodings decoded for the
    graph's input types (fp6 / fp4 packed, raw bytes, bits), a block-scaled input's scales from `<file>_scale.npy`."""
    from .ir.arm_files import read_inputs

    if not args.test_desc or graph is None:
        return feeds
    desc = json.loads(Path(args.test_desc).read_text())  # read and checked by _feeds_from_desc already
    folder = Path(args.test_desc).parent
    read = {folder / f: feeds[n] for n, f in zip(desc.get("ifm_name", []), desc.get("ifm_file", []))}
    load = lambda path: read[path] if path in read else _load_npy(path)  # noqa: E731
    return read_inputs(folder, desc.get("ifm_name", []), desc.get("ifm_file", []), graph.main.tensors, load)


def _result_files(model, graph, out_files: dict[str, str]) -> dict[str, str]:
    """Output array -> its file: the desc.json's ofm_file, a block-scaled output's scales beside it as
    tosa_reference_model writes them (ir/arm_files.py), else <name>.npy."""
    from .ir.arm_files import result_files

    names = dict(out_files)
    if graph is not None:
        outputs = {t.name: t for t in graph.outputs}
        given = {n: f for n, f in out_files.items() if n in outputs}
        names.update({n: f for n, (f, _) in result_files(outputs, given).items()})
    return {name: names.get(name) or f"{safe_name(name)}.npy" for name in model.outputs}


def _expected_scales(graph, folder: Path, files: dict[str, str], expected: dict[str, np.ndarray]) -> None:
    """--compare: a block-scaled output's expected scales, from the file beside its expected result (as
    tosa_reference_model writes them, ir/arm_files.py)."""
    from .ir.arm_files import scale_file

    for t in graph.outputs:
        if t.scale_dtype is not None and t.name in files and t.scale_name not in files:
            files[t.scale_name] = scale_file(files[t.name])
            if (folder / files[t.scale_name]).is_file():
                expected[t.scale_name] = _load_npy(folder / files[t.scale_name])


def _timeout(args) -> dict[str, Any]:
    """load()'s timeout_s from --timeout (only when given: each backend has its own default)."""
    return {} if args.timeout is None else {"timeout_s": args.timeout}


def _seconds(text: str) -> float:
    """--timeout's type: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"takes a number of seconds above 0, got {text!r}")
    return value


def _qparams(items: list[str] | None, option: str) -> dict[str, tuple[float, int]]:
    """--input-qparams / --output-qparams NAME=SCALE,ZP items -> load()'s input_qparams / output_qparams."""
    given: dict[str, tuple[float, int]] = {}
    for item in items or []:
        name, _, numbers = item.rpartition("=")
        scale, _, zero_point = numbers.partition(",")
        try:
            if not name or not zero_point:
                raise ValueError
            given[name] = (float(scale), int(zero_point))
        except ValueError:
            raise TosaError(f"{option} takes NAME=SCALE,ZERO_POINT (e.g. x=0.0309,-2), got {item!r}") from None
    return given


def _qparams_options(args) -> dict[str, Any]:
    """load()'s input_qparams / output_qparams from --input-qparams / --output-qparams (only those given)."""
    options = {
        "input_qparams": _qparams(args.input_qparams, "--input-qparams"),
        "output_qparams": _qparams(args.output_qparams, "--output-qparams"),
    }
    return {k: v for k, v in options.items() if v}


def _dequantized_npy(array: np.ndarray, dtype, qparams) -> np.ndarray:
    """An expected integer result as the float32 values a dequantized output is compared with."""
    from .ir.dtype import from_npy
    from .quantization import dequantize

    return dequantize(from_npy(array, dtype), qparams)


def _qparams_arguments(p: argparse.ArgumentParser) -> None:
    """--input-qparams / --output-qparams (Model.quantize_io), for `run`."""
    p.add_argument(
        "--input-qparams",
        action="append",
        metavar="NAME=SCALE,ZP",
        help="this integer input takes float data, quantized with this scale and zero point before the run "
        "(round half to even, saturating; repeat for each input)",
    )
    p.add_argument(
        "--output-qparams",
        action="append",
        metavar="NAME=SCALE,ZP",
        help="this integer output is dequantized with this scale and zero point: written and compared as float32 "
        "(repeat for each output)",
    )


def cmd_run(args) -> int:
    from .backends.model import GraphModel
    from .backends.pte import PteModel
    from .compare import judge
    from .ir import DType
    from .ir.dtype import from_npy, to_npy
    from .session import load

    expected_dir = None
    if args.compare and not args.test_desc:
        raise TosaError(
            "--compare compares with the ofm_file outputs a desc.json names: give --test-desc desc.json "
            "(--check compares with the reference backend)"
        )
    model_path, feeds, out_files, expected_files = _model_and_feeds(args)
    if args.test_desc:
        expected_dir = Path(args.test_desc).parent
    expected = {}
    if args.compare:  # read before anything is written (an output folder may be the desc's own)
        assert expected_dir is not None
        for name, f in expected_files.items():
            if (expected_dir / f).is_file():
                expected[name] = _load_npy(expected_dir / f)
    backend = args.backend or _default_backend()
    placing = _host_options(args)
    if placing and backend != "vulkan":
        raise TosaError(f"--host-ops / --partition move operators of the vulkan backend to the host; the {backend} "
                        "backend runs every operator on the host already")  # fmt: skip
    # Like tosa_reference_model: a desc.json's outputs go next to it (its ofm_files) unless told otherwise; not
    # with --compare, whose expected results may be those very files (a desc.json without expected_result_file)
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir is None and args.test_desc and not args.compare:
        out_dir = expected_dir
    start = time.perf_counter()
    quantized = _qparams_options(args)
    model = load(model_path, backend=backend, **quantized, **placing, **_timeout(args))
    feeds = _synthetic(args, model, feeds)
    writes = Writes(args.overwrite)
    targets = {}  # output name -> its file, planned before the run: a refusal comes before any work
    graph = model.graph if isinstance(model, GraphModel) else None
    if out_dir:
        for name, file in _result_files(model, graph, out_files).items():
            targets[name] = writes.plan(confined(out_dir, file), name)
            _folder(targets[name].parent)
    feeds = _desc_inputs(args, graph, feeds)
    if args.compare and graph is not None and expected_dir is not None:
        _expected_scales(graph, expected_dir, expected_files, expected)
    if isinstance(model, PteModel):  # an ExecuTorch program: delegates and host operators
        return _run_pte(model, feeds, args, start, targets, writes, expected, expected_files)
    if not isinstance(model, GraphModel):  # a VGF of compute segments only: run as it is
        return _run_vgf(model_path, model, feeds, args, start, out_dir, writes, targets)
    if args.dump_intermediates:  # every tensor kept and returned (tosa_vk/capture.py)
        dump = _plan_dump(model.graph, Path(args.dump_intermediates), writes)
        outputs = model.run(feeds, cast=args.cast, capture="all")
        _dump(outputs, model.graph, Path(args.dump_intermediates), dump, writes)
        outputs = {name: outputs[name] for name in model.outputs}
    else:
        outputs = model.run(feeds, cast=args.cast)
    seconds = time.perf_counter() - start
    graph = model.graph
    checked = load(graph, backend="reference", **quantized).run(feeds, cast=args.cast) if args.check else {}
    dtypes = {t.name: t.dtype for t in graph.outputs}
    dtypes.update({t.scale_name: t.scale_dtype for t in graph.outputs if t.scale_dtype is not None})
    for name, qparams in model.output_qparams.items():  # dequantized: written and judged as float32
        if name in expected:
            expected[name] = _dequantized_npy(expected[name], dtypes[name], qparams)
        dtypes[name] = DType.FP32
    failed = False
    for name, value in outputs.items():
        line = f"{name}: {list(value.shape)} {dtypes[name].name}"
        if name in targets:
            target = targets[name]
            writes.save(target, to_npy(value, dtypes[name]))
            line += f" -> {target}"
        verdicts = []
        if args.compare:
            if name in expected:
                want = from_npy(expected[name], dtypes[name])
                ok, _, _, how = judge(value, want, dtypes[name], args.tolerance)
                verdicts.append((ok, f"vs {expected_files[name]}: {how}"))
            else:
                verdicts.append((False, f"no expected result {expected_files.get(name) or '(not in desc.json)'}"))
        if name in checked:
            ok, _, _, how = judge(value, checked[name], dtypes[name], args.tolerance)
            verdicts.append((ok, f"vs reference backend: {how}"))
        for ok, how in verdicts:
            failed |= not ok
            line += f"; {'PASS' if ok else 'FAIL'} {how}"
        print(line)
        _print_values(args, value)
    if backend == "vulkan":
        where = [p.where for p in model.placement]
        print(
            f"placement: {where.count('vulkan')} operators as Vulkan kernels, {where.count('fused')} fused into "
            f"them, {where.count('host')} on the host, {where.count('alias')} free aliases"
        )
        for p in model.placement if placing else ():
            if p.where == "host":
                print(f"host: {p.op}: {p.reason}")
    ran_on = backend
    if backend == "vulkan" and not any(p.where in ("vulkan", "fused") for p in model.placement):
        ran_on = "the host (vulkan backend, no operator placed on Vulkan)"
    print(f"{model_path}: ran on {ran_on} in {seconds * 1000:.1f} ms (load + first run)")
    return 1 if failed else 0


def _plan_dump(graph, folder: Path, writes: Writes) -> dict[str, Path]:
    """--dump-intermediates' files, planned before the run: tensor name -> NNNN_<name>.npy, and index.json."""
    from .capture import capturable

    _folder(folder)
    files = {name: confined(folder, f"{i:04d}_{safe_name(name)}.npy") for i, name in enumerate(capturable(graph))}
    for name, path in files.items():
        writes.plan(path, f"intermediate tensor {name!r}")
    writes.plan(confined(folder, "index.json"), "the intermediate tensors' index")
    return files


def _dump(tensors: dict[str, np.ndarray], graph, folder: Path, files: dict[str, Path], writes: Writes) -> None:
    """--dump-intermediates: one .npy per tensor (the .npy dtype tosa_reference_model writes for its type) and
    index.json: the tensors in execution order with their file, producer, shape and dtype."""
    from .capture import producers
    from .ir.dtype import to_npy

    main = graph.main
    producer = producers(graph)
    index: list[dict] = []
    for name, target in files.items():
        t = main.tensors[name]
        writes.save(target, to_npy(tensors[name], t.dtype))
        index.append(
            {"tensor": name, "file": target.name, "producer": producer.get(name, "input"),
             "shape": list(t.shape), "dtype": t.dtype.name}
        )  # fmt: skip
    writes.write(confined(folder, "index.json"), json.dumps(index, indent=1).encode())
    print(f"{len(index)} tensors written to {folder} (index.json lists them in execution order)")


def cmd_compare(args) -> int:
    """Vulkan against the reference backend, tensor by tensor (tosa_vk/compare.py); exit 1 if one is out of bounds."""
    from .backends.model import GraphModel
    from .compare import compare, first_failure, report
    from .session import load

    model_path, feeds, _, _ = _model_and_feeds(args)
    if args.node_data:  # before any work: a refusal comes first
        Writes(args.overwrite).plan(Path(args.node_data), "the node data")
    vulkan = load(model_path, backend="vulkan", **_host_options(args), **_timeout(args))
    feeds = _synthetic(args, vulkan, feeds)
    if not isinstance(vulkan, GraphModel) and args.node_data:
        raise TosaError(f"--node-data needs a TOSA graph: this {vulkan.source_kind} has none", file=str(model_path))
    if not isinstance(vulkan, GraphModel) and vulkan.source_kind == "ExecuTorch program":
        return _compare_pte(vulkan, model_path, feeds, args)
    if not isinstance(vulkan, GraphModel):
        raise TosaError("compare needs a TOSA graph: this .vgf has COMPUTE segments only", file=str(model_path))
    feeds = _desc_inputs(args, vulkan.graph, feeds)
    with vulkan, load(vulkan.graph, backend="reference", **_timeout(args)) as reference:
        rows = compare(vulkan, reference, feeds, tolerance=args.tolerance, cast=args.cast)
    for line in report(rows, width=shutil.get_terminal_size((120, 24)).columns):
        print(line)
    if args.node_data:
        from . import node_data

        nodes = node_data.write(args.node_data, node_data.errors(vulkan.graph, rows), overwrite=args.overwrite)
        print(f"node data: {args.node_data} (error / bound of {nodes} operators); {_explorer(model_path, args)}")
    return 0 if first_failure(rows) is None else 1


NODE_DATA_HINT = "model-explorer MODEL.tosa --extensions=tosa_adapter_model_explorer --node_data_paths=FILE"


def _explorer(model_path: Path, args) -> str:
    """The Model Explorer command that shows --node-data's file on the model (Arm's TOSA adapter reads .tosa)."""
    model = model_path if model_path.suffix == ".tosa" else "MODEL.tosa"
    return f"view: model-explorer {model} --extensions=tosa_adapter_model_explorer --node_data_paths={args.node_data}"


def _node_data_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--node-data",
        metavar="FILE",
        help=f"also write {what} per operator as Model Explorer node data (JSON keyed by the TOSA adapter's node "
        "ids, main/op<N>): " + NODE_DATA_HINT,
    )


def _host_options(args) -> dict[str, Any]:
    """load()'s host_ops / partition options from --host-ops / --partition (only those given)."""
    options: dict[str, Any] = {}
    if args.host_ops:
        options["host_ops"] = list(args.host_ops)
    if args.partition:
        options["partition"] = args.partition
    return options


def cmd_placement(args) -> int:
    """Every operator's place (vulkan, fused, host, alias, constant) and why, as compiled for the target; or every
    operator as an NNAdapter rule line, a partition file that puts them all on the host (tosa_vk/host_rules.py) —
    with --host-ops / --partition, only the operators those rules put there (the others commented out)."""
    from . import passes
    from .compiler import compile
    from .fuse import enabled as fuse_enabled
    from .host_rules import collect, rule_line, writable
    from .ir import load_graph
    from .partition import STRUCTURAL
    from .vulkan.builtin import shipped_only

    target, chosen = _plan_target(args.target)
    graph = load_graph(args.model)
    options = _host_options(args)
    program = compile(graph, target, kernels=shipped_only(), file=args.model, **options)
    if args.format == "rules":  # the operators the partition saw: the graph after the compile's passes
        from . import host_kernels

        rules = collect(**options)
        if rules:
            print(f"# {args.model}: the operators the --host-ops / --partition rules put on the host, as NNAdapter")
            print("# rules OP:inputs:outputs: a partition file (--partition FILE) that does the same.")
            print("# Commented out: the operators no rule names, and those that cannot run on the host.")
        else:
            print(f"# {args.model}: every operator as an NNAdapter rule OP:inputs:outputs, a partition file that puts")
            print("# them all on the host (--partition FILE); delete a line to run its operator on Vulkan again.")
            print("# Commented out: the operators that cannot run on the host.")
        for region in passes.run(graph, batch=fuse_enabled(None)).regions:
            for op in region.blocks[0].operators:
                line = rule_line(op)
                if rules and not any(r.matches(op) for r in rules):
                    print(f"# {line}  # on Vulkan: no rule names it")
                elif op.op in STRUCTURAL:
                    print(f"# {line}  # {STRUCTURAL[op.op]}")
                elif not host_kernels.available(op.op):
                    print(f"# {line}  # no host kernel for {op.op}")
                elif not writable(op):
                    print(f"# {line}  # a tensor name with ',', ':' or '#' cannot be written in a rule")
                else:
                    print(line)
        return 0
    rows = [(p.op, p.where, p.reason) for p in program.placement]
    width = min(max((len(r[0]) for r in rows), default=8), 60)
    print(f"{args.model}: target {target.name} ({chosen})")
    print(f"{'operator':<{width}}  {'place':<8}  reason")
    for label, where, reason in rows:
        print(f"{label:<{width}}  {where:<8}  {reason}")
    counts = {w: sum(r[1] == w for r in rows) for w in ("vulkan", "fused", "host", "alias", "constant")}
    print(", ".join(f"{n} {w}" for w, n in counts.items() if n or w in ("vulkan", "host")))
    return 0


def _pte_bound(model, name: str, want: np.ndarray, tolerance: float | None) -> tuple[float, str]:
    """The largest |diff| a .pte's float output may have against PyTorch's: --tolerance, else 1e-4 of the largest
    magnitude, or one quantization step for an output an int8 program dequantizes (issue 36's bounds)."""
    if tolerance is not None:
        return tolerance, f"--tolerance {tolerance:.3g}"
    step = model.output_steps.get(name, 0.0)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    if step:
        return step * (1 + 1e-6), f"one quantization step {step:.3g}"
    return 1e-4 * scale, f"1e-4 x max |want| {scale:.3g}"


def _run_pte(model, feeds: dict, args, start: float, targets: dict, writes: Writes, expected: dict,
             expected_files: dict) -> int:  # fmt: skip
    """`tosa-vk run model.pte`: the method's outputs (floats where the module returns floats), --compare against
    the desc.json's expected files (PyTorch eager's, from tosa_vk.from_torch(save=...)), --check against the
    reference backend; the placement: delegates' operators on the backend, host operators on the host."""
    from .session import load

    if args.dump_intermediates:
        raise TosaError(
            "--dump-intermediates needs a TOSA graph; an ExecuTorch program has delegates and host operators (run "
            "a delegate's .tosa from tosa_vk.from_torch(save=...))",
            file=model.file,
        )
    with model:
        outputs = model.run(feeds, cast=args.cast)
        seconds = time.perf_counter() - start
        placement = model.placement
        checked = {}
        if args.check:
            with load(model.file, backend="reference") as reference:
                checked = reference.run(feeds, cast=args.cast)
        failed = False
        for name, value in outputs.items():
            line = f"{name}: {list(value.shape)} {value.dtype}"
            if name in targets:
                writes.save(targets[name], value)
                line += f" -> {targets[name]}"
            verdicts = []
            if args.compare:
                if name in expected:
                    want = np.asarray(expected[name])
                    bound, how = _pte_bound(model, name, want, args.tolerance)
                    worst = (
                        float(np.max(np.abs(value.astype(np.float64) - want))) if want.shape == value.shape else None
                    )
                    ok = worst is not None and worst <= bound
                    text = f"max |diff| {worst:.3g}, {how}" if worst is not None else f"shape {list(want.shape)}"
                    verdicts.append((ok, f"vs {expected_files[name]}: {text}"))
                else:
                    verdicts.append((False, f"no expected result {expected_files.get(name) or '(not in desc.json)'}"))
            if name in checked:
                worst = float(np.max(np.abs(value.astype(np.float64) - checked[name])))
                bound, how = _pte_bound(model, name, checked[name], args.tolerance)
                verdicts.append((worst <= bound, f"vs reference backend: max |diff| {worst:.3g}, {how}"))
            for ok, how in verdicts:
                failed |= not ok
                line += f"; {'PASS' if ok else 'FAIL'} {how}"
            print(line)
            _print_values(args, value)
    where = [p.where for p in placement]
    host_ops = sum(p.reason.startswith("ExecuTorch host operator") for p in placement)
    print(
        f"placement: {len(model.delegates)} TOSA delegate(s) on {model.backend} ({where.count('vulkan')} Vulkan "
        f"kernels, {where.count('fused')} fused, {where.count('host') - host_ops} TOSA operators on the host), "
        f"{host_ops} ExecuTorch host operators on the host"
    )
    print(f"{model.file}: ran on {model.backend} in {seconds * 1000:.1f} ms (load + first run)")
    return 1 if failed else 0


def _compare_pte(vulkan, model_path: Path, feeds: dict, args) -> int:
    """`tosa-vk compare model.pte`: the program's outputs on Vulkan against the reference backend (delegates and host
    operators alike; the bounds of _pte_bound)."""
    from .session import load

    with vulkan, load(model_path, backend="reference", **_timeout(args)) as reference:
        got, want = vulkan.run(feeds, cast=args.cast), reference.run(feeds, cast=args.cast)
    failed = False
    for name in want:
        worst = float(np.max(np.abs(got[name].astype(np.float64) - want[name])))
        bound, how = _pte_bound(vulkan, name, want[name], args.tolerance)
        failed |= worst > bound
        print(f"{name}: {'PASS' if worst <= bound else 'FAIL'} max |diff| {worst:.3g}, {how}")
    return 1 if failed else 0


def _info_pte(args) -> int:
    """`tosa-vk info model.pte`: each method's inputs and outputs, its instructions (host operators, delegates
    with their TOSA operator counts) in order."""
    from .ir.flatbuffer import read_graph
    from .pte import Kernel, load_program

    plans = load_program(args.model)  # the reader `load` uses: every index checked
    methods: list[dict[str, Any]] = []
    for plan in plans:
        steps = []
        counts: dict[int, dict[str, int]] = {}  # each delegate parsed once, however often the plan calls it
        for ins in plan.instructions:
            if isinstance(ins, Kernel):
                steps.append({"host": ins.name})
                continue
            d = plan.delegates[ins.index]
            step: dict[str, Any] = {"delegate": ins.index, "backend": d.backend, "bytes": len(d.processed)}
            if d.backend == "TOSABackend":
                if ins.index not in counts:
                    where = f"{args.model} (delegate {ins.index})"
                    counts[ins.index] = read_graph(d.processed, file=where).op_counts()
                step["tosa_operators"] = counts[ins.index]
            steps.append(step)

        inputs, outputs = ([{"name": f"{what}_{i}", "shape": list(plan.values[v].sizes),
                             "dtype": plan.values[v].dtype.name} for i, v in enumerate(indices)]
                           for what, indices in (("input", plan.inputs), ("output", plan.outputs)))  # fmt: skip
        methods.append({"name": plan.name, "inputs": inputs, "outputs": outputs, "instructions": steps})
    summary = {"file": args.model, "kind": "ExecuTorch program", "methods": methods}
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{args.model}: ExecuTorch program, {len(methods)} method(s)")
    for m in methods:
        print(f"  method {m['name']}")
        for key in ("inputs", "outputs"):
            print(f"    {key + ':':<9}" + ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in m[key]))
        for i, step in enumerate(m["instructions"]):
            if "host" in step:
                print(f"    #{i:<3} host      {step['host']}")
            else:
                ops = step.get("tosa_operators", {})
                detail = f"{sum(ops.values())} TOSA operators ({', '.join(ops)})" if ops else f"{step['bytes']} bytes"
                print(f"    #{i:<3} delegate  {step['delegate']} {step['backend']}: {detail}")
    return 0


def _run_vgf(
    path: Path, model, feeds: dict, args, start: float, out_dir: Path | None, writes: Writes, targets: dict
) -> int:
    """`tosa-vk run model.vgf` of COMPUTE segments only: run as they are on our Vulkan runtime (tosa_vk/vgf_run.py).
    `targets`: each output's planned file (cmd_run). No graph: nothing for --check or --dump-intermediates."""
    given = [flag for flag, on in (("--check", args.check), ("--dump-intermediates", args.dump_intermediates)) if on]
    if given:
        model.close()
        raise TosaError(
            f"{given[0]} needs the TOSA graph, and a .vgf of COMPUTE segments only holds compiled kernels (a .vgf "
            "written with GRAPH segments, the default of `tosa-vk export`, has one)",
            file=str(path),
        )
    with model:
        outputs = model.run(feeds, cast=args.cast)
        dtypes = {name: dtype for name, (_, dtype) in model.outputs.items()}
    seconds = time.perf_counter() - start
    for name, value in outputs.items():
        line = f"{name}: {list(value.shape)} {dtypes[name]}"
        if name in targets:
            writes.save(targets[name], value)
            line += f" -> {targets[name]}"
        print(line)
        _print_values(args, value)
    print(f"{path}: ran on vulkan in {seconds * 1000:.1f} ms (load + first run)")
    return 0


def cmd_profile(args) -> int:
    from . import profile
    from .backends.model import GraphModel
    from .session import load

    if args.runs < 1:
        raise TosaError(f"--runs takes 1 or more, got {args.runs}")
    model_path, feeds, _, _ = _model_and_feeds(args)
    backend = args.backend or _default_backend()
    options: dict[str, Any] = {"timestamps": True} if backend == "vulkan" else {}
    if args.warmup < 0:
        raise TosaError(f"--warmup takes 0 or more, got {args.warmup}")
    for path, what in ((args.trace, "the trace"), (args.node_data, "the node data")):
        if path:  # before the runs: a refusal comes before any work
            Writes(args.overwrite).plan(Path(path), what)
    with load(model_path, backend=backend, **options, **_timeout(args)) as model:
        feeds = _desc_inputs(args, model.graph if isinstance(model, GraphModel) else None, feeds)
        feeds = _synthetic(args, model, feeds)
        graph = _node_data_graph(model, args)
        runs = profile.measure(model, feeds, args.runs, warmup=args.warmup)
        info = getattr(getattr(model, "device", None), "info", None)
    on = f"{backend} ({info.name})" if info is not None else backend
    found = profile.rows(runs)
    per = "operator" if backend == "reference" else "kernel"
    print(f"{model_path} on {on}: median of {args.runs} runs after {profile.warmups(args.warmup)}, per {per}")
    print("\n".join(profile.table(found, args.sort)))
    print("\n".join(profile.totals(found, runs)))
    if args.trace:
        events = profile.write_trace(Path(args.trace), runs, f"{model_path.name} on {on}", overwrite=args.overwrite)
        print(f"trace: {args.trace} ({events} kernel events; open in https://ui.perfetto.dev)")
    if graph is not None:
        from . import node_data

        nodes = node_data.write(args.node_data, node_data.times(graph, found, args.runs), overwrite=args.overwrite)
        print(f"node data: {args.node_data} (ms of {nodes} operators); {_explorer(model_path, args)}")
    return 0


def _node_data_graph(model, args):
    """The TOSA graph whose node ids --node-data uses (None without --node-data); a model without one is refused."""
    from .backends.model import GraphModel

    if not args.node_data:
        return None
    if not isinstance(model, GraphModel):
        raise TosaError(
            f"--node-data keys operators by the TOSA graph's node ids: this {model.source_kind} has none "
            "(profile its .tosa)",
            file=str(model.file),
        )
    return model.graph


def cmd_export(args) -> int:
    out = Path(args.output or Path(args.model).with_suffix(".vgf"))
    Writes(args.overwrite).plan(out, "the VGF")
    if args.segments == "graph":
        from .ir import load_graph
        from .vgf_graph import export

        vgf = export(load_graph(args.model), file=args.model)
    else:
        from .session import load

        with load(args.model, backend="vulkan", strict=True) as model:
            vgf = model.export_vgf()
    write_atomic(out, write_vgf(vgf), overwrite=args.overwrite, what="the VGF")
    kinds = [s.type for s in vgf.segments]
    print(
        f"{out}: {out.stat().st_size} bytes, {kinds.count('GRAPH')} graph and {kinds.count('COMPUTE')} compute "
        f"segments, {len(vgf.modules)} modules, {len(vgf.resources)} resources, {len(vgf.constants)} constants"
    )
    return 0


def cmd_vgf2tosa(args) -> int:
    from .ir.flatbuffer import save_graph
    from .vgf_graph import to_graph

    out = Path(args.output or Path(args.model).with_suffix(".tosa"))
    Writes(args.overwrite).plan(out, "the TOSA graph")  # e.g. the .tosa this .vgf was exported from
    graph = to_graph(_read_vgf(args.model), file=args.model)
    save_graph(graph, out, overwrite=args.overwrite)
    counts = graph.op_counts()
    print(f"{out}: {sum(counts.values())} operators ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    return 0


def _read_vgf(path: str) -> VGF:
    """A .vgf file; its defects are TosaFormatErrors (tosa_vk's boundary with the vgf package, as in load())."""
    try:
        return read_vgf(path)
    except VGFError as err:
        raise TosaFormatError(err.rule, file=err.file) from None


def cmd_import(args) -> int:
    """A TFLite model (or TOSA MLIR) as a .tosa file (tosa_vk/tflite_import.py)."""
    from .ir import save_graph
    from .tflite_import import TFLITE_IDENTIFIER, import_model, qparams_flags, tflite_qparams

    out = Path(args.output or Path(args.model).with_suffix(".tosa"))
    Writes(args.overwrite).plan(out, "the TOSA graph")
    start = time.perf_counter()
    graph = import_model(args.model)
    save_graph(graph, out, overwrite=args.overwrite)

    def signature(tensors) -> str:
        return ", ".join(f"{t.name} {list(t.shape)} {t.dtype.name}" for t in tensors)

    print(f"inputs: {signature(graph.inputs)}")
    print(f"outputs: {signature(graph.outputs)}")
    print(f"{args.model} -> {out}: {len(graph.main.operators)} operators in {time.perf_counter() - start:.2f} s")
    with open(args.model, "rb") as f:
        tflite = f.read(8)[4:8] == TFLITE_IDENTIFIER
    if tflite and any(t.dtype.name.startswith("INT") for t in graph.inputs + graph.outputs):
        flags = qparams_flags(*tflite_qparams(args.model))
        if flags:  # the TOSA graph does not carry them
            print(f"quantized I/O, float data in and out: tosa-vk run {out} {' '.join(flags)}")
    return 0


def _import_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tflite file (or TOSA MLIR text .mlir / bytecode .mlirbc)")
    p.add_argument("-o", "--output", help="the .tosa to write (default: the model's name with .tosa)")
    _overwrite_argument(p)


def cmd_inspect(args) -> int:
    from vgf.inspect import describe, summary

    vgf = _read_vgf(args.model)
    if args.json:
        print(json.dumps(summary(vgf), indent=1))
    else:
        print(describe(vgf, args.model))
    return 0


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty() or done == total:
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done == total else "\r"
        print(f"  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end, file=sys.stderr, flush=True)


def cmd_conformance(args) -> int:
    from dataclasses import replace

    from .conformance.generate import (
        FFT_SELECTION,
        VERSION_OPS,
        Selection,
        operator_names,
        selected_tests,
        test_operator,
    )
    from .conformance.run import run_tests, table

    version = args.tosa_version
    ops = operator_names(args.ops, version) if args.ops else VERSION_OPS[version]
    if args.dir:
        tests = sorted(p for p in Path(args.dir).iterdir() if (p / "desc.json").exists())
        tests = [t for t in tests if test_operator(t.name) in ops]
    else:  # generate (on first use) only the selected operators' tests
        kind = "negative" if args.negative else "positive"
        tests = selected_tests(Selection(ops, 2 if args.full else 1, kind, tosa_version=version))
        fft = tuple(op for op in FFT_SELECTION.ops if op in ops)
        if kind == "positive" and fft and version == "1.0":
            tests += selected_tests(replace(FFT_SELECTION, ops=fft), superset=FFT_SELECTION)
    cli = main if args.via_cli else None
    backend, target, strict = _conformance_class(args)
    results = run_tests(tests, backend, jobs=args.jobs, progress=_progress, strict=strict, cli=cli, target=target)
    print(table(results))
    failed = [r for r in results if r.status != "pass"]
    for r in failed[: args.show]:
        print(f"{r.status.upper()} {r.test}: {r.detail}")
    return 1 if failed else 0


def _conformance_class(args) -> tuple[str, str | None, bool]:
    """`conformance`'s backend, device class and strictness: --target NAME (or TOSA_VK_TARGET) forces a class of
    tosa-vk targets, which implies the Vulkan backend and strict placement (a class's kernels, none on the host);
    TOSA_VK_TARGET is left alone by an explicit --backend reference."""
    from .device_class import forced

    target = forced(args.target) if args.target or args.backend != "reference" else None
    if target is None:
        return args.backend or "reference", None, args.strict
    if args.backend == "reference":
        raise TosaError(f"conformance --target {target}: a device class needs --backend vulkan")
    return "vulkan", target, True


def _plan_target(name: str | None):
    """`tosa-vk plan`'s target and how it was chosen: --target NAME a named one, --target device the Vulkan device
    (TOSA_VK_DEVICE picks one; an error without a device), no --target the device where there is one, else the
    named target lavapipe."""
    from .session import vulkan_devices
    from .target import named

    if name not in (None, "device"):
        return named(name), "named target"
    devices = list(vulkan_devices())
    if devices or name == "device":
        from .vulkan import select

        info = select(devices)
        return info.target, f"Vulkan device #{info.index}"
    return named("lavapipe"), "named target: no Vulkan device found (--target chooses)"


def cmd_plan(args) -> int:
    from .compiler import compile
    from .ir import load_graph

    target, chosen = _plan_target(args.target)
    alignment = args.alignment or target.alignment
    program = compile(load_graph(args.model), target, alignment=args.alignment, file=args.model)
    rows: list[dict[str, Any]] = []
    for name, buf in program.buffers.items():
        res = program.resources[name]
        rows.append(
            {
                "tensor": name,
                "kind": buf.kind,
                "descriptor": res.descriptor,
                "format": res.format,
                "shape": list(buf.shape),
                "offset": buf.offset,
                "bytes": buf.nbytes,
                "live": list(buf.live),
                "alias_group": res.alias_group,
            }
        )
    summary = {
        "file": args.model,
        "target": target.as_dict(),
        "target_chosen": chosen,
        "alignment": alignment,
        "memory": program.memory,
        "tensors": rows,
        "placement": [p._asdict() for p in program.placement],
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"target {target.name} ({chosen}), tensors aligned to {alignment} B")
    print(
        f"{'tensor':<40} {'kind':<12} {'descriptor':<18} {'format':<30} {'shape':<18} {'offset':>9} "
        f"{'bytes':>9} {'live':>11} alias"
    )
    for r in sorted(rows, key=lambda r: (r["offset"], r["tensor"])):
        live = (
            "always"
            if r["live"][0] == -1 and r["kind"] in ("constant", "variable")
            else f"{r['live'][0]}..{r['live'][1]}"
        )
        print(
            f"{r['tensor'][:40]:<40} {r['kind']:<12} {r['descriptor'].removeprefix('VK_DESCRIPTOR_TYPE_'):<18} "
            f"{r['format'].removeprefix('VK_FORMAT_'):<30} {str(r['shape']):<18} {r['offset']:>9} "
            f"{r['bytes']:>9} {live:>11} {'' if r['alias_group'] is None else r['alias_group']}"
        )
    m = program.memory
    hosted = [p for p in program.placement if p.where == "host"]
    for p in hosted:
        print(f"host: {p.op}: {p.reason}")
    from .program import Kernel, walk

    kernels = [k for k in walk(program.steps) if isinstance(k, Kernel)]
    for label in dict.fromkeys(k.op for k in kernels if " + " in k.op):
        print(f"fused: {label}")
    fused = sum(p.where == "fused" for p in program.placement)
    print(
        f"target {target.name}: {len(program.placement) - len(hosted)} operators on Vulkan ({fused} of them fused "
        f"into another's kernel), {len(hosted)} on the host; {len(kernels)} kernels"
    )
    print(
        f"arena {m['arena_bytes']} B = constants / variables {m['static_bytes']} B + packed {m['dynamic_bytes']} B "
        f"(lower bound {m['dynamic_lower_bound_bytes']} B, without reuse {m['dynamic_naive_bytes']} B)"
    )
    return 0


def cmd_bench(args) -> int:
    from .bench import main_from_args

    return main_from_args(args)


def cmd_cache(args) -> int:
    """The program cache (compiled models) and the SPIR-V cache under $TOSA_VK_CACHE: what is there, or empty them."""
    from .program_cache import ProgramCache
    from .vulkan.shaders import ShaderCache

    programs, shaders = ProgramCache(args.dir), ShaderCache()
    if args.action == "clear":
        removed = programs.clear()
        print(f"removed {removed} compiled models from {programs.dir} and {shaders.clear()} SPIR-V modules from "
              f"{shaders.dir}")  # fmt: skip
        return 0
    info = programs.info()
    modules = shaders.modules()
    info["spirv"] = {
        "directory": str(shaders.dir),
        "modules": len(modules),
        "bytes": sum(p.stat().st_size for p in modules),
    }
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        print(f"compiled models: {info['entries']} in {info['directory']} ({info['bytes'] / 2**20:.1f} MiB of "
              f"{info['budget'] / 2**20:.0f} MiB)")  # fmt: skip
        print(f"SPIR-V modules:  {len(modules)} in {shaders.dir} ({info['spirv']['bytes'] / 2**20:.1f} MiB)")
    return 0


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: ...)" after an option's help, unless the default is None / False (their help says what
    happens without the option) or the help already names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _model_arguments(p: argparse.ArgumentParser, model: str, desc: str) -> None:
    """The model and its inputs, for `run`, `profile` and `compare` (read by _model_and_feeds), and --timeout."""
    p.add_argument("model", nargs="?", help=f"{model} (with -i name=file.npy inputs)")
    p.add_argument("--test-desc", "--test_desc", dest="test_desc", help=f"a conformance-style desc.json naming {desc}")
    p.add_argument(
        "-i",
        "--input",
        action="append",
        help="graph input as name=file.npy, or made up: name=SHAPExTYPE=VALUE (x=1x8x8x3xf32=0.5, a splat), "
        "SHAPExTYPE=VALUE for a model of one input, name=VALUE (repeat for each input)",
    )
    p.add_argument(
        "--random",
        type=int,
        metavar="SEED",
        help="every input no -i gives: seeded random values in its type's range (as tosa-vk bench --random)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="the longest one run may take (tosa_vk.load's timeout_s); a run past it is an error (default: the "
        "backend's, 300 s on Vulkan)",
    )


def _overwrite_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="write over files that are already there (without it, a command refuses before any work)",
    )


def _host_arguments(p: argparse.ArgumentParser) -> None:
    """--host-ops and --partition (tosa_vk/host_rules.py), for `run` and `placement`."""
    p.add_argument(
        "--host-ops",
        nargs="+",
        action="extend",
        metavar="RULE",
        help="run these operators on the host (vulkan backend): operator names (any case), output tensor names, "
        "or NNAdapter rules OP:in1,in2:out1,out2; a rule that matches no operator is an error (give the model "
        "before this option)",
    )
    p.add_argument(
        "--partition",
        metavar="FILE",
        help="a file of such rules, one per line ('#' comments; `tosa-vk placement --format rules` writes one)",
    )


DEBUG = "show the traceback of an error (an internal error, exit code 3, is a bug to report)"


# Each command's options, in `tosa-vk --help` order.
def _info_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model", help="a .tosa file, TOSA MLIR (.mlir text, .mlirbc bytecode) or an ExecuTorch program (.pte)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _run_arguments(p: argparse.ArgumentParser) -> None:
    _model_arguments(p, "a .tosa, TOSA MLIR (.mlir / .mlirbc), .vgf or .pte file", "the model, inputs and output files")
    p.add_argument(
        "-o",
        "--output-dir",
        "--output_dir",
        dest="output_dir",
        help="write each output here as desc.json's ofm_file, else <name>.npy (default: the folder of desc.json, "
        "as tosa_reference_model does, except with --compare; without a desc.json: not written); " + FILE_NAMES,
    )
    _overwrite_argument(p)
    p.add_argument(
        "--backend",
        choices=("vulkan", "reference"),
        help="default: vulkan when a Vulkan device exists (tosa-vk devices), else reference",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="compare with the expected results next to desc.json: its expected_result_file, else its ofm_file "
        "(needs --test-desc; read before anything is written)",
    )
    p.add_argument("--check", action="store_true", help="also run the reference backend and compare with it")
    p.add_argument(
        "--cast",
        action="store_true",
        help="convert inputs of another dtype kind instead of refusing (float into an integer input truncates: "
        "give --input-qparams to quantize)",
    )
    _qparams_arguments(p)
    p.add_argument(
        "--tolerance",
        type=float,
        help="largest |diff| --compare / --check accept (default: integers and bools exact, floats within "
        "k x eps x (|want| + max |want|) per dtype: fp32 k=1024, fp16 8, bf16 4, fp8 2)",
    )
    p.add_argument(
        "--dump-intermediates",
        metavar="DIR",
        help="also write every intermediate tensor to DIR as NNNN_<name>.npy in execution order, with index.json "
        "(names as for outputs)",
    )
    _host_arguments(p)


def _compare_arguments(p: argparse.ArgumentParser) -> None:
    _model_arguments(p, "a .tosa or TOSA MLIR file, or a .vgf with GRAPH segments", "the model and inputs")
    p.add_argument("--cast", action="store_true", help="convert inputs of another dtype kind instead of refusing")
    p.add_argument(
        "--tolerance",
        type=float,
        help="largest |diff| accepted for every tensor (default: integers and bools exact, floats within k x eps x "
        "(|want| + max |want|) per dtype)",
    )
    _host_arguments(p)
    _node_data_argument(p, "the error / bound ratio (the first divergence marked)")
    _overwrite_argument(p)


def _profile_arguments(p: argparse.ArgumentParser) -> None:
    _model_arguments(p, "a .tosa or .vgf file", "the model and inputs")
    p.add_argument(
        "--backend",
        choices=("vulkan", "reference"),
        help="default: vulkan when a Vulkan device exists (tosa-vk devices), else reference",
    )
    p.add_argument("--runs", type=int, default=5, help="timed runs after the warm-up; the table shows medians")
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed runs first (default 1: a first run compiles each pipeline at its first dispatch; 0 times that)",
    )
    p.add_argument(
        "--sort",
        choices=("order", "time"),
        default="order",
        help="order: kernels in execution order; time: slowest first",
    )
    p.add_argument("--trace", help="also write a Chrome / Perfetto trace (JSON) of every timed run here")
    _node_data_argument(p, "the median ms")
    _overwrite_argument(p)


def _conformance_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("reference", "vulkan"), help="the backend to test (default: reference)")
    p.add_argument(
        "--target",
        metavar="CLASS",
        help="Vulkan: compile for this device class (tosa-vk targets) on any device, strict placement implied "
        "(default: TOSA_VK_TARGET, else the device's own)",
    )
    p.add_argument(
        "--ops",
        nargs="*",
        metavar="OP",
        help="operators (spec names, any case); only their tests are generated (default: all of the version)",
    )
    p.add_argument(
        "--tosa-version",
        choices=("1.0", "1.1"),
        default="1.0",
        help="1.0: the TOSA 1.0 selection (70 operators); 1.1: what the TOSA 1.1 draft adds (25 new operators, "
        "and 1.0 operators' INT64 / MX / mixed-precision rows)",
    )
    p.add_argument("--negative", action="store_true", help="the ERROR_IF tests instead of the positive ones")
    p.add_argument("--full", action="store_true", help="two tests per class instead of one")
    p.add_argument("--strict", action="store_true", help="Vulkan: fail tests whose operators run on the host")
    p.add_argument(
        "--via-cli",
        action="store_true",
        help="run each test as `tosa-vk run --test-desc desc.json --output-dir DIR` (the tosa_reference_model "
        "drop-in, in this process) and judge the files it writes with tosa_verify",
    )
    p.add_argument("--dir", help="a folder of generated tests to run instead of the cached selection")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    p.add_argument("--show", type=int, default=50, help="how many failures to list")


def _export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tosa file")
    p.add_argument("-o", "--output", help="the .vgf to write (default: the model's name with .vgf)")
    _overwrite_argument(p)
    p.add_argument(
        "--segments",
        choices=("graph", "compute"),
        default="graph",
        help="graph: TOSA operators as SPIR-V graphs, as Arm's model-converter writes them (for VK_ARM_data_graph "
        "drivers, ExecuTorch's VGF runtime, the ML emulation layer); compute: tosa_vk's own compiled kernels "
        "(any Vulkan device, no ML extensions)",
    )


def _vgf2tosa_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .vgf file")
    p.add_argument("-o", "--output", help="the .tosa to write (default: the model's name with .tosa)")
    _overwrite_argument(p)


def _inspect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .vgf file")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _plan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tosa file")
    p.add_argument(
        "--target",
        help="a named target (lavapipe, minimum) or 'device' to query the Vulkan device (TOSA_VK_DEVICE picks one); "
        "default: the Vulkan device where there is one, else lavapipe",
    )
    p.add_argument("--alignment", type=int, help="buffer offset alignment in bytes (default: the target's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _placement_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a .tosa file")
    p.add_argument(
        "--target",
        help="a named target (lavapipe, minimum) or 'device' to query the Vulkan device; default: as tosa-vk plan "
        "(the Vulkan device where there is one, else lavapipe)",
    )
    _host_arguments(p)
    p.add_argument(
        "--format",
        choices=("table", "rules"),
        default="table",
        help="table: each operator's place and reason; rules: each operator as an NNAdapter rule line "
        "OP:inputs:outputs, a partition file for --partition",
    )


def _devices_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _targets_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _cache_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["info", "clear"], help="info: what is there; clear: empty both")
    p.add_argument("--dir", help="the program cache folder (default: $TOSA_VK_CACHE/programs)")
    p.add_argument("--json", action="store_true", help="machine-readable output (info)")


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    from .bench import add_arguments as add_bench_arguments

    add_bench_arguments(p)


# (name, one-line summary, its options, its handler): build_parser makes one subcommand of each
COMMANDS: tuple[tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[Any], int]], ...] = (
    (
        "info",
        "inputs, outputs, op counts, dtypes and profiles of a .tosa file (or a .pte's plan)",
        _info_arguments,
        cmd_info,
    ),
    ("run", "run a graph (drop-in for tosa_reference_model --test_desc)", _run_arguments, cmd_run),
    (
        "compare",
        "run on Vulkan and on the reference backend, judge every tensor in execution order; exit 1 if one is out "
        "of bounds",
        _compare_arguments,
        cmd_compare,
    ),
    (
        "profile",
        "time each kernel of a graph over several runs: a table in ms, and a Perfetto trace",
        _profile_arguments,
        cmd_profile,
    ),
    (
        "conformance",
        "run Arm's conformance tests on a backend, judged by tosa_verify",
        _conformance_arguments,
        cmd_conformance,
    ),
    ("export", "write a .tosa graph as a VGF container for Arm's ML SDK", _export_arguments, cmd_export),
    (
        "vgf2tosa",
        "the TOSA graph a .vgf holds (GRAPH segments decoded), as a .tosa file",
        _vgf2tosa_arguments,
        cmd_vgf2tosa,
    ),
    (
        "import",
        "a TFLite model as a .tosa file, through tosa-converter-for-tflite and tosa-opt",
        _import_arguments,
        cmd_import,
    ),
    ("inspect", "print a .vgf container: modules, segments, resources, constants", _inspect_arguments, cmd_inspect),
    ("plan", "where every tensor lives: descriptor, format, offset, live range, aliases", _plan_arguments, cmd_plan),
    (
        "placement",
        "where every operator runs (Vulkan, fused, host, alias, constant) and why",
        _placement_arguments,
        cmd_placement,
    ),
    ("devices", "list Vulkan devices (* marks the default)", _devices_arguments, cmd_devices),
    (
        "targets",
        "list the device classes (kernel families and tiles per kind of GPU; the first word of each line its name)",
        _targets_arguments,
        cmd_targets,
    ),
    ("cache", "the compiled-model and SPIR-V caches ($TOSA_VK_CACHE): info or clear", _cache_arguments, cmd_cache),
    (
        "bench",
        "benchmark ops and models on every installed backend (JSON, table, plot); one model with --random SEED / "
        "--input: latency percentiles, runs/s, device time",
        _bench_arguments,
        cmd_bench,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    ap = argparse.ArgumentParser(
        prog="tosa-vk", description="Run TOSA 1.0 graphs on Vulkan.", formatter_class=_HelpFormatter
    )
    ap.add_argument("--version", action="version", version=f"tosa-vk {__version__}")
    ap.add_argument("--debug", action="store_true", help=DEBUG)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary, arguments, handler in COMMANDS:
        p = sub.add_parser(name, help=summary, description=summary, formatter_class=_HelpFormatter)
        # also after the command; SUPPRESS: not given here keeps what was given before it
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG)
        arguments(p)
        p.set_defaults(func=handler)
    return ap


# How long the main thread has to act on Ctrl-C before the process ends without it.
INTERRUPT_GRACE_S = 2.0


def _interrupted() -> NoReturn:
    """Leaves at once: the device may still run the interrupted work, and the interpreter's teardown would wait
    for it (the operating system frees the device's memory)."""
    print("tosa-vk: interrupted", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(130)


def _watch_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt in the main thread, between two bytecodes: a main thread inside a long C call
    (a driver compiling a pipeline, a Vulkan wait) acts on it only when the call returns, and one that gets it inside
    a finalizer or a C callback loses it (Python prints it and goes on), so a runaway shader would keep the process.
    The signal also wakes this thread (signal.set_wakeup_fd), which ends the process if the main thread has not
    within INTERRUPT_GRACE_S. Set up by the command's entry point, not by main(), which callers may run in-process."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def watch() -> None:
        while signal.SIGINT not in os.read(read, 64):
            pass
        time.sleep(INTERRUPT_GRACE_S)
        _interrupted()

    threading.Thread(target=watch, name="tosa-vk-interrupt", daemon=True).start()


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning a command meets, as one line on stderr (not Python's file:line and source)."""
    print(f"tosa-vk: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Runs one command: its exit code, or EXIT_ERROR with one line on stderr for what the user can act on (a
    TosaError: every error tosa_vk raises on purpose; an OSError: a file, the disk, the machine; MemoryError: a
    model too big for this machine), or EXIT_INTERNAL for anything else, which is a bug in tosa_vk. --debug adds
    the traceback."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_line
            return args.func(args)
    except KeyboardInterrupt:
        _interrupted()
    except (TosaError, OSError, MemoryError) as err:
        if args.debug:
            traceback.print_exc()
        text = str(err) if not isinstance(err, MemoryError) else f"out of memory ({err or 'MemoryError'})"
        print(f"tosa-vk: error: {text}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # not an error tosa_vk meant: a bug to report, not a message
        if args.debug:
            traceback.print_exc()
        hint = "" if args.debug else " (--debug shows the traceback)"
        print(f"tosa-vk: internal error, please report: {type(err).__name__}: {err}{hint}", file=sys.stderr)
        return EXIT_INTERNAL


def entry() -> int:
    """The `tosa-vk` command (and `python -m tosa_vk.cli`): main() in a process of its own."""
    _watch_interrupts()
    return main()


if __name__ == "__main__":
    sys.exit(entry())

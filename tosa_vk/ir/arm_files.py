"""The .npy files of Arm's conformance layout, as tosa_reference_model reads its inputs and writes its results (and
tosa_verify reads them): one file per tensor, named by a desc.json's ifm_file / ofm_file, in the encodings of
`to_npy` / `from_npy` (ir/dtype.py: bf16 / fp8 as raw bytes, fp8e5m2 / MXINT8 as uint8 bits, fp6 / fp4 packed).

A block-scaled tensor (TOSA 1.1) is two files: its elements in the file the desc.json names and its scales
(`Tensor.scale_name`) beside it, the same name with `_scale` before the suffix: `input-0.npy` and
`input-0_scale.npy`. Both `tosa-vk run --test-desc` and the conformance runner read and write through here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from .dtype import PACKED, DType, from_npy, to_npy
from .graph import Tensor


def scale_file(file: str) -> str:
    """The file of a block-scaled tensor's scales, beside its elements' `file`: x.npy -> x_scale.npy."""
    path = Path(file)
    return str(path.with_name(f"{path.stem}_scale{path.suffix}"))


def array_files(tensor: Tensor, file: str) -> dict[str, tuple[str, DType]]:
    """A tensor's arrays (Tensor.array_names: its elements, a block-scaled tensor's scales) -> (file, dtype)."""
    files = {tensor.name: (file, tensor.dtype)}
    if tensor.scale_dtype is not None:
        files[tensor.scale_name] = (scale_file(file), tensor.scale_dtype)
    return files


def decoded(values: np.ndarray, dtype: DType) -> np.ndarray:
    """An array from one of Arm's files -> the storage dtype, where it is in an encoding of Arm's own (raw bytes,
    bits, fp6 / fp4 packed); any other array as it is, for the model to convert or refuse with its own rules."""
    values = np.asarray(values)
    packed = dtype in PACKED and dtype != DType.INT4
    if values.dtype == np.uint8 and (packed or dtype in (DType.MXINT8, DType.FP8E5M2)):
        return from_npy(values, dtype)
    if values.dtype.kind == "V" and dtype.is_float:
        return from_npy(values, dtype)
    return values


def read_inputs(
    folder: Path,
    names: list[str],
    files: list[str],
    tensors: Mapping[str, Tensor],
    load: Callable[[Path], np.ndarray] = np.load,
) -> dict[str, np.ndarray]:
    """A desc.json's ifm_name / ifm_file -> a model's feeds: each file `load`ed and decoded for its tensor's type
    (`decoded`); a block-scaled input's scales read from the file beside it as `<name>_scale` (unless the lists name
    that array themselves). A name the graph does not declare is passed on as it is read (the model refuses it)."""
    feeds: dict[str, np.ndarray] = {}
    scales: dict[str, tuple[Path, DType]] = {}
    for name, f in zip(names, files):
        t = tensors.get(name)
        if t is None:
            scaled = next((s for s in tensors.values() if s.scale_dtype is not None and s.scale_name == name), None)
            values = load(folder / f)
            feeds[name] = decoded(values, scaled.scale_dtype) if scaled and scaled.scale_dtype else values
            continue
        for array, (file, dtype) in array_files(t, f).items():
            if array == name:
                feeds[array] = decoded(load(folder / file), dtype)
            else:
                scales[array] = (folder / file, dtype)
    for array, (path, dtype) in scales.items():
        if array not in feeds:
            feeds[array] = decoded(load(path), dtype)
    return feeds


def result_files(tensors: Mapping[str, Tensor], files: Mapping[str, str]) -> dict[str, tuple[str, DType]]:
    """Output name -> its file (a desc.json's ofm_file) for `tensors` (the graph's outputs by name) -> every result
    array (a block-scaled output's scales too) -> (file, dtype)."""
    arrays: dict[str, tuple[str, DType]] = {}
    for name, f in files.items():
        arrays.update(array_files(tensors[name], f))
    return arrays


def encoded(values: np.ndarray, dtype: DType) -> np.ndarray:
    """A result array -> the encoding its file holds (what tosa_reference_model writes and tosa_verify reads)."""
    return to_npy(values, dtype)

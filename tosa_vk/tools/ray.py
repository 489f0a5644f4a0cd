"""Batch inference on Ray Data (the `ray` extra): `Predictor` is the callable class for `Dataset.map_batches`, a
model loaded once per worker (an actor) and run on each batch of rows.

    ds.map_batches(Predictor, fn_constructor_kwargs={"model": "model.tosa"}, batch_format="numpy",
                   compute=ray.data.ActorPoolStrategy(size=2))

(Ray Data's `compute=`: its `concurrency=` is deprecated since Ray 2.51.)

A batch is a dict of columns, rows along axis 0, named as the model's inputs (other columns pass through to the
result unchanged, and must have as many rows). A model whose inputs have a static batch B (their first dimension)
runs on chunks of B rows (the last chunk padded with zeros, its padding dropped from the outputs); a model whose
inputs are one row (their shape is the column's row shape) runs row by row. The result is a dict of the model's
outputs, rows along axis 0 (a batch of 0 rows: outputs of 0 rows, of the declared dtypes, without a run). A batch
that is not such a dict is a TosaError naming the column.

Workers on one machine share the program cache ($TOSA_VK_CACHE), so a model compiles once per machine. GPUs: Vulkan
does not read CUDA_VISIBLE_DEVICES, which Ray sets for an actor given `num_gpus=1`; give `gpu_uuids` (Ray's GPU id
-> Vulkan device UUID, e.g. from `nvidia-smi --query-gpu=index,uuid --format=csv`) and each actor opens the GPU Ray
assigned it, or set TOSA_VK_VISIBLE_DEVICES per node.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.model import TensorSpec
from ..errors import TosaError
from ..ir import Graph
from ..ir.flatbuffer import read_graph
from ..session import load


class Predictor:
    """`model`: a .tosa / .vgf path, a .tosa file's bytes, or a Graph; `gpu_uuids`: Ray GPU id -> the device UUID
    this actor opens when Ray assigned it that GPU (see the module's docstring); other keyword arguments are
    tosa_vk.load's (backend, device, fuse, ...)."""

    def __init__(self, model: str | Path | bytes | Graph, gpu_uuids: dict[Any, str] | None = None, **options: Any):
        source = read_graph(model, file="<Predictor bytes>") if isinstance(model, bytes) else model
        if gpu_uuids and "device" not in options:
            assigned = _ray_gpu_ids()
            if assigned:
                uuid = gpu_uuids.get(assigned[0], gpu_uuids.get(str(assigned[0])))
                if uuid is None:
                    raise TosaError(f"Predictor: Ray assigned GPU {assigned[0]}, which gpu_uuids does not map")
                options["device"] = uuid
        self.model = load(source, **options)
        self.inputs = {name: tuple(shape) for name, (shape, _) in self.model.inputs.items()}

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        columns = _columns(batch)
        missing = [name for name in self.inputs if name not in columns]
        if missing:
            raise TosaError(f"Predictor: the batch has no column {missing} (columns: {sorted(columns)})")
        rows = {len(columns[name]) for name in self.inputs}
        if len(rows) != 1:
            raise TosaError(f"Predictor: the model's input columns have different row counts {sorted(rows)}")
        count = rows.pop()
        for name, column in columns.items():  # ids and the like ride along, row for row
            if name not in self.inputs and len(column) != count:
                raise TosaError(
                    f"Predictor: column {name!r} has {len(column)} rows, the model's inputs {count}: a column passed "
                    "through must line up with the outputs' rows"
                )
            if name in self.model.outputs and name not in self.inputs:
                raise TosaError(f"Predictor: column {name!r} has the name of a model output")
        chunk = self._chunk({name: columns[name] for name in self.inputs})
        if count == 0:  # nothing to run: each output's rows, none of them
            out = {name: np.zeros((0, *(spec.shape[1:] if chunk else spec.shape)), self._dtype(name, spec))
                   for name, spec in self.model.outputs.items()}  # fmt: skip
        else:
            out = self._run(columns, count, chunk)
        return {**out, **{name: column for name, column in columns.items() if name not in self.inputs}}

    def _run(self, columns: dict[str, np.ndarray], count: int, chunk: int) -> dict[str, np.ndarray]:
        """The model's outputs for `count` rows, run on chunks of `chunk` rows (0: row by row)."""
        results: dict[str, list[np.ndarray]] = {}
        for start in range(0, count, chunk or 1):
            feeds = {}
            for name in self.inputs:
                part = columns[name][start : start + (chunk or 1)]
                if chunk and len(part) < chunk:  # the last rows: padded to a whole batch
                    part = np.concatenate([part, np.zeros((chunk - len(part), *part.shape[1:]), part.dtype)])
                feeds[name] = part if chunk else part[0]
            taken = min(chunk or 1, count - start)
            for name, value in self.model.run(feeds).items():
                results.setdefault(name, []).append(value[:taken] if chunk else value[np.newaxis])
        return {name: np.concatenate(parts) for name, parts in results.items()}

    def _chunk(self, columns: dict[str, np.ndarray]) -> int:
        """Rows per run: the inputs' static batch B when every input is [B, *row shape], 0 when every input is one
        row (run row by row, outputs stacked)."""
        batched = {name: shape[0] for name, shape in self.inputs.items() if shape[1:] == columns[name].shape[1:]}
        if len(batched) == len(self.inputs) and len(set(batched.values())) == 1:
            return next(iter(batched.values()))
        if all(shape == columns[name].shape[1:] for name, shape in self.inputs.items()):
            return 0
        shapes = {name: (list(shape), list(columns[name].shape[1:])) for name, shape in self.inputs.items()}
        raise TosaError(
            "Predictor: each input must be [B, *row shape] (one B for all) or the row shape itself; input shape vs "
            f"row shape: {shapes}"
        )

    def _dtype(self, output: str, declared: TensorSpec) -> np.dtype:
        """The numpy dtype run() returns for an output of the declared signature: float32 where the model
        dequantizes it (output_qparams)."""
        if output in self.model.output_qparams:
            return np.dtype(np.float32)
        return declared.np_dtype

    def close(self) -> None:
        self.model.close()


def _columns(batch: Any) -> dict[str, np.ndarray]:
    """A batch as columns of rows (arrays of one dimension or more, rows along axis 0), each checked: a TosaError
    naming the column for one that is not (None, a scalar, a dict, ragged rows)."""
    if not isinstance(batch, Mapping):
        raise TosaError(
            f"Predictor: a batch is a dict of column name -> array of rows (map_batches(..., batch_format='numpy')), "
            f"got {type(batch).__name__}"
        )
    columns = {}
    for name, column in batch.items():
        if column is None or isinstance(column, (Mapping, str, bytes)):
            raise TosaError(f"Predictor: column {name!r} is a {type(column).__name__}, not an array of rows")
        try:
            array = np.asarray(column)
        except (ValueError, TypeError) as err:  # ragged rows
            raise TosaError(f"Predictor: column {name!r} is not an array of rows: {err}") from None
        if array.ndim == 0:
            raise TosaError(f"Predictor: column {name!r} is a single value (0-d), not an array of rows")
        columns[name] = array
    return columns


def _ray_gpu_ids() -> list:
    """The GPU ids Ray assigned to this worker ([] outside Ray or without GPUs)."""
    try:
        import ray
    except ImportError:
        return []
    return list(ray.get_gpu_ids()) if ray.is_initialized() else []

"""Batch inference with Ray Data: a shipped model over a dataset of images, one model per worker (pip install
'tosa_vk[ray]'). Every row is checked against Model.run in this process.

    python examples/ray_batch_inference.py [rows]

On a machine with GPUs, give each worker its own: map_batches(..., num_gpus=1) and gpu_uuids mapping Ray's GPU ids
to Vulkan device UUIDs (`tosa-vk devices` shows them; on NVIDIA `nvidia-smi --query-gpu=index,uuid --format=csv`
gives the same UUIDs by CUDA index). Vulkan ignores CUDA_VISIBLE_DEVICES, which is what Ray sets.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import ray

import tosa_vk
from tosa_vk.tools.ray import Predictor

MODEL = Path(__file__).resolve().parent.parent / "resources" / "models" / "resnet_int8" / "model.tosa"


def main(rows: int = 8, workers: int = 2) -> int:
    if not ray.is_initialized():
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    check = tosa_vk.load(str(MODEL))  # the model's input name names the dataset's column
    (name,) = check.inputs
    images = np.random.default_rng(0).integers(-128, 128, (rows, 3, 64, 64), dtype=np.int8)
    dataset = ray.data.from_items([{name: image, "id": i} for i, image in enumerate(images)])
    predicted = dataset.map_batches(
        Predictor,
        fn_constructor_kwargs={"model": str(MODEL)},  # and load()'s options: backend=, device=, gpu_uuids=
        batch_format="numpy",
        batch_size=4,
        compute=ray.data.ActorPoolStrategy(size=workers),  # one model per worker; they share the program cache
    ).take_all()
    for row in predicted:
        for output, value in check.run({name: images[row["id"]][np.newaxis]}).items():
            np.testing.assert_array_equal(row[output], value[0])
    check.close()
    print(f"{len(predicted)} rows on {workers} workers, every row equal to Model.run")
    return 0


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:2])))

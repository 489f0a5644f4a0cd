"""tosa_vk.tools.ray.Predictor (issue 37): batch inference with Ray Data's map_batches, every row checked against
Model.run. The Ray test starts a local Ray (2 CPUs, 2 declared GPUs)."""

import runpy

import numpy as np
import pytest
from conftest import ROOT

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.tools import ray as tosa_ray

ray = pytest.importorskip("ray", reason="the ray extra (pip install '.[ray]')")

RESNET = ROOT / "resources" / "models" / "resnet_int8" / "model.tosa"


def _batched_graph(batch: int = 4):
    """out = |x| * 2 + y on [batch, 3] fp32: rows are independent, so chunking cannot change a row's result."""
    b = tosa_vk.Builder()
    x = b.input("x", (batch, 3), "fp32")
    y = b.input("y", (batch, 3), "fp32")
    b.output(b.add(b.abs(x), b.add(y, y)))
    return b.build()


def test_chunks_of_the_static_batch_with_padding_and_passthrough(tmp_path):
    path = tmp_path / "batched.tosa"
    tosa_vk.save_graph(_batched_graph(), path)
    predictor = tosa_ray.Predictor(str(path), backend="reference")
    rng = np.random.default_rng(1)
    rows = {"x": rng.standard_normal((10, 3)).astype(np.float32), "y": rng.standard_normal((10, 3)).astype(np.float32)}
    out = predictor({**rows, "id": np.arange(10)})
    (name,) = predictor.model.outputs
    np.testing.assert_array_equal(out[name], np.abs(rows["x"]) + (rows["y"] + rows["y"]))
    assert out["id"].tolist() == list(range(10)) and out[name].shape == (10, 3)
    with pytest.raises(TosaError, match="no column"):
        predictor({"x": rows["x"]})
    with pytest.raises(TosaError, match="row counts"):
        predictor({"x": rows["x"], "y": rows["y"][:4]})
    with pytest.raises(TosaError, match="row shape"):
        predictor({"x": rows["x"].reshape(10, 3, 1), "y": rows["y"].reshape(10, 3, 1)})


def test_gpu_uuids_open_the_gpu_ray_assigned(monkeypatch):
    monkeypatch.setattr(tosa_ray, "_ray_gpu_ids", lambda: [1])
    opened = {}
    monkeypatch.setattr(tosa_ray, "load", lambda source, **options: opened.update(options) or _Stub())
    tosa_ray.Predictor(_batched_graph(), gpu_uuids={0: "aa" * 16, 1: "bb" * 16}, backend="vulkan")
    assert opened["device"] == "bb" * 16
    with pytest.raises(TosaError, match="does not map"):
        tosa_ray.Predictor(_batched_graph(), gpu_uuids={0: "aa" * 16})


class _Stub:
    inputs: dict = {}


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.vulkan
def test_map_batches_matches_model_run_row_by_row(local_ray, capsys):
    """One test for everything that needs Ray (starting it takes ~20 s): map_batches with declared GPUs, then the
    example."""
    if not tosa_vk.devices():
        pytest.skip("no Vulkan device")
    rng = np.random.default_rng(0)
    images = rng.integers(-128, 128, (6, 3, 64, 64), dtype=np.int8)  # resnet_int8 takes [1, 3, 64, 64]
    uuid = tosa_vk.devices()[0].uuid
    model = tosa_vk.load(str(RESNET), backend="vulkan")
    (name,) = model.inputs  # the column of the images: named as the model's input
    ds = ray.data.from_items([{name: im, "id": i} for i, im in enumerate(images)])
    predicted = ds.map_batches(
        tosa_ray.Predictor,
        fn_constructor_kwargs={"model": str(RESNET), "backend": "vulkan", "gpu_uuids": {0: uuid, 1: uuid}},
        batch_format="numpy",
        batch_size=4,
        concurrency=2,
        num_gpus=1,  # Ray's GPU ids 0 / 1 -> the one Vulkan device here
    ).take_all()
    try:
        assert sorted(r["id"] for r in predicted) == list(range(6))
        for r in predicted:
            want = model.run({name: images[r["id"]][np.newaxis]})
            for output, value in want.items():
                np.testing.assert_array_equal(r[output], value[0])
    finally:
        model.close()
    example = runpy.run_path(str(ROOT / "examples" / "ray_batch_inference.py"))
    assert example["main"](rows=5) == 0
    assert "5 rows on 2 workers, every row equal to Model.run" in capsys.readouterr().out

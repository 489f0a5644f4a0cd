"""tosa_vk.tools.ray.Predictor (issue 37): batch inference with Ray Data's map_batches, every row checked against
Model.run. The Ray test starts a local Ray (2 CPUs, 2 declared GPUs)."""

import runpy

import numpy as np
import pytest
from conftest import ROOT

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.session import vulkan_devices
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
    if not vulkan_devices():  # (no loader, driver or device: devices() would raise)
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
        compute=ray.data.ActorPoolStrategy(size=2),
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


def _row_graph():
    """One row a run: x [3] fp32 -> y [3] int8 (a cast)."""
    b = tosa_vk.Builder()
    x = b.input("x", (3,), "fp32")
    b.output(b.cast(x, out_dtype="int8"), name="y")
    return b.build()


@pytest.mark.parametrize(
    "batch, column",
    [
        (None, None),
        ([np.zeros((4, 3), np.float32)], None),
        ({"x": np.float32(1), "y": np.zeros((4, 3), np.float32)}, "'x'"),
        ({"x": None, "y": np.zeros((4, 3), np.float32)}, "'x'"),
        ({"x": {"a": 1}, "y": np.zeros((4, 3), np.float32)}, "'x'"),
        ({"x": [[1.0, 2.0, 3.0], [1.0]], "y": np.zeros((2, 3), np.float32)}, "'x'"),
        ({"x": np.zeros((4, 3), np.float32), "y": np.zeros((4, 3), np.float32), "id": 7}, "'id'"),
        ({"x": np.zeros((4, 3), np.float32), "y": np.zeros((4, 3), np.float32), "id": [[1], [2, 3], [], [4]]}, "'id'"),
    ],
)
def test_a_bad_batch_is_a_tosa_error_naming_the_column(batch, column):
    """Before: TypeError (None batch, 0-d / None / dict column) or ValueError (ragged rows) from numpy."""
    predictor = tosa_ray.Predictor(_batched_graph(), backend="reference")
    with pytest.raises(TosaError, match="Predictor: " + (f"column {column}" if column else "a batch is a dict")):
        predictor(batch)


def test_a_passthrough_column_of_another_length_is_refused():
    """Before: passed through as it was, so its rows no longer lined up with the outputs'."""
    predictor = tosa_ray.Predictor(_batched_graph(), backend="reference")
    rows = {"x": np.ones((5, 3), np.float32), "y": np.ones((5, 3), np.float32)}
    with pytest.raises(TosaError, match="column 'id' has 3 rows, the model's inputs 5"):
        predictor({**rows, "id": np.arange(3)})
    assert predictor({**rows, "id": np.arange(5)})["id"].tolist() == list(range(5))


@pytest.mark.parametrize("graph, trailing", [(_batched_graph, (3,)), (_row_graph, (3,))])
def test_a_0_row_batch_gives_0_row_outputs_without_a_run(graph, trailing, monkeypatch):
    """Before: {} (no outputs, no pass-through columns). Now each output with 0 rows, of its declared dtype and row
    shape, and the model is not run."""
    predictor = tosa_ray.Predictor(graph(), backend="reference")
    names = list(predictor.model.inputs)
    batch = {n: np.zeros((0, 3), np.float32) for n in names} | {"id": np.zeros(0, np.int64)}
    monkeypatch.setattr(predictor.model, "run", lambda *a, **k: pytest.fail("a 0-row batch ran the model"))
    out = predictor(batch)
    assert set(out) == {*predictor.model.outputs, "id"}
    for name, (_, dtype) in predictor.model.outputs.items():
        assert out[name].shape == (0, *trailing)
        assert out[name].dtype == {"FP32": np.float32, "INT8": np.int8}[dtype]
    assert out["id"].shape == (0,)


def test_the_examples_use_compute_not_the_deprecated_concurrency():
    """Ray Data deprecated map_batches' `concurrency=` in 2.51 (it logs a warning): the module's example and
    examples/ray_batch_inference.py give `compute=ray.data.ActorPoolStrategy(size=N)`."""
    import ast
    import textwrap

    example = (ROOT / "examples" / "ray_batch_inference.py").read_text()
    snippet = textwrap.dedent(tosa_ray.__doc__.split("\n\n")[1])
    for source in (example, snippet):
        calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
        keywords = {k.arg for c in calls if getattr(c.func, "attr", None) == "map_batches" for k in c.keywords}
        assert "compute" in keywords and "concurrency" not in keywords
    assert ray.data.ActorPoolStrategy(size=2).min_size == 2  # what the example builds, in this Ray

"""Model.run takes inputs as onnxruntime does (issue 19): a feed's dtype converts to the input's storage dtype only
under numpy's same_kind rule (else an error naming the input, both dtypes and cast=True), its shape is the declared
one, `cast=True` converts anyway, `outputs=[...]` picks outputs; the same on every backend, .vgf models included."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, TosaError

BACKENDS = ["reference", "vulkan"]


def int8_graph():
    """x: int8 [2, 3] -> two outputs, y (x as it is for small values) and z (x clamped to 0..10)."""
    b = Builder()
    x = b.input("x", (2, 3), "int8")
    b.output(b.clamp(x, min_val=-100, max_val=100, name="y"), b.clamp(x, min_val=0, max_val=10, name="z"))
    return b.build()


def fp32_graph():
    b = Builder()
    x = b.input("x", (2, 3), "fp32")
    b.output(b.add(x, x, name="y"))
    return b.build()


def bool_graph():
    b = Builder()
    x = b.input("x", (3,), "bool")
    b.output(b.logical_not(x, name="y"))
    return b.build()


def bf16_graph():
    b = Builder()
    x = b.input("x", (3,), "bf16")
    b.output(b.add(x, x, name="y"))
    return b.build()


def load(graph, backend, device):
    return tosa_vk.load(graph, backend=backend, **({"device": device} if backend == "vulkan" else {}))


IMAGE = np.array([[0.2, 0.5, 0.9], [0.1, 0.7, 0.3]], np.float32)  # a float image: cast to int8 it is all zeros


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_array_for_an_int8_input_is_refused(device, backend):
    with load(int8_graph(), backend, device) as model:
        with pytest.raises(TosaError) as err:
            model.run(x=IMAGE)
    message = str(err.value)
    assert "input 'x'" in message and "INT8 (numpy int8)" in message and "float32" in message
    assert "cast=True" in message


@pytest.mark.parametrize("backend", BACKENDS)
def test_conversions_numpy_calls_same_kind_are_made(device, backend):
    with load(int8_graph(), backend, device) as model:
        for x in (np.array([[1, 2, 3], [4, 5, 6]], np.int32), np.array([[1, 2, 3], [4, 5, 6]], np.uint8)):
            assert model.run(x=x)["y"].tolist() == [[1, 2, 3], [4, 5, 6]]
        assert model.run(x=np.ones((2, 3), bool))["y"].tolist() == [[1] * 3] * 2
        with pytest.raises(TosaError, match=r"values 1..300, outside INT8's storage range"):  # the range check stays
            model.run(x=np.array([[1, 300, 3], [4, 5, 6]], np.int32))
    with load(fp32_graph(), backend, device) as model:
        for x in (IMAGE.astype(np.float64), IMAGE.astype(np.float16), np.ones((2, 3), np.int64)):
            y = model.run(x=x)["y"]
            assert y.dtype == np.float32 and np.allclose(y, 2 * x.astype(np.float32), atol=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_numbers_for_a_bool_input_are_refused(device, backend):
    with load(bool_graph(), backend, device) as model:
        for x in (np.array([1, 0, 1], np.int8), np.array([1.0, 0.0, 1.0])):
            with pytest.raises(TosaError, match=r"input 'x' is a \w+ array; the graph declares BOOL \(numpy bool\)"):
                model.run(x=x)
        assert model.run(x=np.array([1, 0, 1]), cast=True)["y"].tolist() == [False, True, False]


def test_bf16_inputs_take_floats_their_storage_type_and_arm_bytes():
    model = tosa_vk.load(bf16_graph(), backend="reference")
    values = np.array([1.0, 2.5, -3.0])
    for x in (
        values,
        values.astype(np.float32),
        values.astype(ml_dtypes.bfloat16),
        values.astype(ml_dtypes.bfloat16).view("V2"),  # Arm's .npy encoding of bf16 (from_npy)
        values.astype(ml_dtypes.float8_e4m3fn),
    ):
        y = model.run(x=x)["y"]
        assert y.dtype == ml_dtypes.bfloat16 and y.astype(np.float32).tolist() == [2.0, 5.0, -6.0]
    with pytest.raises(TosaError, match=r"is a \|V1 array; the graph declares BF16"):  # bytes of the wrong size
        model.run(x=np.zeros(3, "V1"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_shape_that_differs_is_refused(device, backend):
    with load(fp32_graph(), backend, device) as model:
        for shape in ((1, 2, 3), (3, 2), (6,)):
            with pytest.raises(TosaError, match=rf"input 'x' has shape \[{', '.join(map(str, shape))}\], the graph"):
                model.run(x=np.zeros(shape, np.float32))


@pytest.mark.filterwarnings("ignore:cast=True converts the float data")
@pytest.mark.parametrize("backend", BACKENDS)
def test_cast_true_converts_anyway(device, backend):
    with load(int8_graph(), backend, device) as model:
        x = np.array([[1.9, -2.5, 3.0], [4.2, 5.7, 6.0]], np.float32)
        with pytest.warns(
            UserWarning, match="by truncation .* input_qparams"
        ):  # it says so (tests/test_quantized_io.py)
            assert model.run(x=x, cast=True)["y"].tolist() == [[1, -2, 3], [4, 5, 6]]  # numpy's astype truncates
        assert model.run({"x": IMAGE}, cast=True)["y"].tolist() == [[0] * 3] * 2
        with pytest.raises(TosaError, match="has shape"):  # cast converts dtypes, not shapes
            model.run(x=np.zeros(6), cast=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_outputs_picks_outputs(device, backend):
    x = np.array([[1, 20, -3], [4, 5, 6]], np.int8)
    with load(int8_graph(), backend, device) as model:
        assert list(model.run(x=x)) == ["y", "z"]
        picked = model.run(x=x, outputs=["z"])
        assert list(picked) == ["z"] and picked["z"].tolist() == [[1, 10, 0], [4, 5, 6]]
        assert list(model.run({"x": x}, outputs=["z", "y"])) == ["z", "y"]
        with pytest.raises(TosaError, match=r"no graph output\(s\) \['w'\]; the graph outputs are \['y', 'z'\]"):
            model.run(x=x, outputs=["w"])
        with pytest.raises(TosaError, match="run\\(cast=...\\) takes True or False"):
            model.run(x=x, cast=x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inputs_named_like_the_keywords_go_in_the_dict(device, backend):
    b = Builder()
    cast, outputs = b.input("cast", (2,), "fp32"), b.input("outputs", (2,), "fp32")
    b.output(b.add(cast, outputs, name="y"))
    with load(b.build(), backend, device) as model:
        one = np.ones(2, np.float32)
        assert model.run({"cast": one, "outputs": one})["y"].tolist() == [2.0, 2.0]
        with pytest.raises(TosaError, match=r"an input named 'cast' is given in the feeds dict"):
            model.run(cast=one, outputs=one)


@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_unknown_and_twice_given_inputs_are_refused_alike(device, backend):
    with load(fp32_graph(), backend, device) as model:
        with pytest.raises(TosaError, match=r"missing graph input\(s\) \['x'\]; the graph takes \['x'\]"):
            model.run({})
        with pytest.raises(TosaError, match=r"unknown graph input\(s\) \['w'\]; the graph takes \['x'\]"):
            model.run(x=IMAGE, w=IMAGE)
        with pytest.raises(TosaError, match=r"input\(s\) \['x'\] given both in the feeds dict and as keywords"):
            model.run({"x": IMAGE}, x=IMAGE)


@pytest.mark.filterwarnings("ignore:cast=True converts the float data")
def test_a_vgf_model_checks_its_inputs_alike(device, tmp_path):
    with tosa_vk.load(int8_graph(), backend="vulkan", device=device, strict=True) as model:
        model.export_vgf(tmp_path / "g.vgf")
    x = np.array([[1, 20, -3], [4, 5, 6]], np.int8)
    with tosa_vk.load(tmp_path / "g.vgf", device=device) as vgf:
        assert type(vgf).__name__ == "VGFModel"
        assert vgf.inputs == {"x": ((2, 3), "INT8")} and set(vgf.outputs) == {"y", "z"}
        assert all(dtype == "INT8" for _, dtype in vgf.outputs.values())
        with pytest.raises(TosaError, match=r"input 'x' is a float32 array; the VGF declares INT8 .*cast=True"):
            vgf.run(x=IMAGE)
        with pytest.raises(TosaError, match=r"input 'x' has shape \[6\], the VGF declares \[2, 3\]"):
            vgf.run(x=x.reshape(6))
        with pytest.raises(TosaError, match=r"missing VGF input\(s\) \['x'\]"):
            vgf.run({})
        assert vgf.run(x=x.astype(np.int32))["y"].tolist() == x.tolist()
        assert vgf.run(x=IMAGE * 0, cast=True, outputs=["z"])["z"].tolist() == [[0] * 3] * 2
        with pytest.raises(TosaError, match=r"no VGF output\(s\) \['w'\]"):
            vgf.run(x=x, outputs=["w"])


def test_the_cli_refuses_another_dtype_kind_unless_cast(tmp_path, capsys):
    from tosa_vk.tools.cli import main

    b = tosa_vk.Builder()
    b.output(b.abs(b.input("x", (4,), "int32"), name="y"))
    tosa_vk.save_graph(b.build(), tmp_path / "m.tosa")
    np.save(tmp_path / "x.npy", np.array([1.5, -2.0, 3.0, -4.0], np.float32))
    run = ["run", str(tmp_path / "m.tosa"), "--backend", "reference", "-i", f"x={tmp_path / 'x.npy'}"]
    assert main(run) == 2
    assert "cast" in capsys.readouterr().err
    assert main([*run, "--cast", "-o", str(tmp_path / "out")]) == 0
    assert np.load(tmp_path / "out" / "y.npy").tolist() == [1, 2, 3, 4]

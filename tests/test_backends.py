"""One backend interface: tosa_vk.load(source, backend=..., **options) -> a Model with the same methods for a .tosa
path, a Graph or a .vgf path; options a backend does not take are errors naming them."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, Model, Timing, TosaError

ROOT = Path(__file__).resolve().parent.parent
METHODS = (
    "run",
    "inputs",
    "outputs",
    "variables",
    "set_variable",
    "reset_variables",
    "profile",
    "transferred",
    "placement",
    "close",
)


def graph():
    b = Builder()
    x = b.input("x", (2, 3), "fp32")
    b.output(b.add(x, x, name="y"))
    return b.build()


@pytest.fixture
def sources(tmp_path, device):
    g = graph()
    tosa_vk.save_graph(g, tmp_path / "g.tosa")
    with tosa_vk.load(g, backend="vulkan", device=device, strict=True) as model:
        model.export_vgf(tmp_path / "g.vgf")
    return {"graph": g, "tosa": tmp_path / "g.tosa", "vgf": tmp_path / "g.vgf"}


@pytest.mark.parametrize(
    "source,backend",
    [("graph", "reference"), ("tosa", "reference"), ("graph", "vulkan"), ("tosa", "vulkan"), ("vgf", None)],
)
def test_every_source_and_backend_gives_a_model(sources, device, source, backend):
    options = {} if backend == "reference" else {"device": device}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tosa_vk.load(sources[source], backend=backend, **options) as model:
        assert isinstance(model, Model)
        assert all(hasattr(model, m) for m in METHODS)
        assert model.inputs == {"x": ((2, 3), "FP32")} and list(model.outputs) == ["y"]
        assert np.array_equal(model.run(x=x)["y"], x + x)
        assert model.variables == {}
        if model.backend == "reference":
            assert all(isinstance(t, Timing) for t in model.profile())
        else:  # loaded without timestamps=True (tests/test_profile.py)
            with pytest.raises(TosaError, match="timestamps=True"):
                model.profile()
    model.close()  # idempotent


@pytest.mark.parametrize(
    "backend,option", [("reference", "strict"), ("reference", "device"), ("vulkan", "devcie"), ("vulkan", "timestamp")]
)
def test_an_option_the_backend_does_not_take_is_an_error(backend, option):
    with pytest.raises(TosaError, match=f"{backend} backend takes no option '{option}'"):
        tosa_vk.load(graph(), backend=backend, **{option: True})


def test_a_vgf_runs_on_vulkan_only(sources):
    with pytest.raises(TosaError, match="vulkan backend, not 'reference'"):
        tosa_vk.load(sources["vgf"], backend="reference")
    with pytest.raises(TosaError, match="takes no option 'strict'"):
        tosa_vk.load(sources["vgf"], strict=True)


def test_profile_records_carry_units(device):
    with tosa_vk.load(graph(), backend="vulkan", device=device, timestamps=True) as model:
        model.run(x=np.ones((2, 3), np.float32))
        (t,) = model.profile()
    assert t.where == "device" and t.microseconds > 0 and t.op.startswith("ADD")
    ref = tosa_vk.load(graph(), backend="reference")
    ref.run(x=np.ones((2, 3), np.float32))
    (t,) = ref.profile()
    assert t.where == "host" and t.microseconds > 0


def test_unknown_backend():
    with pytest.raises(TosaError, match="unknown backend 'cuda'"):
        tosa_vk.load(graph(), backend="cuda")


def test_a_closed_model_says_so(device):
    model = tosa_vk.load(graph(), backend="vulkan", device=device)
    model.close()
    with pytest.raises(TosaError, match="the model is closed"):
        model.run(x=np.ones((2, 3), np.float32))


@pytest.mark.parametrize("backend", ["reference", "vulkan"])
def test_feeds_no_type_can_hold_are_refused(device, backend):
    options = {"device": device} if backend == "vulkan" else {}
    with tosa_vk.load(graph(), backend=backend, **options) as model:
        for bad in (np.ones((2, 3), np.complex64), np.array([["a"] * 3] * 2), np.ones((2, 3), object)):
            with pytest.raises(TosaError, match="input 'x' is a .* array; the graph declares FP32"):
                model.run(x=bad)
        # uint32 values are numbers, not float bit patterns
        assert model.run(x=np.full((2, 3), 3, np.uint32))["y"].tolist() == [[6.0] * 3] * 2


def test_integer_feeds_out_of_range_are_refused():
    b = Builder()
    x = b.input("x", (2,), "int8")
    b.output(b.clamp(x, min_val=-100, max_val=100, name="y"))
    model = tosa_vk.load(b.build(), backend="reference")
    with pytest.raises(TosaError, match=r"values 1..300, outside INT8's storage range -128..127"):
        model.run(x=np.array([1, 300], np.int32))
    assert model.run(x=np.array([1, 2], np.int32))["y"].tolist() == [1, 2]


# ---- the default backend (issue 19): Vulkan wherever there is a device -----------------------------------------------


def test_a_graph_runs_on_vulkan_by_default_where_there_is_a_device(tmp_path, device, monkeypatch):
    from tosa_vk.session import default_backend, vulkan_devices

    monkeypatch.setenv("TOSA_VK_DEVICE", str(device.info.index))
    tosa_vk.save_graph(graph(), tmp_path / "g.tosa")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning where there is a device
        for source in (graph(), tmp_path / "g.tosa", str(tmp_path / "g.tosa")):
            with tosa_vk.load(source) as model:
                assert model.backend == "vulkan"
                assert np.array_equal(model.run(x=x)["y"], x + x)
    assert default_backend() == "vulkan" and device.info.name in [d.name for d in vulkan_devices()]


@pytest.mark.parametrize("failure", ["no device", "no loader"])
def test_without_a_device_the_default_is_reference_with_a_warning(tmp_path, monkeypatch, no_vulkan_device, failure):
    import tosa_vk.vulkan
    from tosa_vk.session import default_backend

    calls = []

    def enumerate_devices(**_):
        calls.append(1)
        if failure == "no loader":
            raise OSError("libvulkan.so.1: cannot open shared object file")
        return []

    monkeypatch.setattr(tosa_vk.vulkan, "enumerate_devices", enumerate_devices)
    tosa_vk.save_graph(graph(), tmp_path / "g.tosa")
    for source in (graph(), tmp_path / "g.tosa"):
        with pytest.warns(RuntimeWarning, match=r"no Vulkan device found.*backend='reference'") as caught:
            model = tosa_vk.load(source)
        assert model.backend == "reference" and caught[0].filename == __file__  # it points at the caller
        assert model.run(x=np.ones((2, 3), np.float32))["y"].tolist() == [[2.0] * 3] * 2
    assert default_backend() == "reference"
    assert len(calls) == 1  # enumerated once per process
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # chosen explicitly: no warning
        tosa_vk.load(graph(), backend="reference")

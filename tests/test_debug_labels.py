"""GPU-tool labels (issue 39): where the instance offers VK_EXT_debug_utils every dispatch is recorded inside a
label naming its kernel's operators and the pipelines, shader modules, arena, descriptor sets and command buffers are
named (tosa_vk/vulkan/labels.py); TOSA_VK_DEBUG_LABELS=0 calls none of it; the results are the same bytes either way.

The calls are observed by a shim around the functions `Labels` looked up (they still reach the driver), with the
Khronos validation layer on: it checks every name and label call and stays silent."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
import vulkan as vk

import tosa_vk
from tosa_vk import custom
from tosa_vk.vulkan import labels as debug_labels

os.environ.setdefault("TOSA_VK_VALIDATION", "1")
pytestmark = [
    pytest.mark.vulkan,
    pytest.mark.skipif(not debug_labels.offered(), reason="the Vulkan instance does not offer VK_EXT_debug_utils"),
]


def fused_graph() -> tosa_vk.Graph:
    """Three kernels' worth of work: an elementwise chain (fused) and a reduction."""
    b = tosa_vk.Builder()
    x = b.input("x", (2, 8), "fp32")
    y = b.tanh(b.add(x, x, name="twice"), name="t")
    b.output(b.reduce_sum(y, axis=1, name="s"))
    b.output(b.sigmoid(x, name="g"))
    return b.build()


FEEDS = {"x": np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8)}


@pytest.fixture
def spy(monkeypatch):
    """What the labelled device calls: (VK_OBJECT_TYPE_*, name) per name, the open label stack, every label."""
    seen: dict = {"names": [], "labels": [], "stack": [], "max_depth": 0}
    original = debug_labels.Labels.__init__

    def init(self, instance):
        original(self, instance)
        set_name, begin, end = self.set_name, self.begin_label, self.end_label

        def set_name_spy(device, info):
            seen["names"].append((info.objectType, vk.ffi.string(info.pObjectName).decode()))
            set_name(device, info)

        def begin_spy(cmd, label):
            text = vk.ffi.string(label.pLabelName).decode()
            seen["labels"].append(text)
            seen["stack"].append(text)
            seen["max_depth"] = max(seen["max_depth"], len(seen["stack"]))
            begin(cmd, label)

        def end_spy(cmd):
            seen["stack"].pop()
            end(cmd)

        self.set_name, self.begin_label, self.end_label = set_name_spy, begin_spy, end_spy

    monkeypatch.setattr(debug_labels.Labels, "__init__", init)
    monkeypatch.delenv(debug_labels.ENV, raising=False)
    return seen


def dispatch_names(model) -> list[str]:
    return [d.name for seg in model.runtime.segments for d in seg.dispatches]


def test_dispatches_are_labelled_and_objects_named(spy):
    with tosa_vk.load(fused_graph(), backend="vulkan") as model:
        assert model.device.labels is not None and model.device._messenger is not None  # labels on, layer on
        out = model.run(**FEEDS)  # a validation message would be an error here
        kernels = dispatch_names(model)
        segments = model.runtime.segments
    assert kernels and any(" + " in k for k in kernels), kernels  # a fused kernel names all its operators
    # one region per command buffer, one per dispatch inside it, each closed
    assert spy["stack"] == [] and spy["max_depth"] == 2
    titles = [seg.title for seg in segments]
    assert [t for t in spy["labels"] if t.startswith("tosa_vk:")] == titles
    assert [t for t in spy["labels"] if not t.startswith("tosa_vk:")] == kernels
    names: dict[int, list[str]] = {}
    for kind, text in spy["names"]:
        names.setdefault(kind, []).append(text)
    assert names[vk.VK_OBJECT_TYPE_COMMAND_BUFFER][: len(titles)] == titles
    for kind in (vk.VK_OBJECT_TYPE_PIPELINE, vk.VK_OBJECT_TYPE_SHADER_MODULE, vk.VK_OBJECT_TYPE_PIPELINE_LAYOUT):
        named = names[kind]
        assert len(named) == len({id(d.pipeline) for seg in segments for d in seg.dispatches})
        assert all(any(k in text for k in kernels) for text in named), named  # shader: the kernels using it
    assert any(text.startswith("tosa_vk arena (") for text in names[vk.VK_OBJECT_TYPE_BUFFER])
    assert any(text.startswith("tosa_vk arena (") for text in names[vk.VK_OBJECT_TYPE_DEVICE_MEMORY])
    assert sorted(names[vk.VK_OBJECT_TYPE_DESCRIPTOR_SET]) == sorted(f"{k}: set 0" for k in kernels)
    np.testing.assert_allclose(out["s"], np.tanh(2 * FEEDS["x"]).sum(axis=1, keepdims=True), rtol=1e-5)


def test_switched_off_nothing_is_called_and_results_are_the_same_bytes(spy, monkeypatch):
    with tosa_vk.load(fused_graph(), backend="vulkan") as model:
        labelled = model.run(**FEEDS)
    assert spy["labels"]
    spy["labels"].clear()
    spy["names"].clear()
    looked_up: list[str] = []
    lookup = vk.vkGetInstanceProcAddr

    def spy_lookup(instance, name):
        looked_up.append(name)
        return lookup(instance, name)

    monkeypatch.setattr(vk, "vkGetInstanceProcAddr", spy_lookup)
    monkeypatch.setenv(debug_labels.ENV, "0")
    with tosa_vk.load(fused_graph(), backend="vulkan") as model:
        assert model.device.labels is None
        plain = model.run(**FEEDS)
    assert spy["labels"] == [] and spy["names"] == []
    assert not [n for n in looked_up if "Label" in n or "ObjectName" in n], looked_up
    assert labelled.keys() == plain.keys()
    for name in plain:
        assert labelled[name].tobytes() == plain[name].tobytes(), name


def test_the_switch_reads_like_the_other_switches(monkeypatch):
    for value, on in (("0", False), ("off", False), ("false", False), ("1", True), ("", True)):
        monkeypatch.setenv(debug_labels.ENV, value)
        assert debug_labels.requested() is on, value
    monkeypatch.delenv(debug_labels.ENV)
    assert debug_labels.requested()


def test_a_long_label_is_cut():
    assert debug_labels._cut("x" * 5000) == "x" * (debug_labels.MAX_CHARS - 3) + "..."
    assert debug_labels._cut("ADD #1") == "ADD #1"


def test_the_validation_layer_reads_the_names_back(monkeypatch):
    """The layer tracks the names we gave: a message about the arena's memory calls it by its name (provoked with a
    harmless query the layer flags: the commitment of memory that is not lazily allocated)."""
    monkeypatch.delenv(debug_labels.ENV, raising=False)
    with tosa_vk.load(fused_graph(), backend="vulkan", validation=True) as model:
        model.run(**FEEDS)
        device = model.device
        vk.vkGetDeviceMemoryCommitment(device.device, model.runtime.arena.gpu.memory)
        messages, device.validation_messages[:] = list(device.validation_messages), []
    assert any("VUID-vkGetDeviceMemoryCommitment" in m and "name = tosa_vk arena (" in m for m in messages), messages


def loop_graph() -> tuple[tosa_vk.Graph, dict]:
    """A WHILE_LOOP of 20 iterations: batched into command buffers under conditional rendering where the device has
    it, so labels nest inside its blocks."""
    b = tosa_vk.Builder()
    x = b.input("x", (3, 4), "fp32")
    zero = b.const(np.zeros(1, np.int32), name="zero")
    outs = b.while_loop(
        [zero, x],
        lambda s, i, acc: s.greater(s.const(np.full(1, 20, np.int32)), i),
        lambda s, i, acc: (s.add(i, s.const(np.ones(1, np.int32))), s.tanh(acc)),
    )
    assert isinstance(outs, tuple)  # both loop values
    b.output(*outs)
    return b.build(), {"x": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)}


def image_graph() -> tuple[tosa_vk.Graph, dict]:
    """A custom op writing a storage image (resources/custom_ops/gradient.py): its copies inside its label."""
    path = Path(__file__).resolve().parent.parent / "resources" / "custom_ops" / "gradient.py"
    spec = importlib.util.spec_from_file_location("custom_op_example_gradient", path)
    assert spec is not None and spec.loader is not None
    gradient = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gradient)  # registers the op
    b = tosa_vk.Builder()
    img = b.input("img", (1, 9, 13, 1), "fp32")
    y = custom.call(b, gradient.DOMAIN, gradient.NAME, [img], name_hint="grad")
    b.output(b.add(y, y, name="y"))
    return b.build(), {"img": np.linspace(0, 1, 117, dtype=np.float32).reshape(1, 9, 13, 1)}


@pytest.mark.parametrize("make", [loop_graph, image_graph], ids=["loop", "image"])
def test_loops_and_images_are_labelled_the_same_bytes_either_way(spy, monkeypatch, make):
    graph, feeds = make()
    with tosa_vk.load(graph, backend="vulkan", strict=True) as model:
        labelled = model.run(**feeds)
        kernels = dispatch_names(model)
        images = [res.label for seg in model.runtime.segments for res in seg.images]
        batched = any(d.predicate is not None for seg in model.runtime.segments for d in seg.dispatches)
        assert batched or make is image_graph or not model.device.info.features["conditionalRendering"]
    assert images or make is loop_graph
    assert spy["stack"] == [] and spy["max_depth"] == 2
    assert set(kernels) <= set(spy["labels"])
    named = {text for _, text in spy["names"]}
    assert set(images) <= named and all(" image)" in text for text in images)
    monkeypatch.setenv(debug_labels.ENV, "0")
    with tosa_vk.load(graph, backend="vulkan", strict=True) as model:
        plain = model.run(**feeds)
    for name in plain:
        assert labelled[name].tobytes() == plain[name].tobytes(), name

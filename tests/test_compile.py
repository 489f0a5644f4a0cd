"""The compile pipeline, stage by stage (tosa_vk/stages/compiler.py): validate, passes, partition, fuse, lower, plan."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_custom_ops import color_matrix_pair

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.ir import load_graph
from tosa_vk.program import Host, Kernel, Placement, walk
from tosa_vk.stages import passes
from tosa_vk.stages.fuse import fuse
from tosa_vk.stages.lower import lower
from tosa_vk.stages.partition import partition
from tosa_vk.stages.plan import plan
from tosa_vk.stages.records import Lowered
from tosa_vk.target import LAVAPIPE, MINIMUM, Target, named

ROOT = Path(__file__).resolve().parent.parent


def small_graph():
    b = Builder()
    x = b.input("x", (4, 8), "fp32")
    y = b.input("y", (1, 8), "fp32")
    s = b.add(x, y)
    b.output(b.reshape(b.mul(s, s), (32,), name="out"))
    return b.build()


def int64_graph():
    """ARITHMETIC_RIGHT_SHIFT of int32 needs nothing optional; an int48 convolution accumulator needs int64."""
    b = Builder()
    x = b.input("x", (1, 4, 4, 2), "int16")
    w = b.const(np.ones((2, 1, 1, 2), np.int8))
    y = b.conv2d(x, w, np.zeros(2, np.int64), acc_type="int48", name="y")
    b.output(y)
    return b.build()


def test_compile_reads_as_the_stages_in_order():
    """compile() is exactly the stages run one after another."""
    graph = small_graph()
    program = tosa_vk.compile(graph, LAVAPIPE)
    placed = partition(graph, LAVAPIPE)
    by_hand = plan(lower(passes.run(graph), LAVAPIPE, placed, fuse(graph, placed)), LAVAPIPE)
    assert program.to_bytes() == by_hand.to_bytes()


def test_validate_stage_rejects_before_anything_else():
    graph = small_graph()
    graph.main.tensors["out"].shape = (31,)
    with pytest.raises(TosaError, match="RESHAPE"):
        tosa_vk.compile(graph)


def test_passes_stage_inserts_permutes_on_a_copy():
    """Two NHWC custom ops in an NCHW graph: a permute before the first and after the second; the pair between
    them cancels out."""
    graph = color_matrix_pair(np.eye(3, dtype=np.float32))
    before = [op.op for op in graph.main.operators]
    out = passes.run(graph, "NCHW")
    assert [op.op for op in graph.main.operators] == before  # the caller's graph is unchanged
    assert [op.op for op in out.main.operators] == ["TRANSPOSE", "CUSTOM", "CUSTOM", "TRANSPOSE", "ADD"]
    tosa_vk.validate(out)


def test_passes_stage_leaves_a_graph_without_transposes_alone():
    graph = small_graph()
    assert passes.run(graph) is graph


def test_partition_places_every_operator_with_a_reason():
    graph = small_graph()
    placed = partition(graph, LAVAPIPE)
    where = [p.where for p in placed.placements.values() if p.where != "constant"]
    assert where == ["vulkan", "vulkan", "alias"]
    assert all(p.reason for p in placed.placements.values())
    kernels = {key for key, p in placed.placements.items() if p.where == "vulkan"}
    assert set(placed.lowered) == kernels and len(kernels) == 2  # kept for the lower stage


def test_partition_follows_the_target():
    """An int48 accumulator needs shaderInt64: on a target without it the operator goes to the host."""
    graph = int64_graph()
    (conv,) = [p for p in partition(graph, LAVAPIPE).placements.values() if "CONV2D" in p.op]
    assert conv.where == "vulkan"
    (conv,) = [p for p in partition(graph, MINIMUM).placements.values() if "CONV2D" in p.op]
    assert conv.where == "host" and "minimum" in conv.reason
    with pytest.raises(TosaError, match=r"CONV2D #\d+ 'y'.*no Vulkan kernel.*strict"):
        partition(graph, MINIMUM, strict=True)


def test_host_ops_by_operator_or_tensor_name():
    graph = small_graph()
    for force in (["MUL"], ["mul"]):
        placed = [
            p for p in partition(graph, LAVAPIPE, host_ops=force).placements.values() if not p.op.startswith("CONST")
        ]
        assert [p.where for p in placed] == ["vulkan", "host", "alias"], force
        assert f"host_ops rule {force[0]!r}" in placed[1].reason


def test_lower_stage_contract():
    graph = small_graph()
    lowered = lower(graph, LAVAPIPE, partition(graph, LAVAPIPE))
    assert isinstance(lowered, Lowered)
    assert [type(s) for s in lowered.steps] == [Kernel, Kernel]
    assert lowered.root == {"out": "mul"}  # RESHAPE shares its input's memory
    assert {"x", "y", "add", "mul", "out"} <= set(lowered.tensors)
    assert [p.where for p in lowered.placement] == ["vulkan", "vulkan", "alias"]


def test_plan_stage_aligns_to_the_target():
    graph = small_graph()
    for target in (LAVAPIPE, MINIMUM, Target("wide", min_storage_buffer_offset_alignment=64)):
        program = tosa_vk.compile(graph, target)
        assert all(b.offset % target.alignment == 0 for b in program.buffers.values()), target.name
        assert program.buffer("out").offset == program.buffer("mul").offset


def test_host_steps_are_data():
    graph = small_graph()
    program = tosa_vk.compile(graph, LAVAPIPE, host_ops=["ADD"])
    (host,) = [s for s in walk(program.steps) if isinstance(s, Host)]
    assert (host.operator, host.inputs, host.writes) == ("ADD", ("x", "y"), ("add",))
    assert host.in_types == ("FP32", "FP32") and host.out_shapes == ((4, 8),)


def test_named_targets():
    assert named("lavapipe") is LAVAPIPE and LAVAPIPE.loop_budget < 65535
    assert MINIMUM.features == frozenset()
    with pytest.raises(TosaError, match="unknown target 'gpu'"):
        named("gpu")


def test_device_target_has_the_drivers_quirks(device):
    target = device.info.target
    assert target.device_uuid and target.max_storage_buffer_range == device.info.limits["maxStorageBufferRange"]
    if "llvmpipe" in device.info.name:
        assert target.loop_budget == LAVAPIPE.loop_budget and "loop_budget" in target.quirks


@pytest.mark.parametrize("target", ["lavapipe", "minimum"])
def test_host_placed_operators_give_the_same_results(device, target):
    """A program compiled for a smaller target (operators on the host) computes what the full one does."""
    graph = load_graph(ROOT / "resources/models/resnet_int8/model.tosa")
    x = np.load(ROOT / "resources/models/resnet_int8/input-0.npy")
    program = tosa_vk.compile(graph, target)
    from tosa_vk.ir.dtype import from_npy
    from tosa_vk.reference.host_kernels import run as host
    from tosa_vk.vulkan.runtime import Runtime

    name = graph.main.inputs[0]
    with Runtime(program, device, host=host) as runtime:
        got = runtime.run({name: from_npy(x, graph.main.tensors[name].dtype)})
    want = tosa_vk.load(graph, backend="reference").run({name: x})
    for out in want:
        assert np.array_equal(got[out], want[out])
    assert any(p.where == "host" for p in program.placement) == (target == "minimum")


def test_placement_records():
    program = tosa_vk.compile(small_graph())
    assert all(isinstance(p, Placement) for p in program.placement)
    assert program.placement[0] == Placement("ADD #0 'add'", "vulkan", "Vulkan kernel")


def test_cli_plan_for_a_named_target(capsys):
    from tosa_vk.tools.cli import main

    model = str(ROOT / "resources/models/resnet_int8/model.tosa")
    assert main(["plan", model, "--target", "minimum", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["target"]["name"] == "minimum" and summary["target"]["features"] == []
    hosted = [p for p in summary["placement"] if p["where"] == "host"]
    assert hosted and all(p["reason"] for p in hosted)
    assert main(["plan", model, "--target", "gpu"]) == 2
    assert "unknown target 'gpu'" in capsys.readouterr().err


def test_constant_data_without_a_const_operator(device):
    """A tensor with data that no CONST operator produces (files may write them so) is a constant on Vulkan too."""
    b = Builder()
    x = b.input("x", (4,), "fp32")
    c = b.const(np.arange(4, dtype=np.float32), name="c")
    b.output(b.add(x, c, name="y"))
    graph = b.build()
    graph.main.operators = [op for op in graph.main.operators if op.op != "CONST"]
    x1 = np.ones(4, np.float32)
    want = tosa_vk.load(graph, backend="reference").run(x=x1)["y"]
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        assert np.array_equal(model.run(x=x1)["y"], want)

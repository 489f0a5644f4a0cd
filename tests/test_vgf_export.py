"""VGF export (tosa_vk/formats/vgf_export.py) and import (tosa_vk/formats/vgf_run.py): the three shared models and a
fixed selection of single-op conformance graphs are exported, read back by Arm's vgf_dump, run by Arm's scenario-runner
(ML emulation layer on lavapipe, one shared worker) and by `tosa-vk run model.vgf`; every output must equal what
tosa_vk's own Vulkan backend computes (bit-exact: the same SPIR-V runs on the same device)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import same_bits, vgf_dump

import tosa_vk
import vgf as V
from tosa_vk.backends.vgf import VGFModel
from tosa_vk.backends.vulkan import VulkanModel
from tosa_vk.errors import TosaError
from tosa_vk.formats.spirv_graph.constants import runs_as_is
from tosa_vk.formats.vgf_export import bake_push_constants, export_vgf
from tosa_vk.ir import load_graph
from tosa_vk.reference.executor import coerce_input
from vgf.scenario import write_scenario

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.vulkan
MODELS = sorted((ROOT / "resources" / "models").glob("*/desc.json"))
# One single-op test per op (first match in the sorted cached selection)
OPS = (
    "add_0_f16",
    "conv2d_",
    "matmul_",
    "rescale_",
    "mul_0_f16",
    "clamp_0_f32",
    "avg_pool2d_",
    "transpose_",
    "reduce_sum_",
    "concat_",
    "sigmoid_0_f32",
    "table_0_i8",
    "cast_",
    "depthwise_conv2d_",
)


def _single_op_tests() -> list[Path]:
    from tosa_vk.tools.conformance.generate import Selection, selected_tests

    tests = selected_tests(Selection(test_type="positive"))
    return [next(t for t in tests if t.name.startswith(prefix)) for prefix in OPS]


def _check(desc_path: Path, device, worker, tmp_path: Path) -> None:
    folder = desc_path.parent
    desc = json.loads(desc_path.read_text())
    graph = load_graph(folder / desc["tosa_file"])
    main = graph.main
    feeds = {
        n: coerce_input(main.tensors[n], np.load(folder / f), None) for n, f in zip(desc["ifm_name"], desc["ifm_file"])
    }
    model = VulkanModel(graph, device=device, strict=True)
    try:
        ours = model.run(feeds)
        path = tmp_path / "model.vgf"
        vgf = model.export_vgf(path)  # (recompiled without views if it has some)
    finally:
        model.close()
    # constants are no model inputs: a constant graph (GRAPH segments, first) fills them from the file
    assert vgf.output_names == list(main.outputs) and vgf.input_names == list(main.inputs)
    assert all(r.category != "CONSTANT" for b in vgf.inputs for r in [vgf.resources[b.mrt_index]])
    kinds = [s.type for s in vgf.segments]
    assert kinds == sorted(kinds, key="GRAPH COMPUTE".split().index) and runs_as_is(vgf)
    assert all(not s.push_constant_ranges for s in vgf.segments)
    assert sorted(c for s in vgf.segments if s.type == "GRAPH" for c in s.constants) == list(range(len(vgf.constants)))
    dumped = vgf_dump(path)  # Arm's decoder accepts the file and sees what we wrote
    assert len(dumped["model_sequence"]["segments"]) == len(vgf.segments)
    assert [r["category"] for r in dumped["resources"]] == [r.category for r in vgf.resources]
    with VGFModel(path, device) as imported:  # round trip: export -> run the .vgf on our runtime
        again = imported.run(feeds)
    for name, value in ours.items():
        same_bits(again[name], value, f"round trip output {name}")
    ins, outs = write_scenario(vgf, path, tmp_path / "scenario.json")
    worker.load_scenario(tmp_path / "scenario.json", ins, outs)
    uploads = {
        uid: np.ascontiguousarray(feeds[name]).view(np.uint8).reshape(-1) for uid, name in zip(ins, vgf.input_names)
    }
    got, _ = worker.run_scenario(uploads)
    for uid, name in zip(outs, vgf.output_names):
        want = np.ascontiguousarray(ours[name])
        arm = got[uid].view(np.uint8).reshape(-1).view(want.dtype).reshape(want.shape)
        same_bits(arm, want, f"scenario-runner output {name}")


@pytest.mark.parametrize("desc", MODELS, ids=[d.parent.name for d in MODELS])
def test_models(desc, device, worker, tmp_path):
    _check(desc, device, worker, tmp_path)


@pytest.mark.conformance
@pytest.mark.parametrize("prefix", OPS)
def test_single_ops(prefix, device, worker, tmp_path):
    test = next(t for t in _single_op_tests() if t.name.startswith(prefix))
    _check(test / "desc.json", device, worker, tmp_path)


def test_push_constants_are_baked_with_std430_offsets():
    src = (
        "#version 450\nlayout(push_constant) uniform Params { uint total; float lo; int s[2]; vec2 v; } p;\n"
        "void main() {}\n"
    )
    import struct

    push = struct.pack("<Ifii", 7, -1.5, -2147483648, 3) + struct.pack("<ff", 0.1, float("inf"))
    out = bake_push_constants(src, push, "t")
    assert (
        "const Params p = Params(0x00000007u, -1.5, int[2](int(0x80000000u), int(0x00000003u)), "
        "vec2(0.10000000149011612, (1.0/0.0)));"
        in out
        and "push_constant" not in out
    )
    with pytest.raises(ValueError, match="past the 8 bytes"):
        bake_push_constants(src, push[:8], "t")


def test_host_steps_are_refused(tmp_path):
    from tosa_vk.program import Host, Program

    program = Program([Host("WHILE_LOOP #0 'x'", "WHILE_LOOP", {}, (), (), (), (), ())], {}, 0, [], [])
    with pytest.raises(TosaError, match="WHILE_LOOP #0 'x': runs on the host"):
        export_vgf(program)


def test_graph_segments_are_refused(tmp_path):
    v = V.VGF(
        modules=[V.Module("g", "GRAPH", "g", b"\x03\x02\x23\x07" + bytes(16))],
        segments=[V.Segment("graph_segment_0", 0, "GRAPH")],
    )
    V.save_vgf(v, tmp_path / "g.vgf")
    with pytest.raises(TosaError, match="graph segments are not supported"):
        VGFModel(tmp_path / "g.vgf")


def test_cli_export_inspect_run(tmp_path):
    from tosa_vk.tools.cli import main

    b = tosa_vk.Builder()
    x = b.input("x", (2, 3), "fp32")
    b.output(b.add(x, np.ones((2, 3), np.float32), name="y"))
    tosa_vk.save_graph(b.build(), tmp_path / "add.tosa")
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    assert main(["export", str(tmp_path / "add.tosa"), "-o", str(tmp_path / "add.vgf")]) == 0
    assert main(["inspect", str(tmp_path / "add.vgf")]) == 0
    assert main(["run", str(tmp_path / "add.vgf"), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "o")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), np.arange(6).reshape(2, 3) + 1)
    with tosa_vk.load(tmp_path / "add.tosa", backend="reference") as model:
        assert model.export_vgf().output_names == ["y"]
    (tmp_path / "bad.vgf").write_bytes(b"VGF1" + bytes(20))
    assert main(["run", str(tmp_path / "bad.vgf")]) == 2


# ---- constant graphs (the GRAPH segments that fill constants) ------------------------------------------------------


def test_constant_graph_module_is_read_back():
    from helpers import graph_spirv_val

    from tosa_vk.formats.spirv_graph.constants import constant_graph, constant_graph_outputs

    tensors = [(100, (2, 3)), (14, (5,)), (76, (1, 2, 3, 4, 5, 6)), (100, (2, 3)), (75, (7,))]
    spirv = constant_graph("constants_0", tensors)
    assert graph_spirv_val(spirv) == ""  # (one tensor type per element type + shape)
    assert constant_graph_outputs(spirv) == [(0, k, k) for k in range(5)]
    words = np.frombuffer(spirv, np.uint32).copy()
    words[words == (3 << 16 | 4185)] = 3 << 16 | 4184  # OpGraphSetOutputARM -> OpGraphInputARM: not a constant graph
    assert constant_graph_outputs(words.tobytes()) is None
    assert constant_graph_outputs(b"\x03\x02\x23\x07" + bytes(16)) is None  # no graph at all


def test_constants_are_filled_by_a_graph_segment_not_listed_as_inputs(tmp_path):
    b = tosa_vk.Builder()
    x = b.input("x", (2, 3), "fp32")
    c = np.arange(6, dtype=np.float32).reshape(2, 3)
    b.output(b.add(x, c, name="y"))
    b.output(b.reshape(b.const(np.arange(4, dtype=np.int32), name="k"), (2, 2), name="k2"))  # a constant as output
    vgf = export_vgf(tosa_vk.compile(b.build()))
    assert vgf.input_names == ["x"] and [s.type for s in vgf.segments][0] == "GRAPH"
    (graph,) = [s for s in vgf.segments if s.type == "GRAPH"]
    tensors = [vgf.resources[o.mrt_index] for o in graph.outputs]
    assert [(r.category, r.descriptor_type) for r in tensors] == [("INTERMEDIATE", 1000460000)] * 2
    assert graph.constant_bindings == [(0, 0), (1, 1)] and graph.constants == [0, 1]
    buffers = [r for r in vgf.resources if r.descriptor_type == 7 and r.alias_group is not None]
    assert sorted(r.alias_group for r in buffers) == sorted(r.alias_group for r in tensors)
    V.save_vgf(vgf, tmp_path / "c.vgf")
    with VGFModel(tmp_path / "c.vgf") as model:
        got = model.run(x=np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(got["y"], c + 1)
    np.testing.assert_array_equal(got["k2"], np.arange(4).reshape(2, 2))
    # a compute segment writing into the memory the constant graph fills is refused (we fill it once, at load)
    seg = next(s for s in vgf.segments if s.type == "COMPUTE")
    bound = {b.mrt_index for d in seg.set_infos for b in d.bindings}
    buffer = next(
        i
        for i, r in enumerate(vgf.resources)
        if r.descriptor_type == 7 and r.alias_group is not None and i not in bound
    )
    seg.outputs = [V.Binding(seg.outputs[0].binding, buffer)]
    seg.set_infos[0].bindings = [
        V.Binding(s.binding, buffer) if s.binding == seg.outputs[0].binding else s for s in seg.set_infos[0].bindings
    ]
    with pytest.raises(TosaError, match="memory a constant graph fills"):
        VGFModel(vgf)


def test_model_converter_constant_graph_runs_on_tosa_vk(tmp_path):
    """model-converter writes a graph whose outputs are (large) constants as graph constants: such a GRAPH segment
    is a constant graph, and tosa_vk runs the file as it is."""
    import subprocess

    from tosa_vk.ir.flatbuffer import save_graph
    from tosa_vk.tools.bench.anchors import arm_sdk

    try:
        converter = arm_sdk._tool("model_converter", "model-converter")
    except (ImportError, FileNotFoundError) as err:
        pytest.skip(f"Arm's model-converter is not installed: {err}")
    b = tosa_vk.Builder()
    big, small = np.arange(4096, dtype=np.float32).reshape(64, 64), (np.arange(300) % 200 - 100).astype(np.int8)
    b.output(b.const(big, name="big"), b.const(small, name="small"))
    save_graph(b.build(), tmp_path / "c.tosa")
    done = subprocess.run(
        [converter, "-i", str(tmp_path / "c.tosa"), "-o", str(tmp_path / "c.vgf")], capture_output=True
    )
    assert done.returncode == 0, done.stderr
    vgf = V.load_vgf(tmp_path / "c.vgf")
    assert [s.type for s in vgf.segments] == ["GRAPH"] and runs_as_is(vgf)
    with VGFModel(vgf) as model:
        got = model.run()
    np.testing.assert_array_equal(got["output_0"], big)
    np.testing.assert_array_equal(got["output_1"], small)

"""VGF resources against what uses them (issue 34): an alias group never shares a model input's or output's memory
with another tensor, and every view of a tensor a segment produces holds all of it. Found: both edits ran with
changed outputs (or silently dropped the declared size)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_custom_ops import F32, SCALE_ADD, resource

import tosa_vk
from tosa_vk import TosaError, custom
from tosa_vk.abi import custom_payload
from tosa_vk.backends.vgf import VGFModel
from tosa_vk.formats.vgf_export import export_vgf
from tosa_vk.formats.vgf_graph import export
from vgf import read_vgf, save_vgf, write_vgf

pytestmark = pytest.mark.vulkan

SCALE_ADD_PAYLOAD = custom_payload.make(
    workgroup_sizes=[1, 1, 1],
    glsl=SCALE_ADD,
    inputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 0)],
    outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 1)],
)


def chain():
    """y = |exp(|x|)| over [64]: unfused, three kernels and two intermediates (fused: one element-wise group)."""
    b = tosa_vk.Builder()
    x = b.input("x", (64,), "fp32")
    b.output(b.op("ABS", b.op("EXP", b.op("ABS", x, name="t"), name="u"), name="y"))
    return b.build()


def mixed(feeds_custom_from_input: bool = False):
    """x -> ABS -> CUSTOM (y = 2x + 5) -> ABS -> y: GRAPH, COMPUTE, GRAPH segments whose crossing tensors have a
    tensor and a buffer view in one alias group. `feeds_custom_from_input`: CUSTOM reads x itself and both its
    result and x + result are outputs (model I/O in alias groups, as model-converter writes them too)."""
    b = tosa_vk.Builder()
    x = b.input("x", (64,), "fp32")
    source = x if feeds_custom_from_input else b.op("ABS", x, name="t")
    u = b.custom(
        [source],
        domain_name=custom_payload.DOMAIN,
        operator_name="scale_add",
        implementation_attrs=SCALE_ADD_PAYLOAD,
        out_shape=(64,),
        out_dtype="fp32",
        name="u",
    )
    if feeds_custom_from_input:
        b.output(b.op("ADD", u, x, name="y"))
        b.output(u)
    else:
        b.output(b.op("ABS", u, name="y"))
    return b.build()


def load(vgf, tmp_path, device):
    path = tmp_path / "m.vgf"
    save_vgf(read_vgf(write_vgf(vgf)), path)
    return tosa_vk.load(path, backend="vulkan", device=device)


def test_a_shrunk_view_of_a_graph_segments_output_is_refused(tmp_path, device):
    vgf = export(mixed())
    produced = vgf.segments[0].outputs[0].mrt_index  # graph_segment_0's result, bound by the compute segment too
    group = vgf.resources[produced].alias_group
    view = next(i for i, r in enumerate(vgf.resources) if r.alias_group == group and i != produced)
    vgf.resources[view] = dataclasses.replace(vgf.resources[view], shape=(32,))
    rule = rf"resource {view} \(alias group {group}\) declares \[32\] FP32 \(128 bytes\), but the tensor its group "
    with pytest.raises(TosaError, match=rule + r"holds is \[64\] \(256 bytes, written by segment 'graph_segment_0'\)"):
        load(vgf, tmp_path, device)


def test_model_io_in_alias_groups_as_the_exporters_write_them_runs(tmp_path, device):
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    vgf = export(mixed(feeds_custom_from_input=True))
    assert any(r.alias_group is not None and r.category == "INPUT" for r in vgf.resources)
    with load(vgf, tmp_path, device) as model:
        got = model.run(x=x)
    np.testing.assert_allclose(got["y"], (x * 2 + 5) + x, atol=1e-5)


def test_model_converters_io_alias_groups_run(tmp_path, device):
    from test_vgf_custom import model_converter

    from tosa_vk.ir.flatbuffer import save_graph

    try:
        from tosa_vk.tools.bench.anchors import arm_sdk

        arm_sdk._tool("model_converter", "model-converter")
    except Exception as err:  # noqa: BLE001 (an optional tool)
        pytest.skip(f"Arm's model-converter is not installed: {err}")
    save_graph(mixed(feeds_custom_from_input=True), tmp_path / "m.tosa")
    model_converter(tmp_path / "m.tosa", tmp_path / "arm.vgf")
    vgf = read_vgf(tmp_path / "arm.vgf")
    assert any(r.alias_group is not None and r.category == "INPUT" for r in vgf.resources)
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    with tosa_vk.load(tmp_path / "arm.vgf", backend="vulkan", device=device) as model:
        got = model.run({"input_0": x})
    np.testing.assert_allclose(got["output_0"], (x * 2 + 5) + x, atol=1e-5)


@pytest.mark.parametrize("kind", ["input", "output"])
def test_compute_vgf_io_sharing_an_alias_group_with_an_intermediate_is_refused(kind, device):
    vgf = export_vgf(tosa_vk.compile(chain(), views=False, fuse=False))
    io = (vgf.inputs if kind == "input" else vgf.outputs)[0].mrt_index
    intermediate = next(i for i, r in enumerate(vgf.resources) if r.category == "INTERMEDIATE")
    for i in (io, intermediate):
        vgf.resources[i] = dataclasses.replace(vgf.resources[i], alias_group=7)
    name = "x" if kind == "input" else "y"
    rule = rf"alias group 7 holds model {kind} '{name}' \(resource {io}\) and resource {intermediate} \(INTERMEDIATE"
    with pytest.raises(TosaError, match=rule):
        VGFModel(read_vgf(write_vgf(vgf)), device)


def test_graph_vgf_input_in_an_intermediates_alias_group_is_refused(tmp_path, device):
    vgf = export(mixed())
    group = next(r.alias_group for r in vgf.resources if r.alias_group is not None)
    x = vgf.inputs[0].mrt_index
    vgf.resources[x] = dataclasses.replace(vgf.resources[x], alias_group=group)
    with pytest.raises(TosaError, match=rf"alias group {group} holds model input 'x' \(resource {x}\)"):
        load(vgf, tmp_path, device)

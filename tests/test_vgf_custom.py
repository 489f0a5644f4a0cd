"""VGF export / import of custom shader ops (tosa.CUSTOM) and of outputs that share memory.

Export: the resources/custom_ops examples and ExecuTorch-style VulkanCustomShader payload graphs are exported,
read back by Arm's vgf_dump, run by Arm's scenario-runner (one shared worker) and by tosa_vk's VGF runner; outputs
must equal tosa_vk's own Vulkan run bit for bit. What has no sound VGF form fails with a clear TosaError.
Import: the VGFs Arm's model-converter writes for graphs of VulkanCustomShader nodes run on tosa_vk and match our
direct run of the .tosa (and scenario-runner's run of the same file)."""

from __future__ import annotations

import subprocess
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from helpers import same_bits, vgf_dump
from test_custom_ops import (
    DOMAIN,
    F32,
    GLSL_SUB,
    LINEAR_BORDER,
    RGBA,
    RGBA_BIAS,
    SCALE_ADD,
    example,
    glsl_to_spirv,
    grid_sample_graph,
    resource,
    single_custom_graph,
)

import tosa_vk
from tosa_vk import Builder, TosaError, custom
from tosa_vk.abi import custom_payload
from tosa_vk.backends.vgf import VGFModel
from tosa_vk.backends.vulkan import VulkanModel
from tosa_vk.formats.spirv_graph.constants import runs_as_is
from tosa_vk.formats.vgf_export import export_vgf
from tosa_vk.ir.flatbuffer import save_graph
from tosa_vk.tools.bench.anchors import arm_sdk
from vgf import read_vgf
from vgf.scenario import downloaded_array, upload_array, write_scenario
from vgf.vk_enums import DESCRIPTOR_NAMES

pytestmark = pytest.mark.vulkan


def vulkan(graph, device) -> closing:
    return closing(VulkanModel(graph, device=device, strict=True))


def scenario_run(worker, vgf, path: Path, feeds: dict, tmp_path: Path) -> dict:
    """Runs a .vgf in Arm's scenario-runner: feeds by model input name (constants from the file), outputs by name."""
    ins, outs = write_scenario(vgf, path, tmp_path / "scenario.json")
    worker.load_scenario(tmp_path / "scenario.json", ins, outs)
    uploads = {}
    for uid, slot, name in zip(ins, vgf.inputs, vgf.input_names):
        c = vgf.constant_for(slot.mrt_index)
        uploads[uid] = upload_array(vgf, slot.mrt_index, np.frombuffer(c.data, np.uint8) if c else feeds[name])
    got, _ = worker.run_scenario(uploads)
    return {name: got[uid] for uid, name in zip(outs, vgf.output_names)}


def export_and_check(graph, feeds: dict, device, worker, tmp_path: Path, exact: bool = True) -> tuple:
    """Our Vulkan run, export, vgf_dump, our VGF runner and scenario-runner: all outputs bit-identical. With
    exact=False (float push constants baked into the shader, so the driver may fold them differently) our VGF
    runner must still equal scenario-runner bit for bit (same SPIR-V), and both our direct run to 1e-6."""
    with vulkan(graph, device) as model:
        ours = model.run(feeds)
        path = tmp_path / "model.vgf"
        vgf = export_vgf(model.program, path)
    assert runs_as_is(vgf) and all(not s.push_constant_ranges for s in vgf.segments)
    dumped = vgf_dump(path)
    assert [r["vk_descriptor_type"] for r in dumped["resources"]] == [
        "none" if r.descriptor_type is None else DESCRIPTOR_NAMES[r.descriptor_type] for r in vgf.resources
    ]
    with VGFModel(path, device) as imported:
        again = imported.run({n: feeds[n] for n in imported.program.inputs})
    arm = scenario_run(worker, vgf, path, feeds, tmp_path)
    for name, value in ours.items():
        theirs = downloaded_array(arm[name], value.dtype, value.shape)
        same_bits(theirs, again[name], f"scenario-runner vs tosa_vk VGF runner, output {name}")
        if exact:
            same_bits(again[name], value, f"tosa_vk VGF runner, output {name}")
        else:
            np.testing.assert_allclose(again[name], value, rtol=1e-6, atol=1e-6)
    return vgf, dumped, ours


# ---- export: registered examples (resources/custom_ops) ------------------------------------------------------------


def test_color_matrix_buffers_in_two_sets_with_baked_push_constants(device, worker, tmp_path):
    cm = example("color_matrix")
    rng = np.random.default_rng(0)
    b = Builder()
    x = b.input("x", (1, 7, 9, 3), "fp32")
    b.output(
        custom.call(b, cm.DOMAIN, cm.NAME, [x], cm.attrs(rng.standard_normal((3, 3)), [0.5, -1, 2]), name_hint="y")
    )
    vgf, _, ours = export_and_check(
        b.build(), {"x": rng.standard_normal((1, 7, 9, 3)).astype(np.float32)}, device, worker, tmp_path, exact=False
    )
    (seg,) = vgf.segments
    assert [(d.set_index, [(s.binding, s.mrt_index) for s in d.bindings]) for d in seg.set_infos] == [
        (0, [(1, 0)]),
        (1, [(0, 1)]),
    ]


def test_grid_sample_sampled_image_input(device, worker, tmp_path):
    _, graph, feeds = grid_sample_graph()
    vgf, dumped, _ = export_and_check(graph, feeds, device, worker, tmp_path)
    image = dumped["resources"][0]
    assert image["vk_format"] == "VK_FORMAT_R32G32B32A32_SFLOAT" and image["shape"] == [1, 6, 10, 4]
    assert image["sampler_config"]["min_filter"] == "VK_FILTER_LINEAR"
    assert image["sampler_config"]["address_mode_u"] == "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE"


def test_gradient_storage_images_in_and_out(device, worker, tmp_path):
    gr = example("gradient")
    b = Builder()
    img = b.input("img", (1, 9, 13, 1), "fp32")
    b.output(custom.call(b, gr.DOMAIN, gr.NAME, [img], name_hint="grad"))
    feeds = {"img": np.random.default_rng(2).standard_normal((1, 9, 13, 1)).astype(np.float32)}
    vgf, _, ours = export_and_check(b.build(), feeds, device, worker, tmp_path)
    assert [(r.category, r.descriptor_type, r.format) for r in vgf.resources] == [("INPUT", 3, 100), ("OUTPUT", 3, 109)]
    assert float(np.abs(ours["grad"] - gr.central_differences(feeds["img"])).max()) <= 1e-5


def test_storage_image_read_as_a_buffer_is_converted(device, worker, tmp_path):
    """gradient's storage image read by ADD as a buffer: the image gets an entry of its own and an image_to_buffer
    dispatch fills the (buffer) output-side tensor after gradient, before ADD."""
    gr = example("gradient")
    b = Builder()
    img = b.input("img", (1, 9, 13, 1), "fp32")
    y = custom.call(b, gr.DOMAIN, gr.NAME, [img], name_hint="grad")
    b.output(b.add(y, y, name="y"))
    b.output(y)
    feeds = {"img": np.random.default_rng(3).standard_normal((1, 9, 13, 1)).astype(np.float32)}
    vgf, _, ours = export_and_check(b.build(), feeds, device, worker, tmp_path)
    assert [vgf.modules[s.module_index].name.split("_")[:3] for s in vgf.segments][1] == ["custom", "image", "to"]
    same_bits(ours["y"], ours["grad"] * 2, "y")


# ---- export: VulkanCustomShader payloads (the ExecuTorch way) -----------------------------------------------------


def test_spirv_payload_buffers(device, worker, tmp_path):
    graph = single_custom_graph(
        custom_payload.make(
            entry_point="main",
            workgroup_sizes=[64, 1, 1],
            spirv=glsl_to_spirv(SCALE_ADD, tmp_path),
            inputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 0)],
            outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 1)],
        ),
        name="scale_add",
    )
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4)
    _, _, ours = export_and_check(graph, {"x": x}, device, worker, tmp_path)
    np.testing.assert_allclose(ours["y"], x * 2 + 5, atol=1e-6)


def rgba_bias_attrs(tmp_path: Path) -> bytes:
    return custom_payload.make(
        entry_point="main",
        workgroup_sizes=[1, 1, 1],
        spirv=glsl_to_spirv(RGBA_BIAS, tmp_path),
        inputs=[resource("Image", custom.COMBINED_IMAGE_SAMPLER, RGBA, 0, sampler=LINEAR_BORDER)],
        outputs=[resource("Image", custom.STORAGE_IMAGE, RGBA, 1)],
    )


def rgba_bias_graph(tmp_path: Path, permutes: bool):
    attrs = rgba_bias_attrs(tmp_path)
    b = Builder()
    if permutes:  # ExecuTorch's NCHW graph: permute -> CUSTOM -> permute back
        x = b.input("x", (1, 4, 3, 5), "fp32")
        y = b.custom(
            [b.transpose(x, perms=[0, 2, 3, 1])],
            domain_name=DOMAIN,
            operator_name="rgba_bias",
            implementation_attrs=attrs,
            out_shape=(1, 3, 5, 4),
            out_dtype="fp32",
        )
        b.output(b.transpose(y, perms=[0, 3, 1, 2], name="out"))
    else:
        x = b.input("x", (1, 3, 5, 4), "fp32")
        b.output(
            b.custom(
                [x],
                domain_name=DOMAIN,
                operator_name="rgba_bias",
                implementation_attrs=attrs,
                out_shape=(1, 3, 5, 4),
                out_dtype="fp32",
                name="out",
            )
        )
    return b.build()


def test_spirv_payload_sampled_image_to_storage_image(device, worker, tmp_path):
    x = np.arange(1.0, 61.0, dtype=np.float32).reshape(1, 3, 5, 4)
    vgf, dumped, ours = export_and_check(rgba_bias_graph(tmp_path, False), {"x": x}, device, worker, tmp_path)
    np.testing.assert_allclose(ours["out"], x + [10, 20, 30, 40], atol=1e-6)
    assert dumped["resources"][0]["sampler_config"]["address_mode_u"] == "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER"


def test_image_payload_between_permutes(device, worker, tmp_path):
    """ExecuTorch's NCHW graph: TRANSPOSE (a buffer) -> VulkanCustomShader sampling it as an RGBA image and writing
    a storage image -> TRANSPOSE back. Exported with buffer_to_image into a storage image aliased with the sampled
    image (one alias group) and image_to_buffer after the custom dispatch."""
    x = np.arange(1.0, 61.0, dtype=np.float32).reshape(1, 4, 3, 5)
    vgf, dumped, ours = export_and_check(rgba_bias_graph(tmp_path, True), {"x": x}, device, worker, tmp_path)
    np.testing.assert_allclose(ours["out"], x + np.array([10, 20, 30, 40], np.float32)[None, :, None, None], atol=1e-6)
    groups = [(r.descriptor_type, r.alias_group) for r in vgf.resources if r.alias_group is not None]
    assert groups == [(1, 0), (3, 0)]


def test_image_views_of_an_input_and_between_custom_ops(device, worker, tmp_path):
    """An input read as a storage image (gradient) and as a buffer (ADD); gradient's storage image sampled by the
    next custom op and also a graph output: mixed I/O entries are buffers, one conversion per stale view, none
    repeated."""
    gr = example("gradient")
    b = Builder()
    img = b.input("img", (1, 3, 5, 1), "fp32")
    grad = custom.call(b, gr.DOMAIN, gr.NAME, [img], name_hint="grad")
    b.output(
        b.custom(
            [grad],
            domain_name=DOMAIN,
            operator_name="rgba_bias",
            implementation_attrs=rgba_bias_attrs(tmp_path),
            out_shape=(1, 3, 5, 4),
            out_dtype="fp32",
            name="out",
        )
    )
    b.output(grad)
    b.output(b.add(img, img, name="twice"))
    feeds = {"img": np.random.default_rng(5).standard_normal((1, 3, 5, 1)).astype(np.float32)}
    vgf, _, ours = export_and_check(b.build(), feeds, device, worker, tmp_path)
    # img and grad (both mixed) are buffers; out is written only as a storage image, so it stays one
    assert [r.descriptor_type for r in vgf.resources if r.category in ("INPUT", "OUTPUT")] == [7, 3, 7, 7]
    shaders = [vgf.modules[s.module_index].name.rsplit("_", 1)[0] for s in vgf.segments]
    assert shaders.count("custom_buffer_to_image") == 2 and shaders.count("custom_image_to_buffer") == 1, shaders
    np.testing.assert_allclose(ours["out"], ours["grad"] + np.float32([10, 20, 30, 40]), atol=1e-5)


def glsl_sub_graph(push: str = "offset: 4, pad: 4"):
    attrs = custom_payload.make(
        glsl=GLSL_SUB
        if push
        else GLSL_SUB.replace(" + pc.offset", "").replace(
            "layout(push_constant) uniform P { float offset; uint pad; } pc;\n", ""
        ),
        workgroup_sizes=[1, 1, 1],
        push_constants=push,
        inputs=[
            resource("Tensor", custom.TENSOR_ARM, F32, 3, set=1),
            resource("BUFFER", custom.STORAGE_BUFFER, F32, 5, set=0),
        ],
        outputs=[resource("TENSOR", custom.TENSOR_ARM, F32, 0, set=1)],
    )
    return single_custom_graph(attrs, shape=(3, 4), name="sub", n_inputs=2)


def test_glsl_payload_tensors_two_sets_zero_push_constants(device, worker, tmp_path):
    """TENSOR_ARM bindings whose shader declares buffers are written as STORAGE_BUFFER (what the shader declares and
    the runtime binds): scenario-runner 0.11 binding a VkTensorARM there computes zeros (see the import test)."""
    a, b = np.arange(12, dtype=np.float32).reshape(3, 4), np.full((3, 4), 0.5, np.float32)
    vgf, _, ours = export_and_check(glsl_sub_graph(), {"x": a, "x1": b}, device, worker, tmp_path)
    assert [r.descriptor_type for r in vgf.resources] == [7, 7, 7]
    np.testing.assert_array_equal(ours["y"], a - b)


def test_spirv_payload_with_push_constants_is_refused(device, tmp_path):
    attrs = custom_payload.make(
        spirv=glsl_to_spirv(GLSL_SUB, tmp_path),
        workgroup_sizes=[1, 1, 1],
        push_constants="offset: 4, pad: 4",
        inputs=[
            resource("Buffer", custom.STORAGE_BUFFER, F32, 3, set=1),
            resource("Buffer", custom.STORAGE_BUFFER, F32, 5),
        ],
        outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 0, set=1)],
    )
    with vulkan(single_custom_graph(attrs, shape=(3, 4), name="sub", n_inputs=2), device) as model:
        with pytest.raises(TosaError, match="declares 8 bytes of push constants.*cannot be exported"):
            export_vgf(model.program)


# ---- export: outputs that share memory get a copy -----------------------------------------------------------------


def test_outputs_sharing_memory_are_copied(device, worker, tmp_path):
    b = Builder()
    x = b.input("x", (2, 3, 4), "fp32")
    y = b.add(x, np.ones((2, 3, 4), np.float32), name="y")
    b.output(b.reshape(x, (6, 4), name="x_flat"))  # shares the input's memory
    b.output(y)
    b.output(b.reshape(y, (24,), name="y_flat"))  # shares another output's memory
    b.output(b.reshape(b.const(np.arange(6, dtype=np.int32).reshape(2, 3), name="c"), (3, 2), name="c_t"))
    feeds = {"x": np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)}
    vgf, _, ours = export_and_check(b.build(), feeds, device, worker, tmp_path)
    assert vgf.output_names == ["x_flat", "y", "y_flat", "c_t"]
    assert len({o.mrt_index for o in vgf.outputs} | {i.mrt_index for i in vgf.inputs}) == 5  # 1 in, 4 out
    same_bits(ours["x_flat"], feeds["x"].reshape(6, 4), "x_flat")
    same_bits(ours["c_t"], np.arange(6, dtype=np.int32).reshape(3, 2), "c_t")


# ---- import: VGFs written by Arm's model-converter ----------------------------------------------------------------


def model_converter(tosa: Path, out: Path) -> None:
    done = subprocess.run(
        [arm_sdk._tool("model_converter", "model-converter"), "-i", str(tosa), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and out.is_file(), done.stdout + done.stderr


def import_cases(tmp_path: Path) -> dict:
    rng = np.random.default_rng(7)
    return {
        "spirv_buffers": (
            single_custom_graph(
                custom_payload.make(
                    workgroup_sizes=[64, 1, 1],
                    spirv=glsl_to_spirv(SCALE_ADD, tmp_path),
                    inputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 0)],
                    outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 1)],
                ),
                name="scale_add",
            ),
            {"x": rng.standard_normal((4, 4)).astype(np.float32)},
        ),
        "spirv_images": (rgba_bias_graph(tmp_path, False), {"x": rng.standard_normal((1, 3, 5, 4)).astype(np.float32)}),
        "glsl_tensors": (
            glsl_sub_graph(push=""),
            {"x": rng.standard_normal((3, 4)).astype(np.float32), "x1": rng.standard_normal((3, 4)).astype(np.float32)},
        ),
    }


@pytest.mark.parametrize("case", ["glsl_tensors", "spirv_buffers", "spirv_images"])
def test_model_converter_vgf_runs_on_tosa_vk(case, device, worker, tmp_path):
    graph, feeds = import_cases(tmp_path)[case]
    save_graph(graph, tmp_path / "m.tosa")
    model_converter(tmp_path / "m.tosa", tmp_path / "m.vgf")
    vgf = read_vgf(tmp_path / "m.vgf")
    assert [s.type for s in vgf.segments] == ["COMPUTE"]
    with vulkan(graph, device) as model:
        want = model.run(feeds)
    # Arm names the I/O input_<i> / output_<i> in the graph's order
    arm_feeds = {f"input_{i}": feeds[n] for i, n in enumerate(graph.main.inputs)}
    with VGFModel(tmp_path / "m.vgf", device) as imported:
        got = imported.run(arm_feeds)
    arm = scenario_run(worker, vgf, tmp_path / "m.vgf", arm_feeds, tmp_path)
    tensors = any(r.descriptor_type == 1000460000 for r in vgf.resources)
    for i, name in enumerate(graph.main.outputs):
        value = want[name]
        same_bits(got[f"output_{i}"].reshape(value.shape), value, f"{case}: tosa_vk runs Arm's VGF")
        theirs = downloaded_array(arm[f"output_{i}"], value.dtype, value.shape)
        if tensors:  # Arm keeps TENSOR_ARM for buffer-declared shader bindings; scenario-runner 0.11 then gives 0s
            assert not theirs.any(), f"{case}: scenario-runner now computes something; compare it again"
        else:
            same_bits(theirs, value, f"{case}: scenario-runner runs Arm's VGF")


def test_model_converter_graph_and_compute_segments_run_on_tosa_vk(tmp_path, device):
    """A CUSTOM node next to a TOSA operator: model-converter writes a GRAPH and a COMPUTE segment; tosa_vk decodes
    the graph and runs the shader as a custom node (tosa_vk/formats/vgf_graph.py)."""
    graph, feeds = import_cases(tmp_path)["spirv_buffers"]
    b = Builder()
    x = b.input("x", (4, 4), "fp32")
    y = b.custom(
        [b.add(x, x)],
        domain_name=DOMAIN,
        operator_name="scale_add",
        implementation_attrs=graph.main.operators[0].attrs["implementation_attrs"],
        out_shape=(4, 4),
        out_dtype="fp32",
        name="y",
    )
    b.output(y)
    mixed = b.build()
    save_graph(mixed, tmp_path / "mixed.tosa")
    model_converter(tmp_path / "mixed.tosa", tmp_path / "mixed.vgf")
    vgf = read_vgf(tmp_path / "mixed.vgf")
    assert sorted({s.type for s in vgf.segments}) == ["COMPUTE", "GRAPH"]
    with vulkan(mixed, device) as model:
        want = model.run(feeds)["y"]
    with tosa_vk.load(tmp_path / "mixed.vgf", device=device) as imported:
        same_bits(imported.run({"input_0": feeds["x"]})["output_0"], want, "model-converter's GRAPH + COMPUTE VGF")

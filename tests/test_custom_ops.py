"""tosa.CUSTOM shader ops: registered declarations (resources/custom_ops/), ExecuTorch-style VulkanCustomShader
payloads that run unregistered, the NHWC / image-packing contract, and every rejection."""

from __future__ import annotations

import base64
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, TosaError, custom
from tosa_vk.abi import custom_payload
from tosa_vk.custom import Sampler, buffer, sampled_image, storage_image, tensor
from tosa_vk.stages.passes import copy_structure
from tosa_vk.stages.passes.permute import apply_custom_layouts
from tosa_vk.vulkan import VulkanError
from tosa_vk.vulkan.shaders import ShaderError

EXAMPLES = Path(__file__).resolve().parent.parent / "resources" / "custom_ops"
DOMAIN = custom_payload.DOMAIN
BACKENDS = ["reference", "vulkan"]


def example(name: str):
    """Imports resources/custom_ops/<name>.py (registers its op) and returns the module."""
    spec = importlib.util.spec_from_file_location(f"custom_op_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no custom-op example {name!r}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(graph, backend: str, device, **feeds) -> dict:
    options = {"device": device, "strict": True} if backend == "vulkan" else {}
    with tosa_vk.load(graph, backend=backend, **options) as model:
        first = model.run(**feeds)
        second = model.run(**feeds)  # recorded command buffers re-run: same result
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])
    return first


def glsl_to_spirv(source: str, tmp_path: Path) -> bytes:
    src, out = tmp_path / "shader.comp", tmp_path / "shader.spv"
    src.write_text(source)
    glslc = shutil.which("glslc")
    assert glslc is not None, "glslc is not on PATH"
    subprocess.run([glslc, str(src), "-o", str(out)], check=True, capture_output=True)
    return out.read_bytes()


# ---- registered examples vs their numpy twins -------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_buffer_op_with_three_channels(backend, device):
    cm = example("color_matrix")
    rng = np.random.default_rng(0)
    m, bias = rng.standard_normal((3, 3)).astype(np.float32), [0.5, -1.0, 2.0]
    b = Builder()
    x = b.input("x", (1, 7, 9, 3), "fp32")
    b.output(custom.call(b, cm.DOMAIN, cm.NAME, [x], cm.attrs(m, bias), name_hint="y"))
    xv = rng.standard_normal((1, 7, 9, 3)).astype(np.float32)
    got = run(b.build(), backend, device, x=xv)["y"]
    want = cm.color_matrix([xv], cm.attrs(m, bias))[0]
    err = float(np.abs(got - want).max())
    print(f"\ncolor_matrix ({backend}): max |err| vs numpy twin {err:.3g}")
    assert err <= 1e-5


def grid_sample_graph():
    """The grid_sample example on a 6x10 RGBA image: (module, graph, feeds); some samples fall beyond the edge."""
    gs = example("grid_sample")
    rng = np.random.default_rng(1)
    b = Builder()
    img = b.input("img", (1, 6, 10, 4), "fp32")
    grid = b.input("grid", (1, 5, 7, 2), "fp32")
    b.output(custom.call(b, gs.DOMAIN, gs.NAME, [img, grid], name_hint="y"))
    feeds = {
        "img": rng.standard_normal((1, 6, 10, 4)).astype(np.float32),
        "grid": rng.uniform(-1.2, 1.2, (1, 5, 7, 2)).astype(np.float32),
    }
    return gs, b.build(), feeds


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampled_image_grid_sample(backend, device):
    gs, graph, feeds = grid_sample_graph()
    iv, gv = feeds["img"], feeds["grid"]
    got = run(graph, backend, device, **feeds)["y"]
    want = gs.bilinear(iv, gv)
    err = float(np.abs(got - want).max())
    print(f"\ngrid_sample ({backend}): max |err| vs numpy twin {err:.3g}")
    assert got.shape == (1, 5, 7, 4) and err <= 1e-4


@pytest.mark.parametrize("backend", BACKENDS)
def test_storage_image_output(backend, device):
    gr = example("gradient")
    rng = np.random.default_rng(2)
    b = Builder()
    img = b.input("img", (1, 9, 13, 1), "fp32")
    y = custom.call(b, gr.DOMAIN, gr.NAME, [img], name_hint="grad")
    b.output(b.add(y, y, name="y"))  # a kernel after the copy-back reads it
    iv = rng.standard_normal((1, 9, 13, 1)).astype(np.float32)
    got = run(b.build(), backend, device, img=iv)["y"]
    err = float(np.abs(got - 2 * gr.central_differences(iv)).max())
    print(f"\ngradient ({backend}): max |err| vs numpy twin {err:.3g}")
    assert err <= 1e-5


def test_kernels_record_bindings_and_descriptor_types():
    example("color_matrix"), example("grid_sample")
    b = Builder()
    img = b.input("img", (1, 4, 4, 4), "fp32")
    grid = b.input("grid", (1, 2, 2, 2), "fp32")
    b.output(custom.call(b, "com.example", "grid_sample", [img, grid], name_hint="y"))
    (k,) = tosa_vk.compile(b.build(), strict=True).steps
    assert k.slots == ((0, 0), (0, 1), (0, 2))
    assert k.descriptors == (custom.COMBINED_IMAGE_SAMPLER, custom.STORAGE_BUFFER, custom.STORAGE_BUFFER)
    assert k.images[0].format == "VK_FORMAT_R32G32B32A32_SFLOAT" and (k.images[0].width, k.images[0].height) == (4, 4)
    assert dict(k.images[0].sampler)["min_filter"] == "VK_FILTER_LINEAR" and k.images[1:] == (None, None)
    assert k.groups == (1, 1, 1) and len(k.push_constants) == 8


# ---- the NHWC contract ----------------------------------------------------------------------------------------


def color_matrix_pair(m: np.ndarray):
    """An NCHW graph: two color_matrix ops (NHWC shaders; the first adds bias 1, 2, 3), then out = 2 * their result."""
    cm = example("color_matrix")
    b = Builder()
    x = b.input("x", (1, 3, 4, 6), "fp32")  # NCHW: C = 3 at axis 1
    y = b.custom(
        [x],
        domain_name=cm.DOMAIN,
        operator_name=cm.NAME,
        implementation_attrs=cm.attrs(m, [1, 2, 3]),
        out_shape=(1, 3, 4, 6),
        out_dtype="fp32",
        name="c",
    )
    z = b.custom(
        [y],
        domain_name=cm.DOMAIN,
        operator_name=cm.NAME,
        implementation_attrs=cm.attrs(m, [0, 0, 0]),
        out_shape=(1, 3, 4, 6),
        out_dtype="fp32",
        name="d",
    )
    b.output(b.add(z, z, name="out"))
    return b.build()


def test_nhwc_op_in_an_nchw_graph_gets_explicit_permutes(device):
    m = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
    graph = color_matrix_pair(m)
    plain = copy_structure(graph)
    assert apply_custom_layouts(graph, "NCHW") == (4, 2)  # the pair between the two NHWC ops is elided
    assert [op.op for op in graph.main.operators] == ["TRANSPOSE", "CUSTOM", "CUSTOM", "TRANSPOSE", "ADD"]
    tosa_vk.validate(graph)
    xv = np.random.default_rng(3).standard_normal((1, 3, 4, 6)).astype(np.float32)
    ref, vk_out = run(graph, "reference", device, x=xv), run(graph, "vulkan", device, x=xv)
    nhwc = xv.transpose(0, 2, 3, 1)
    want = 2 * ((nhwc @ m.T + [1, 2, 3]) @ m.T).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(ref["out"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(vk_out["out"], ref["out"], rtol=1e-5, atol=1e-5)
    # the same through the compile pipeline's passes stage: load(..., layouts="NCHW") on the untouched graph
    with tosa_vk.load(plain, backend="vulkan", device=device, layouts="NCHW") as model:
        np.testing.assert_array_equal(model.run(x=xv)["out"], vk_out["out"])
        assert [p.op.split()[0] for p in model.placement].count("TRANSPOSE") == 2


# ---- VulkanCustomShader payloads, unregistered --------------------------------------------------------------------

SCALE_ADD = """#version 450
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
layout(set = 0, binding = 0) buffer In { float x[]; };
layout(set = 0, binding = 1) buffer Out { float y[]; };
void main() {
  uint idx = gl_GlobalInvocationID.x;
  if (idx >= y.length()) { return; }
  y[idx] = x[idx] * 2.0 + 5.0;
}
"""

RGBA_BIAS = """#version 450
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(set = 0, binding = 0) uniform sampler2D in_image;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D out_image;
void main() {
  ivec2 coord = ivec2(gl_GlobalInvocationID.xy);
  ivec2 size = imageSize(out_image);
  if (coord.x >= size.x || coord.y >= size.y) { return; }
  vec2 uv = (vec2(coord) + vec2(0.5)) / vec2(size);
  imageStore(out_image, coord, texture(in_image, uv) + vec4(10.0, 20.0, 30.0, 40.0));
}
"""


def resource(kind, descriptor, fmt, binding, set=0, sampler=None) -> dict:
    r = {"type": kind, "vkdescriptortype": descriptor, "vkformat": fmt, "binding": binding, "descriptorset": set}
    if sampler:
        r["sampler"] = sampler
    return r


F32 = "VK_FORMAT_R32_SFLOAT"
RGBA = "VK_FORMAT_R32G32B32A32_SFLOAT"
LINEAR_BORDER = {
    "mag_filter": "VK_FILTER_LINEAR",
    "min_filter": "VK_FILTER_LINEAR",
    "address_mode_u": "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER",
    "address_mode_v": "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER",
    "border_color": "VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK",
}


def scale_add_payload(tmp_path) -> bytes:
    return custom_payload.make(
        entry_point="main",
        workgroup_sizes=[64, 1, 1],
        spirv=glsl_to_spirv(SCALE_ADD, tmp_path),
        push_constants="",
        inputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 0)],
        outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 1)],
    )


def single_custom_graph(attrs: bytes, shape=(4, 4), out_shape=None, name="scale_add", domain=DOMAIN, n_inputs=1):
    b = Builder()
    xs = [b.input(f"x{i}" if i else "x", shape, "fp32") for i in range(n_inputs)]
    b.output(
        b.custom(
            xs,
            domain_name=domain,
            operator_name=name,
            implementation_attrs=attrs,
            out_shape=out_shape or shape,
            out_dtype="fp32",
            name="y",
        )
    )
    return b.build()


def test_payload_keys_are_written_as_executorch_writes_them(tmp_path):
    attrs = scale_add_payload(tmp_path)
    data = json.loads(attrs)
    assert attrs == json.dumps(data, sort_keys=True).encode("utf-8")
    assert sorted(data) == sorted(
        [
            "entry_point",
            "workgroup_sizes",
            "is_vkshader",
            "shader_code",
            "shader_language",
            "push_constants",
            "input_0_binding",
            "output_0_binding",
            "input_0_type",
            "output_0_type",
            "input_0_vkdescriptortype",
            "output_0_vkdescriptortype",
            "input_0_descriptorset",
            "output_0_descriptorset",
            "input_0_vkformat",
            "output_0_vkformat",
        ]
    )
    assert base64.b64decode(data["shader_code"])[:4] == b"\x03\x02\x23\x07"


def test_spirv_buffer_payload_runs_unregistered(tmp_path, device):
    graph = single_custom_graph(scale_add_payload(tmp_path), name="examples.arm.scale_add")
    assert custom.lookup(DOMAIN, "examples.arm.scale_add") is None
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4)
    y = run(graph, "vulkan", device, x=x)["y"]
    np.testing.assert_allclose(y, x * 2 + 5, atol=1e-6, rtol=0)


def test_image_payload_with_explicit_permutes_runs_unregistered(tmp_path, device):
    """ExecuTorch's rgba_bias example: NCHW graph, permute -> CUSTOM (sampled RGBA image in, storage image out)
    -> permute back."""
    attrs = custom_payload.make(
        entry_point="main",
        workgroup_sizes=[8, 8, 1],
        spirv=glsl_to_spirv(RGBA_BIAS, tmp_path),
        inputs=[resource("Image", custom.COMBINED_IMAGE_SAMPLER, RGBA, 0, sampler=LINEAR_BORDER)],
        outputs=[resource("Image", custom.STORAGE_IMAGE, RGBA, 1)],
    )
    b = Builder()
    x = b.input("x", (1, 4, 3, 5), "fp32")
    nhwc = b.transpose(x, perms=[0, 2, 3, 1])
    y = b.custom(
        [nhwc],
        domain_name=DOMAIN,
        operator_name="examples.arm.rgba_bias",
        implementation_attrs=attrs,
        out_shape=(1, 3, 5, 4),
        out_dtype="fp32",
    )
    b.output(b.transpose(y, perms=[0, 3, 1, 2], name="out"))
    xv = np.arange(1.0, 61.0, dtype=np.float32).reshape(1, 4, 3, 5)
    out = run(b.build(), "vulkan", device, x=xv)["out"]
    np.testing.assert_allclose(out, xv + np.array([10, 20, 30, 40], np.float32).reshape(1, 4, 1, 1), atol=1e-6)


GLSL_SUB = """#version 450
layout(local_size_x = 16) in;
layout(set = 1, binding = 3) readonly buffer A { float a[]; };
layout(set = 0, binding = 5) readonly buffer B { float b[]; };
layout(set = 1, binding = 0) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { float offset; uint pad; } pc;
void main() { uint i = gl_GlobalInvocationID.x; if (i < 12) o[i] = a[i] - b[i] + pc.offset; }
"""


def test_glsl_payload_with_sets_tensor_descriptors_and_push_constants(device):
    """GLSL source in the payload, bindings spread over two sets, TENSOR_ARM recorded (bound as a storage buffer
    here), and payload push constants (zeros of the declared size)."""
    attrs = custom_payload.make(
        glsl=GLSL_SUB,
        workgroup_sizes=[1, 1, 1],
        push_constants="offset: 4, pad: 4",
        inputs=[
            resource("Tensor", custom.TENSOR_ARM, F32, 3, set=1),
            resource("BUFFER", custom.STORAGE_BUFFER, F32, 5, set=0),
        ],
        outputs=[resource("TENSOR", custom.TENSOR_ARM, F32, 0, set=1)],
    )
    graph = single_custom_graph(attrs, shape=(3, 4), name="sub", n_inputs=2)
    (k,) = tosa_vk.compile(graph, strict=True).steps
    assert k.descriptors == (custom.TENSOR_ARM, custom.STORAGE_BUFFER, custom.TENSOR_ARM)
    assert k.slots == ((1, 3), (0, 5), (1, 0)) and k.push_constants == bytes(8) and k.groups == (1, 1, 1)
    a, b = np.arange(12, dtype=np.float32).reshape(3, 4), np.full((3, 4), 0.5, np.float32)
    np.testing.assert_array_equal(run(graph, "vulkan", device, x=a, x1=b)["y"], a - b)


def test_reference_backend_needs_a_numpy_twin_for_payload_ops(tmp_path, device):
    graph = single_custom_graph(scale_add_payload(tmp_path), name="twin_scale_add")
    x = np.ones((4, 4), np.float32)
    with pytest.raises(TosaError, match="twin_scale_add has no numpy implementation.*Vulkan backend only"):
        run(graph, "reference", None, x=x)
    tosa_vk.custom_op(DOMAIN, "twin_scale_add")(lambda inputs, attrs: [inputs[0] * 2 + 5])
    try:
        np.testing.assert_array_equal(run(graph, "reference", None, x=x)["y"], x * 2 + 5)
        np.testing.assert_array_equal(run(graph, "vulkan", device, x=x)["y"], x * 2 + 5)  # still the shader
    finally:
        del custom.REGISTRY[(DOMAIN, "twin_scale_add")]


# ---- rejections -------------------------------------------------------------------------------------------------


def payload(**changes) -> bytes:
    data = json.loads(
        custom_payload.make(
            glsl=SCALE_ADD,
            workgroup_sizes=[1, 1, 1],
            inputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 0)],
            outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 1)],
        )
    )
    for k, v in changes.items():
        if v is None:
            del data[k]
        else:
            data[k] = v
    return json.dumps(data, sort_keys=True).encode()


@pytest.mark.parametrize(
    "attrs,message",
    [
        (b"{not json", "implementation_attrs is not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (payload(entry_point=None, input_0_binding=None), "missing key.*entry_point.*input_0_binding"),
        (payload(shader_language="HLSL", shader_code="RWBuffer<float> x;"), "HLSL is unsupported"),
        (payload(shader_language="WGSL"), "shader_language 'WGSL' is not one of"),
        (payload(shader_language="SPIR-V", shader_code="%%%"), "not base64"),
        (payload(shader_language="SPIR-V", shader_code=base64.b64encode(b"\0" * 20).decode()), "not a SPIR-V module"),
        (payload(workgroup_sizes=[8, 8]), "workgroup_sizes must be 3 positive ints"),
        (payload(workgroup_sizes=[0, 1, 1]), "workgroup_sizes must be 3 positive ints"),
        (payload(output_0_binding=0), "output_0 and input_0 both use set 0 binding 0"),
        (payload(input_1_binding=2), "input_1_binding describe tensors the node does not have"),
        (
            payload(input_0_type="Image"),
            "input_0_type Image does not go with input_0_vkdescriptortype VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
        ),
        (payload(input_0_type="Texture"), "input_0_type 'Texture' is not Tensor, Image or Buffer"),
        (payload(input_0_vkdescriptortype="VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER"), "is not supported"),
        (payload(input_0_descriptorset=-1), "input_0_descriptorset must be a non-negative int"),
        (payload(push_constants="scale 4"), "push_constants entry 'scale 4' is not 'name: size'"),
        (payload(push_constants="scale: 2"), "not a multiple of 4"),
        (payload(entry_point="run"), "a GLSL compute shader's entry point is main"),
        (
            payload(input_0_vkformat="VK_FORMAT_R32G32B32A32_SFLOAT"),
            "scalar element format.*channels stay in the shape",
        ),
        (
            payload(input_0_type="Image", input_0_vkdescriptortype=custom.COMBINED_IMAGE_SAMPLER),
            "missing key input_0_sampler",
        ),
        (payload(output_0_type="Image", output_0_vkdescriptortype=custom.COMBINED_IMAGE_SAMPLER), "read-only"),
    ],
)
def test_bad_payloads_are_rejected_with_the_op_named(attrs, message):
    graph = single_custom_graph(attrs, name="bad_op")
    with pytest.raises(TosaError, match=r"CUSTOM #\d+ 'y' \(com.arm.VulkanCustomShader::bad_op\).*" + message):
        tosa_vk.compile(graph, strict=True)


def test_spirv_entry_point_must_exist(tmp_path):
    data = json.loads(scale_add_payload(tmp_path))
    data["entry_point"] = "forward"
    graph = single_custom_graph(json.dumps(data).encode())
    with pytest.raises(TosaError, match="entry_point 'forward' is not a GLCompute entry point.*it has main"):
        tosa_vk.compile(graph, strict=True)


@pytest.mark.parametrize(
    "shape,fmt,message",
    [
        ((1, 4, 4, 3), RGBA, r"C in \{1, 2, 4\}.*C = 3 has no packed format"),
        ((2, 4, 4, 4), RGBA, "rank 4 must have N = 1"),
        ((1, 4, 4, 2), RGBA, "no implicit padding or promotion"),
    ],
)
def test_image_packing_rules_apply_to_payloads(shape, fmt, message):
    attrs = payload(
        input_0_type="Image",
        input_0_vkdescriptortype=custom.COMBINED_IMAGE_SAMPLER,
        input_0_vkformat=fmt,
        input_0_sampler=LINEAR_BORDER,
    )
    b = Builder()
    x = b.input("x", shape, "fp32")
    b.output(
        b.custom(
            [x],
            domain_name=DOMAIN,
            operator_name="img_op",
            implementation_attrs=attrs,
            out_shape=shape,
            out_dtype="fp32",
            name="y",
        )
    )
    with pytest.raises(TosaError, match="img_op.*input 0: tensor 'x': .*" + message):
        tosa_vk.compile(b.build(), strict=True)


def test_three_channel_image_rejected_for_registered_ops():
    tosa_vk.custom_op(
        "com.example.test",
        "rgb_image",
        source=RGBA_BIAS,
        inputs=[sampled_image(0)],
        outputs=[storage_image(1)],
        dispatch=(1, 1, 1),
    )(None)
    try:
        b = Builder()
        x = b.input("x", (1, 4, 4, 3), "fp32")
        b.output(
            b.custom(
                [x],
                domain_name="com.example.test",
                operator_name="rgb_image",
                implementation_attrs=b"",
                out_shape=(1, 4, 4, 3),
                out_dtype="fp32",
                name="y",
            )
        )
        with pytest.raises(TosaError, match="rgb_image.*C = 3 has no packed format: pad to 4 channels"):
            tosa_vk.compile(b.build(), strict=True)
    finally:
        del custom.REGISTRY[("com.example.test", "rgb_image")]


def test_glslc_errors_name_the_custom_op(device):
    broken = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undefined_thing = 1; }\n"
    tosa_vk.custom_op(
        "com.example.test", "broken", source=broken, inputs=[buffer(0)], outputs=[buffer(1)], dispatch=(1, 1, 1)
    )(None)
    try:
        graph = single_custom_graph(b"", domain="com.example.test", name="broken")
        with pytest.raises(
            ShaderError,
            match=r"CUSTOM #\d+ 'y' \(com.example.test::broken\) \[<inline>\]:3: "
            r"error: 'undefined_thing'",
        ):
            run(graph, "vulkan", device, x=np.zeros((4, 4), np.float32))
        bad_payload = single_custom_graph(payload(shader_code=broken), name="broken_payload")
        with pytest.raises(ShaderError, match=r"com.arm.VulkanCustomShader::broken_payload.*undefined_thing"):
            run(bad_payload, "vulkan", device, x=np.zeros((4, 4), np.float32))
    finally:
        del custom.REGISTRY[("com.example.test", "broken")]


def test_invalid_spirv_is_caught_by_spirv_val(tmp_path, device):
    spirv = bytearray(glsl_to_spirv(SCALE_ADD, tmp_path))
    spirv[12:16] = (0).to_bytes(4, "little")  # id bound 0: every id is out of range
    graph = single_custom_graph(
        payload(shader_language="SPIR-V", shader_code=base64.b64encode(spirv).decode()), name="corrupt"
    )
    with pytest.raises(ShaderError, match="VulkanCustomShader::corrupt.*SPIR-V module is invalid"):
        run(graph, "vulkan", device, x=np.zeros((4, 4), np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_unknown_domain_is_a_clear_error(backend, device):
    graph = single_custom_graph(b"", domain="org.nowhere", name="mystery")
    with pytest.raises(
        TosaError,
        match=r"org.nowhere::mystery( is not registered|: no declaration is registered "
        r"for domain 'org.nowhere')",
    ):
        run(graph, backend, device, x=np.zeros((4, 4), np.float32))


def test_declaration_binding_count_and_inferred_shapes_must_match_the_node():
    cm = example("color_matrix")
    b = Builder()
    x = b.input("x", (1, 2, 2, 3), "fp32")
    b.output(
        b.custom(
            [x, x],
            domain_name=cm.DOMAIN,
            operator_name=cm.NAME,
            implementation_attrs=cm.attrs(np.eye(3), [0, 0, 0]),
            out_shape=(1, 2, 2, 3),
            out_dtype="fp32",
            name="y",
        )
    )
    with pytest.raises(TosaError, match="binding mismatch: the declaration binds 1 input.*node has 2"):
        tosa_vk.compile(b.build(), strict=True)
    b = Builder()
    x = b.input("x", (1, 2, 2, 3), "fp32")
    b.output(
        b.custom(
            [x],
            domain_name=cm.DOMAIN,
            operator_name=cm.NAME,
            implementation_attrs=cm.attrs(np.eye(3), [0, 0, 0]),
            out_shape=(1, 2, 2, 4),
            out_dtype="fp32",
            name="y",
        )
    )
    with pytest.raises(TosaError, match="outputs .* differ from what the declaration infers"):
        tosa_vk.compile(b.build(), strict=True)


def test_declaration_mistakes_are_caught_at_registration():
    with pytest.raises(TosaError, match="exactly one dispatch rule"):
        tosa_vk.custom_op("com.example.test", "x", source=SCALE_ADD, inputs=[buffer(0)], outputs=[buffer(1)])(None)
    with pytest.raises(TosaError, match="cannot read shader"):
        tosa_vk.custom_op(
            "com.example.test",
            "x",
            shader="/nonexistent/x.comp",
            inputs=[buffer(0)],
            outputs=[buffer(1)],
            dispatch=(1, 1, 1),
        )(None)
    with pytest.raises(TosaError, match="layout must be None or 'NHWC'"):
        tosa_vk.custom_op("com.example.test", "x", layout="NCHW")
    with pytest.raises(TosaError, match="bindings are tosa_vk.custom.buffer"):
        tosa_vk.custom_op(
            "com.example.test", "x", source=SCALE_ADD, inputs=[0], outputs=[buffer(1)], dispatch=(1, 1, 1)
        )(None)
    assert ("com.example.test", "x") not in custom.REGISTRY
    assert tensor(2).descriptor == custom.TENSOR_ARM and Sampler().items()[0][0] == "address_mode_u"


SCALE_BY_PUSH = """#version 450
layout(local_size_x = LOCAL_SIZE_X) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
layout(push_constant) uniform P { uint n; float scale; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) b[i] = a[i] * p.scale; }
"""
GOOD_PUSH = np.array([64], np.uint32).tobytes() + np.array([2], np.float32).tobytes()


@pytest.mark.parametrize(
    "change, message",
    [
        ({}, None),
        # each of these ran before, and segfaulted (no push_constants) or gave garbage
        ({"push_constants": b""}, "push-constant block spans 8 bytes but the kernel pushes 0 .the declaration's"),
        ({"push_constants": GOOD_PUSH[:4]}, "spans 8 bytes but the kernel pushes 4"),
        ({"outputs": [buffer(2)]}, "declares storage buffer at set 0 binding 1, which the kernel does not bind"),
        ({"inputs": [buffer(0, set=1)]}, "declares storage buffer at set 0 binding 0, which the kernel does not"),
        (
            {"source": SCALE_BY_PUSH.replace("LOCAL_SIZE_X", "16")},
            r"workgroup size is \[16, 1, 1\] but the declaration says workgroup_size=\(64, 1, 1\)",
        ),
        # a user's rule returning the wrong kind of value is an error naming the op, not a crash
        ({"push_constants": lambda s: [1.5, 2.0]}, "push_constants must give bytes .or a numpy array., got list"),
        ({"infer": lambda s: 5}, "infer rule failed or did not return"),
    ],
    ids=["agrees", "no-push-constants", "short-push", "binding", "set", "workgroup", "push-list", "infer"],
)
def test_declarations_are_checked_against_the_shader_before_any_dispatch(change, message, device):
    """The declaration is compared with the shader's own interface (SPIR-V reflection: bindings and descriptor
    types, push-constant block size, local size) at load, and the error names the operator."""
    options = {
        "source": SCALE_BY_PUSH,
        "inputs": [buffer(0)],
        "outputs": [buffer(1)],
        "workgroup_size": (64, 1, 1),
        "grid": (64, 1, 1),
        "push_constants": GOOD_PUSH,
        **change,
    }
    infer = options.pop("infer", None)
    tosa_vk.custom_op("com.example.test", "scale_by_push", infer=infer, **options)(lambda inputs, attrs: [inputs[0]])
    try:
        x = np.arange(64, dtype=np.float32)
        if message is None:
            b = Builder()
            b.output(custom.call(b, "com.example.test", "scale_by_push", [b.input("x", (64,), "fp32")], name_hint="y"))
            np.testing.assert_array_equal(run(b.build(), "vulkan", device, x=x)["y"], 2 * x)
            return
        with pytest.raises((TosaError, VulkanError), match=rf"scale_by_push.*{message}"):
            b = Builder()
            b.output(custom.call(b, "com.example.test", "scale_by_push", [b.input("x", (64,), "fp32")], name_hint="y"))
            run(b.build(), "vulkan", device, x=x)
    finally:
        del custom.REGISTRY[("com.example.test", "scale_by_push")]


def test_cli_check_runs_the_numpy_twin(tmp_path):
    """`tosa-vk run --backend vulkan --check` with the op registered through TOSA_VK_CUSTOM_OPS."""
    import os
    import sys

    cm = example("color_matrix")
    b = Builder()
    x = b.input("x", (1, 4, 5, 3), "fp32")
    b.output(custom.call(b, cm.DOMAIN, cm.NAME, [x], cm.attrs(np.eye(3) * 2, [1, 1, 1]), name_hint="y"))
    tosa_vk.save_graph(b.build(), tmp_path / "m.tosa")
    np.save(tmp_path / "x.npy", np.random.default_rng(5).standard_normal((1, 4, 5, 3)).astype(np.float32))
    env = {
        **os.environ,
        "TOSA_VK_CUSTOM_OPS": str(EXAMPLES / "color_matrix.py"),
        "PYTHONPATH": str(EXAMPLES.parent.parent),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tosa_vk.tools.cli",
            "run",
            str(tmp_path / "m.tosa"),
            "-i",
            f"x={tmp_path / 'x.npy'}",
            "--backend",
            "vulkan",
            "--check",
            "--tolerance",
            "1e-5",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 operators as Vulkan kernels, 0 fused into them, 0 on the host" in done.stdout


def test_images_with_a_staged_arena(device):
    """Device-local arena + staging twin (discrete GPUs): image copies go through the device arena."""
    from tosa_vk.vulkan.runtime import Runtime

    gr, gs = example("gradient"), example("grid_sample")
    b = Builder()
    img = b.input("img", (1, 5, 6, 1), "fp32")
    grad = custom.call(b, gr.DOMAIN, gr.NAME, [img], name_hint="grad")
    grid = b.input("grid", (1, 3, 3, 2), "fp32")
    b.output(custom.call(b, gs.DOMAIN, gs.NAME, [grad, grid], name_hint="y"))  # storage image out -> sampled in
    program = tosa_vk.compile(b.build(), strict=True)
    rng = np.random.default_rng(6)
    iv = rng.standard_normal((1, 5, 6, 1)).astype(np.float32)
    gv = rng.uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32)
    with Runtime(program, device, force_staging=True) as rt:
        got = rt.run({"img": iv, "grid": gv})["y"]
    want = gs.bilinear(gr.central_differences(iv), gv)
    assert float(np.abs(got - want).max()) <= 1e-4


@pytest.mark.parametrize("c", [1, 2, 4])
def test_sampled_images_of_each_packed_format_round_trip(c, device):
    """[H,W,C] (rank 3) sampled images with C = 1, 2, 4 read back texel by texel into a buffer."""
    glsl = f"""#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform sampler2D img;
layout(set = 0, binding = 1) writeonly buffer O {{ float o[]; }};
void main() {{
    ivec2 p = ivec2(gl_WorkGroupID.xy);
    vec4 t = texelFetch(img, p, 0);
    for (int k = 0; k < {c}; ++k) o[(p.y * 5 + p.x) * {c} + k] = t[k];
}}
"""
    fmt = {1: F32, 2: "VK_FORMAT_R32G32_SFLOAT", 4: RGBA}[c]
    nearest = {**LINEAR_BORDER, "mag_filter": "VK_FILTER_NEAREST", "min_filter": "VK_FILTER_NEAREST"}
    attrs = custom_payload.make(
        glsl=glsl,
        workgroup_sizes=[5, 4, 1],
        inputs=[resource("Image", custom.COMBINED_IMAGE_SAMPLER, fmt, 0, sampler=nearest)],
        outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 1)],
    )
    graph = single_custom_graph(attrs, shape=(4, 5, c), name=f"fetch{c}")
    x = np.random.default_rng(c).standard_normal((4, 5, c)).astype(np.float32)
    np.testing.assert_array_equal(run(graph, "vulkan", device, x=x)["y"], x)

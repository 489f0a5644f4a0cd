"""A custom kernel's bindings are checked against what its shader does with them (issue 34): a binding declared as
an input that the shader writes, or an output that the shader declares readonly and never writes, is a TosaError
naming the operator and the binding at load, before any dispatch. Found: a payload whose input and output bindings
were swapped against its shader ran, the shader wrote into its input tensor and the output stayed zeros."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_custom_ops import F32, SCALE_ADD, glsl_to_spirv, resource, run, single_custom_graph

import tosa_vk
from tosa_vk import Builder, TosaError, custom
from tosa_vk.abi import custom_payload, spirv
from tosa_vk.backends.vgf import VGFModel
from tosa_vk.formats.vgf_export import export_vgf
from vgf import Binding, read_vgf, write_vgf

pytestmark = pytest.mark.vulkan

# input at binding 0 (readonly), output at binding 1 (writeonly): the roles are in the shader too
DOUBLE = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < x.length()) y[i] = x[i] * 2.0; }
"""
# an output the shader reads too (y += x): fine
ACCUMULATE = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) buffer Out { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < x.length()) { y[i] = 0.0; y[i] += x[i] * 2.0; } }
"""
# writes through an image passed to a function, a texel pointer atomic and an array of buffers
IMAGES = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D in_image;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D out_image;
layout(set = 0, binding = 2, r32ui) uniform uimage2D counter;
layout(set = 1, binding = 0) buffer A { uint a[]; } arr[2];
layout(set = 1, binding = 1) readonly buffer R { uint r[]; };
void put(writeonly image2D im, ivec2 c, vec4 v) { imageStore(im, c, v); }
void main() {
  ivec2 c = ivec2(gl_GlobalInvocationID.xy);
  put(out_image, c, texture(in_image, vec2(c)) + float(r[0]));
  imageAtomicAdd(counter, c, 1u);
  atomicAdd(arr[1].a[0], 1u);
}
"""


def buffer_payload(input_binding: int, output_binding: int, **code) -> bytes:
    return custom_payload.make(
        workgroup_sizes=[1, 1, 1],
        inputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, input_binding)],
        outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, output_binding)],
        **code,
    )


def test_reflection_finds_what_the_shader_writes_and_reads(tmp_path):
    found = spirv.reflect(glsl_to_spirv(IMAGES, tmp_path))
    assert found.writes == {(0, 1): "OpImageWrite", (0, 2): "OpAtomicIAdd", (1, 0): "OpAtomicIAdd"}
    assert found.reads == {(0, 0), (1, 1)}
    assert found.non_writable == {(1, 1)} and found.non_readable == {(0, 1)}
    double = spirv.reflect(glsl_to_spirv(DOUBLE, tmp_path))
    assert double.writes == {(0, 1): "OpStore"} and double.reads == {(0, 0)}
    assert double.non_writable == {(0, 0)} and double.non_readable == {(0, 1)}


def test_swapped_glsl_payload_bindings_are_refused_before_any_dispatch(device):
    """SCALE_ADD declares no readonly / writeonly: the store into binding 1, declared the input, gives it away."""
    graph = single_custom_graph(buffer_payload(1, 0, glsl=SCALE_ADD), name="swapped")
    with pytest.raises(TosaError, match=r"swapped.*'x' \(set 0 binding 1\) is declared an input, but the shader "
                       r"writes it \(OpStore\)"):  # fmt: skip
        tosa_vk.load(graph, backend="vulkan", device=device)


def test_swapped_spirv_payload_bindings_name_both_bindings(tmp_path, device):
    graph = single_custom_graph(buffer_payload(1, 0, spirv=glsl_to_spirv(DOUBLE, tmp_path)), name="swapped")
    with pytest.raises(TosaError) as err:
        tosa_vk.load(graph, backend="vulkan", device=device)
    text = str(err.value)
    assert "'x' (set 0 binding 1) is declared an input, but the shader writes it (OpStore)" in text, text
    assert "'y' (set 0 binding 0) is declared an output, but the shader declares it NonWritable" in text, text


@pytest.mark.parametrize("shader", [DOUBLE, ACCUMULATE], ids=["writeonly-output", "read-output"])
def test_outputs_the_shader_reads_or_only_writes_run(shader, tmp_path, device):
    graph = single_custom_graph(buffer_payload(0, 1, spirv=glsl_to_spirv(shader, tmp_path)), shape=(64,))
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(run(graph, "vulkan", device, x=x)["y"], 2 * x)


def test_a_registered_declaration_with_swapped_bindings_is_refused(device):
    def slot(binding: int) -> custom.Binding:
        return custom.Binding(custom.STORAGE_BUFFER, binding)

    grid = (64, 1, 1)
    tosa_vk.custom_op("com.example.roles", "double", inputs=[slot(1)], outputs=[slot(0)], source=DOUBLE, grid=grid)(
        lambda inputs, attrs: [2 * inputs[0]]
    )
    try:
        b = Builder()
        b.output(custom.call(b, "com.example.roles", "double", [b.input("x", (64,), "fp32")], name_hint="y"))
        with pytest.raises(TosaError, match=r"double.*is declared an input, but the shader writes it"):
            tosa_vk.load(b.build(), backend="vulkan", device=device)
    finally:
        del custom.REGISTRY[("com.example.roles", "double")]


def swapped_segment_vgf(tmp_path, listed: bool):
    """A COMPUTE-segment VGF of a DOUBLE payload whose segment binds the input resource where the shader writes
    and the output where it reads; `listed`: the segment keeps its inputs / outputs lists (else it has none)."""
    graph = single_custom_graph(buffer_payload(0, 1, spirv=glsl_to_spirv(DOUBLE, tmp_path)), shape=(64,))
    vgf = export_vgf(tosa_vk.compile(graph))
    seg = next(s for s in vgf.segments if s.type == "COMPUTE")
    (d,) = seg.set_infos
    swapped = [Binding(a.binding, b.mrt_index) for a, b in zip(d.bindings, reversed(d.bindings))]
    seg.set_infos = [dataclasses.replace(d, bindings=swapped)]
    if not listed:
        seg.inputs, seg.outputs = [], []
    return read_vgf(write_vgf(vgf))


@pytest.mark.parametrize("listed", [True, False], ids=["listed-io", "no-io-lists"])
def test_a_vgf_segment_writing_its_input_resource_is_refused(listed, tmp_path, device):
    with pytest.raises(TosaError, match=r"'x' \(set 0 binding 1\) is declared an input, but the shader writes it"):
        VGFModel(swapped_segment_vgf(tmp_path, listed), device)

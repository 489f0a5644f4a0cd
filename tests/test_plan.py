"""The resource planner: the custom-operator contract's rules, explicit permutes, memory packing."""

from __future__ import annotations

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, DType, TosaError
from tosa_vk.stages.passes.permute import NCHW_TO_NHWC, insert_permutes, merge_transposes
from tosa_vk.stages.plan.resources import (
    COMBINED_IMAGE_SAMPLER,
    STORAGE_BUFFER,
    STORAGE_IMAGE,
    TENSOR_ARM,
    check_alias_group,
    resource,
)

# ---- descriptor / format rules ---------------------------------------------------------------------------------


def test_buffers_and_tensors_are_scalar_with_channels_in_the_shape():
    r = resource("grid", (1, 8, 8, 3), DType.FP32)  # C = 3 is fine on buffer paths
    assert (r.descriptor, r.format, r.strides) == (STORAGE_BUFFER, "VK_FORMAT_R32_SFLOAT", (192, 24, 3, 1))
    t = resource("t", (2, 4), DType.BF16, TENSOR_ARM)
    assert t.format == "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM"
    with pytest.raises(TosaError, match="'grid'.*scalar element format.*not VK_FORMAT_R32G32B32A32_SFLOAT"):
        resource("grid", (1, 8, 8, 4), DType.FP32, STORAGE_BUFFER, "VK_FORMAT_R32G32B32A32_SFLOAT")


@pytest.mark.parametrize(
    "c,fmt", [(1, "VK_FORMAT_R32_SFLOAT"), (2, "VK_FORMAT_R32G32_SFLOAT"), (4, "VK_FORMAT_R32G32B32A32_SFLOAT")]
)
def test_images_pack_channels_into_the_format(c, fmt):
    r = resource("img", (1, 16, 32, c), DType.FP32, COMBINED_IMAGE_SAMPLER)
    assert r.format == fmt and r.image_extent == (32, 16)
    assert resource("img", (16, 32, c), DType.FP32, STORAGE_IMAGE).format == fmt


@pytest.mark.parametrize(
    "shape,dtype,fmt,message",
    [
        ((1, 8, 8, 3), DType.FP32, None, r"C in \{1, 2, 4\}.*C = 3 has no packed format"),
        ((2, 8, 8, 4), DType.FP32, None, "rank 4 must have N = 1"),
        ((8, 8), DType.FP32, None, r"shape \[H,W,C\] or \[1,H,W,C\]"),
        ((1, 8, 8, 2), DType.FP32, "VK_FORMAT_R32G32B32A32_SFLOAT", "no implicit padding or promotion"),
        ((1, 8, 8, 4), DType.INT8, None, "fp32 texels"),
    ],
)
def test_image_rule_violations(shape, dtype, fmt, message):
    for descriptor in (STORAGE_IMAGE, COMBINED_IMAGE_SAMPLER):
        with pytest.raises(TosaError, match=message):
            resource("img", shape, dtype, descriptor, fmt)


def test_alias_groups_must_describe_the_same_data():
    a = resource("t", (1, 4, 4, 4), DType.FP32, TENSOR_ARM, alias_group=0)
    b = resource("i", (4, 4, 4), DType.FP32, STORAGE_IMAGE, alias_group=0)
    check_alias_group([a, b])
    c = resource("i2", (4, 4, 2), DType.FP32, STORAGE_IMAGE, alias_group=0)
    with pytest.raises(TosaError, match="alias group 0: 'i2'"):
        check_alias_group([a, c])


# ---- explicit permutes ----------------------------------------------------------------------------------------


@pytest.fixture
def nhwc_scale():
    """A CUSTOM op whose shader ABI is NHWC: multiplies channel c by (c + 1)."""

    @tosa_vk.custom_op("com.example.test", "channel_scale")
    def channel_scale(inputs, attrs):
        x = inputs[0]
        return [x * np.arange(1, x.shape[-1] + 1, dtype=x.dtype)]

    return lambda op: op.op == "CUSTOM"


def nchw_graph(custom_ops: int):
    b = Builder()
    x = b.input("x", (1, 3, 4, 5), "fp32")  # the graph holds NCHW tensors
    y = x
    for i in range(custom_ops):
        y = b.custom(
            [y],
            domain_name="com.example.test",
            operator_name="channel_scale",
            implementation_attrs=b"",
            out_shape=(1, 3, 4, 5),
            out_dtype="fp32",
            name=f"c{i}",
        )
    b.output(b.add(y, y, name="out"))
    return b.build(), {n: "NCHW" for n in ["x"] + [f"c{i}" for i in range(custom_ops)]}


def expected(x, custom_ops):
    scale = np.arange(1, 4, dtype=np.float32).reshape(1, 3, 1, 1)  # per NCHW channel
    return 2 * x * scale**custom_ops


def test_permutes_are_inserted_around_an_nhwc_op(nhwc_scale):
    graph, layouts = nchw_graph(1)
    assert insert_permutes(graph, layouts, nhwc_scale) == 2
    ops = [op.op for op in graph.main.operators if op.op not in ("CONST",)]
    assert ops == ["TRANSPOSE", "CUSTOM", "TRANSPOSE", "ADD"]
    assert graph.main.operators[0].attrs["perms"] == NCHW_TO_NHWC
    tosa_vk.validate(graph)
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 5)).astype(np.float32)
    for backend in ("reference", "vulkan"):
        with tosa_vk.load(graph, backend=backend) as model:
            np.testing.assert_allclose(model.run(x=x)["out"], expected(x, 1), rtol=1e-6)


def test_adjacent_inverse_permutes_are_elided(nhwc_scale):
    graph, layouts = nchw_graph(2)
    assert insert_permutes(graph, layouts, nhwc_scale) == 4
    assert merge_transposes(graph) == 2
    ops = [op.op for op in graph.main.operators]
    assert ops == ["TRANSPOSE", "CUSTOM", "CUSTOM", "TRANSPOSE", "ADD"]
    tosa_vk.validate(graph)
    x = np.random.default_rng(1).standard_normal((1, 3, 4, 5)).astype(np.float32)
    with tosa_vk.load(graph, backend="vulkan") as model:
        np.testing.assert_allclose(model.run(x=x)["out"], expected(x, 2), rtol=1e-6)


# ---- memory ---------------------------------------------------------------------------------------------------


def test_memory_packing_on_the_shipped_models(model_dir):
    graph = tosa_vk.load_graph(model_dir / "model.tosa")
    program = tosa_vk.compile(graph, alignment=16)
    mem = program.memory
    print(
        f"\n{model_dir.name}: intermediates {mem['dynamic_bytes']} B, lower bound "
        f"{mem['dynamic_lower_bound_bytes']} B, no reuse {mem['dynamic_naive_bytes']} B; constants "
        f"{mem['static_bytes']} B"
    )
    assert mem["dynamic_bytes"] <= 1.1 * mem["dynamic_lower_bound_bytes"]
    assert mem["dynamic_bytes"] < mem["dynamic_naive_bytes"]


def test_plan_cli_json(model_dir):
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tosa_vk.tools.cli", "plan", str(model_dir / "model.tosa"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    plan = json.loads(done.stdout)
    kinds = {r["kind"] for r in plan["tensors"]}
    assert {"constant", "input", "output"} <= kinds
    assert all(r["descriptor"] == "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER" for r in plan["tensors"])
    assert plan["memory"]["arena_bytes"] >= plan["memory"]["static_bytes"] + plan["memory"]["dynamic_lower_bound_bytes"]
    aliases = [r for r in plan["tensors"] if r["alias_group"] is not None]
    assert all(sum(a["alias_group"] == r["alias_group"] for a in aliases) >= 2 for r in aliases)


def test_program_records_each_tensors_resource():
    """Kernels' image / TENSOR_ARM bindings reach the plan (what VGF export and `tosa-vk plan` show); other tensors
    are storage buffers with scalar formats; RESHAPE aliases form a checked alias group."""
    import importlib.util
    from pathlib import Path

    from tosa_vk import custom

    path = Path(__file__).resolve().parent.parent / "resources" / "custom_ops" / "grid_sample.py"
    spec = importlib.util.spec_from_file_location("custom_op_example_grid_sample", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    b = Builder()
    img = b.input("img", (1, 4, 4, 4), "fp32")
    grid = b.input("grid", (1, 2, 2, 2), "fp32")
    y = custom.call(b, "com.example", "grid_sample", [img, grid], name_hint="y")
    b.output(b.reshape(y, [16]))
    program = tosa_vk.compile(b.build(), strict=True)
    res = program.resources
    assert (res["img"].descriptor, res["img"].format) == (COMBINED_IMAGE_SAMPLER, "VK_FORMAT_R32G32B32A32_SFLOAT")
    assert res["img"].image_extent == (4, 4)
    assert (res["grid"].descriptor, res["grid"].format) == (STORAGE_BUFFER, "VK_FORMAT_R32_SFLOAT")
    (out,) = program.outputs
    assert res["y"].alias_group is not None and res["y"].alias_group == res[out].alias_group
    assert res["grid"].alias_group is None

"""Arm's documented ML SDK flow on tosa_vk's compute export, with nothing but the scenario template's placeholders
filled in: `vgf_dump -i model.vgf -o scenario.json --scenario-template`, every TEMPLATE_PATH_* replaced by a file
name (an input's .npy file, an output's destination, a compute module's SPIR-V as `vgf_dump --dump-spirv <index>`
writes it), then `scenario-runner --scenario scenario.json`. Constants come from the file (a constant graph fills
them, tosa_vk/formats/vgf_export.py). Every output must match the reference backend (integers and bools exactly, floats
to 1e-4 of the output's largest magnitude), and so must tosa_vk's own VGF runner on the same file. The three shared
models, custom shaders (registered GLSL ops with baked push constants in two descriptor sets, a sampled constant
texture, an ExecuTorch-style SPIR-V payload between permutes) and constants of every element-type path. Skipped
when Arm's tools are not installed."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from helpers import arm_flow
from test_custom_ops import DOMAIN, example
from test_vgf_custom import rgba_bias_attrs

import tosa_vk
from tosa_vk import custom
from tosa_vk.backends.reference import ReferenceModel
from tosa_vk.backends.vgf import VGFModel
from tosa_vk.ir import load_graph
from vgf import load_vgf

pytestmark = pytest.mark.vulkan

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted((ROOT / "resources" / "models").glob("*/desc.json"))
FLOATS = ("float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2")


def check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """got (bytes as scenario-runner stores a buffer, or an array) against the reference backend's want."""
    got = np.frombuffer(np.ascontiguousarray(got).tobytes(), want.dtype).reshape(want.shape)
    if want.dtype.name in FLOATS:
        g, w = got.astype(np.float64), want.astype(np.float64)
        scale = float(np.abs(w).max()) if w.size else 0.0
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * scale, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def export_and_run(graph, feeds: dict, arm, device, tmp_path: Path, file: str | None = None) -> dict:
    """Exports `graph` (compiled for lavapipe, every operator a kernel), runs it through Arm's flow and through
    tosa_vk's VGF runner; both must match the reference backend. Returns the reference outputs."""
    reference = tosa_vk.load(graph, backend="reference")
    assert isinstance(reference, ReferenceModel)
    want = reference.run(feeds)
    path = tmp_path / "model.vgf"
    vgf = reference.export_vgf(path)
    assert vgf.input_names == list(reference.inputs) and vgf.output_names == list(want)  # constants are no inputs
    got = arm_flow(arm, path, [feeds[n] for n in vgf.input_names])
    for (name, value), arm_value in zip(want.items(), got):
        check(arm_value, value, f"{file or 'graph'}: scenario-runner output {name}")
    with VGFModel(path, device) as ours:
        again = ours.run({n: feeds[n] for n in vgf.input_names})
    for name, value in want.items():
        check(again[name], value, f"{file or 'graph'}: tosa_vk VGF runner output {name}")
    return want


@pytest.mark.parametrize("desc", MODELS, ids=[d.parent.name for d in MODELS])
def test_models(desc, arm, device, tmp_path):
    folder = desc.parent
    spec = json.loads(desc.read_text())
    graph = load_graph(folder / spec["tosa_file"])
    feeds = {n: np.load(folder / f) for n, f in zip(spec["ifm_name"], spec["ifm_file"])}
    export_and_run(graph, feeds, arm, device, tmp_path, folder.name)
    assert any(s.type == "GRAPH" for s in load_vgf(tmp_path / "model.vgf").segments), "the model has constants"


def test_custom_shaders_with_constants(arm, device, tmp_path):
    """grid_sample (a sampled image: here a constant texture, which a conversion dispatch fills from the constant
    graph's buffer) plus a constant bias; color_matrix (buffers in two descriptor sets, push constants baked into
    the module) times a constant; rgba_bias, an ExecuTorch-style SPIR-V payload sampling an image between permutes,
    over an input plus a constant (its numpy twin registered for the reference backend)."""
    gs, cm = example("grid_sample"), example("color_matrix")
    rng = np.random.default_rng(1)
    b = tosa_vk.Builder()
    grid = b.input("grid", (1, 5, 7, 2), "fp32")
    x = b.input("x", (1, 7, 9, 3), "fp32")
    p = b.input("p", (1, 4, 3, 5), "fp32")
    texture = b.const(rng.standard_normal((1, 6, 10, 4)).astype(np.float32), name="texture")
    y = custom.call(b, gs.DOMAIN, gs.NAME, [texture, grid], name_hint="y")
    b.output(b.add(y, rng.standard_normal((1, 1, 1, 4)).astype(np.float32), name="y_bias"))
    c = custom.call(b, cm.DOMAIN, cm.NAME, [x], cm.attrs(rng.standard_normal((3, 3)), [0.5, -1, 2]), name_hint="c")
    shift = np.zeros(1, np.int8)
    b.output(b.op("MUL", c, rng.standard_normal((1, 7, 9, 3)).astype(np.float32), shift, name="c_scaled"))
    nhwc = b.transpose(b.add(p, rng.standard_normal((1, 4, 3, 5)).astype(np.float32)), perms=[0, 2, 3, 1])
    biased = b.custom(
        [nhwc],
        domain_name=DOMAIN,
        operator_name="flow_rgba_bias",
        implementation_attrs=rgba_bias_attrs(tmp_path),
        out_shape=(1, 3, 5, 4),
        out_dtype="fp32",
    )
    b.output(b.transpose(biased, perms=[0, 3, 1, 2], name="p_out"))
    feeds = {
        "grid": rng.uniform(-1.2, 1.2, (1, 5, 7, 2)).astype(np.float32),
        "x": rng.standard_normal((1, 7, 9, 3)).astype(np.float32),
        "p": rng.standard_normal((1, 4, 3, 5)).astype(np.float32),
    }
    tosa_vk.custom_op(DOMAIN, "flow_rgba_bias")(lambda inputs, attrs: [inputs[0] + np.float32([10, 20, 30, 40])])
    try:
        export_and_run(b.build(), feeds, arm, device, tmp_path)
    finally:
        del custom.REGISTRY[(DOMAIN, "flow_rgba_bias")]
    vgf = load_vgf(tmp_path / "model.vgf")
    shaders = [vgf.modules[s.module_index].name for s in vgf.segments if s.type == "COMPUTE"]
    assert any("buffer_to_image" in name for name in shaders), "the constant texture is converted into its image"


def test_constants_of_each_element_type(arm, device, tmp_path):
    """Graph tensors of the constants' own types (fp16, int16, int32, fp32) and of bytes (bool, bf16); a rank-0
    constant; a constant that is an output (copied into an output of its own)."""
    rng = np.random.default_rng(2)
    b = tosa_vk.Builder()
    h = b.input("h", (2, 5), "fp16")
    i16 = b.input("i16", (3, 4), "int16")
    flags = b.input("flags", (6,), "bool")
    bf = b.input("bf", (4,), "bf16")
    s = b.input("s", (), "int32")
    b.output(b.add(h, rng.standard_normal((2, 5)).astype(np.float16), name="h_out"))
    b.output(b.op("TABLE", i16, np.linspace(-20000, 20000, 513).astype(np.int16), name="table_out"))
    b.output(b.op("LOGICAL_AND", flags, np.array([1, 0, 1, 1, 0, 1], bool), name="flags_out"))
    b.output(b.add(bf, np.array([1.5, -2, 3.25, 0.125], ml_dtypes.bfloat16), name="bf_out"))
    b.output(b.add(s, np.array(7, np.int32), name="s_out"))
    b.output(b.reshape(b.const(np.arange(6, dtype=np.float32), name="k"), (2, 3), name="k_out"))
    feeds = {
        "h": rng.standard_normal((2, 5)).astype(np.float16),
        "i16": rng.integers(-32768, 32767, (3, 4)).astype(np.int16),
        "flags": np.array([1, 1, 0, 1, 1, 0], bool),
        "bf": np.array([1, 2, 3, 4], ml_dtypes.bfloat16),
        "s": np.array(5, np.int32),
    }
    export_and_run(b.build(), feeds, arm, device, tmp_path)
    vgf = load_vgf(tmp_path / "model.vgf")
    formats = sorted(vgf.resources[c.mrt_index].format for c in vgf.constants)
    assert formats == [14, 14, 75, 76, 99, 100], formats  # bool and bf16 as R8_SINT bytes, the others as they are

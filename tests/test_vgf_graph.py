"""VGF files with GRAPH segments (tosa_vk/formats/vgf_graph.py): our export run by Arm's documented flow,
model-converter's files run by tosa_vk on both backends, vgf2tosa, and the errors for what a graph module cannot
hold."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from helpers import arm_flow, graph_spirv_val
from test_spirv_graph import assert_same_graph

import tosa_vk
from tosa_vk import Builder, TosaError, custom
from tosa_vk.abi import custom_payload
from tosa_vk.formats.spirv_graph.constants import runs_as_is
from tosa_vk.formats.vgf_graph import export, to_graph
from tosa_vk.tools.bench.anchors import arm_sdk
from tosa_vk.tools.cli import main as cli
from vgf import load_vgf

MODELS = Path(__file__).resolve().parents[1] / "resources" / "models"
SHIPPED = sorted(p.name for p in MODELS.iterdir() if (p / "model.tosa").is_file())


def needs_arm_sdk() -> None:
    reason = arm_sdk.available()
    if reason is not None:
        pytest.skip(reason)


def model_case(name: str) -> tuple[Path, np.ndarray, np.ndarray]:
    folder = MODELS / name
    return folder / "model.tosa", np.load(folder / "input-0.npy"), np.load(folder / "ref-result-0.npy")


def close_enough(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Integers exactly, floats within the fp32 models' tolerance (the reference results are fp64-rounded)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.kind in "iub":
        assert np.array_equal(got, want), f"{what}: {np.count_nonzero(got != want)} elements differ"
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=what)


def spirv_val(vgf) -> None:
    for i, module in enumerate(vgf.modules):
        if module.type == "GRAPH":
            assert not (complaint := graph_spirv_val(module.code)), f"module {i}: {complaint}"


# ---- our export: Arm's documented flow ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_graph_export_runs_in_arms_documented_flow(name, arm, tmp_path):
    tosa, x, want = model_case(name)
    vgf = export(tosa_vk.load_graph(tosa), tmp_path / "model.vgf")
    assert [s.type for s in vgf.segments] == ["GRAPH"] and vgf.constants
    spirv_val(vgf)
    (got,) = arm_flow(arm, tmp_path / "model.vgf", [x])
    close_enough(got, want, f"{name}: scenario-runner")
    again = tosa_vk.load(tmp_path / "model.vgf", backend="vulkan").run({vgf.input_names[0]: x})
    close_enough(next(iter(again.values())), want, f"{name}: tosa_vk on the exported VGF")


@pytest.mark.parametrize("name", SHIPPED)
def test_decoding_our_export_gives_the_graph_back(name):
    graph = tosa_vk.load_graph(MODELS / name / "model.tosa")
    assert_same_graph(graph.main, to_graph(export(graph)).main)


def mixed_graph(tmp_path: Path) -> tuple[tosa_vk.Graph, dict]:
    """ADD -> a VulkanCustomShader (SPIR-V, buffers) -> MUL: GRAPH, COMPUTE, GRAPH segments."""
    from test_custom_ops import F32, SCALE_ADD, glsl_to_spirv, resource

    b = Builder()
    x = b.input("x", (4, 16), "fp32")
    a = b.add(x, np.ones((4, 16), np.float32), name="a")
    attrs = custom_payload.make(
        workgroup_sizes=[1, 1, 1],
        spirv=glsl_to_spirv(SCALE_ADD, tmp_path),
        inputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 0)],
        outputs=[resource("Buffer", custom.STORAGE_BUFFER, F32, 1)],
    )
    c = b.custom(
        [a], domain_name=custom_payload.DOMAIN, operator_name="scale_add", implementation_attrs=attrs,
        out_shape=(4, 16), out_dtype="fp32", name="c",
    )  # fmt: skip
    b.output(b.mul(c, np.full((4, 16), 3.0, np.float32), name="d"))
    x_value = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    return b.build(), {"x": x_value}


def test_graph_and_compute_segments_run_in_arms_documented_flow(arm, tmp_path):
    graph, feeds = mixed_graph(tmp_path)
    want = ((feeds["x"] + 1) * 2 + 5) * 3
    vgf = export(graph, tmp_path / "mixed.vgf")
    assert [s.type for s in vgf.segments] == ["GRAPH", "COMPUTE", "GRAPH"]
    spirv_val(vgf)
    (got,) = arm_flow(arm, tmp_path / "mixed.vgf", [feeds["x"]])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with tosa_vk.load(tmp_path / "mixed.vgf") as model:  # decoded: CUSTOM between two graphs
        assert [op.op for op in model.graph.main.operators if op.op != "CONST"] == ["ADD", "CUSTOM", "MUL"]
        np.testing.assert_allclose(model.run(feeds)["d"], want, rtol=1e-6)


def test_what_a_graph_module_cannot_hold_points_to_compute_segments():
    b = Builder()
    x = b.input("x", (4,), "fp32")
    b.output(b.tanh(x))
    graph = b.build()
    graph.main.operators[0].op = "VARIABLE_READ"  # (only the exporter's check is tested)
    with pytest.raises(TosaError, match=r"cannot hold VARIABLE_READ.*--segments compute"):
        export(graph)


# ---- model-converter's files on tosa_vk -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, Path]:
    needs_arm_sdk()
    tool = arm_sdk._tool("model_converter", "model-converter")
    out = {}
    folder = tmp_path_factory.mktemp("converted")
    for name in SHIPPED:
        path = folder / f"{name}.vgf"
        done = subprocess.run(
            [tool, "-i", str(MODELS / name / "model.tosa"), "-o", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        out[name] = path
    return out


@pytest.mark.parametrize("backend", ["vulkan", "reference"])
@pytest.mark.parametrize("name", SHIPPED)
def test_model_converter_vgf_runs_on_tosa_vk(name, backend, converted):
    _, x, want = model_case(name)
    with tosa_vk.load(converted[name], backend=backend) as model:
        assert list(model.inputs) == ["input_0"] and list(model.outputs) == ["output_0"]  # the VGF's names
        close_enough(model.run({"input_0": x})["output_0"], want, f"{name} on {backend}")


@pytest.mark.parametrize("name", SHIPPED)
def test_vgf2tosa_gives_the_operators_back(name, converted, tmp_path, capsys):
    """The .tosa holds the decoded graph (test_spirv_graph.py checks that against the model's own .tosa: the same
    operators, but for what model-converter folds) and runs to the model's results."""
    assert cli(["vgf2tosa", str(converted[name]), "-o", str(tmp_path / "back.tosa")]) == 0
    assert "operators" in capsys.readouterr().out
    back = tosa_vk.load_graph(tmp_path / "back.tosa")
    assert_same_graph(to_graph(load_vgf(converted[name])).main, back.main)
    _, x, want = model_case(name)
    got = tosa_vk.load(back, backend="reference").run({"input_0": x})["output_0"]
    close_enough(got, want, f"{name}: the .tosa vgf2tosa wrote")


# ---- the command line -----------------------------------------------------------------------------------------------


def test_cli_exports_graph_segments_by_default_and_compute_on_request(tmp_path, capsys):
    tosa, x, want = model_case("resnet_int8")
    assert cli(["export", str(tosa), "-o", str(tmp_path / "g.vgf")]) == 0
    assert "1 graph and 0 compute segments" in capsys.readouterr().out
    vgf = load_vgf(tmp_path / "g.vgf")
    assert [s.type for s in vgf.segments] == ["GRAPH"]
    np.save(tmp_path / "x.npy", x)
    (name,), (out,) = vgf.input_names, vgf.output_names  # the graph's own names
    assert cli(["run", str(tmp_path / "g.vgf"), "--backend", "reference", "-i", f"{name}={tmp_path / 'x.npy'}",
                "-o", str(tmp_path / "out")]) == 0  # fmt: skip
    close_enough(np.load(tmp_path / "out" / f"{out}.npy"), want, "tosa-vk run of the graph VGF")
    assert cli(["export", str(tosa), "-o", str(tmp_path / "c.vgf"), "--segments", "compute"]) == 0
    compute = load_vgf(tmp_path / "c.vgf")  # our kernels, and a GRAPH segment that fills the constants
    assert {s.type for s in compute.segments} == {"COMPUTE", "GRAPH"} and runs_as_is(compute)


def test_a_compute_only_vgf_names_the_backend_it_needs(tmp_path):
    b = Builder()
    b.output(b.tanh(b.input("x", (4,), "fp32")))
    with tosa_vk.load(b.build(), backend="vulkan") as model:
        model.export_vgf(tmp_path / "c.vgf")
    with pytest.raises(TosaError, match="COMPUTE segments only runs on the vulkan backend"):
        tosa_vk.load(tmp_path / "c.vgf", backend="reference")

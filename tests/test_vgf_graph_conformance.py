"""GRAPH-segment VGFs on Arm's conformance selection, one test per operator and type combination (every
TOSA.001000.1 instruction and its dtypes): our export passes spirv-val, decodes back to the same operators, and runs
in Arm's documented flow (scenario template, scenario-runner, ML emulation layer); model-converter's VGF of the same
test runs through tosa_vk.load on Vulkan and on the reference backend. Every result is judged by Arm's verifier
against the reference model, like the conformance tests themselves."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_spirv_graph import assert_same_graph
from test_vgf_graph import needs_arm_sdk, spirv_val

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.formats.vgf_graph import export, to_graph
from tosa_vk.tools.bench.anchors import arm_sdk
from tosa_vk.tools.conformance.run import judge, load_inputs, reference_results, shared_device
from vgf.scenario import downloaded_array

pytestmark = pytest.mark.conformance
CONTROL_FLOW = ("COND_IF", "WHILE_LOOP")
# Where Arm's ML emulation layer 0.11 computes a non-compliant result from a module equal to model-converter's
ARM_DEVIATIONS = {
    "max_pool2d_1x47x7x52_f16_st11_kern22_pad0000_fs_modeI": "an all-NaN window under nan_mode IGNORE gives "
    "-65504 (the lowest fp16), not NaN",
}


def uploadable(array: np.ndarray) -> np.ndarray:
    """bf16 / fp8 values as their bits: the worker runs without ml_dtypes, and uploads raw bytes for such formats."""
    return array.view(f"u{array.itemsize}") if array.dtype.type.__module__ == "ml_dtypes" else array


def case(test: Path) -> tuple[dict, tosa_vk.Graph]:
    desc = json.loads((test / "desc.json").read_text())
    if (code := (reference_results(test) / "exit_code").read_text().strip()) != "0":
        pytest.skip(f"the reference model cannot run this test (exit {code})")
    return desc, tosa_vk.load_graph(test / desc["tosa_file"])


def test_our_graph_export(class_test, worker, tmp_path):
    desc, graph = case(class_test)
    ops = {op.op for op in graph.main.operators}
    if ops & set(CONTROL_FLOW):
        with pytest.raises(TosaError, match="neither GRAPH nor COMPUTE segments can hold it"):
            export(graph)
        return
    if ops & {"GATHER", "SCATTER"} and tosa_vk.DType.BOOL in {t.dtype for t in graph.main.tensors.values()}:
        pytest.skip("the ML emulation layer has no bool GATHER / SCATTER shader (model-converter refuses them too)")
    vgf = export(graph, tmp_path / "model.vgf")
    spirv_val(vgf)
    assert_same_graph(graph.main, to_graph(vgf).main)
    feeds = load_inputs(class_test, desc, graph)
    template = tmp_path / "scenario.json"
    done = subprocess.run(
        [arm_sdk._tool("vgf_lib", "vgf_dump"), "-i", str(tmp_path / "model.vgf"), "-o", str(template),
         "--scenario-template"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    arrays = [uploadable(feeds[name].reshape(vgf.resources[b.mrt_index].shape))
              for b, name in zip(vgf.inputs, vgf.input_names)]  # fmt: skip
    for i, array in enumerate(arrays):  # the documented flow: inputs as files, the placeholders their paths
        np.save(tmp_path / f"INPUT{i}.npy", array)
    text = re.sub(r"TEMPLATE_PATH_TENSOR_(INPUT|OUTPUT)_(\d+)", lambda m: str(tmp_path / f"{m[1]}{m[2]}.npy"),
                  template.read_text().replace('"src": "model.vgf"', f'"src": "{tmp_path / "model.vgf"}"'))  # fmt: skip
    template.write_text(text)
    ins = [f"input_{i}_ref" for i in range(len(vgf.inputs))]
    outs = [f"output_{i}_ref" for i in range(len(vgf.outputs))]
    worker.load_scenario(template, ins, outs)  # (the worker uploads the same arrays in memory)
    got, _ = worker.run_scenario(dict(zip(ins, arrays)))
    tensors = graph.main.tensors
    outputs = {
        name: downloaded_array(got[uid], tensors[name].dtype.numpy, tensors[name].shape)
        for uid, name in zip(outs, vgf.output_names)
    }
    problem = judge(class_test, desc, outputs, {n: tensors[n].dtype for n in outputs})
    if problem and class_test.name in ARM_DEVIATIONS:
        pytest.xfail(f"the ML emulation layer: {ARM_DEVIATIONS[class_test.name]}")
    assert problem is None, f"scenario-runner: {problem}"


@pytest.mark.parametrize("backend", ["vulkan", "reference"])
def test_model_converter_vgf(class_test, backend, tmp_path):
    needs_arm_sdk()
    desc, graph = case(class_test)
    path = tmp_path / "model.vgf"
    done = subprocess.run(
        [arm_sdk._tool("model_converter", "model-converter"), "-i", str(class_test / desc["tosa_file"]),
         "-o", str(path)], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"model-converter refuses it: {(done.stdout + done.stderr).strip().splitlines()[-1][:200]}")
    options = {"device": shared_device()} if backend == "vulkan" else {}
    feeds = load_inputs(class_test, desc, graph)
    with tosa_vk.load(path, backend=backend, **options) as model:  # (rank-0 tensors are [1] in a VGF)
        got = model.run({f"input_{i}": feeds[name].reshape(model.inputs[f"input_{i}"][0])
                         for i, name in enumerate(graph.main.inputs)})  # fmt: skip
    outputs = {t.name: got[f"output_{i}"].reshape(t.shape) for i, t in enumerate(graph.outputs)}
    problem = judge(class_test, desc, outputs, {t.name: t.dtype for t in graph.outputs})
    assert problem is None, problem

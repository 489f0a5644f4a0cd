"""Intermediate tensors (run(capture=...), tosa-vk run --dump-intermediates) and the per-tensor diff
(tosa-vk compare) on the shipped models, and a deliberately broken custom kernel located at its tensor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, TosaError, custom
from tosa_vk.custom import buffer
from tosa_vk.ir import load_graph
from tosa_vk.ir.dtype import from_npy
from tosa_vk.ir.graph import Operator, Tensor
from tosa_vk.stages.capture import capturable
from tosa_vk.stages.passes import copy_structure
from tosa_vk.tools import cli

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "resources" / "models"
pytestmark = pytest.mark.vulkan


def desc_feeds(name: str) -> tuple[Path, dict[str, np.ndarray]]:
    """A shipped model's .tosa and its desc.json inputs."""
    folder = MODELS / name
    desc = json.loads((folder / "desc.json").read_text())
    graph = load_graph(folder / desc["tosa_file"])
    feeds = {
        n: from_npy(np.load(folder / f), graph.main.tensors[n].dtype)
        for n, f in zip(desc["ifm_name"], desc["ifm_file"])
    }
    return folder / desc["tosa_file"], feeds


@pytest.fixture(scope="module")
def resnet():
    path, feeds = desc_feeds("resnet_int8")
    with (
        tosa_vk.load(path, backend="vulkan", validation=True) as vulkan,
        tosa_vk.load(path, backend="reference") as reference,
    ):
        yield path, feeds, vulkan, reference


def test_capture_all_returns_every_tensor_bit_exact_and_keeps_the_outputs(resnet):
    path, feeds, vulkan, reference = resnet
    plain = vulkan.run(feeds)
    got = vulkan.run(feeds, capture="all")
    want = reference.run(feeds, capture="all")
    names = capturable(vulkan.graph)
    assert list(got)[: len(plain)] == list(plain)  # the outputs first, then the tensors in execution order
    assert set(got) == set(names) | set(plain) and len(names) > 60
    for name in plain:
        np.testing.assert_array_equal(got[name], plain[name])
    for name in names:  # int8: every intermediate bit-exact against the reference backend
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    # tensors inside fused kernels (never stored by the plain program) are among them
    fused = [p.op for p in vulkan.placement if p.where == "fused"]
    assert fused and any(f"'{name}'" in op for op in fused for name in names)


def test_capture_by_name_and_clear_errors(resnet):
    path, feeds, vulkan, reference = resnet
    names = capturable(vulkan.graph)
    picked = [names[5], names[2]]
    for model in (vulkan, reference):
        got = model.run(feeds, capture=picked, outputs=[])
        assert list(got) == [names[2], names[5]]  # execution order
    for k in range(3):  # a model keeps the twins of its last two capture sets loaded, not one per set
        vulkan.run(feeds, capture=[names[k]], outputs=[])
    assert vulkan._twins is not None and list(vulkan._twins) == [(names[1],), (names[2],)]
    with pytest.raises(TosaError, match=r"no tensor 'tosa_conv2d_defaultX'.*did you mean 'tosa_conv2d_default'"):
        vulkan.run(feeds, capture=["tosa_conv2d_defaultX"])
    const = next(op.outputs[0] for op in vulkan.graph.main.operators if op.op == "CONST")
    with pytest.raises(TosaError, match="cannot be captured: it is a constant"):
        reference.run(feeds, capture=[const])
    with pytest.raises(TosaError, match="capture=.... takes 'all' or a list"):
        reference.run(feeds, capture=3)


@pytest.mark.parametrize("backend", ["reference", "vulkan"])
def test_capture_runs_on_the_models_variables(backend, device):
    """A capture run advances the model's state like any run: run, capture, run == three runs."""
    b = Builder()
    x = b.input("x", (4,), "int32")
    acc = b.variable("acc", (4,), "int32", [0, 0, 0, 0])
    total = b.add(b.variable_read(acc), x, name="total")
    b.variable_write(acc, total)
    b.output(b.add(total, total, name="y"))
    graph = b.build()
    options = {"device": device} if backend == "vulkan" else {}
    x = np.arange(4, dtype=np.int32)
    with tosa_vk.load(graph, backend=backend, **options) as model:
        model.run(x=x)
        captured = model.run(x=x, capture=["total"])
        last = model.run(x=x)
    np.testing.assert_array_equal(captured["total"], 2 * x)
    np.testing.assert_array_equal(last["y"], 2 * 3 * x)


def test_run_dump_intermediates_writes_every_tensor(tmp_path, capsys, resnet):
    path, feeds, vulkan, reference = resnet
    desc = MODELS / "resnet_int8" / "desc.json"
    code = cli.main(
        ["run", "--test-desc", str(desc), "--backend", "vulkan", "-o", str(tmp_path / "out"),
         "--dump-intermediates", str(tmp_path / "dump")]
    )  # fmt: skip
    assert code == 0
    index = json.loads((tmp_path / "dump" / "index.json").read_text())
    names = capturable(vulkan.graph)
    assert [e["tensor"] for e in index] == names
    assert f"{len(names)} tensors written" in capsys.readouterr().out
    want = reference.run(feeds, capture="all")
    for entry in index:
        t = vulkan.graph.main.tensors[entry["tensor"]]
        got = from_npy(np.load(tmp_path / "dump" / entry["file"]), t.dtype)
        np.testing.assert_array_equal(got, want[entry["tensor"]])
        assert entry["dtype"] == t.dtype.name and entry["shape"] == list(t.shape)


@pytest.mark.parametrize("model", ["resnet_int8", "mobilenetv2_fp32"])
def test_compare_passes_on_the_shipped_models(model, capsys):
    code = cli.main(["compare", "--test-desc", str(MODELS / model / "desc.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "max |abs|" in out and "tensors within tolerance" in out


# A custom kernel that is off by a little: the numpy twin (the reference backend) is the identity, the shader adds
# 1e-3 — what a wrong index or constant in a user's shader does.
NUDGE = """#version 450
layout(local_size_x = LOCAL_SIZE_X) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
layout(push_constant) uniform P { uint n; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) b[i] = a[i] + 0.001; }
"""


def test_compare_locates_a_broken_custom_kernel_in_a_shipped_model(tmp_path, capsys):
    """mobilenetv2 with a custom op spliced in after one of its convolutions: compare names the custom op's tensor
    as the first out of bounds (everything before it in bounds) and exits 1."""
    graph = copy_structure(load_graph(next((MODELS / "mobilenetv2_fp32").glob("*.tosa"))))
    main = graph.main
    at = [i for i, op in enumerate(main.operators) if op.op == "CONV2D"][3]
    victim = main.operators[at].outputs[0]
    t = main.tensors[victim]
    main.add_tensor(Tensor("nudged", t.shape, t.dtype))
    for op in main.operators[at + 1 :]:
        op.inputs = ["nudged" if n == victim else n for n in op.inputs]
    size = int(np.prod(t.shape))
    main.operators.insert(
        at + 1,
        Operator(
            "CUSTOM",
            [victim],
            ["nudged"],
            {"domain_name": "com.example.test", "operator_name": "nudge", "implementation_attrs": b""},
        ),
    )
    main.outputs = [("nudged" if n == victim else n) for n in main.outputs]
    path = tmp_path / "nudged.tosa"
    tosa_vk.save_graph(graph, path)
    tosa_vk.custom_op(
        "com.example.test",
        "nudge",
        source=NUDGE,
        inputs=[buffer(0)],
        outputs=[buffer(1)],
        grid=(size, 1, 1),
        push_constants=np.array([size], np.uint32).tobytes(),
    )(lambda inputs, attrs: [inputs[0]])
    try:
        _, feeds = desc_feeds("mobilenetv2_fp32")
        for name, value in feeds.items():
            np.save(tmp_path / f"{name}.npy", value)
        inputs = sum((["-i", f"{n}={tmp_path / n}.npy"] for n in feeds), [])
        code = cli.main(["compare", str(path), *inputs, "--node-data", str(tmp_path / "errors.json")])
    finally:
        del custom.REGISTRY[("com.example.test", "nudge")]
    out = capsys.readouterr().out
    assert code == 1, out
    rows = [line.split() for line in out.splitlines()[1:-2]]
    first_bad = next(r for r in rows if r[5] == "FAIL")
    assert first_bad[1] == "nudged" and all(r[5] == "ok" for r in rows[: rows.index(first_bad)])
    assert "the first: 'nudged'" in out and "CUSTOM #" in out.splitlines()[-2]
    # the node data (issue 39): the custom op's node marked as the first divergence, the operators before it within
    # their bounds
    results = json.loads((tmp_path / "errors.json").read_text())["main"]["results"]
    marked = [k for k, v in results.items() if "bgColor" in v]
    assert marked == [f"main/op{at + 1}"] and results[marked[0]]["value"] > 1
    assert all(v["value"] <= 1 for k, v in results.items() if int(k.split("/op")[1]) <= at)


def test_capture_needs_a_graph(tmp_path):
    """A .vgf of COMPUTE segments only has no TOSA graph to capture from: a clear error."""
    b = Builder()
    b.output(b.add(b.input("x", (4,), "fp32"), b.const(np.ones(4, np.float32)), name="y"))
    vgf = tmp_path / "add.vgf"
    assert cli.main(["export", "-o", str(vgf), "--segments", "compute", str(_saved(b, tmp_path))]) == 0
    with tosa_vk.load(vgf) as model, pytest.raises(TosaError, match="capture=.... needs a TOSA graph"):
        model.run(x=np.zeros(4, np.float32), capture="all")


def _saved(b: Builder, tmp_path: Path) -> Path:
    path = tmp_path / "g.tosa"
    tosa_vk.save_graph(b.build(), path)
    return path


def test_compare_rows_judge_with_the_dtype_bound():
    from tosa_vk.ir.dtype import DType
    from tosa_vk.tools.compare import judge

    want = np.array([1.0, -2.0, np.nan], np.float32)
    assert judge(want + np.float32(1e-7) * np.array([1, 0, 0], np.float32), want, DType.FP32).ok
    bad = judge(want + np.float32(1e-2) * np.array([1, 0, 0], np.float32), want, DType.FP32)
    assert not bad.ok and bad.max_abs == pytest.approx(1e-2, rel=1e-3) and bad.max_rel == pytest.approx(5e-3, rel=1e-2)

"""Model Explorer node data (issue 39): `tosa-vk profile / compare --node-data` write per-operator values keyed by
the node ids of Arm's TOSA adapter for Model Explorer ("main/op<N>", tosa_vk's #N), in Model Explorer's documented
node-data format — checked here against that format always, and read back with Model Explorer's own node-data
classes (and the ids matched against the adapter's graph) where the `explorer` extra / the adapter is installed.
Also: profiles leave the first run's pipeline compilation out (a warm-up run, said in the output)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder
from tosa_vk.ir import load_graph
from tosa_vk.ir.dtype import DType
from tosa_vk.tools import cli, node_data
from tosa_vk.tools.compare import Row, judged
from tosa_vk.tools.profile import Row as ProfileRow
from tosa_vk.tools.profile import operators

ROOT = Path(__file__).resolve().parent.parent
RESNET = ROOT / "resources" / "models" / "resnet_int8"
NODE_ID = re.compile(r"^main/op(\d+)$")

# Model Explorer's node-data format (model_explorer/node_data_builder.py, the "node data" wiki page): a
# ModelNodeData file is {graph id: GraphNodeData}; these are each class's fields, the required ones first.
GRAPH_FIELDS = {
    "results": dict,
    "name": str,
    "thresholds": list,
    "gradient": list,
    "hideInAggregatedStatsTable": bool,
    "hideInChildrenStatsTable": bool,
    "hideAggregatedStats": list,
    "showExpandedSummaryOnGroupNode": bool,
    "showLabelCountColumnsInChildrenStatsTable": bool,
}
RESULT_FIELDS = {"value": (int, float), "bgColor": str, "textColor": str}
THRESHOLD_FIELDS = {"value": (int, float), "bgColor": str, "textColor": str}
GRADIENT_FIELDS = {"stop": (int, float), "bgColor": str, "textColor": str}


def _fields(obj, known: dict, required: tuple[str, ...], where: str) -> None:
    assert isinstance(obj, dict), where
    assert set(obj) <= set(known), (where, set(obj) - set(known))
    for key in required:
        assert key in obj, (where, key)
    for key, value in obj.items():
        if known[key] is bool:
            assert isinstance(value, bool), (where, key)
        else:
            assert isinstance(value, known[key]) and not isinstance(value, bool), (where, key)
        if isinstance(value, float):
            assert math.isfinite(value), (where, key)


def check_format(text: str) -> dict:
    """The file against Model Explorer's node-data format: strict JSON (no NaN / Infinity, which its web app's
    JSON.parse refuses), then every class's fields and types; a gradient's stops in [0, 1] with 0 and 1 present."""

    def refuse(constant):
        raise AssertionError(f"not JSON: {constant}")

    data = json.loads(text, parse_constant=refuse)
    assert isinstance(data, dict) and data
    for graph_id, graph in data.items():
        assert isinstance(graph_id, str)
        _fields(graph, GRAPH_FIELDS, ("results",), graph_id)
        for node, result in graph["results"].items():
            assert isinstance(node, str)
            _fields(result, RESULT_FIELDS, ("value",), f"{graph_id} {node}")
        for item in graph.get("thresholds", []):
            _fields(item, THRESHOLD_FIELDS, ("value", "bgColor"), f"{graph_id} thresholds")
        stops = [item["stop"] for item in graph.get("gradient", [])]
        for item in graph.get("gradient", []):
            _fields(item, GRADIENT_FIELDS, ("stop",), f"{graph_id} gradient")
        assert not stops or (all(0 <= s <= 1 for s in stops) and {0, 1} <= set(stops))
    return data


def read_back_with_model_explorer(text: str) -> None:
    """Where the explorer extra is installed: the file as Model Explorer's own classes (dacite, strict: no field
    unknown to them, every type theirs), written out again by them, is the same data. Without the extra: nothing
    (test_files_read_back_with_model_explorers_classes is then skipped, saying so)."""
    try:
        import model_explorer  # noqa: F401
    except ImportError:
        return
    from dacite import Config, from_dict
    from model_explorer.node_data_builder import GraphNodeData, ModelNodeData

    data = json.loads(text)
    model = ModelNodeData(
        graphsData={k: from_dict(GraphNodeData, v, config=Config(strict=True)) for k, v in data.items()}
    )
    again = json.loads(model.to_json_string())
    for graph_id, graph in data.items():  # theirs adds the defaults of the fields a file leaves out
        assert {k: again[graph_id][k] for k in graph} == graph


@pytest.fixture(scope="module")
def resnet_graph():
    return load_graph(RESNET / "model.tosa")


def _cli(args: list[str], capsys) -> str:
    code = cli.main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def test_reference_profile_node_data_is_each_operators_ms(tmp_path, capsys, resnet_graph):
    """The reference backend times each operator: one node per operator of the file, the values its medians."""
    path = tmp_path / "times.json"
    out = _cli(
        ["profile", "--test-desc", str(RESNET / "desc.json"), "--backend", "reference", "--runs", "1"]
        + ["--node-data", str(path)],
        capsys,
    )
    data = check_format(path.read_text())
    read_back_with_model_explorer(path.read_text())
    assert list(data) == ["main"]
    results = data["main"]["results"]
    ops = resnet_graph.main.operators
    timed = {i for i, op in enumerate(ops) if op.op not in ("CONST", "CONST_SHAPE")}  # constants take no time
    assert {int(NODE_ID.match(k)[1]) for k in results} == timed  # every other operator, by its index
    assert all(v["value"] >= 0 for v in results.values())
    total = float(re.search(r"^kernel time\s+(\d+\.\d+) ms", out, re.M)[1])
    assert sum(v["value"] for v in results.values()) == pytest.approx(total, abs=0.01 + 1e-3 * total)
    assert f"node data: {path} (ms of {len(timed)} operators" in out
    view = f"view: model-explorer {RESNET / 'model.tosa'} --extensions=tosa_adapter_model_explorer"
    assert f"{view} --node_data_paths={path}" in out
    assert "after 1 warm-up run (untimed)" in out.splitlines()[0]


@pytest.mark.vulkan
def test_vulkan_profile_node_data_shares_each_fused_kernel_among_its_operators(tmp_path, capsys, resnet_graph):
    path = tmp_path / "times.json"
    args = ["profile", "--test-desc", str(RESNET / "desc.json"), "--backend", "vulkan", "--runs", "1"]
    out = _cli([*args, "--node-data", str(path)], capsys)
    data = check_format(path.read_text())
    read_back_with_model_explorer(path.read_text())
    results = data["main"]["results"]
    ops = resnet_graph.main.operators
    for key in results:
        assert int(NODE_ID.match(key)[1]) < len(ops)
    # the table's kernels: each kernel's median split evenly among the operators its label names
    rows = re.findall(r"^\s*\d+\s+(\d+\.\d{3})\s+[\d.]+\s+(\d+)\s+device\s+", out, re.M)
    total = sum(float(ms) for ms, _ in rows)
    assert sum(v["value"] for v in results.values()) == pytest.approx(total, abs=0.002 * len(rows))
    assert len(results) > len(rows)  # resnet_int8: 24 kernels covering more operators than that


def test_fused_kernel_time_is_shared_and_labels_are_located(resnet_graph):
    ops = resnet_graph.main.operators
    conv = next(i for i, op in enumerate(ops) if op.op == "CONV2D")
    rescale = next(i for i, op in enumerate(ops) if op.op == "RESCALE" and i > conv)
    label = f"{ops[conv].label(conv)} + {ops[rescale].label(rescale)}"
    assert operators(label) == [ops[conv].label(conv), ops[rescale].label(rescale)]
    data = node_data.times(resnet_graph, [ProfileRow(1, label, "device", [3000.0, 1000.0, 2000.0])], 3)
    assert data["main"]["results"] == {f"main/op{conv}": {"value": 1.0}, f"main/op{rescale}": {"value": 1.0}}
    # an index a compile pass shifted: found by its output's name; an operator the file does not have: left out
    moved = f"CONV2D #{len(ops) + 5} '{ops[conv].outputs[0]}'"
    assert node_data.locate(resnet_graph, moved) == f"main/op{conv}"
    assert node_data.locate(resnet_graph, "TRANSPOSE #999 'made_by_a_pass'") is None
    assert node_data.locate(resnet_graph, "nowhere::ADD #1 'x'") is None


def _small():
    b = Builder()
    x = b.input("x", (4,), "fp32")
    s = b.add(x, x, name="s")
    b.output(b.mul(s, s, name="y"))
    return b.build()


def test_compare_node_data_marks_the_first_divergence_and_writes_no_infinity(tmp_path):
    """Rows as compare() makes them, one off by far more than its bound: its node magenta, named in the data's
    name; an infinite ratio (a shape mismatch) is 1e30; an exact dtype's one step off reads 2."""
    graph = _small()
    want = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    rows = [
        Row("x", "input", DType.FP32, (4,), *judged(want, want, DType.FP32)),
        Row("s", "ADD #0", DType.FP32, (4,), *judged(want + 1e-3, want, DType.FP32)),
        Row("y", "MUL #1", DType.FP32, (4,), *judged(np.zeros(3), want, DType.FP32)),
    ]
    assert 1 < rows[1].ratio < 1e9 and rows[2].ratio == math.inf
    data = node_data.errors(graph, rows)
    path = tmp_path / "errors.json"
    assert node_data.write(path, data) == 2
    checked = check_format(path.read_text())
    read_back_with_model_explorer(path.read_text())
    results = checked["main"]["results"]
    add, mul = (f"main/op{i}" for i, op in enumerate(graph.main.operators) if op.outputs[0] in ("s", "y"))
    assert set(results) == {add, mul}  # the graph input has no node of its own
    assert results[add]["bgColor"] == node_data.FIRST["bgColor"]
    assert results[add]["value"] == pytest.approx(rows[1].ratio, rel=1e-5)
    assert results[mul] == {"value": node_data.INFINITE}
    assert "first divergence: ADD #0, tensor 's'" in checked["main"]["name"]
    assert judged(np.array([3], np.int8), np.array([2], np.int8), DType.INT8)[1] == 2
    assert judged(want, want, DType.FP32)[1] == 0
    assert judged(want + 0.05, want, DType.FP32, 0.1)[1] == pytest.approx(0.5, rel=1e-4)


@pytest.mark.vulkan
def test_compare_node_data_of_a_shipped_model(tmp_path, capsys, resnet_graph):
    path = tmp_path / "errors.json"
    out = _cli(["compare", "--test-desc", str(RESNET / "desc.json"), "--node-data", str(path)], capsys)
    data = check_format(path.read_text())
    read_back_with_model_explorer(path.read_text())
    results = data["main"]["results"]
    assert results and all(v == {"value": 0} for v in results.values())  # resnet_int8 is bit-exact
    assert "within bounds" in data["main"]["name"]
    assert f"node data: {path}" in out


def test_files_read_back_with_model_explorers_classes(tmp_path, capsys, resnet_graph):
    """Where the explorer extra is installed: a profile's and a comparison's files, read by Model Explorer's own
    node-data classes (the other tests read theirs back too, when it is there)."""
    pytest.importorskip("model_explorer")
    path = tmp_path / "times.json"
    args = ["profile", "--test-desc", str(RESNET / "desc.json"), "--backend", "reference", "--runs", "1"]
    _cli([*args, "--warmup", "0", "--node-data", str(path)], capsys)
    read_back_with_model_explorer(path.read_text())
    want = np.arange(4, dtype=np.float32)
    rows = [Row("s", "ADD #0", DType.FP32, (4,), *judged(want + 1, want, DType.FP32))]
    read_back_with_model_explorer(json.dumps(node_data.errors(_small(), rows)))


def test_node_data_ids_are_the_tosa_adapters(tmp_path, resnet_graph):
    """Where Arm's TOSA adapter for Model Explorer is installed: every id we write is a node of its graph of the
    file, and that node is the same operator."""
    pytest.importorskip("tosa_adapter_model_explorer")
    from tosa_adapter_model_explorer.main import TosaFlatbufferAdapter

    graphs = TosaFlatbufferAdapter().convert(str(RESNET / "model.tosa"), {})["graphs"]
    nodes = {n.id: n.label for g in graphs for n in g.nodes}
    assert [g.id for g in graphs] == ["main"]
    ops = resnet_graph.main.operators
    rows = [ProfileRow(i + 1, op.label(i), "host", [1.0]) for i, op in enumerate(ops)]
    written = node_data.times(resnet_graph, rows, 1)["main"]["results"]
    assert len(written) == len(ops)
    for key in written:
        assert nodes[key] == ops[int(NODE_ID.match(key)[1])].op


def test_node_data_refusals(tmp_path, capsys):
    """An existing file is not written over (refused before any work)."""
    path = tmp_path / "taken.json"
    path.write_text("{}")
    args = ["profile", "--test-desc", str(RESNET / "desc.json"), "--backend", "reference", "--node-data", str(path)]
    assert cli.main(args) != 0
    assert "taken.json" in capsys.readouterr().err and path.read_text() == "{}"


@pytest.mark.vulkan
def test_node_data_needs_a_tosa_graph(tmp_path, capsys):
    """A .vgf of COMPUTE segments has no TOSA operators to key by: profile and compare refuse --node-data by name."""
    b = Builder()
    b.output(b.add(b.input("x", (4,), "fp32"), b.const(np.ones(4, np.float32)), name="y"))
    tosa = tmp_path / "g.tosa"
    tosa_vk.save_graph(b.build(), tosa)
    vgf = tmp_path / "g.vgf"
    assert cli.main(["export", "-o", str(vgf), "--segments", "compute", str(tosa)]) == 0
    np.save(tmp_path / "x.npy", np.ones(4, np.float32))
    for command in ("profile", "compare"):
        capsys.readouterr()
        args = [command, str(vgf), "-i", f"x={tmp_path / 'x.npy'}", "--node-data", str(tmp_path / "n.json")]
        assert cli.main(args) != 0
        assert "--node-data" in capsys.readouterr().err and not (tmp_path / "n.json").exists()

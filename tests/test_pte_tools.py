"""Issue 50: a .pte in every per-tensor tool. `tosa-vk extract` writes each delegate as a .tosa with a desc.json and
(given the program's inputs) what the delegate received and produced in the program's run, which the extracted
.tosa reproduces on both backends; `compare` (CLI and tosa_vk.compare), `profile`, `--node-data` and
`--dump-intermediates` take a .pte: its host operators and each delegate's tensors ("delegate_0/<tensor>") in plan
order. The .pte fixtures are committed (tests/data/pte/): no torch needed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import desc_arrays
from test_node_data import check_format, read_back_with_model_explorer

import tosa_vk
from tosa_vk.ir import load_graph
from tosa_vk.ir.dtype import DType, from_npy
from tosa_vk.stages.capture import CONSTANTS
from tosa_vk.tools import cli
from tosa_vk.tools.compare import compare, first_failure, judge

DATA = Path(__file__).resolve().parent / "data" / "pte"
TWO = DATA / "two_delegates_int8"
FIXTURES = sorted(p.name for p in DATA.iterdir() if (p / "model.pte").is_file())
NODE_ID = re.compile(r"^main/op(\d+)$")


def _op_index(node: str) -> int:
    m = NODE_ID.match(node)
    assert m is not None, node
    return int(m[1])


def _feeds(folder: Path) -> dict[str, np.ndarray]:
    return desc_arrays(folder)[0]


def _cli(args: list[str], capsys, code: int = 0) -> str:
    got = cli.main(args)
    out = capsys.readouterr()
    assert got == code, out
    return out.out + out.err


def _extract(folder: Path, out: Path, capsys, *extra: str) -> str:
    return _cli(["extract", "--test-desc", str(folder / "desc.json"), "-o", str(out), *extra], capsys)


def test_extract_writes_each_delegate_with_its_desc_and_inputs(tmp_path, capsys):
    out = tmp_path / "x"
    text = _extract(TWO, out, capsys, "--backend", "reference")
    assert "tosa-vk run --test-desc" in text
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        f"delegate_{i}.{f}" for i in (0, 1) for f in ("tosa", "desc.json", "input-0.npy", "ref-result-0.npy")
    )
    with tosa_vk.load(TWO / "model.pte", backend="reference") as model:
        for i, delegate in enumerate(model.delegates):
            # a TOSABackend delegate: the flatbuffer as the program stores it
            assert (out / f"delegate_{i}.tosa").read_bytes() == model.plan.delegates[i].processed
            desc = json.loads((out / f"delegate_{i}.desc.json").read_text())
            graph = load_graph(out / f"delegate_{i}.tosa")
            assert desc == {
                "tosa_file": f"delegate_{i}.tosa",
                "ifm_name": [t.name for t in graph.inputs],
                "ifm_file": [f"delegate_{i}.input-0.npy"],
                "ofm_name": [t.name for t in graph.outputs],
                "ofm_file": [f"delegate_{i}.result-0.npy"],
                "expected_result_file": [f"delegate_{i}.ref-result-0.npy"],
            }
            assert [t.name for t in graph.inputs] == list(delegate.inputs)


@pytest.mark.parametrize("backend", ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("name", FIXTURES)
def test_extracted_delegates_reproduce_the_programs_run(tmp_path, capsys, name, backend):
    """Each extracted delegate, run alone on its recorded inputs, gives what the .pte's delegate gave in the
    program's run (reference: exactly; vulkan: within the dtype's bound); and `run --compare` on its desc.json
    passes."""
    out = tmp_path / "x"
    _extract(DATA / name, out, capsys, "--backend", "reference")
    with tosa_vk.load(DATA / name / "model.pte", backend="reference") as model:
        count = len(model.delegates)
        # the recorded inputs and results are the program's own: a run capturing the delegates' tensors agrees
        captured = model.run(_feeds(DATA / name), capture="all")
    assert count >= 1
    for i in range(count):
        desc = json.loads((out / f"delegate_{i}.desc.json").read_text())
        with tosa_vk.load(out / desc["tosa_file"], backend=backend) as delegate:
            graph = delegate.graph
            feeds = {n: from_npy(np.load(out / f), t.dtype) for n, f, t in zip(desc["ifm_name"], desc["ifm_file"],
                                                                             graph.inputs)}  # fmt: skip
            for n, value in feeds.items():
                assert np.array_equal(value, captured[f"delegate_{i}/{n}"])
            results = delegate.run(feeds)
        for n, f, t in zip(desc["ofm_name"], desc["expected_result_file"], graph.outputs):
            want = from_npy(np.load(out / f), t.dtype)
            assert np.array_equal(want, captured[f"delegate_{i}/{n}"])
            if backend == "reference":
                assert np.array_equal(results[n], want)
            else:
                assert judge(results[n], want, t.dtype).ok
        text = _cli(["run", "--test-desc", str(out / desc["tosa_file"].replace(".tosa", ".desc.json")), "--compare",
                     "--backend", backend], capsys)  # fmt: skip
        assert "PASS vs" in text and "FAIL" not in text


def test_extract_refuses_to_overwrite_before_any_work(tmp_path, capsys):
    out = tmp_path / "x"
    out.mkdir()
    taken = out / "delegate_1.desc.json"
    taken.write_text("mine")
    args = ["extract", "--test-desc", str(TWO / "desc.json"), "-o", str(out), "--backend", "reference"]
    text = _cli(args, capsys, code=cli.EXIT_ERROR)
    assert "delegate_1.desc.json" in text and "--overwrite" in text
    assert taken.read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["delegate_1.desc.json"]
    _cli([*args, "--overwrite"], capsys)
    assert json.loads(taken.read_text())["tosa_file"] == "delegate_1.tosa"


def test_extract_without_inputs_writes_the_graphs_and_descs(tmp_path, capsys):
    out = tmp_path / "x"
    text = _cli(["extract", str(DATA / "cnn_int8_vgf" / "model.pte"), "-o", str(out), "--backend", "reference"],
                capsys)  # fmt: skip
    assert "no inputs given" in text
    assert sorted(p.name for p in out.iterdir()) == ["delegate_0.desc.json", "delegate_0.tosa"]
    desc = json.loads((out / "delegate_0.desc.json").read_text())
    assert "expected_result_file" not in desc
    # a VgfBackend delegate: its GRAPH segments decoded, written as a .tosa
    assert [t.name for t in load_graph(out / "delegate_0.tosa").inputs] == desc["ifm_name"]


def test_extract_takes_a_pte_only(tmp_path, capsys):
    model = Path(__file__).resolve().parent.parent / "resources" / "models" / "resnet_int8" / "model.tosa"
    text = _cli(["extract", str(model), "-o", str(tmp_path / "x"), "--backend", "reference"], capsys,
                code=cli.EXIT_ERROR)  # fmt: skip
    assert "extract takes an ExecuTorch program (.pte)" in text and not (tmp_path / "x").exists()


def _host_rows(model) -> list[str]:
    """The host operators, lowered to TOSA (tests/test_pte_host_lowering.py) or not: placement's rows for them."""
    return [p.op for p in model.placement if not p.op.startswith("delegate_")]


def test_python_compare_of_two_pte_models():
    """tosa_vk.compare on two .pte Models (was: AttributeError: 'PteModel' object has no attribute 'graph'): every
    host value and delegate tensor, in plan order."""
    feeds = _feeds(TWO)
    with (
        tosa_vk.load(TWO / "model.pte", backend="reference") as a,
        tosa_vk.load(TWO / "model.pte", backend="reference") as b,
    ):
        rows = compare(a, b, feeds)
        host = _host_rows(a)
    assert first_failure(rows) is None
    producers = [r.producer for r in rows]
    assert [p for p in producers if "::" in p and not p.startswith("delegate_")] == host  # each host operator, in order
    first = {
        d: next(i for i, r in enumerate(rows) if r.tensor.startswith(f"{d}/")) for d in ("delegate_0", "delegate_1")
    }
    hardtanh = producers.index(next(h for h in host if h.startswith("aten::hardtanh")))
    assert first["delegate_0"] < hardtanh < first["delegate_1"]  # the host operator between the delegates
    assert rows[0].tensor == "input_0" and rows[-1].tensor == "output_0"
    assert any(r.producer == "delegate_1::CONV2D #7" and r.dtype == DType.INT32 for r in rows)


def test_python_compare_of_a_pte_finds_where_it_parts():
    """One delegate's outputs changed: the first row out of bounds is that delegate's."""
    feeds = _feeds(TWO)
    with (
        tosa_vk.load(TWO / "model.pte", backend="reference") as a,
        tosa_vk.load(TWO / "model.pte", backend="reference") as b,
    ):
        inner = b.delegates[1]
        original = inner.run

        def off_by_one(feeds, **kw):
            results = original(feeds, **kw)
            return {n: (v + 1).astype(v.dtype) if "conv2d_default_1" in n else v for n, v in results.items()}

        inner.run = off_by_one
        rows = compare(a, b, feeds)
    bad = first_failure(rows)
    assert bad is not None and bad.tensor == "delegate_1/tosa_conv2d_default_1"


def _node_data(path: Path, graph) -> dict:
    text = path.read_text()
    data = check_format(text)
    read_back_with_model_explorer(text)
    assert list(data) == ["main"]
    for node in data["main"]["results"]:
        assert _op_index(node) < len(graph.main.operators)
    return data


@pytest.mark.vulkan
def test_cli_compare_of_a_pte_with_node_data(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the table fits the terminal: wide enough for its producer column
    out = tmp_path / "x"
    _extract(TWO, out, capsys, "--backend", "reference")
    path = tmp_path / "err.json"
    text = _cli(["compare", "--test-desc", str(TWO / "desc.json"), "--node-data", str(path)], capsys)
    assert "all 20 tensors within tolerance" in text
    lines = [line for line in text.splitlines() if re.match(r"^\s+\d+\s", line)]
    assert any("delegate_0/tosa_conv2d_default " in line for line in lines)
    with tosa_vk.load(TWO / "model.pte", backend="reference") as model:
        host = _host_rows(model)
    assert len([line for line in lines if " aten::" in line or " quantized_decompose" in line]) == len(host)
    assert not path.exists()  # a .pte's node data: one file per delegate
    for i in (0, 1):
        graph = load_graph(out / f"delegate_{i}.tosa")
        data = _node_data(tmp_path / f"err.delegate_{i}.json", graph)
        assert len(data["main"]["results"]) == len([op for op in graph.main.operators if op.op not in CONSTANTS])
        assert f"model-explorer DIR/delegate_{i}.tosa" in text


def test_profile_of_a_pte_lists_host_operators_and_writes_node_data(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the listing fits the terminal: wide enough for whole operator names
    out = tmp_path / "x"
    _extract(TWO, out, capsys, "--backend", "reference")
    path = tmp_path / "ms.json"
    args = ["profile", "--test-desc", str(TWO / "desc.json"), "--backend", "reference", "--runs", "2"]
    text = _cli([*args, "--node-data", str(path)], capsys)
    with tosa_vk.load(TWO / "model.pte", backend="reference") as model:
        host = _host_rows(model)
    listed = [line.split(None, 5)[5] for line in text.splitlines() if re.match(r"^\s+\d+\s+[\d.]+\s", line)]
    listed = [op.split(" [TOSA ")[0] for op in listed]  # a lowered host operator's TOSA operators: a line each
    listed = [op for i, op in enumerate(listed) if not i or op != listed[i - 1]]
    assert [op for op in listed if not op.startswith("delegate_")] == host  # a line per host operator, in order
    assert listed.index("aten::hardtanh.out #3") > max(i for i, op in enumerate(listed) if op.startswith("delegate_0"))
    assert listed.index("aten::hardtanh.out #3") < min(i for i, op in enumerate(listed) if op.startswith("delegate_1"))
    for i in (0, 1):
        graph = load_graph(out / f"delegate_{i}.tosa")
        data = _node_data(tmp_path / f"ms.delegate_{i}.json", graph)
        for node in data["main"]["results"]:  # keyed by the extracted .tosa's operators, as profiled
            op = graph.main.operators[_op_index(node)].op
            assert any(line.startswith(f"delegate_{i}::{op} #{_op_index(node)}") for line in listed)
    # refused before any run: a node-data file that is there already
    taken = tmp_path / "again.delegate_1.json"
    taken.write_text("{}")
    text = _cli([*args, "--node-data", str(tmp_path / "again.json")], capsys, code=cli.EXIT_ERROR)
    assert "again.delegate_1.json" in text and taken.read_text() == "{}"
    assert not (tmp_path / "again.delegate_0.json").exists()


def test_dump_intermediates_of_a_pte(tmp_path, capsys):
    dump = tmp_path / "dump"
    out = tmp_path / "x"
    _extract(TWO, out, capsys, "--backend", "reference")
    text = _cli(["run", str(TWO / "model.pte"), "-i", f"input_0={TWO / 'input_0.npy'}", "--backend", "reference",
                 "--dump-intermediates", str(dump)], capsys)  # fmt: skip
    assert "20 tensors written" in text
    index = json.loads((dump / "index.json").read_text())
    with tosa_vk.load(TWO / "model.pte", backend="reference") as model:
        assert [e["tensor"] for e in index] == [t.name for t in model.capturable]
        output = model.run(_feeds(TWO))["output_0"]
        host = _host_rows(model)
    assert [e["producer"] for e in index if "::" in e["producer"] and not e["producer"].startswith("delegate_")] == host
    files = {e["tensor"]: np.load(dump / e["file"]) for e in index}
    assert np.array_equal(files["output_0"], output)
    # what delegate_1 received and produced: the files `extract` wrote
    desc = json.loads((out / "delegate_1.desc.json").read_text())
    assert np.array_equal(files[f"delegate_1/{desc['ifm_name'][0]}"], np.load(out / desc["ifm_file"][0]))
    assert np.array_equal(files[f"delegate_1/{desc['ofm_name'][0]}"], np.load(out / desc["expected_result_file"][0]))
    assert (dump / "0002_delegate_0%2Fquantized_decomposed_quantize_per_tensor_default.npy").is_file()

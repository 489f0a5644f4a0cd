"""The CLI loses nothing and names its own bugs as bugs (issue 34): distinct outputs get distinct files, no command
writes over a file it did not create unless asked (--overwrite), --compare reads its expected files before anything
is written, and no bad input reaches the catch-all ("internal error, please report", exit 3)."""

from __future__ import annotations

import json
import re
import shutil
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tosa_vk
from tosa_vk.tools.cli import EXIT_INTERNAL, main
from tosa_vk.tools.cli.common import safe_name

ROOT = Path(__file__).resolve().parent.parent
RESNET = ROOT / "resources" / "models" / "resnet_int8"


def write_model(folder: Path, outputs=("y",)) -> Path:
    b = tosa_vk.Builder()
    x = b.input("x", (2,), "fp32")
    for i, name in enumerate(outputs):
        b.output(b.op("ADD", x, b.const(np.full(2, i, np.float32)), name=name))
    tosa_vk.save_graph(b.build(), folder / "m.tosa")
    np.save(folder / "x.npy", np.array([1, 2], np.float32))
    return folder / "m.tosa"


def write_desc(folder: Path, **keys) -> Path:
    desc = {"tosa_file": "m.tosa", "ifm_name": ["x"], "ifm_file": ["x.npy"], "ofm_name": ["y"]}
    (folder / "desc.json").write_text(json.dumps({**desc, **keys}))
    return folder / "desc.json"


# 1. distinct outputs, distinct files


def test_outputs_whose_names_differ_only_in_punctuation_get_their_own_files(tmp_path, capsys):
    """Found: outputs y/1, y_1 and y:1 were all written to D/y_1.npy (two outputs lost, exit 0)."""
    names = ("y/1", "y_1", "y:1")
    model = write_model(tmp_path, names)
    out = tmp_path / "D"
    assert main(["run", str(model), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(out), "--backend", "reference"]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(["y%2F1.npy", "y_1.npy", "y%3A1.npy"]), files
    for i, name in enumerate(names):
        assert np.load(out / f"{safe_name(name)}.npy").tolist() == [1.0 + i, 2.0 + i]


NAMES = ["", ".", "..", ".hidden", "_hidden", "%2Ehidden", "a/b", "a_b", "a%2Fb", "a:b", "A", "a", "é", "\0", "_"]


def test_file_names_are_one_to_one_and_stay_in_the_folder():
    files = [safe_name(n) for n in NAMES]
    assert len(set(files)) == len(NAMES), files
    for name, f in zip(NAMES, files):
        assert (
            f
            and not f.startswith(".")
            and set(f) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-%")
        )
        assert urllib.parse.unquote(f) == name or (name == "" and f == "%")  # reversible


def test_two_outputs_named_to_one_file_by_desc_json_are_refused_before_the_run(tmp_path, capsys):
    write_model(tmp_path, ("y", "z"))
    desc = write_desc(tmp_path, ofm_name=["y", "z"], ofm_file=["r.npy", "sub/../r.npy"])
    assert main(["run", "--test-desc", str(desc), "--backend", "reference"]) == 2
    err = capsys.readouterr().err
    assert "would both be written to" in err or "outside the output folder" in err, err
    assert not (tmp_path / "r.npy").exists()
    desc = write_desc(tmp_path, ofm_name=["y", "z"], ofm_file=["r.npy", "r.npy"])
    assert main(["run", "--test-desc", str(desc), "--backend", "reference"]) == 2
    assert "z and y would both be written to" in capsys.readouterr().err
    assert not (tmp_path / "r.npy").exists()


# 2. never over a file the run did not create


def test_a_run_does_not_write_over_the_expected_results_of_a_desc_json(tmp_path, capsys):
    """Found: `run --test-desc` wrote its results over the golden ref-result-0.npy the desc.json folder ships; a
    later --compare then compared tosa_vk with itself and passed."""
    write_model(tmp_path)
    np.save(tmp_path / "ref-result-0.npy", np.array([9.0, 9.0], np.float32))  # wrong on purpose
    desc = write_desc(tmp_path, ofm_file=["ref-result-0.npy"])  # tosa_verif_build_tests' layout: one file
    assert main(["run", "--test-desc", str(desc), "--backend", "reference"]) == 2
    assert "exists: y is not written over it (--overwrite replaces files)" in capsys.readouterr().err
    assert np.load(tmp_path / "ref-result-0.npy").tolist() == [9.0, 9.0]
    assert main(["run", "--test-desc", str(desc), "--backend", "reference", "--compare"]) == 1
    assert "FAIL vs ref-result-0.npy" in capsys.readouterr().out


def test_conformance_layout_writes_results_beside_the_expected_ones(tmp_path, capsys):
    write_model(tmp_path)
    np.save(tmp_path / "ref-result-0.npy", np.array([1.0, 2.0], np.float32))
    desc = write_desc(tmp_path, ofm_file=["result-0.npy"], expected_result_file=["ref-result-0.npy"])
    run = ["run", "--test-desc", str(desc), "--backend", "reference"]
    assert main(run) == 0 and np.load(tmp_path / "result-0.npy").tolist() == [1.0, 2.0]
    capsys.readouterr()
    assert main(run) == 2  # the result of the last run is not this run's file either
    assert "result-0.npy' exists" in capsys.readouterr().err
    np.save(tmp_path / "result-0.npy", np.array([7.0, 7.0], np.float32))
    assert main([*run, "--compare"]) == 0  # the expected file, not the stale result
    assert "PASS vs ref-result-0.npy" in capsys.readouterr().out
    assert main([*run, "--overwrite"]) == 0 and np.load(tmp_path / "result-0.npy").tolist() == [1.0, 2.0]


def test_compare_reads_the_expected_results_before_overwrite_replaces_them(tmp_path, capsys):
    write_model(tmp_path)
    np.save(tmp_path / "ref-result-0.npy", np.array([9.0, 9.0], np.float32))
    desc = write_desc(tmp_path, ofm_file=["ref-result-0.npy"])
    args = ["run", "--test-desc", str(desc), "--backend", "reference", "--compare", "-o", str(tmp_path)]
    assert main([*args, "--overwrite"]) == 1  # judged against what was there, then written over (asked for)
    assert "FAIL vs ref-result-0.npy" in capsys.readouterr().out
    assert np.load(tmp_path / "ref-result-0.npy").tolist() == [1.0, 2.0]


def test_the_shipped_models_compare_with_their_shipped_expected_results(tmp_path, capsys):
    folder = tmp_path / "resnet_int8"
    shutil.copytree(RESNET, folder)
    desc = str(folder / "desc.json")
    assert main(["run", "--test-desc", desc, "--backend", "reference"]) == 0
    assert (folder / "result-0.npy").is_file()
    assert (folder / "ref-result-0.npy").read_bytes() == (RESNET / "ref-result-0.npy").read_bytes()
    assert main(["run", "--test-desc", desc, "--backend", "reference", "--compare"]) == 0
    assert "PASS vs ref-result-0.npy" in capsys.readouterr().out


def test_dump_intermediates_does_not_write_over_files(tmp_path, capsys):
    model = write_model(tmp_path)
    dump = tmp_path / "dump"
    args = ["run", str(model), "-i", f"x={tmp_path / 'x.npy'}", "--backend", "reference", "--dump-intermediates"]
    assert main([*args, str(dump)]) == 0
    before = {p.name: p.read_bytes() for p in dump.iterdir()}
    (dump / "index.json").write_text("mine")
    assert main([*args, str(dump)]) == 2
    assert "exists" in capsys.readouterr().err and (dump / "index.json").read_text() == "mine"
    assert main([*args, str(dump), "--overwrite"]) == 0
    assert {p.name: p.read_bytes() for p in dump.iterdir()} == before
    # outputs and intermediates in one folder: no file is planned twice
    assert main([*args, str(tmp_path / "both"), "-o", str(tmp_path / "both")]) == 0


def test_export_and_vgf2tosa_do_not_write_over_files(tmp_path, capsys):
    """vgf2tosa model.vgf wrote model.tosa by default: over the .tosa the .vgf was exported from."""
    model = write_model(tmp_path)
    original = model.read_bytes()
    assert main(["export", str(model)]) == 0
    assert main(["export", str(model)]) == 2
    assert "m.vgf' exists" in capsys.readouterr().err
    assert main(["vgf2tosa", str(tmp_path / "m.vgf")]) == 2
    assert "m.tosa' exists" in capsys.readouterr().err and model.read_bytes() == original
    assert main(["vgf2tosa", str(tmp_path / "m.vgf"), "-o", str(tmp_path / "back.tosa")]) == 0
    assert main(["export", str(model), "--overwrite"]) == 0


def test_profile_trace_does_not_write_over_a_file(tmp_path, capsys):
    model = write_model(tmp_path)
    (tmp_path / "t.json").write_text("mine")
    args = ["profile", str(model), "-i", f"x={tmp_path / 'x.npy'}", "--backend", "reference", "--runs", "1"]
    assert main([*args, "--trace", str(tmp_path / "t.json")]) == 2
    assert "t.json' exists" in capsys.readouterr().err and (tmp_path / "t.json").read_text() == "mine"
    assert main([*args, "--trace", str(tmp_path / "t.json"), "--overwrite"]) == 0
    assert json.loads((tmp_path / "t.json").read_text())


# 3. errors are messages; bugs are named as bugs


def bad_inputs(folder: Path) -> dict[str, list[str]]:
    """Bad inputs the CLI has met, each as its argv: every one must be a clear error, none an internal one."""
    model = write_model(folder)
    graph = tosa_vk.load_graph(model)
    graph.main.outputs.append("ghost")
    tosa_vk.save_graph(graph, folder / "ghost_output.tosa")
    graph = tosa_vk.load_graph(model)
    graph.main.inputs.append("ghost")
    tosa_vk.save_graph(graph, folder / "ghost_input.tosa")
    (folder / "bad.vgf").write_bytes(b"VGF\0" + bytes(40))
    (folder / "text.tosa").write_text("not a flatbuffer")
    x = f"x={folder / 'x.npy'}"
    descs: dict[str, dict[str, Any]] = {
        "nul_ofm_file": {"ofm_file": ["a\0b.npy"]},
        "nul_tosa_file": {"tosa_file": "m\0.tosa", "ofm_file": ["r.npy"]},
        "empty_ofm_file": {"ofm_file": [""]},
        "folder_ofm_file": {"ofm_file": ["sub/"]},
        "dot_ofm_file": {"ofm_file": ["."]},
        "short_expected": {"ofm_file": ["r.npy"], "expected_result_file": []},
        "bad_expected": {"ofm_file": ["r.npy"], "expected_result_file": [3]},
    }
    cases = {}
    for name, keys in descs.items():
        sub = folder / name
        sub.mkdir()
        shutil.copy(model, sub / "m.tosa")
        shutil.copy(folder / "x.npy", sub / "x.npy")
        cases[f"run_{name}"] = ["run", "--test-desc", str(write_desc(sub, **keys)), "--backend", "reference"]
    cases["compare_nul_ofm_file"] = ["compare", "--test-desc", str(folder / "nul_ofm_file" / "desc.json")]
    return {
        **cases,
        "info_ghost_output": ["info", str(folder / "ghost_output.tosa")],
        "info_ghost_input": ["info", str(folder / "ghost_input.tosa")],
        "run_ghost_output": ["run", str(folder / "ghost_output.tosa"), "-i", x, "--backend", "reference"],
        "plan_ghost_output": ["plan", str(folder / "ghost_output.tosa"), "--target", "lavapipe"],
        "info_missing": ["info", str(folder / "missing.tosa")],
        "info_text": ["info", str(folder / "text.tosa")],
        "info_folder": ["info", str(folder)],
        "run_missing_input": ["run", str(model), "-i", f"x={folder / 'missing.npy'}", "--backend", "reference"],
        "run_no_input": ["run", str(model), "--backend", "reference"],
        "run_output_dir_is_a_file": ["run", str(model), "-i", x, "--backend", "reference", "-o", str(model)],
        "inspect_bad_vgf": ["inspect", str(folder / "bad.vgf")],
        "vgf2tosa_bad_vgf": ["vgf2tosa", str(folder / "bad.vgf"), "-o", str(folder / "out.tosa")],
        "run_bad_vgf": ["run", str(folder / "bad.vgf")],
        "export_missing": ["export", str(folder / "missing.tosa")],
        "export_into_a_missing_folder": ["export", str(model), "-o", str(folder / "no" / "such" / "m.vgf")],
    }


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> dict[str, list[str]]:
    return bad_inputs(tmp_path_factory.mktemp("bad"))


BAD = [
    *(f"run_{n}" for n in ("nul_ofm_file", "nul_tosa_file", "empty_ofm_file", "folder_ofm_file", "dot_ofm_file")),
    *("run_short_expected", "run_bad_expected", "compare_nul_ofm_file", "info_ghost_output", "info_ghost_input"),
    *("run_ghost_output", "plan_ghost_output", "info_missing", "info_text", "info_folder", "run_missing_input"),
    *("run_no_input", "run_output_dir_is_a_file", "inspect_bad_vgf", "vgf2tosa_bad_vgf", "run_bad_vgf"),
    *("export_missing", "export_into_a_missing_folder"),
]


def test_the_list_of_bad_inputs_is_complete(bad):
    assert sorted(bad) == sorted(BAD)


@pytest.mark.parametrize("case", BAD)
def test_no_bad_input_reaches_the_internal_error_catch_all(bad, case, capsys):
    """Found: `info` of a graph whose output names no tensor said `tosa-vk: error: KeyError: 'ghost'`, a NUL in an
    ofm_file `ValueError: embedded null byte`: bugs behind the catch-all, shown as if they were messages."""
    code = main(bad[case])
    err = capsys.readouterr().err
    assert code in (1, 2) and "internal error" not in err and "Traceback" not in err, err
    assert not re.search(r"error: \w+(Error|Exception): ", err), err  # how the catch-all named a bug before
    assert code == 1 or (err.startswith("tosa-vk: error: ") and len(err.strip().splitlines()) == 1), err


def test_info_lists_an_output_that_names_no_tensor(bad, capsys):
    assert main(bad["info_ghost_output"]) == 1
    out = capsys.readouterr().out
    assert "ghost (no such tensor)" in out and "validation: " in out and "output 'ghost' is not a tensor" in out


def test_anything_else_is_an_internal_error_with_its_own_exit_code(tmp_path, capsys, monkeypatch):
    model = write_model(tmp_path)

    def bug(path):
        return {}["oops"]

    monkeypatch.setattr("tosa_vk.tools.cli.info._summary", bug)  # cmd_info's first step
    assert main(["info", str(model)]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err == "tosa-vk: internal error, please report: KeyError: 'oops' (--debug shows the traceback)\n"
    assert main(["info", str(model), "--debug"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "in bug" in err and "internal error, please report: KeyError" in err
    assert main(["--debug", "info", str(model)]) == EXIT_INTERNAL and "Traceback" in capsys.readouterr().err


# 4. --timeout


def test_timeout_bounds_a_run(tmp_path, capsys, device):
    model = write_model(tmp_path)
    args = ["run", str(model), "-i", f"x={tmp_path / 'x.npy'}", "--backend", "vulkan"]
    assert main([*args, "--timeout", "1e-9"]) == 2
    err = capsys.readouterr().err
    assert "the run did not finish within 1e-09 s (timeout_s" in err and "internal error" not in err, err
    assert main([*args, "--timeout", "60"]) == 0
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit) as exit:
            main([*args, "--timeout", bad])
        assert exit.value.code == 2
        assert "--timeout" in capsys.readouterr().err


def test_timeout_reaches_compare_and_profile(tmp_path, capsys, device):
    model = write_model(tmp_path)
    x = f"x={tmp_path / 'x.npy'}"
    assert main(["compare", str(model), "-i", x, "--timeout", "1e-9"]) == 2
    assert "did not finish within 1e-09 s" in capsys.readouterr().err
    assert main(["profile", str(model), "-i", x, "--backend", "vulkan", "--runs", "1", "--timeout", "1e-9"]) == 2
    assert "did not finish within 1e-09 s" in capsys.readouterr().err

"""The CLI with untrusted files: outputs stay inside the output folder, and no failure ends in a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tosa_vk
from tosa_vk.tools.cli import main
from tosa_vk.tools.cli.common import safe_name


def write_model(folder, out_name: str = "y"):
    b = tosa_vk.Builder()
    x = b.input("x", (2,), "fp32")
    b.output(b.add(x, x, name=out_name))
    tosa_vk.save_graph(b.build(), folder / "m.tosa")
    np.save(folder / "x.npy", np.array([1, 2], np.float32))


def test_desc_json_cannot_write_outside_the_output_folder(tmp_path, capsys):
    write_model(tmp_path)
    for escape in ("../escaped.npy", str(tmp_path / "abs.npy")):
        desc = {
            "tosa_file": "m.tosa",
            "ifm_name": ["x"],
            "ifm_file": ["x.npy"],
            "ofm_name": ["y"],
            "ofm_file": [escape],
        }
        (tmp_path / "desc.json").write_text(json.dumps(desc))
        assert main(["run", "--test-desc", str(tmp_path / "desc.json"), "-o", str(tmp_path / "out")]) == 2
        assert "outside the output folder" in capsys.readouterr().err
    assert not (tmp_path / "escaped.npy").exists() and not (tmp_path / "abs.npy").exists()


def test_tensor_names_become_safe_file_names(tmp_path):
    write_model(tmp_path, out_name="../../evil")
    out = tmp_path / "deep" / "out"
    assert main(["run", str(tmp_path / "m.tosa"), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == [safe_name("../../evil") + ".npy"]
    assert not list(tmp_path.glob("evil*")) and safe_name("../../evil") == "%2E.%2F..%2Fevil"


def test_a_symlink_out_of_the_folder_is_not_followed(tmp_path, capsys):
    write_model(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "y.npy").symlink_to(tmp_path / "victim.npy")
    assert main(["run", str(tmp_path / "m.tosa"), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(out)]) == 2
    assert "outside the output folder" in capsys.readouterr().err
    assert not (tmp_path / "victim.npy").exists()


def test_a_bad_input_file_is_one_line_not_a_traceback(tmp_path, capsys):
    write_model(tmp_path)
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    assert main(["run", str(tmp_path / "m.tosa"), "-i", f"x={tmp_path / 'bad.npy'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tosa-vk: error: ") and "Traceback" not in err and len(err.strip().splitlines()) == 1


GOOD_DESC = {"tosa_file": "m.tosa", "ifm_name": ["x"], "ifm_file": ["x.npy"], "ofm_name": ["y"], "ofm_file": ["y.npy"]}


@pytest.mark.parametrize(
    "desc,message",
    [
        ("{not json", "not JSON"),
        ([1, 2], "a desc.json is a JSON object"),
        ({**GOOD_DESC, "tosa_file": None}, "'tosa_file' must name the model file"),
        ({**GOOD_DESC, "ifm_name": "x"}, "'ifm_name' must be a list of strings"),
        ({**GOOD_DESC, "ifm_file": []}, "'ifm_name' has 1 entries, 'ifm_file' 0"),
        ({**GOOD_DESC, "ifm_file": ["pickled.npy"]}, "not a readable .npy array"),
        ({**GOOD_DESC, "ifm_file": ["missing.npy"]}, "cannot read input"),
    ],
)
def test_a_bad_desc_json_is_named_not_a_traceback(tmp_path, capsys, desc, message):
    """Found: a bad desc.json ended in KeyError / TypeError tracebacks; an object array would have been unpickled."""
    write_model(tmp_path)
    np.save(tmp_path / "pickled.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    path = tmp_path / "desc.json"
    path.write_text(desc if isinstance(desc, str) else json.dumps(desc))
    assert main(["run", "--test-desc", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tosa-vk: error: ") and message in err and "Traceback" not in err, err

"""The CLI with untrusted files: outputs stay inside the output folder, and no failure ends in a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tosa_vk
from tosa_vk.formats.vgf_graph import export
from tosa_vk.ir.mlir import find_tool
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


def _writing_commands(folder):
    """(command line, the file it writes) for each command that writes one; every input made here."""
    write_model(folder)
    export(tosa_vk.load_graph(folder / "m.tosa"), folder / "m.vgf")
    (folder / "m.mlir").write_text(ADD_MLIR)
    x = f"x={folder / 'x.npy'}"
    return {
        "run": (["run", str(folder / "m.tosa"), "-i", x, "-o", str(folder / "out"), "--backend", "reference"],
                folder / "out" / "y.npy"),
        "export": (["export", str(folder / "m.tosa"), "-o", str(folder / "e.vgf")], folder / "e.vgf"),
        "vgf2tosa": (["vgf2tosa", str(folder / "m.vgf"), "-o", str(folder / "back.tosa")], folder / "back.tosa"),
        "import": (["import", str(folder / "m.mlir"), "-o", str(folder / "imported.tosa")], folder / "imported.tosa"),
        "profile": (["profile", str(folder / "m.tosa"), "-i", x, "--backend", "reference", "--runs", "1",
                     "--trace", str(folder / "trace.json")], folder / "trace.json"),
    }  # fmt: skip


ADD_MLIR = """module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = tosa.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""
NO_TOOL = pytest.mark.skipif(find_tool() is None, reason="tosa-tools' tosa-opt is not installed")


@pytest.mark.parametrize("command", ["run", "export", "vgf2tosa", "profile", pytest.param("import", marks=NO_TOOL)])
def test_a_writing_command_clobbers_no_tmp_file_and_writes_through_no_link(tmp_path, capsys, command):
    """Issue 46: outputs went through a fixed `<out>.tmp` (an existing file of that name destroyed, a symlink of that
    name written through) or were opened in place (a symlinked output written through)."""
    line, out = _writing_commands(tmp_path)[command]
    out.parent.mkdir(exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("the user's own file")
    assert main(line) == 0, capsys.readouterr().err
    assert tmp.read_text() == "the user's own file" and out.is_file() and not out.is_symlink()
    assert main(line) == 2  # exists: refused without --overwrite, left as it was
    assert "--overwrite" in capsys.readouterr().err
    tmp.unlink()
    tmp.symlink_to(tmp_path / "victim-tmp")
    out.unlink()
    out.symlink_to(tmp_path / "victim")
    (tmp_path / "victim").write_text("not an output")
    # `run -o` refuses an output file that links out of its folder (test above); the others replace the link
    assert main([*line, "--overwrite"]) == (2 if command == "run" else 0)
    assert not (tmp_path / "victim-tmp").exists() and (tmp_path / "victim").read_text() == "not an output"
    assert out.is_symlink() if command == "run" else out.is_file() and not out.is_symlink()
    assert not [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp") and p != tmp]  # no leftovers

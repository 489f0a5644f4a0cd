"""The README's Python snippets run as written (from a scratch folder that sees the shipped models): every ```python
block is either run or, when its first line names a file ("# my_ops.py ..."), written to that folder with the other
files the section shows ("// scale_bias.comp: ..."), the custom-op tutorial's shader and declaration."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
RUN = ("Using it", "Custom shader ops", "From TFLite", "From PyTorch")  # the sections whose snippets run
FILE = re.compile(r"(?:#|//) (\w+\.(?:py|comp))\b")  # a block's first line naming the file it is


def section(name: str) -> str:
    return README.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, lang: str = "python") -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def snippets(name: str) -> list[str]:
    """The section's Python snippets to run, in order (not the files it shows)."""
    return [code for code in blocks(section(name)) if not FILE.match(code)]


def files(name: str) -> dict[str, str]:
    """The files the section shows, by name: Python and GLSL blocks whose first line names them."""
    shown = {}
    for code in blocks(section(name), "python") + blocks(section(name), "glsl"):
        match = FILE.match(code)
        if match:
            shown[match.group(1)] = code
    return shown


def run(code: str) -> None:
    exec(compile(code, "README.md", "exec"), {})


def scratch(tmp_path, monkeypatch, device) -> None:
    (tmp_path / "resources").symlink_to(ROOT / "resources")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOSA_VK_DEVICE", str(device.info.index))


def test_every_python_snippet_is_run_by_a_test():
    covered = [code for name in RUN for code in blocks(section(name))]
    assert blocks(README) and sorted(blocks(README)) == sorted(covered)


def test_using_it_snippets_run(tmp_path, monkeypatch, device):
    scratch(tmp_path, monkeypatch, device)
    found = snippets("Using it")
    assert found
    for code in found:
        run(code)
    assert (tmp_path / "block.tosa").is_file() and os.path.getsize(tmp_path / "block.tosa") > 0


def test_custom_op_tutorial_runs(tmp_path, monkeypatch, device):
    """The tutorial's shader and declaration, written where its usage snippet imports them, run on Vulkan and
    match the numpy twin."""
    from tosa_vk import custom

    scratch(tmp_path, monkeypatch, device)
    shown = files("Custom shader ops")
    assert sorted(shown) == ["my_ops.py", "scale_bias.comp"]
    for name, text in shown.items():
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(custom, "REGISTRY", dict(custom.REGISTRY))  # the tutorial's op: registered in this test only
    monkeypatch.delitem(sys.modules, "my_ops", raising=False)
    found = snippets("Custom shader ops")
    assert found
    try:
        for code in found:
            run(code)
    finally:
        sys.modules.pop("my_ops", None)
    assert ("com.example", "scale_bias") in custom.REGISTRY


def test_from_tflite_section_runs(tmp_path, monkeypatch, device):
    """The section's `tosa-vk` commands (in-process, from the scratch folder), then its Python snippets; skipped
    where the tflite extra is not installed."""
    import shlex

    from tosa_vk.formats.tflite_import import CONVERTER
    from tosa_vk.ir import mlir
    from tosa_vk.paths import find_tool
    from tosa_vk.tools.cli import main

    if find_tool(CONVERTER) is None or mlir.find_tool() is None:
        pytest.skip("the tflite extra (tosa-converter-for-tflite, tosa-tools) is not installed")
    scratch(tmp_path, monkeypatch, device)
    commands = [line for code in blocks(section("From TFLite"), "sh") for line in code.splitlines()]
    assert commands and all(line.startswith("tosa-vk ") for line in commands)
    for line in commands:
        assert main(shlex.split(line)[1:]) == 0, line
    found = snippets("From TFLite")
    assert found
    for code in found:
        run(code)


def test_from_pytorch_snippet_runs(tmp_path, monkeypatch, device):
    """The From PyTorch section, where the torch extra is installed (executorch importable); skipped elsewhere."""
    pytest.importorskip("executorch")
    pytest.importorskip("torch")
    scratch(tmp_path, monkeypatch, device)
    found = snippets("From PyTorch")
    assert len(found) == 1
    run(found[0])
    assert (tmp_path / "net_int8" / "desc.json").is_file()

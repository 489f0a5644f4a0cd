"""The README's and the docs site's code runs as written (docs/**/*.md; README.md is the front page). Every
```python block is either run (from a scratch folder that sees the shipped models and tests/data) or, when its first
line names a file ("# my_ops.py ..."), written to that folder with the other files its page shows
("// scale_bias.comp: ..."), such as the custom-op tutorial's shader and declaration. Every `tosa-vk` command of a
```sh / ```bash block names a subcommand and flags the CLI has, and every `bash scripts/...` / `python examples/...`
file exists. Blocks that import torch run in the torch tier (scripts/test_torch.sh selects them by "torch")."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_LIMIT = 15_000  # bytes: the README is a front page; the long content lives in docs/
PAGES = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))
FILE = re.compile(r"(?:#|//) (\w+\.(?:py|comp))\b")  # a block's first line naming the file it is
FENCE = re.compile(r"^```(\S*)", re.M)
LANGUAGES = {"python", "sh", "bash", "glsl", ""}  # "": plain text (diagrams)
RUN_COMMANDS = {"docs/start/tflite.md"}  # pages whose `tosa-vk` commands make the files their Python reads
NEEDS_TFLITE = {"docs/start/tflite.md", "docs/start/mlir.md"}  # the tflite extra (converter + tosa-opt)


def text(page: str) -> str:
    return (ROOT / page).read_text()


def blocks(page_text: str, lang: str = "python") -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", page_text, re.S | re.M)


def files(page: str) -> dict[str, str]:
    """The files the page shows, by name: Python and GLSL blocks whose first line names them."""
    shown = {}
    for code in blocks(text(page), "python") + blocks(text(page), "glsl"):
        match = FILE.match(code)
        if match:
            shown[match.group(1)] = code
    return shown


def snippets() -> list:
    """Every Python block to run, as a pytest param; ids "page:N", "-torch" where the block imports torch."""
    found = []
    for page in PAGES:
        runnable = [code for code in blocks(text(page)) if not FILE.match(code)]
        for i, code in enumerate(runnable):
            torch = re.search(r"^import torch\b", code, re.M) is not None
            found.append(pytest.param(page, code, id=f"{page}:{i}" + ("-torch" if torch else "")))
    return found


def commands(page: str) -> list[str]:
    """The command lines of the page's shell blocks (comments dropped, backslash continuations joined)."""
    lines = []
    for code in blocks(text(page), "sh") + blocks(text(page), "bash"):
        for line in code.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def scratch(tmp_path, monkeypatch, device) -> None:
    (tmp_path / "resources").symlink_to(ROOT / "resources")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOSA_VK_DEVICE", str(device.info.index))


def needs_tflite() -> None:
    from tosa_vk.formats.tflite_import import CONVERTER
    from tosa_vk.ir import mlir
    from tosa_vk.paths import find_tool

    if find_tool(CONVERTER) is None or mlir.find_tool() is None:
        pytest.skip("the tflite extra (tosa-converter-for-tflite, tosa-tools) is not installed")


def test_readme_is_a_front_page():
    assert (ROOT / "README.md").stat().st_size <= README_LIMIT


def test_every_code_block_is_seen():
    """Each fence opens a block of a known language, and the block readers above find every one of them."""
    for page in PAGES:
        fences = FENCE.findall(text(page))
        opened = fences[::2]  # fences alternate: an opening one (with its language), a closing one
        assert len(fences) % 2 == 0 and all(not lang for lang in fences[1::2]), page
        assert set(opened) <= LANGUAGES, (page, set(opened) - LANGUAGES)
        for lang in LANGUAGES - {""}:
            assert len(blocks(text(page), lang)) == opened.count(lang), (page, lang)


def test_every_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert [p for p in PAGES[1:] if p.removeprefix("docs/") not in nav] == []


def test_custom_op_page_shows_its_files():
    assert sorted(files("docs/custom-ops.md")) == ["my_ops.py", "scale_bias.comp"]


@pytest.mark.parametrize("page, code", snippets())
def test_python_block_runs(page, code, tmp_path, monkeypatch, device):
    """The block, in a scratch folder with its page's files written next to it (importable; custom ops it registers
    stay in this test); blocks that import torch need the torch extra, the TFLite / MLIR pages the tflite extra."""
    from tosa_vk import custom
    from tosa_vk.tools.cli import main

    if re.search(r"^import torch\b", code, re.M):
        pytest.importorskip("executorch")
        pytest.importorskip("torch")
    if page in NEEDS_TFLITE:
        needs_tflite()
    scratch(tmp_path, monkeypatch, device)
    shown = files(page)
    for name, body in shown.items():
        (tmp_path / name).write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(custom, "REGISTRY", dict(custom.REGISTRY))  # a page's ops: registered in this test only
    modules = [name.removesuffix(".py") for name in shown if name.endswith(".py")]
    for module in modules:
        monkeypatch.delitem(sys.modules, module, raising=False)
    if page in RUN_COMMANDS:
        for line in commands(page):
            assert main(shlex.split(line)[1:]) == 0, line
    try:
        exec(compile(code, page, "exec"), {})
    finally:
        for module in modules:
            sys.modules.pop(module, None)


def help_text(command: str) -> str:
    from tosa_vk.tools.cli import build_parser

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit) as end:
        build_parser().parse_args([command, "--help"] if command else ["--help"])
    assert end.value.code == 0, f"tosa-vk has no command {command!r}"
    return out.getvalue()


def test_shell_commands_exist():
    """`tosa-vk SUBCOMMAND --flag ...`: the subcommand and each flag are in the CLI's --help; scripts and examples
    named by `bash` / `python` lines exist."""
    helps: dict[str, str] = {}
    checked = 0
    for page in PAGES:
        for line in commands(page):
            words = line.split()
            if words[0] == "tosa-vk":
                command = words[1] if len(words) > 1 and not words[1].startswith("-") else ""
                if command not in helps:
                    helps[command] = help_text(command)
                for word in words[1:]:
                    for flag in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", word):
                        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[command]), (page, line, flag)
                checked += 1
            elif words[0] in ("bash", "python") and len(words) > 1 and words[1].endswith((".sh", ".py")):
                assert (ROOT / words[1]).is_file(), (page, line)
    assert checked > 50


def test_subcommand_help_names_unknown_commands():
    """The checker above would not pass a subcommand the CLI lacks."""
    with pytest.raises(AssertionError, match="no command 'no-such-command'"):
        help_text("no-such-command")

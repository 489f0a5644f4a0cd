"""The README's "Using it" Python snippets run as written (from a scratch folder that sees the shipped models)."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def snippets(section: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, re.S)


def test_using_it_snippets_run(tmp_path, monkeypatch, device):
    (tmp_path / "resources").symlink_to(ROOT / "resources")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOSA_VK_DEVICE", str(device.info.index))
    found = snippets("Using it")
    assert found
    for code in found:
        exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "block.tosa").is_file() and os.path.getsize(tmp_path / "block.tosa") > 0

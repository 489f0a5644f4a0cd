"""Writes tosa_vk/builder.pyi (the Builder's typed signatures for editors and type checkers) from the operator
catalogue; `--check` only reports whether it is current (exit status 1 when not).

The text comes from tosa_vk.builder.stub_text(), the same code that gives the generated methods their runtime
signatures, so help() and the stub cannot disagree. Run it after changing tosa_vk/ir/ops.py or tosa_vk/builder.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tosa_vk import builder


def main(argv: list[str]) -> int:
    path = Path(builder.__file__).with_suffix(".pyi")
    text = builder.stub_text()
    current = path.read_text() if path.exists() else ""
    if "--check" in argv:
        print(f"{path}: {'current' if current == text else 'out of date: run python scripts/gen_builder_stub.py'}")
        return 0 if current == text else 1
    if current != text:
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

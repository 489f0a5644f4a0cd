#!/usr/bin/env bash
# The code gates CI runs: ruff (lint and format) and mypy over the whole tree (generated flatbuffer code excluded;
# configuration in pyproject.toml). Sets up first, like test.sh. `--fix` applies ruff's fixes and formatting.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
if [ "${1:-}" = "--fix" ]; then
    .venv/bin/ruff check --fix .
    .venv/bin/ruff format .
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# mypy reads tosa_vk/builder.pyi in place of builder.py when it checks the package: the module itself, by name
.venv/bin/mypy --follow-imports=silent tosa_vk/builder.py
.venv/bin/python scripts/gen_builder_stub.py --check  # the stub matches the operator catalogue

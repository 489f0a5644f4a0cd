#!/usr/bin/env bash
# Regenerates vgf/fbs/ (Python accessors) from vgf.fbs.
# Uses Debian's flatc (package flatbuffers-compiler, 2.0.8); its output runs on the flatbuffers PyPI runtime.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rm -rf "$root/vgf/fbs"
flatc --python -o "$root" "$here/vgf.fbs"
touch "$root/vgf/fbs/__init__.py"

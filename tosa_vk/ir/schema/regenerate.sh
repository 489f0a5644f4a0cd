#!/usr/bin/env bash
# Regenerates tosa_vk/ir/fbs/ (Python accessors, object API) from tosa.fbs.
# Uses Debian's flatc (package flatbuffers-compiler, 2.0.8); its output runs on the flatbuffers PyPI runtime.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
rm -rf "$root/tosa_vk/ir/fbs"
flatc --python --gen-object-api -o "$root" "$here/tosa.fbs"
touch "$root/tosa_vk/ir/fbs/__init__.py"

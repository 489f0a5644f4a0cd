#!/usr/bin/env bash
# Regenerates tosa_vk/ir/fbs/ (Python accessors, object API) from tosa.fbs.
# Uses Debian's flatc (package flatbuffers-compiler, 2.0.8); its output runs on the flatbuffers PyPI runtime.
# flatc writes the namespace's packages too (empty tosa_vk/__init__.py ...): generate aside, keep fbs/ only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flatc --python --gen-object-api -o "$work" "$here/tosa.fbs"
rm -rf "$root/tosa_vk/ir/fbs"
mv "$work/tosa_vk/ir/fbs" "$root/tosa_vk/ir/fbs"
touch "$root/tosa_vk/ir/fbs/__init__.py"

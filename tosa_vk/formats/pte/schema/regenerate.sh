#!/usr/bin/env bash
# Regenerates tosa_vk/formats/pte/fbs/ (Python accessors) from ExecuTorch's program.fbs and scalar_type.fbs.
# Uses Debian's flatc (package flatbuffers-compiler, 2.0.8), as tosa_vk/ir/schema/regenerate.sh does; its output runs
# on the flatbuffers PyPI runtime. flatc writes the namespace's packages too: generate aside, keep fbs/ only.
# --gen-object-api: the ...T classes (unpack / Pack) that the tests and the .pte fuzzer (tests/fuzz_pte.py) edit programs with;
# the reader uses the accessors alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flatc --python --gen-object-api -o "$work" -I "$here" "$here/program.fbs" "$here/scalar_type.fbs"
rm -rf "$root/tosa_vk/formats/pte/fbs"
mv "$work/tosa_vk/formats/pte/fbs" "$root/tosa_vk/formats/pte/fbs"
touch "$root/tosa_vk/formats/pte/fbs/__init__.py"

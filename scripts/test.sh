#!/usr/bin/env bash
# Set up, then run the test suite (conformance tests are generated on first use and cached in ~/.cache/tosa_vk).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k flatbuffer`; the fast tier, which generates nothing
# (about two minutes on 2 cores): `bash scripts/test.sh -m "not conformance"`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
exec .venv/bin/python -m pytest -n 2 "$@"

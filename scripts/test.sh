#!/usr/bin/env bash
# Set up, then run the test suite (conformance tests are generated on first use and cached in ~/.cache/tosa_vk).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k flatbuffer`. Tiers (tests/slow.py says what is slow):
#   bash scripts/test.sh                                        everything (the default; CI's)
#   bash scripts/test.sh -m "not conformance"                   no conformance tests: generates nothing (~13 min)
#   bash scripts/test.sh -m "not conformance and not slow"      the fast tier: all but 2 test modules, a case per sweep
#                                                               (1,412 tests: 103 s on 2 cores, more when they are busy)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
exec .venv/bin/python -m pytest -n 2 "$@"

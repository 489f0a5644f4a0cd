#!/usr/bin/env bash
# Mutation fuzzers (issues 15, 34): bash scripts/fuzz.sh tosa|vgf|graph|payload|glsl|cache|pte N [--seed S] [--json report.json] [--log]
# Exit status 1 when any case crashed, hung, raised a traceback or ran wrong. See tests/fuzz.py.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python tests/fuzz.py "$@"

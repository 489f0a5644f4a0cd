#!/usr/bin/env bash
# The docs site (mkdocs.yml, docs/): built strict into build/site (a broken link, a missing page or an API name
# mkdocstrings cannot find fails it). The Benchmarks page's tables and plots come from benchmarks/results/*.json at
# build time (scripts/docs_hooks.py). Sets up first, like test.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
NO_MKDOCS_2_WARNING=1 exec .venv/bin/mkdocs build --strict --site-dir build/site

#!/usr/bin/env bash
# The device-class tier (issue 38): Arm's TOSA 1.0 conformance selection (positive tests) and the model graphs with
# each GPU class forced on this device, strict placement. Each test is compiled for every class first; only Programs
# that differ from one already judged for that test are run (identical Program bytes and SPIR-V sources give
# identical results). Kernel variants a forced class needs that are not shipped compiled are compiled with glslc at
# load (~20 ms CPU each, then kept in the SPIR-V cache). Arguments go to the tier, e.g.
# `bash scripts/test_classes.sh --classes nvidia,mali-shared --ops conv2d` (CLASS-FEATURE..: kernel features off).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
# Cost (2 cores, Mesa's shader cache warm, the validation layer off): compiling is ~3-5 ms per test and class case
# (~60-100 s CPU for the whole selection); each distinct Program run ~0.15 s CPU (CONV2D / MATMUL tests) to ~0.43 s
# (every convolution, MATMUL, ARGMAX and REDUCE test: the 675 a kernel family changes), ~2-3 s per model. The
# validation layer more than doubles a run (TOSA_VK_VALIDATION=1 turns it on; the kernels' own tests run under it,
# tests/conftest.py `device`). `--shard I/N` splits the items between CI jobs.
exec .venv/bin/python -m tosa_vk.tools.conformance.classes -j 2 "$@"

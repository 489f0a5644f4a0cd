#!/usr/bin/env bash
# The device-class tier (issue 38): Arm's TOSA 1.0 conformance selection (positive tests) and the model graphs with
# each GPU class forced on this device, strict placement, the validation layer on. Each test is compiled for every
# class first; only Programs that differ from one already judged for that test are run (identical Program bytes and
# SPIR-V sources give identical results). Kernel variants a forced class needs that are not shipped compiled are
# compiled with glslc at load (then kept in the SPIR-V cache). Arguments go to the tier, e.g.
# `bash scripts/test_classes.sh --classes nvidia,mali-shared --ops conv2d` (CLASS-FEATURE..: kernel features off).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
export TOSA_VK_VALIDATION=${TOSA_VK_VALIDATION:-1}
exec .venv/bin/python -m tosa_vk.conformance.classes -j 2 "$@"

#!/usr/bin/env bash
# The main job: set up, inspect a shipped ExecuTorch model, list the Vulkan devices, then run the models on Vulkan
# and check them against the numpy reference backend and the shipped reference results.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
.venv/bin/tosa-vk info resources/models/mobilenetv2_fp32/model.tosa
.venv/bin/tosa-vk devices
.venv/bin/tosa-vk run --backend vulkan --check --compare --test-desc resources/models/resnet_int8/desc.json
.venv/bin/tosa-vk run --backend vulkan --check --compare --tolerance 1e-5 \
    --test-desc resources/models/mobilenetv2_fp32/desc.json

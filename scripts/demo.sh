#!/usr/bin/env bash
# The main job: set up, then inspect a shipped model and the Vulkan devices tosa_vk can run on.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
.venv/bin/tosa-vk info resources/models/mobilenetv2_fp32/model.tosa
.venv/bin/tosa-vk devices
.venv/bin/python examples/one_op.py

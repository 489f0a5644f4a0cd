#!/usr/bin/env bash
# Sets up a fresh Debian machine for tosa_vk, idempotently:
#   - Debian packages: Vulkan loader + Mesa lavapipe, glslc, spirv-tools, vulkan-tools, validation layers, flatc
#   - .venv/ with tosa_vk (editable), the pinned test dependencies, the bench extra (matplotlib, for
#     `tosa-vk bench`'s plot), the iree extra (IREE, a bench anchor), the tflite extra (Arm's converter, for `tosa-vk import`) and
#     the docs extra (mkdocs, for scripts/docs.sh), all pinned in
#     constraints.txt
# Source it or run it; later runs only redo what changed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

apt_packages=(libvulkan1 mesa-vulkan-drivers vulkan-tools vulkan-validationlayers glslc spirv-tools
              flatbuffers-compiler python3-venv)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$python" -m venv .venv
fi
stamp=.venv/.tosa_vk-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing tosa_vk and pinned dependencies into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[test,bench,tflite,ray,explorer,iree,docs]'
    echo "$want" > "$stamp"
fi
# The built-in kernels' SPIR-V (shaders/builtin/spirv.zip, not committed): built when missing or stale, so that
# running a graph needs no glslc (tosa_vk/vulkan/builtin.py; the list and the build: tosa_vk/tools/conformance/shipped.py)
.venv/bin/python -m tosa_vk.tools.conformance.shipped build --if-stale

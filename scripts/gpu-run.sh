#!/usr/bin/env bash
# The one prepared command for a machine with a GPU and nothing else installed (issue 38): with .gpu/ from
# scripts/gpu-pack.sh beside the checkout it brings its own Vulkan loader (the .deb unpacked into a private folder),
# wheels, GLSL compiler and conformance tests; without .gpu/ (here, CI) it uses .venv/ or python3 and the system's.
#   bash scripts/gpu-run.sh [--quick] [--out DIR] [more tosa_vk.tools.gpu_run options]
# Writes DIR/gpu_run.json and gpu_run.md (DIR: --out, else $OUT, else gpu-run-out/) within 8 minutes (--quick: well
# under 2); the Python side is tosa_vk/tools/gpu_run.py. The GPU: VK_DRIVER_FILES if set, else NVIDIA's ICD where
# present, else whatever the loader finds (lavapipe here). TOSA_VK_TARGET=nvidia forces a device class on any device.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpu=$root/.gpu
work=$(mktemp -d /tmp/tosa_vk-gpu-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "gpu-run: $*" >&2; }

python=${PYTHON:-python3}
packed=""  # the Python version .gpu/ holds wheels for, where that is this machine's
if [ -f "$gpu/PACKED.json" ]; then
    want=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["python"])' "$gpu/PACKED.json")
    have=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [ "$want" = "$have" ]; then
        packed=$want
    elif [ -x "$root/.venv/bin/python" ]; then
        say ".gpu/ holds wheels for Python $want, $python is $have: using .venv/ and this machine's tools instead"
    else
        say ".gpu/ holds wheels for Python $want, $python is $have (pack with PYTHON_VERSION=$have)"
        exit 2
    fi
fi

if [ -n "$packed" ]; then
    # the loader (and glvnd's libGLdispatch, which NVIDIA's ICD links): no root writes, found by LD_LIBRARY_PATH
    for deb in "$gpu"/debs/*.deb; do dpkg -x "$deb" "$work/sys"; done
    libs=$work/sys/usr/lib/x86_64-linux-gnu
    # the GLSL compiler (glslangValidator behind a glslc front), spirv-val and Arm's verifier library
    mkdir -p "$work/tools"
    tar -C "$work/tools" -xJf "$gpu/tools.tar.xz"
    ln -s "$root/scripts/glslc-shim.py" "$work/tools/bin/glslc"
    export PATH=$work/tools/bin:$PATH
    export LD_LIBRARY_PATH=$libs:$work/tools/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    "$python" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-index --no-deps \
        --no-compile --no-cache-dir --target "$work/site" "$gpu"/wheels/*.whl
    export PYTHONPATH=$root:$work/site:$work/tools/py${PYTHONPATH:+:$PYTHONPATH}
    # the shipped kernels' SPIR-V (ignored in the checkout, so packed)
    [ -f "$root/shaders/builtin/spirv.zip" ] || cp "$gpu/spirv.zip" "$root/shaders/builtin/spirv.zip"
    # the conformance subset (the reference model's results beside each test: no reference model needed here)
    tar -C "$work" -xJf "$gpu/conformance.tar.xz"
    set -- --conformance "$work/conformance" "$@"
    # private caches: a bare machine's first compile is part of what is measured
    export TOSA_VK_CACHE=$work/cache MESA_SHADER_CACHE_DIR=$work/mesa
elif [ -x "$root/.venv/bin/python" ]; then
    python=$root/.venv/bin/python
else
    export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
fi

if [ -z "${VK_DRIVER_FILES:-}" ]; then
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia*.json /usr/share/vulkan/icd.d/nvidia*.json; do
        if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; break; fi
    done
fi
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do  # the ICD's libGLX_nvidia.so.0, where the image has it
    [ -d "$d" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d
done
say "driver ${VK_DRIVER_FILES:-chosen by the loader}, python $python, class ${TOSA_VK_TARGET:-of the device}"

export PYTHONUNBUFFERED=1
cd "$root"
exec_rc=0
timeout 470 "$python" -m tosa_vk.tools.gpu_run "$@" || exec_rc=$?
exit $exec_rc

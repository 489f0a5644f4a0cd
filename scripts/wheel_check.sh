#!/usr/bin/env bash
# The wheel is the product (issue 48): build the sdist and, from it, the wheel of this checkout with `python -m
# build` into a temporary folder, install the wheel into a new venv there (the pinned constraints.txt; pip's
# configured indexes), then use it as a user would, from a folder outside the checkout with PYTHONPATH unset:
# `pip check`; every module imports (scripts/wheel_check/imports.py; from the venv, never the source tree); a shipped
# model copied elsewhere runs with --check on both backends from the installed `tosa-vk`, with an empty cache and no
# glslc on PATH, and compiles no GLSL (its SPIR-V cache stays empty: every kernel came from the wheel's library); a
# custom op's own GLSL compiles (the package's glslang) and runs. The wheel's library is byte for byte the
# checkout's when that is current (`shipped build` made it). Prints the build time, the wheel's size and the first
# run's time. Takes minutes (the wheel build compiles the built-in kernels). Usage: bash scripts/wheel_check.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$repo/.venv/bin/python
work=$(mktemp -d "${TMPDIR:-/tmp}/tosa_vk-wheel-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH
cd "$work"
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

echo "== python -m build (sdist, then the wheel from it) -> $work/dist"
t=$(now)
"$py" -m build --outdir "$work/dist" "$repo" > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
build_s=$(took "$t")
wheel=$(ls "$work"/dist/*.whl)
grep "^tosa_vk_build: " "$work/build.log" || { echo "FAIL: the build hook did not run"; exit 1; }

echo "== a clean venv outside the checkout: $work/venv"
base=$("$py" -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$work/venv"
venv_py=$work/venv/bin/python
"$venv_py" -m pip install -q -c "$repo/constraints.txt" "$wheel"
"$venv_py" -m pip check

echo "== every module imports, from the venv"
"$venv_py" "$repo/scripts/wheel_check/imports.py"
"$work/venv/bin/tosa-vk" --version | grep -qx "tosa-vk $("$venv_py" -c 'import importlib.metadata as m; print(m.version("tosa_vk"))')"

echo "== the wheel's built-in kernels are the checkout's"
"$venv_py" -m zipfile -e "$wheel" "$work/unpacked" > /dev/null
lib=$work/unpacked/tosa_vk/shaders/builtin/spirv.zip
test -f "$lib"
if (cd "$repo" && "$py" -c 'import sys; from tosa_vk.tools.conformance import shipped; sys.exit(shipped.stale())'); then
    cmp "$lib" "$repo/shaders/builtin/spirv.zip"
    echo "same bytes as $repo/shaders/builtin/spirv.zip"
else
    echo "(the checkout's library is missing or stale: not compared; scripts/setup.sh builds it)"
fi

echo "== a shipped model, from a foreign folder, both backends, an empty cache, no glslc on PATH"
model=resnet_int8
cp -r "$repo/resources/models/$model" "$work/foreign"
cd "$work/foreign"
rm -f result-*.npy
mkdir "$work/nobin"
export TOSA_VK_CACHE=$work/cache
t=$(now)
env PATH="$work/venv/bin:$work/nobin" "$work/venv/bin/tosa-vk" run --test-desc desc.json --backend vulkan --check -o "$work/out-vulkan"
first_s=$(took "$t")
env PATH="$work/venv/bin:$work/nobin" "$work/venv/bin/tosa-vk" run --test-desc desc.json --backend reference --check -o "$work/out-reference"
spv=$(find "$TOSA_VK_CACHE" -name '*.spv' 2> /dev/null | wc -l)
[ "$spv" -eq 0 ] || { echo "FAIL: the first run compiled $spv GLSL kernels (they should come from the wheel)"; exit 1; }
echo "no GLSL compiled (the SPIR-V cache $TOSA_VK_CACHE holds no module)"

echo "== a custom op's own GLSL, compiled by the package's glslang"
env PATH="$work/venv/bin:$work/nobin" "$venv_py" "$repo/scripts/wheel_check/custom_op.py"
# the control: a compile is seen where the model's run saw none (its module is in the same cache now)
[ "$(find "$TOSA_VK_CACHE" -name '*.spv' | wc -l)" -gt 0 ] || { echo "FAIL: the custom op's compile left no module"; exit 1; }

size=$(stat -c %s "$wheel")
echo "wheel_check: OK"
echo "wheel build (sdist + wheel): ${build_s} s; wheel: $(basename "$wheel"), ${size} bytes; first run --check (vulkan, $model): ${first_s} s"

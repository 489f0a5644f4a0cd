#!/usr/bin/env bash
# The torch tier: tosa_vk.from_torch and the README's "From PyTorch" section, which need the `torch` extra
# (torch 2.13.0 CPU, executorch 1.5.1: ~5 minutes to install, so not part of scripts/test.sh). Its own venv,
# .venv-torch, made once; then the tests that import executorch, and the .pte reader's (which need no torch).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"  # the shipped SPIR-V (shaders/builtin/spirv.zip) and the test environment's pins
cd "$root"
python=${PYTHON:-python3}
stamp=.venv-torch/.tosa_vk-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    [ -x .venv-torch/bin/python ] || "$python" -m venv .venv-torch
    echo "test_torch: installing torch 2.13.0 (CPU) and the torch extra into .venv-torch (minutes, once)"
    # torch first, alone: the CPU build (PyPI's default wheel brings gigabytes of CUDA libraries)
    .venv-torch/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0 \
        --index-url https://download.pytorch.org/whl/cpu  # tosa_vk.tools.torch_export.INSTALL_TORCH
    .venv-torch/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[test,torch]'
    echo "$want" > "$stamp"
fi
exec .venv-torch/bin/python -m pytest -p no:xdist -q tests/test_from_torch.py tests/test_pte.py tests/test_pte_host_ops.py tests/test_pte_host_lowering.py \
    tests/test_readme.py -k "torch or pytorch or pte" "$@"

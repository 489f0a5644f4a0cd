"""tosa_vk.from_torch: a PyTorch module through ExecuTorch's Arm TOSA partitioner to a running Model, fp32 and int8,
against PyTorch eager (fp32 within 1e-4 of the largest magnitude, int8 within one output quantization step). Needs the
torch extra (pip install 'tosa_vk[torch]'); skipped where executorch is not importable, but for the error a user
without it gets."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tosa_vk


def test_without_the_extra_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "executorch", None)  # import executorch -> ImportError
    with pytest.raises(tosa_vk.TosaError, match=r"pip install 'tosa_vk\[torch\]'"):
        tosa_vk.from_torch(object(), ())


def test_the_install_command_is_the_cpu_build_the_extra_pins(monkeypatch):
    """PyPI's default torch wheel pulls CUDA: the error gives PyTorch's CPU index, the torch pyproject's extra pins,
    and scripts/test_torch.sh installs it so."""
    import tomllib
    from pathlib import Path

    from tosa_vk.tools import torch_export

    root = Path(__file__).resolve().parent.parent
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]["torch"]
    assert f"torch=={torch_export.TORCH_VERSION}" in extra
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(tosa_vk.TosaError) as info:
        tosa_vk.from_torch(object(), ())
    assert torch_export.INSTALL_TORCH in str(info.value)
    assert "--index-url https://download.pytorch.org/whl/cpu" in str(info.value)
    script = " ".join((root / "scripts" / "test_torch.sh").read_text().replace("\\\n", " ").split())
    assert f"torch=={torch_export.TORCH_VERSION} --index-url {torch_export.TORCH_CPU_INDEX}" in script


@pytest.fixture(scope="module")
def torch():
    pytest.importorskip("executorch")
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def net(torch):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.fc = torch.nn.Linear(4 * 8 * 8, 5)

        def forward(self, image):
            return self.fc(torch.flatten(torch.relu(self.conv(image)), 1))

    torch.manual_seed(0)
    return Net().eval(), torch.randn(1, 3, 8, 8)


@pytest.mark.parametrize("quantized", [False, True], ids=["fp32", "int8"])
def test_from_torch_matches_eager(net, torch, quantized, tmp_path, capsys):
    from tosa_vk.tools.cli import main

    module, image = net
    calibration = [(torch.randn(1, 3, 8, 8),) for _ in range(4)] if quantized else False
    with tosa_vk.from_torch(module, (image,), quantize=calibration, backend="reference", save=tmp_path) as model:
        assert model.inputs == {"image": ((1, 3, 8, 8), "FP32")}
        got = model.run(image=image.numpy())["output_0"]
        step = model.output_steps["output_0"]
    eager = np.load(tmp_path / "eager_0.npy")  # the quantized module's outputs for int8
    assert got.dtype == np.float32
    if quantized:
        assert step > 0 and np.abs(got - eager).max() <= step * 1.0001
    else:
        with torch.no_grad():
            assert np.array_equal(eager, module(image).numpy())
        assert np.abs(got - eager).max() <= 1e-4 * np.abs(eager).max()
    assert (tmp_path / "model.pte").is_file() and (tmp_path / "delegate_0.tosa").is_file()
    tosa_vk.load_graph(tmp_path / "delegate_0.tosa")
    for backend in ("reference", "vulkan"):
        assert main(["run", "--test-desc", str(tmp_path / "desc.json"), "--compare", "--backend", backend]) == 0
        assert "PASS vs eager_0.npy" in capsys.readouterr().out


def test_errors_name_the_module_not_a_deleted_temporary_file(torch):
    """ExecuTorch's refusal is a TosaError naming the module; a loaded program's errors too (from_torch used to load
    a temporary model.pte it then deleted, and every later error named that path)."""

    class Branchy(torch.nn.Module):
        def forward(self, x):
            return x + 1 if x.sum() > 0 else x - 1  # data-dependent control flow: torch.export refuses it

    with pytest.raises(tosa_vk.TosaError, match=r"^from_torch\(.*Branchy\): ExecuTorch cannot export it \("):
        tosa_vk.from_torch(Branchy(), (torch.randn(1, 4),), backend="reference")

    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2

    with tosa_vk.from_torch(Double(), (torch.randn(1, 4),), backend="reference") as model:
        with pytest.raises(tosa_vk.TosaError) as info:
            model.run(x=np.zeros((2, 5), np.float32))
    assert str(info.value).startswith("from_torch(") and ".pte" not in str(info.value)


def test_third_party_warnings_only_with_verbose(torch, caplog):
    """torch / torchao / ExecuTorch warnings (Python warnings, their loggers' records) stay out of the user's output
    during from_torch unless verbose=True: ExecuTorch logs a WARNING for the int64 constant of `x * 2`."""
    import logging
    import warnings

    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2

    def export(verbose: bool) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tosa_vk.from_torch(Double(), (torch.randn(1, 4),), backend="reference", verbose=verbose).close()
        return [r.name for r in caplog.records if r.levelno >= logging.WARNING] + [str(w.message) for w in caught]

    assert export(verbose=False) == []
    assert any(name.startswith("executorch") for name in export(verbose=True))

"""tosa_vk/paths.py's tool lookup: a tool the running Python's environment installs (its bin/) is found when that
environment is not activated (its bin/ not on PATH), wherever tosa_vk looks a tool up."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tosa_vk import paths
from tosa_vk.tools import torch_export
from tosa_vk.vulkan import glsl_compiler


@pytest.fixture
def unactivated(tmp_path, monkeypatch) -> Path:
    """A virtual environment's bin/ holding a fake glslc and model-converter, its python sys.executable, and a PATH
    that holds neither."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("glslc", "model-converter"):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\nprint('{name} v2099.1')\n")
        tool.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return bin_dir


def test_a_tool_of_an_unactivated_environment_is_found(unactivated, monkeypatch):
    assert paths.environment_bin() == unactivated
    assert paths.find_tool("glslc") == str(unactivated / "glslc")
    assert paths.find_tool("not-a-tool-anywhere") is None
    monkeypatch.setattr(glsl_compiler, "_SEEN", {})  # the fake compiler is not left for later tests to meet
    found = glsl_compiler.glslc()  # glslc was looked up on PATH only
    assert found is not None and found.exe == str(unactivated / "glslc")


def test_executorch_is_given_the_environment_model_converter(unactivated, monkeypatch):
    """ExecuTorch's VGF partitioner looks on PATH or at $MODEL_CONVERTER_PATH ("Unable to locate a model converter
    executable"): export_pte gives it this environment's for the call, unless the user set the variable."""
    monkeypatch.delenv(torch_export.MODEL_CONVERTER_ENV, raising=False)
    with torch_export._model_converter_found():
        assert os.environ[torch_export.MODEL_CONVERTER_ENV] == str(unactivated / "model-converter")
    assert torch_export.MODEL_CONVERTER_ENV not in os.environ
    monkeypatch.setenv(torch_export.MODEL_CONVERTER_ENV, "/opt/mine/model-converter")
    with torch_export._model_converter_found():
        assert os.environ[torch_export.MODEL_CONVERTER_ENV] == "/opt/mine/model-converter"

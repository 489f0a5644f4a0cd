"""Shared fixtures: the shipped models and Arm's generated conformance tests (generated once, then cached)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted((ROOT / "resources" / "models").iterdir())


def conformance_selection(kind: str) -> list[Path]:
    """The default selection's test folders (every op x dtype x rank class once, special tests included), plus
    the FFT tests at sizes that give DOT_PRODUCT checks."""
    from tosa_vk.conformance.generate import FFT_SELECTION, Selection, selected_tests
    extra = selected_tests(FFT_SELECTION) if kind == "positive" else []
    return selected_tests(Selection(test_type=kind)) + extra


def pytest_generate_tests(metafunc):
    if "model_dir" in metafunc.fixturenames:
        metafunc.parametrize("model_dir", MODELS, ids=[m.name for m in MODELS])
    for kind in ("positive", "negative"):
        arg = f"{kind}_test"
        if arg in metafunc.fixturenames:
            tests = conformance_selection(kind)
            metafunc.parametrize(arg, tests, ids=[t.name for t in tests])


@pytest.fixture
def model_desc(model_dir: Path) -> dict:
    return json.loads((model_dir / "desc.json").read_text())


@pytest.fixture(scope="session")
def _vulkan_device():
    """One Vulkan device per test process, with the Khronos validation layer on."""
    from tosa_vk.vulkan import Device
    with Device(validation=True) as dev:
        yield dev


@pytest.fixture
def device(_vulkan_device):
    """The shared device; a test fails if the validation layer said anything during it."""
    _vulkan_device.validation_messages.clear()
    yield _vulkan_device
    messages = list(_vulkan_device.validation_messages)
    _vulkan_device.validation_messages.clear()
    assert messages == [], "validation layer: " + " | ".join(messages[:3])

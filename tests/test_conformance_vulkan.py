"""The Vulkan backend on Arm's conformance selection, strict placement (every operator a GPU kernel), judged by
Arm's verifier; the Khronos validation layer is on and must stay silent. Covers the operators that have a Vulkan
lowering (tosa_vk/lower); the others are listed by test_vulkan_coverage."""
from __future__ import annotations

import json
import os

import pytest

from tosa_vk.conformance.run import run_tests
from tosa_vk.lower import ALIASING, LOWERINGS, load_all

pytestmark = pytest.mark.conformance
os.environ.setdefault("TOSA_VK_VALIDATION", "1")


def _op(test) -> str:
    return json.loads((test / "desc.json").read_text())["test_details"]["operator"]


def _lowered() -> set[str]:
    load_all()
    return set(LOWERINGS) | set(ALIASING) | {"CONST"}  # aliases and constants need no kernel


def test_positive(positive_test):
    if _op(positive_test) not in _lowered():
        pytest.skip(f"{_op(positive_test)} has no Vulkan kernel yet")
    (outcome,) = run_tests([positive_test], "vulkan", strict=True)
    assert outcome.status == "pass", outcome.detail


def test_negative(negative_test):
    (outcome,) = run_tests([negative_test], "vulkan", strict=True)
    assert outcome.status == "pass", outcome.detail

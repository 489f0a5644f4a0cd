"""The Vulkan backend on Arm's conformance selection, strict placement (every operator a GPU kernel), judged by
Arm's verifier; the Khronos validation layer is on and must stay silent. Every operator the generator covers,
control flow included, must run as GPU kernels."""

from __future__ import annotations

import os

import pytest

from tosa_vk.tools.conformance.run import run_tests

pytestmark = pytest.mark.conformance
os.environ.setdefault("TOSA_VK_VALIDATION", "1")


def test_positive(positive_test):
    (outcome,) = run_tests([positive_test], "vulkan", strict=True)
    assert outcome.status == "pass", outcome.detail


def test_negative(negative_test):
    (outcome,) = run_tests([negative_test], "vulkan", strict=True)
    assert outcome.status == "pass", outcome.detail

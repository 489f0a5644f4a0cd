"""TOSA 1.1 (draft) conformance: what 1.1 adds, as Arm's generator makes it with --tosa-version 1.1 (the 1.1
selection of tosa_vk.tools.conformance.generate: the 25 new operators, and 1.0 operators' tests that only a 1.1 row
types), on the reference backend and on Vulkan in strict placement, judged by Arm's tosa_verify; negative tests
rejected on both (conftest.py::tosa_1_1_selection says which tests the default run takes)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import tosa_1_1_selection

from tosa_vk.tools.conformance.run import run_tests

pytestmark = pytest.mark.conformance
os.environ.setdefault("TOSA_VK_VALIDATION", "1")


@pytest.mark.parametrize("backend", ["reference", "vulkan"])
def test_positive(positive_test_1_1, backend):
    (outcome,) = run_tests([positive_test_1_1], backend, strict=True)
    assert outcome.status == "pass", outcome.detail


@pytest.mark.parametrize("backend", ["reference", "vulkan"])
def test_negative(negative_test_1_1, backend):
    (outcome,) = run_tests([negative_test_1_1], backend, strict=True)
    assert outcome.status == "pass", outcome.detail


def test_every_new_operator_is_in_the_selection():
    """The 1.1 selection holds positive tests of each of the 25 operators TOSA 1.1 adds."""
    from tosa_vk.tools.conformance.generate import TOSA_1_1_NEW_OPS

    ops = {
        json.loads((t / "desc.json").read_text())["test_details"]["operator"] for t in tosa_1_1_selection("positive")
    }
    assert {op.upper() for op in TOSA_1_1_NEW_OPS} <= ops

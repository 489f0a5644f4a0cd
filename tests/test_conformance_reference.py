"""The reference backend on Arm's conformance selection, judged by Arm's verifier (tosa_verify's library) against
the reference model's precise-mode results; negative tests must raise TosaError."""

from __future__ import annotations

import pytest

from tosa_vk.tools.conformance.run import run_test

pytestmark = pytest.mark.conformance


def test_positive(positive_test):
    outcome = run_test(positive_test, "reference")
    assert outcome.status == "pass", outcome.detail


def test_negative(negative_test):
    outcome = run_test(negative_test, "reference")
    assert outcome.status == "pass", outcome.detail

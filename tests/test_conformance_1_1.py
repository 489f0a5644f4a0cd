"""TOSA 1.1 (draft) conformance: what 1.1 adds, as Arm's generator makes it with --tosa-version 1.1 (the 1.1
selection of tosa_vk.conformance.generate), on the reference backend and on Vulkan in strict placement, judged by
Arm's tosa_verify; negative tests rejected on both. conftest.py says which operators and rows are in scope so far."""

from __future__ import annotations

import collections
import json
import os

import pytest
from conftest import in_tosa_1_1_scope, tosa_1_1_selection

from tosa_vk.conformance.run import run_tests

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


def test_scope():
    """Which of the generated 1.1 tests (of the operators generated) are in scope; printed per operator."""
    every = tosa_1_1_selection("positive", everything=True)
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for t in every:
        row = counts[json.loads((t / "desc.json").read_text())["test_details"]["operator"]]
        row[0] += in_tosa_1_1_scope(t)
        row[1] += 1
    print("\n".join(f"{op}: {n} of {total} in scope" for op, (n, total) in sorted(counts.items())))
    assert sum(n for n, _ in counts.values()) > 0

"""The fuzz gate (issues 15, 34): a few hundred mutated .tosa files, .vgf containers, GRAPH-segment modules,
custom-shader payloads and host-file-reading model GLSL per run, each loaded and run on Vulkan in a worker process:
no crash, hang, traceback or wrong result (for GLSL: no host file's content in an output or a message). The long
runs (`bash scripts/fuzz.sh KIND N`) use the same code; the case numbers here are the first of those runs."""

from __future__ import annotations

import pytest
from fuzz import fuzz

pytestmark = pytest.mark.vulkan


@pytest.mark.parametrize("kind,cases", [("tosa", 300), ("vgf", 300), ("graph", 300), ("payload", 300)])
def test_mutated_files_fail_cleanly_or_run_right(kind, cases):
    report = fuzz(kind, cases, hang_s=120)
    assert not report["findings"], report["findings"][:10]
    assert report["counts"]["error"] > cases // 2  # the mutations do reach the readers' rules


def test_mutated_program_cache_entries_are_ignored_or_run_right():
    """20 mutated program-cache entries (issue 34): each load rebuilds or runs a good entry; none fails the load."""
    report = fuzz("cache", 20, hang_s=120)
    assert not report["findings"], report["findings"][:10]
    assert report["counts"]["ok"] >= 15


def test_mutated_pte_programs_fail_cleanly_or_run_right():
    """200 mutants of the committed ExecuTorch programs (issue 46; tests/fuzz_pte.py) through `tosa-vk info`, load
    and run on both backends: each a clean error or a run on which Vulkan and the reference backend agree."""
    report = fuzz("pte", 200, hang_s=120)
    assert not report["findings"], report["findings"][:10]
    assert report["counts"]["error"] > 100 and report["counts"]["ok"] > 20  # both paths exercised


def test_model_glsl_the_gate_passes_makes_no_compiler_open_a_file():
    """The CI sample of `bash scripts/fuzz.sh glsl N` (issue 46): 250 generated sources through the gate, the ones
    it passes compiled by glslc and glslang with every include target a watched FIFO: none opened; a sample of the
    refused ones shows the generator does reach sources that open files. Then 150 end-to-end GLSL cases (issue 34)."""
    report = fuzz("glsl", 250, hang_s=120)
    assert not report["findings"], report["findings"][:10]
    table = report["differential"]["table"]
    assert table["runs"] > 25 and table["opened"] == 0
    assert table["refused opened"] > 0
    assert report["counts"]["error"] > 150 // 2  # the route cases reach the readers' rules

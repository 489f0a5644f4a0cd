"""The tryout's frictions (issue 39), each as a user met it: a test per friction, every one failing before its fix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.tools.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
RESNET = ROOT / "resources" / "models" / "resnet_int8" / "model.tosa"


def _abs_graph(path: Path) -> Path:
    b = tosa_vk.Builder()
    x = b.input("x", (8,), "int32")
    b.output(b.abs(x), name="y")
    tosa_vk.save_graph(b.build(), path)
    return path


def _loop_graph(path: Path) -> Path:
    b = tosa_vk.Builder()
    n = b.input("n", (1,), "int32")
    left = b.while_loop(
        [n],
        lambda s, i: s.greater(i, s.const(np.zeros(1, np.int32))),
        lambda s, i: s.sub(i, s.const(np.ones(1, np.int32))),
    )
    b.output(*(left if isinstance(left, tuple) else (left,)))
    tosa_vk.save_graph(b.build(), path)
    return path


def test_builder_output_takes_a_name():
    b = tosa_vk.Builder()
    x = b.input("x", (3,), "fp32")
    y = b.abs(x)
    b.output(b.add(y, y), name="doubled")
    b.output(y, name="magnitude")  # a value other operators read: renamed for them too
    graph = b.build()
    assert graph.main.outputs == ["doubled", "magnitude"]
    out = tosa_vk.load(graph, backend="reference").run({"x": np.array([-1, 2, -3], np.float32)})
    assert out["doubled"].tolist() == [2, 4, 6] and out["magnitude"].tolist() == [1, 2, 3]
    with pytest.raises(TosaError, match="renamed by output"):
        b.abs(y)  # the renamed Value is spent
    with pytest.raises(TosaError, match="names one value"):
        b.output(x, x, name="two")
    with pytest.raises(TosaError, match="already used"):
        b.output(b.abs(x), name="x")


def test_info_on_a_vgf_points_to_inspect(tmp_path, capsys):
    vgf = tmp_path / "model.vgf"
    assert main(["export", str(_abs_graph(tmp_path / "m.tosa")), "-o", str(vgf)]) == 0
    capsys.readouterr()
    assert main(["info", str(vgf)]) == 2
    err = capsys.readouterr().err
    assert "tosa-vk inspect" in err and "vgf2tosa" in err


@pytest.mark.vulkan
def test_compute_vgf_refuses_check_and_names_tosa_types(tmp_path, capsys, device):
    vgf = tmp_path / "compute.vgf"
    assert main(["export", str(_abs_graph(tmp_path / "m.tosa")), "--segments", "compute", "-o", str(vgf)]) == 0
    np.save(tmp_path / "x.npy", np.arange(-4, 4, dtype=np.int32))
    capsys.readouterr()
    assert main(["run", str(vgf), "-i", f"x={tmp_path / 'x.npy'}", "--check"]) == 2
    assert "--check needs the TOSA graph" in capsys.readouterr().err
    assert main(["run", str(vgf), "-i", f"x={tmp_path / 'x.npy'}"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"y: \[8\] INT32", out), out


@pytest.mark.parametrize("segments", ["graph", "compute"])
def test_exporting_control_flow_says_no_vgf_holds_it(tmp_path, capsys, segments, request):
    if segments == "compute":
        request.getfixturevalue("device")
    graph = _loop_graph(tmp_path / "loop.tosa")
    assert main(["export", str(graph), "--segments", segments, "-o", str(tmp_path / "x.vgf")]) == 2
    err = capsys.readouterr().err
    assert "neither GRAPH nor COMPUTE segments can hold it" in err and "strict=True" not in err
    assert not (tmp_path / "x.vgf").exists()


@pytest.mark.vulkan
def test_placement_rules_follow_host_ops(capsys, device):
    assert main(["placement", str(RESNET), "--format", "rules", "--host-ops", "conv2d"]) == 0
    rules = [line for line in capsys.readouterr().out.splitlines() if line and not line.startswith("#")]
    assert rules and all(line.startswith("CONV2D:") for line in rules)


@pytest.mark.vulkan
def test_a_run_with_every_operator_on_the_host_says_so(tmp_path, capsys, device):
    model = _abs_graph(tmp_path / "m.tosa")
    np.save(tmp_path / "x.npy", np.arange(-4, 4, dtype=np.int32))
    assert main(["run", str(model), "-i", f"x={tmp_path / 'x.npy'}", "--backend", "vulkan", "--host-ops", "abs"]) == 0
    out = capsys.readouterr().out
    assert "ran on the host (vulkan backend, no operator placed on Vulkan)" in out and "ran on vulkan" not in out


def test_no_absolute_paths_of_one_machine():
    """Docstrings and tests named /work/shared/..., a folder only the developers' machine has."""
    found = []
    for folder in ("tosa_vk", "vgf", "tests", "scripts", "examples", "benchmarks"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".sh", ".pyi") and "fbs" not in path.parts and path.name != Path(__file__).name:
                found += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1)
                          if re.search(r"/(work|home|root)/\w", line)]  # fmt: skip
    assert not found


def test_bench_quick_help_is_true():
    bench = next(a for a in build_parser()._actions if a.dest == "command").choices["bench"]
    quick = next(a for a in bench._actions if a.dest == "quick")
    assert "minutes" not in quick.help.replace("not minutes", "")


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations made by a test stay in it."""
    from tosa_vk import custom

    monkeypatch.setattr(custom, "REGISTRY", dict(custom.REGISTRY))


def _custom_graph(domain: str, name: str):
    b = tosa_vk.Builder()
    x = b.input("x", (2, 3), "fp32")
    b.output(
        b.custom(
            [x], operator_name=name, domain_name=domain, implementation_attrs=b"", out_shape=(2, 3), out_dtype="fp32"
        )
    )
    return b.build()


def test_a_numpy_twin_may_return_one_array(scratch_registry):
    @tosa_vk.custom_op("com.example", "twice_bare")
    def twice(inputs, attrs):
        return inputs[0] * 2  # a bare array, not [array]: was read as a list of its 2 rows

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = tosa_vk.load(_custom_graph("com.example", "twice_bare"), backend="reference").run({"x": x})
    np.testing.assert_array_equal(next(iter(out.values())), x * 2)


@pytest.mark.parametrize("backend", ["reference", "vulkan"])
def test_an_unknown_custom_op_names_tosa_vk_custom_ops(backend, request):
    if backend == "vulkan":
        request.getfixturevalue("device")
    with pytest.raises(TosaError, match="TOSA_VK_CUSTOM_OPS=my_ops.py"):
        m = tosa_vk.load(_custom_graph("com.example", "nowhere"), backend=backend)
        m.run({"x": np.zeros((2, 3), np.float32)})


def test_default_export_of_a_registered_op_names_the_way_out(tmp_path, scratch_registry):
    from tosa_vk.formats.vgf_graph import export

    @tosa_vk.custom_op("com.example", "twice_export")
    def twice(inputs, attrs):
        return [inputs[0] * 2]

    with pytest.raises(TosaError, match="--segments compute.*TOSA_VK_CUSTOM_OPS"):
        export(_custom_graph("com.example", "twice_export"), tmp_path / "x.vgf")


def test_k_that_names_other_tests_generates_no_conformance_selection(tmp_path):
    """`scripts/test.sh -k NAME` on a fresh machine generated every conformance selection (minutes, silently) before
    running the one test asked for."""
    env = {**os.environ, "TOSA_VK_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
         "tests/test_conformance_reference.py", "tests/test_glsl_gate.py", "-k", "include_machinery"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert not (tmp_path / "cache" / "conformance").exists()


def test_k_analysis_keeps_what_may_match_a_test_id():
    import conftest

    class Config:
        class option:
            keyword = ""

    keywords = {"test_positive", "test_conformance_reference", "tests", "conformance"}
    for expression, deselects in [
        ("include_machinery", True),  # names a test of test_glsl_gate
        ("test_glsl_gate", True),  # a module
        ("xyzzy", False),  # names no test: could be a generated test's id, only the selection can tell
        ("xyzzy and not test_glsl_gate", False),
        ("conv2d", True),  # names tests (test_conv2d_...): a selection not generated yet is not generated for it
        ("test_negative and not conformance", True),
        ("test_positive", False),
        ("not test_positive", True),
    ]:
        Config.option.keyword = expression
        assert conftest._keywords_deselect(Config, keywords) is deselects, expression


def test_first_run_says_it_is_generating(monkeypatch):
    import conftest

    from tosa_vk.tools.conformance import generate

    lines, made = [], []
    reporter = type("Reporter", (), {"write_line": lambda self, line: lines.append(line)})()

    class Config:
        class option:
            markexpr, keyword, collectonly = "", "not test_positive", False

        class pluginmanager:
            get_plugin = staticmethod(lambda name: reporter)

    monkeypatch.setattr(
        conftest,
        "_conformance_functions",
        lambda: {
            "m::test_positive": ("positive_test", {"test_positive", "conformance"}),
            "m::test_negative": ("negative_test", {"test_negative", "conformance"}),
        },
    )
    monkeypatch.setattr(generate, "is_generated", lambda sel: False)
    monkeypatch.setattr(generate, "generate", lambda sel: made.append(sel))
    conftest.pytest_sessionstart(type("Session", (), {"config": Config})())
    assert made and all(sel.test_type == "negative" for sel in made)
    assert "positive selections are not generated yet and -k names other tests" in lines[0]
    assert lines[1].startswith("generating Arm's conformance tests") and lines[-1].startswith("generated")

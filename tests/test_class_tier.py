"""Correctness with every device class forced (issue 38): the tier's machinery (tosa_vk/tools/conformance/classes.py;
the whole selection and the model graphs run in scripts/test_classes.sh, which CI runs), `tosa-vk conformance
--target`, and that each GPU class compiles a held-out CNN to a Program of its own."""

from __future__ import annotations

import os

import pytest
from conftest import ROOT

from tosa_vk import device_class
from tosa_vk.errors import TosaError
from tosa_vk.ir import load_graph
from tosa_vk.stages import compiler
from tosa_vk.target import LAVAPIPE
from tosa_vk.tools import cli
from tosa_vk.tools.bench import graphs as built
from tosa_vk.tools.conformance import classes as tier

# the operators a CNN's time is in: a class differs from lavapipe's kernels when one of them takes another family
CNN_OPERATORS = ("CONV2D", "DEPTHWISE_CONV2D", "MATMUL")


def _differs_on_lavapipe(name: str) -> bool:
    target = tier.class_target(LAVAPIPE, name)
    return any(target.family(op) != "register" for op in CNN_OPERATORS)


def _held_out_cnns():
    return {
        "resnet_fp32": built.build("resnet_fp32")[0],
        "mobilenetv2_fp32": load_graph(ROOT / "resources" / "models" / "mobilenetv2_fp32" / "model.tosa"),
    }


def test_every_gpu_class_takes_another_family_on_lavapipe():
    """What the next test relies on: forced here, each GPU class names a non-register family for a CNN operator
    (lavapipe has shared memory and subgroups); lavapipe itself none."""
    assert [c for c in tier.GPU_CLASSES if not _differs_on_lavapipe(c)] == []
    assert not _differs_on_lavapipe("lavapipe")


@pytest.mark.parametrize("name", [c for c in tier.GPU_CLASSES if _differs_on_lavapipe(c)])
def test_each_gpu_class_compiles_a_held_out_cnn_to_its_own_program(name):
    for model, graph in _held_out_cnns().items():
        keys = tier.class_programs(graph, LAVAPIPE, [name])
        assert not keys[name].startswith("error"), keys[name]
        assert keys[name] != keys["lavapipe"], f"{model}: {name} compiles lavapipe's Program"


def test_fingerprint_is_the_programs_bytes_and_sources():
    """Compiling twice gives the same fingerprint (else the tier would run every class); another Program another."""
    graph = built.build("gru_fp32")[0]
    same = [tier.fingerprint(compiler.compile(graph, LAVAPIPE, strict=True)) for _ in range(2)]
    unfused = tier.fingerprint(compiler.compile(graph, LAVAPIPE, strict=True, fuse=False))
    assert same[0] == same[1] != unfused


def test_a_verdict_is_shared_by_the_classes_whose_programs_are_equal():
    keys = {"lavapipe": "a", "nvidia": "b", "amd": "b", "mali": "a", "generic": "c"}
    ran = []

    def judge(cls):
        ran.append(cls)
        return ("fail", "off by one") if cls == "generic" else ("pass", "")

    classes = ["nvidia", "amd", "mali", "generic"]
    out = {o.cls: o for o in tier._share(keys, classes, judge, False, "t", "conformance")}
    assert ran == ["nvidia", "generic"]
    assert (out["amd"].status, out["amd"].same_as, out["amd"].ran) == ("pass", "nvidia", False)
    assert (out["mali"].status, out["mali"].same_as) == ("judged", "lavapipe")
    assert out["generic"].status == "fail"
    lines = tier.summary(list(out.values()), classes, 1.0)
    assert lines[0].startswith("conformance: 1 tests x 4 classes: 2 distinct programs run (1 equal lavapipe's")
    assert "1 failed" in lines[0]
    ran.clear()
    out = {o.cls: o for o in tier._share(keys, classes, judge, True, "t", "model")}
    assert ran == ["lavapipe", "nvidia", "generic"] and out["mali"].same_as == "lavapipe"


def test_kill_switch_cases():
    """CLASS-FEATURE..: the class with kernel features off, as TOSA_VK_DISABLE switches them off."""
    assert tier.parse_case("mali-fp16-int8dot") == ("mali", frozenset({"fp16", "int8dot"}))
    target = tier.class_target(LAVAPIPE, "nvidia-shared")
    assert (target.device_class, target.family("CONV2D"), target.family("REDUCE")) == ("nvidia", "register", "subgroup")
    assert tier.class_target(LAVAPIPE, "nvidia-subgroup").family("ARGMAX") == "register"
    for bad in ("nvidia-sharde", "voodoo-shared"):
        with pytest.raises(TosaError):
            tier.parse_case(bad)


def test_conformance_target_errors(capsys):
    assert cli.main(["conformance", "--target", "voodoo", "--ops", "add"]) == 2
    assert "unknown device class 'voodoo'" in capsys.readouterr().err
    assert cli.main(["conformance", "--backend", "reference", "--target", "nvidia", "--ops", "add"]) == 2
    assert "needs --backend vulkan" in capsys.readouterr().err


def test_the_tier_names_every_model_and_class():
    assert tier.GPU_CLASSES == tuple(c for c in device_class.CLASSES if c != "lavapipe")
    assert set(tier.model_names()) >= {"mobilenetv2_fp32", "resnet_int8", "lstm_unrolled_fp32", *built.GRAPHS}
    assert tier.main(["--classes", "nvidia,voodoo", "--no-conformance"]) == 2
    assert tier.main(["--shard", "3/2", "--no-conformance"]) == 2
    for case in tier.DISABLE_CASES:
        tier.parse_case(case)


@pytest.mark.vulkan
def test_a_model_with_classes_forced():
    """The tier on one model: lavapipe's Program run and judged, each class's equal to it shares the verdict."""
    out = tier.run_model_classes("gru_fp32", ("nvidia", "generic", "nvidia-shared"))
    assert [o.status for o in out] == ["pass"] * 4, [o.detail for o in out]
    assert os.environ.get("TOSA_VK_DISABLE") is None  # the case's kill switch is undone
    crash = tier._checked(lambda case: [][1])  # a crash is that case's error, the tier goes on
    assert crash("nvidia") == ("error", "IndexError: list index out of range")
    assert out[0].cls == "lavapipe" and out[0].ran


@pytest.mark.conformance
def test_conformance_with_a_class_forced(capsys):
    """`tosa-vk conformance --target mali` (strict implied) on ADD's tests, and the tier on one of them."""
    from conftest import one_positive_test_per_op

    (test,) = [t for t in one_positive_test_per_op() if t.name.startswith("add_")]
    assert cli.main(["conformance", "--target", "mali", "--ops", "add", "-j", "1"]) == 0
    assert "| **all** |" in capsys.readouterr().out
    out = tier.run_test_classes(test, ("adreno",), baseline=True)
    assert [o.status for o in out] == ["pass", "pass"], [o.detail for o in out]

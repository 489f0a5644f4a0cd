"""Partition control (issue 19, after NNAdapter's heterogeneous execution): `host_ops` rules and partition files put
chosen operators on the host (tosa_vk/stages/host_rules.py), every placement says why, and `tosa-vk placement` shows
them or writes every operator as a rule line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, TosaError
from tosa_vk.stages.host_rules import read_file
from tosa_vk.stages.partition import partition
from tosa_vk.target import LAVAPIPE
from tosa_vk.tools.cli import build_parser, main

RESNET = Path(__file__).resolve().parent.parent / "resources" / "models" / "resnet_int8"


def small_graph():
    """x, y -> ADD 'a' -> MUL 'm' -> ADD 'c' -> RESHAPE 'out': two ADDs told apart by their tensors."""
    b = Builder()
    x = b.input("x", (4, 8), "fp32")
    y = b.input("y", (4, 8), "fp32")
    a = b.add(x, y, name="a")
    m = b.mul(a, x, name="m")
    c = b.add(m, y, name="c")
    b.output(b.reshape(c, (32,), name="out"))
    return b.build()


FEEDS = {"x": np.arange(32, dtype=np.float32).reshape(4, 8) / 7, "y": np.full((4, 8), 0.5, np.float32)}


def places(graph, **options) -> dict[str, tuple[str, str]]:
    """Operator label -> (where, reason), constants left out."""
    placed = partition(graph, LAVAPIPE, **options).placements.values()
    return {p.op: (p.where, p.reason) for p in placed if not p.op.startswith("CONST")}


def resnet_feeds() -> dict[str, np.ndarray]:
    desc = json.loads((RESNET / "desc.json").read_text())
    return {n: np.load(RESNET / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}


# 1. the rules


def test_operator_names_in_any_case_and_output_tensor_names():
    for rule in ("ADD", "add", "Add"):
        got = places(small_graph(), host_ops=[rule])
        assert got["ADD #0 'a'"] == ("host", f"forced to the host by host_ops rule {rule!r}")
        assert got["ADD #3 'c'"][0] == "host" and got["MUL #2 'm'"][0] == "vulkan"
    got = places(small_graph(), host_ops="m")  # one rule as a string; a tensor name
    assert [w for w, _ in got.values()] == ["vulkan", "host", "vulkan", "alias"]
    assert got["MUL #2 'm'"][1] == "forced to the host by host_ops rule 'm'"


def test_an_nnadapter_rule_with_inputs_and_outputs_matches_exactly_one_operator():
    for rule in ("ADD:m,y:c", "add:y:c", "ADD::c", "ADD:m", "ADD:y,m:"):
        got = places(small_graph(), host_ops=[rule])
        assert [k for k, (w, _) in got.items() if w == "host"] == ["ADD #3 'c'"], rule
        assert got["ADD #3 'c'"][1] == f"forced to the host by host_ops rule {rule!r}"
    got = places(small_graph(), host_ops=["ADD:y"])  # inputs a subset: both ADDs read y
    assert [k for k, (w, _) in got.items() if w == "host"] == ["ADD #0 'a'", "ADD #3 'c'"]


def test_the_first_matching_rule_names_the_placement():
    got = places(small_graph(), host_ops=["ADD::a", "add"])
    assert got["ADD #0 'a'"][1].endswith("host_ops rule 'ADD::a'")
    assert got["ADD #3 'c'"][1].endswith("host_ops rule 'add'")


@pytest.mark.parametrize(
    "rule, message",
    [
        ("SIN", r"host_ops rule 'SIN' matches no operator: the graph has no SIN operator \(it has ADD, CONST, CONST_S"),
        ("nope", r"host_ops rule 'nope' matches no operator: no operator writes a tensor 'nope'"),
        ("ADD:x:c", r"host_ops rule 'ADD:x:c' matches no operator: no ADD operator reads 'x' and writes 'c'"),
        ("FOO:x", r"'FOO:x' matches no operator: .*no NNAdapter rule .*'FOO' is not a TOSA operator"),
        ("ADD:a:b:c", r"host_ops rule 'ADD:a:b:c': malformed, more than 3 fields"),
        ("ADD:x,,y", r"host_ops rule 'ADD:x,,y': malformed, an empty input tensor name"),
        (" ", r"an empty rule"),
    ],
)
def test_a_rule_that_matches_nothing_or_is_malformed_is_an_error(rule, message):
    with pytest.raises(TosaError, match=message):
        tosa_vk.compile(small_graph(), LAVAPIPE, host_ops=["MUL", rule])


def test_host_ops_takes_a_list_of_strings():
    with pytest.raises(TosaError, match="host_ops takes a list of rules, got int"):
        tosa_vk.compile(small_graph(), LAVAPIPE, host_ops=3)
    with pytest.raises(TosaError, match="a host rule is a string"):
        tosa_vk.compile(small_graph(), LAVAPIPE, host_ops=[("ADD",)])


def test_constants_control_flow_and_variables_keep_their_place():
    b = Builder()
    x = b.input("x", (4,), "fp32")
    b.output(b.add(x, b.const(np.ones(4, np.float32), name="w"), name="y"))
    for rule in ("CONST", "w", "CONST::w"):
        with pytest.raises(TosaError, match=rf"CONST #0 'w': cannot be forced to the host \(host_ops rule '{rule}'\)"):
            tosa_vk.compile(b.build(), LAVAPIPE, host_ops=[rule])


def test_strict_refuses_what_a_rule_puts_on_the_host():
    with pytest.raises(TosaError, match=r"MUL #2 'm': placed on the host .*host_ops rule 'MUL'; strict placement"):
        tosa_vk.compile(small_graph(), LAVAPIPE, host_ops=["MUL"], strict=True)


# 2. partition files


def test_a_partition_file_with_comments_and_blank_lines(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("# the multiplications\n\nMUL   # on the host\n  ADD::c\n")
    got = places(small_graph(), host_ops=read_file(path))
    assert got["MUL #2 'm'"] == ("host", f"forced to the host by partition file {path} line 3: 'MUL'")
    assert got["ADD #3 'c'"] == ("host", f"forced to the host by partition file {path} line 4: 'ADD::c'")
    assert got["ADD #0 'a'"][0] == "vulkan"
    program = tosa_vk.compile(small_graph(), LAVAPIPE, host_ops=["add::a"], partition=path)
    assert sum(p.where == "host" for p in program.placement) == 3


@pytest.mark.parametrize(
    "text, message",
    [
        ("MUL\n\n# x\nSIN\n", r"partition file \S+p.txt line 4: 'SIN' matches no operator"),
        ("MUL\nADD:x:a:b\n", r"partition file \S+p.txt line 2: 'ADD:x:a:b': malformed"),
        ("ADD:x,:a\n", r"partition file \S+p.txt line 1: 'ADD:x,:a': malformed, an empty input tensor name"),
    ],
)
def test_a_partition_file_error_names_the_file_and_line(tmp_path, text, message):
    (tmp_path / "p.txt").write_text(text)
    with pytest.raises(TosaError, match=message):
        tosa_vk.compile(small_graph(), LAVAPIPE, partition=tmp_path / "p.txt")


def test_a_missing_partition_file(tmp_path):
    with pytest.raises(TosaError, match="nothing.txt: cannot read the partition file"):
        tosa_vk.compile(small_graph(), LAVAPIPE, partition=tmp_path / "nothing.txt")


# 3. on the device: the same results, the program cache keyed by the rules


def test_host_ops_on_resnet_int8_is_bit_exact(device, tmp_path):
    feeds = resnet_feeds()
    with tosa_vk.load(RESNET / "model.tosa", backend="vulkan", device=device, cache_dir=False) as model:
        want = model.run(feeds)
        assert not any(p.where == "host" for p in model.placement)
    for cached in (False, True):  # a cache hit runs the stored Program's host steps
        with tosa_vk.load(
            RESNET / "model.tosa", backend="vulkan", device=device, host_ops=["conv2d"], cache_dir=tmp_path
        ) as model:
            assert model.cached == cached
            got = model.run(feeds)
            convs = [p for p in model.placement if p.op.startswith("CONV2D")]
            assert convs and all(p.where == "host" for p in convs)
            assert all(p.reason == "forced to the host by host_ops rule 'conv2d'" for p in convs)
        for name in want:
            assert np.array_equal(got[name], want[name]), name


def test_a_small_graph_with_rules_matches_the_reference(device, tmp_path):
    want = tosa_vk.load(small_graph(), backend="reference").run(FEEDS)
    (tmp_path / "p.txt").write_text("RESHAPE\n")  # an alias too: copied on the host
    for options in ({"host_ops": ["ADD:x,y:a", "m"]}, {"partition": tmp_path / "p.txt"}):
        with tosa_vk.load(small_graph(), backend="vulkan", device=device, cache_dir=False, **options) as model:
            got = model.run(FEEDS)
            assert any(p.where == "host" for p in model.placement)
        assert np.allclose(got["out"], want["out"], rtol=1e-6), options


def test_the_program_cache_tells_rules_and_partition_files_apart(device, tmp_path):
    path = tmp_path / "p.txt"

    def hosted(**options) -> list[str]:
        with tosa_vk.load(small_graph(), backend="vulkan", device=device, cache_dir=tmp_path / "c", **options) as m:
            return [p.op for p in m.placement if p.where == "host"]

    assert hosted(host_ops=["ADD"]) == ["ADD #0 'a'", "ADD #3 'c'"]
    assert hosted(host_ops=["MUL"]) == ["MUL #2 'm'"]
    path.write_text("MUL\n")
    assert hosted(partition=path) == ["MUL #2 'm'"]
    path.write_text("ADD::a\n")  # the same file, other rules
    assert hosted(partition=path) == ["ADD #0 'a'"]
    path.write_text("ADD::nothing\n")  # an error, never a cache entry
    with pytest.raises(TosaError, match="line 1: 'ADD::nothing' matches no operator"):
        hosted(partition=path)


def test_the_reference_backend_places_every_operator_on_the_host():
    with tosa_vk.load(small_graph(), backend="reference") as model:
        placement = model.placement
    assert [p.op for p in placement if not p.op.startswith("CONST")] == ["ADD #0 'a'", "MUL #2 'm'", "ADD #3 'c'",
                                                                          "RESHAPE #5 'out'"]  # fmt: skip
    assert {(p.where, p.reason) for p in placement} == {("host", "reference backend: numpy")}
    with pytest.raises(TosaError, match="reference backend takes no option 'host_ops'"):
        tosa_vk.load(small_graph(), backend="reference", host_ops=["ADD"])


# 4. the command line


def test_placement_rules_read_back_as_a_partition_file(tmp_path, capsys, device):
    """NNAdapter's workflow: every operator to the host, then lines deleted until the fault shows."""
    model = str(RESNET / "model.tosa")
    assert main(["placement", model, "--format", "rules"]) == 0
    rules = capsys.readouterr().out
    lines = rules.splitlines()
    assert "CONV2D:tosa_transpose_default,aten_convolution_default_weight_ohwi," in rules
    assert all(line.startswith("# ") for line in lines if line.split(":")[0].lstrip("# ") in ("CONST", "CONST_SHAPE"))
    (tmp_path / "all.txt").write_text(rules)
    assert main(["placement", model, "--partition", str(tmp_path / "all.txt")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[-1].startswith("0 vulkan, 68 host"), table[-1]
    assert f"host      forced to the host by partition file {tmp_path / 'all.txt'} line " in table[2]
    desc = RESNET / "desc.json"
    args = ["run", "--test-desc", str(desc), "--backend", "vulkan", "--compare", "-o", str(tmp_path)]
    assert main([*args, "--partition", str(tmp_path / "all.txt")]) == 0
    out = capsys.readouterr().out
    assert "PASS vs ref-result-0.npy: max |diff| 0, exact" in out
    assert "0 operators as Vulkan kernels, 0 fused into them, 68 on the host" in out


def test_placement_table(capsys):
    assert main(["placement", str(RESNET / "model.tosa"), "--target", "lavapipe", "--host-ops", "max_pool2d"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("model.tosa: target lavapipe (named target)")
    assert out[1].split() == ["operator", "place", "reason"]
    assert (
        "MAX_POOL2D #42 'tosa_max_pool2d_default'   host      forced to the host by host_ops rule 'max_pool2d'" in out
    )
    assert out[-1].startswith("21 vulkan, 45 fused, 1 host, 1 alias"), out[-1]


def test_run_host_ops(tmp_path, capsys, device):
    tosa_vk.save_graph(small_graph(), tmp_path / "m.tosa")
    inputs = []
    for name, value in FEEDS.items():
        np.save(tmp_path / f"{name}.npy", value)
        inputs += ["-i", f"{name}={tmp_path / name}.npy"]
    args = ["run", str(tmp_path / "m.tosa"), *inputs, "--backend", "vulkan", "--check"]
    assert main([*args, "--host-ops", "add", "MUL::m"]) == 0
    out = capsys.readouterr().out
    assert "PASS vs reference backend" in out and "3 on the host" in out
    assert "host: MUL #2 'm': forced to the host by host_ops rule 'MUL::m'" in out
    assert main([*args, "--host-ops", "SIN"]) == 2
    assert "tosa-vk: error: host_ops rule 'SIN' matches no operator" in capsys.readouterr().err
    assert main([*args[:-3], "--backend", "reference", "--host-ops", "add"]) == 2
    assert "the reference backend runs every operator on the host already" in capsys.readouterr().err


def test_placement_help_shows_choices_and_defaults():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    text = sub.choices["placement"].format_help()
    assert "{table,rules}" in text and "(default: table)" in text
    assert "--host-ops RULE [RULE ...]" in text and "--partition FILE" in text
    run = sub.choices["run"].format_help()
    assert "--host-ops RULE [RULE ...]" in run


def test_a_rule_line_reads_back_as_a_rule_for_its_operator():
    from tosa_vk.ir.graph import Operator
    from tosa_vk.stages.host_rules import parse, rule_line, writable

    graph = small_graph()
    for op in graph.main.operators:
        rule = parse(rule_line(op), "test")
        assert writable(op) and [o for o in graph.main.operators if rule.matches(o)] == [op]
    assert not writable(Operator("ADD", ["a:0", "b"], ["c"])) and not writable(Operator("ADD", ["a,b"], ["c"]))

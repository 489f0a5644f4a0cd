"""Every built-in shader's push-constant block is declared once (tosa_vk/stages/lower/push.py): the declaration matches
the GLSL, every built-in kernel carries its layout, and VGF export bakes from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tosa_vk
from tosa_vk.abi.shader_abi import MAX_RANK
from tosa_vk.ir import load_graph
from tosa_vk.program import Kernel, walk
from tosa_vk.stages.lower import push

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"#else\s*layout\(push_constant\) uniform Params \{(.*?)\} p;\s*#endif", re.S)


def glsl_members(shader: str) -> list[tuple[str, str, int]]:
    """The push-constant members of shaders/<shader>.comp as its GLSL declares them (a test-only parse)."""
    text = (ROOT / "shaders" / f"{shader}.comp").read_text()
    (body,) = BLOCK.findall(text)
    body = re.sub(r"//[^\n]*", "", body).replace("MAX_RANK", str(MAX_RANK)).replace("EP_PUSH", "")
    members = []
    for decl in filter(None, (d.strip() for d in body.split(";"))):
        glsl, names = decl.split(None, 1)
        for name in (n.strip() for n in names.split(",")):
            m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", name)
            assert m, decl
            members.append((m[1], glsl, int(m[2] or 0)))
    return members


@pytest.mark.parametrize("shader", sorted(push.SHADERS))
def test_declared_layout_matches_the_shader(shader):
    found = glsl_members(shader)
    for layout in push.SHADERS[shader]:
        clamp_t = {"CLAMP_T": layout.members[-1][1]} if layout.members else {}  # activation: the bound type
        assert [(n, clamp_t.get(t, t), c) for n, t, c in found] == list(layout.members), shader


def test_every_shader_with_push_constants_is_declared():
    wrapped = {
        str(p.relative_to(ROOT / "shaders"))[:-5]
        for p in (ROOT / "shaders").rglob("*.comp")
        if "push_constant" in p.read_text()
    }
    assert wrapped == set(push.SHADERS)


def test_pack_checks_the_value_count():
    with pytest.raises(ValueError, match="take 3 values, got 2"):
        push.CLAMP_INT.pack(1, 2)
    data, members = push.CLAMP_FLOAT.pack(4, -1.5, 6.0)
    assert len(data) == 12 and members == push.CLAMP_FLOAT.members


def test_baked_struct_holds_the_values():
    data, members = push.CLAMP_FLOAT.pack(7, -1.5, float("inf"))
    assert push.baked(members, data) == (
        "struct Params { uint total; float lo; float hi; }; const Params p = Params(0x00000007u, -1.5, (1.0/0.0));"
    )


@pytest.mark.parametrize("model", ["resnet_int8", "mobilenetv2_fp32", "lstm_unrolled_fp32"])
def test_every_built_in_kernel_carries_its_layout(model):
    program = tosa_vk.compile(load_graph(ROOT / "resources" / "models" / model / "model.tosa"))
    kernels = [s for s in walk(program.steps) if isinstance(s, Kernel)]
    for k in kernels:
        if k.push_constants:
            own = k.push_layout[:-1] if k.push_layout[-1][0] == "ep" else k.push_layout  # + LowerCtx.word's
            assert own in [layout.members for layout in push.SHADERS.get(k.shader, (push.NONE,))], k.op
            assert len(k.push_constants) == 4 * sum(max(n, 1) for _, _, n in k.push_layout), k.op


def test_push_words_are_shared_scalars():
    """resnet_int8's layers of one geometry and chain differ only in zero points and clamp bounds: push-constant
    words, so they share a pipeline (a shader variant, specialized with the geometry); both programs compute the same
    (tests/test_fuse.py)."""
    program = tosa_vk.compile(load_graph(ROOT / "resources" / "models" / "resnet_int8" / "model.tosa"))
    convs = [s for s in walk(program.steps) if isinstance(s, Kernel) and s.shader == "convolution/conv"]
    assert all(("ep", "int", int(dict(k.defines)["EP_WORDS"])) == k.push_layout[-1] for k in convs)
    assert len({(k.defines, k.specs) for k in convs}) == len(convs) - 2  # 16 -> 14 (conv_1 / 3 and conv_2 / 4)

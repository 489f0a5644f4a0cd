"""Issue 47: fused kernels' GLSL comes from shader files (shaders/include/fused.glsl) and one renderer
(tosa_vk/stages/lower/fused/render.py); define values are names, numbers, types and calls, never statements."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tosa_vk.stages import compiler
from tosa_vk.stages.lower.fused import render
from tosa_vk.target import LAVAPIPE
from tosa_vk.tools.conformance import shipped
from tosa_vk.vulkan.variant import program_variants

FUSED = Path(render.__file__).parent
STATEMENT = set(";{}")


def _statements(defines) -> list[tuple[str, str]]:
    return [(k, v) for k, v in defines if STATEMENT & set(v)]


def test_the_shipped_variants_hold_no_glsl_statements():
    variants = shipped.manifest()
    found = [(v.shader, k, value[:120]) for v in variants for k, value in _statements(v.defines)]
    assert variants and not found, f"{len(found)} define values hold GLSL statements, e.g. {found[:3]}"


def _literals(path: Path) -> list[str]:
    """The string literals of a module (f-strings' literal parts too), its docstrings left out."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


@pytest.mark.parametrize("module", sorted(p.name for p in FUSED.glob("*.py")))
def test_no_fused_module_writes_a_glsl_statement(module):
    """The renderer is the only writer of fused GLSL and even it writes calls: no string literal of the fused
    modules holds `;`, `{` or `}`."""
    found = [s for s in _literals(FUSED / module) if STATEMENT & set(s)]
    assert not found, f"{module} writes GLSL statements: {found[:3]}"


def test_the_renderer_writes_calls():
    decl, array = render.declare(4, "EM0", "readonly", texel=False)
    assert (decl, array["c"]) == ("EP_BUF(4, EM0, em0)", "em0[c]")
    decl, array = render.declare(5, "ES0", "readonly", texel=True)
    assert (decl, array["0"]) == ("EP_TEX(5, ES0, es0)", "texelFetch(es0, int(0)).x")
    steps = [("int", render.binary("ADD", "int", "v", "e0[at]")), ("float", render.convert("float", "t0"))]
    assert render.chain("", "float", "int", steps) == (
        "EP_CHAIN_FN(ep_chain, float, int, EP_LET(int, t0, ep_add_i32(int(v), int(e0[at]))) "
        "EP_LET(precise float, t1, float(t0)), t1)"
    )
    assert render.coordinates((2, 1, 3)) == ["EP_COORDS(i)", "EP_COORD(c2, 3u)", "EP_COORD(c0, 2u)"]


def test_the_model_graphs_fused_kernels_are_calls():
    """Every kernel the shipped models and the model graphs lower to, fused, defines calls only; the fused kinds
    (chains, element-wise groups, row groups) are among them."""
    kinds: set[str] = set()
    for graph in shipped.model_graphs():
        for variant in program_variants(compiler.compile(graph, LAVAPIPE, fuse=True)):
            assert not _statements(variant.defines), (variant.shader, _statements(variant.defines)[:2])
            defines = dict(variant.defines)
            kinds.update(k for k in ("EP_DECLS", "GROUP_BODY", "ROW_BODY") if k in defines)
    assert kinds == {"EP_DECLS", "GROUP_BODY", "ROW_BODY"}

"""The layer gate (issue 35): every import inside tosa_vk/ points down, and no rooms import each other in a circle.

A room is one module of the package (`tosa_vk/session.py`) or one top-level subpackage (`tosa_vk/vulkan/`). Each
room stands on a floor of ARCHITECTURE.md's picture, bottom to top:

1. contracts: the data every floor reads (Program, Target, the shader ABI, errors, paths, the custom-op registry's
   declarations) and the IR (Graph, Operator, DType: the op library and the runtime read them too)
2. the runtime `vulkan/` and the op library `reference/` (numpy, one module per spec chapter) — side by side, neither
   imports the other
3. the compile stages (passes, partition, fuse, lower, plan, compiler) and the graph rewrites and codecs they share
4. the backends (`backends/`: reference, vulkan, vgf) and `session` (load)
5. tools: CLI, bench, conformance, compare / profile, and the package face `tosa_vk/__init__.py`

An import may point to its own floor or lower; the runtime and the op library may not import each other; no two rooms
may import each other, directly or round a circle. Every import counts: at module level, inside functions and under
`if TYPE_CHECKING:` (a type is a dependency too). Read from the source with `ast`, nothing is imported: well under a
second, so it runs in the fast tier beside ruff.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tosa_vk"

CONTRACTS, RUNTIME, OP_LIBRARY, STAGES, BACKENDS, TOOLS = (
    "contracts",
    "runtime",
    "op library",
    "stages",
    "backends",
    "tools",
)
FLOOR = {CONTRACTS: 1, RUNTIME: 2, OP_LIBRARY: 2, STAGES: 3, BACKENDS: 4, TOOLS: 5}

# Every room of tosa_vk/ and the layer it belongs to: a new module or subpackage must be placed here.
LAYERS: dict[str, tuple[str, ...]] = {
    CONTRACTS: (
        "ir",  # Graph, Operator, DType, flatbuffer read / write (and TOSA MLIR through tosa-opt), validate
        "builder",  # builds IR graphs in Python
        "errors",
        "paths",
        "version",
        "program",  # the compiled artifact: plain data
        "stages",  # the records passed between stages: Partition, Fusion, Lowered
        "serial",  # the Program's bytes
        "program_cache",  # Programs on disk
        "cache_files",
        "files",  # write_atomic: how every writer writes a file
        "target",  # device classes as data
        "device_class",  # which kernel family each operator takes per kind of GPU
        "shader_abi",
        "timeout",
        "custom",  # the custom-op registry: declarations only
        "custom_payload",
        "glsl_preprocessor",
        "spirv",  # SPIR-V words: reflect, validate
        "spirv_graph",  # SPIR-V graph modules (SPV_ARM_graph): encode / decode
        "variables",
    ),
    RUNTIME: ("vulkan",),
    OP_LIBRARY: (
        "reference",
        "host_kernels",  # a Program's Host step as a call into the op library
        "quantization",  # float <-> int8 / int16 at a graph's edges (ExecuTorch, TFLite qparams)
    ),
    STAGES: (
        "passes",
        "partition",
        "host_rules",  # the user's rules the partition applies
        "fuse",
        "lower",
        "plan",
        "compiler",
        "capture",  # the capture twin: a graph rewrite the session asks for
        "vgf_graph",  # TOSA graph <-> VGF graph module
        "vgf_export",  # Program -> VGF container: a compile output every backend's export_vgf writes
        "vgf_run",  # a .vgf's COMPUTE segments -> Program: the other way to a Program
        "pte",  # an ExecuTorch program (.pte) read into plain data, and the host operators between its delegates
    ),
    BACKENDS: ("backends", "session"),
    TOOLS: (
        "__init__",
        "__main__",
        "cli",
        "bench",
        "conformance",
        "compare",
        "profile",
        "node_data",  # Model Explorer node data from a profile or a comparison
        "tflite_import",  # .tflite -> .tosa through Arm's converter and serializer (`tosa-vk import`)
        "ray",  # Ray Data batch inference (the ray extra)
        "torch_export",  # PyTorch -> .pte through ExecuTorch's Arm TOSA partitioner (the torch extra)
        "gpu_run",  # scripts/gpu-run.sh's report: device, models, op timings, conformance on one device
    ),
}

# Imports against the layers that are known and being removed, each with the reason it is still here. The test also
# fails when one of them is gone, so the list only shrinks: delete the line with the import. (Empty since the stage
# records moved to stages.py: the fuse / lower / partition / plan circle is gone.)
KNOWN: dict[tuple[str, str], str] = {}


def room(module: str) -> str:
    """The room of a dotted module name: 'tosa_vk.vulkan.device' -> 'vulkan', 'tosa_vk' -> '__init__'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path, module: str) -> Iterable[tuple[str, int]]:
    """The tosa_vk modules `path` imports, anywhere in it, with their line numbers."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import session` imports the module, `from . import Model` a name
                name = f"{target}.{alias.name}"
                yield (name if _is_module(name) else target), node.lineno


def package_graph() -> dict[str, dict[str, list[str]]]:
    """room -> the rooms it imports -> where ('tosa_vk/vulkan/builtin.py:147'), for every file under tosa_vk/
    (generated flatbuffer accessors, ir/fbs/, left out: they import only each other)."""
    return _graph(PACKAGE)


@cache
def _graph(package: Path) -> dict[str, dict[str, list[str]]]:
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(package.rglob("*.py")):
        if "fbs" in path.parts:
            continue
        rel = path.relative_to(package.parent)
        parts = list(rel.with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        source = room(module)
        arrows = graph.setdefault(source, {})
        for target, line in _imports(path, module):
            if target.split(".")[0] == "tosa_vk" and room(target) != source:
                where = arrows.setdefault(room(target), [])
                if f"{rel}:{line}" not in where:
                    where.append(f"{rel}:{line}")
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The rooms that import each other round a circle (strongly connected components of two or more rooms)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def violations(
    graph: Mapping[str, Mapping[str, list[str]]],
    layers: Mapping[str, Iterable[str]] = LAYERS,
    known: Iterable[tuple[str, str]] = KNOWN,
) -> list[str]:
    """Every import against the layers and every circle of rooms, as sentences (imports in `known` are passed over)."""
    layer = {r: name for name, rooms in layers.items() for r in rooms}
    allowed = set(known)
    problems = [f"{r}: a room with no layer (place it in LAYERS)" for r in sorted(graph) if r not in layer]
    kept: dict[str, list[str]] = {}
    for source, arrows in sorted(graph.items()):
        for target, where in sorted(arrows.items()):
            if (source, target) in allowed:
                continue
            kept.setdefault(source, []).append(target)
            if source not in layer or target not in layer:
                continue
            low, high = layer[source], layer[target]
            if FLOOR[high] > FLOOR[low] or {low, high} == {RUNTIME, OP_LIBRARY}:
                problems.append(f"{source} ({low}) imports {target} ({high}) at {', '.join(where)}")
    problems += [f"circle of rooms: {' <-> '.join(c)}" for c in circles(kept)]
    return problems


def test_imports_point_down():
    problems = violations(package_graph())
    assert not problems, "imports against the layers (ARCHITECTURE.md):\n" + "\n".join(problems)


def test_known_violations_are_still_there():
    """A KNOWN line whose import is gone must go too, so the allowlist shrinks as the code is fixed."""
    graph = package_graph()
    gone = [f"{a} -> {b}" for a, b in KNOWN if b not in graph.get(a, {})]
    assert not gone, f"fixed, delete from KNOWN: {gone}"
    for pair, reason in KNOWN.items():  # and each is still against the rules: without it, the gate fails
        assert reason and violations(graph, known=set(KNOWN) - {pair}), f"{pair} is no longer against the rules"


def test_every_layer_names_real_rooms():
    rooms = set(package_graph())
    named = [r for rs in LAYERS.values() for r in rs]
    assert len(named) == len(set(named)), "a room placed twice"
    assert not set(named) - rooms, f"LAYERS names rooms that do not exist: {sorted(set(named) - rooms)}"


def test_the_gate_fails_on_planted_violations():
    """The test of the test: a synthetic module graph with one violation of each rule."""
    clean = {"vulkan": {"ir": ["a"]}, "lower": {"vulkan": ["b"], "ir": ["c"]}, "session": {"compiler": ["d"]}}
    assert violations(clean, known=()) == []
    planted = {
        "vulkan": {"compiler": ["vulkan/builtin.py:1"]},  # the runtime imports a stage
        "reference": {"session": ["reference/model.py:2"], "vulkan": ["reference/x.py:3"]},  # a backend, the runtime
        "lower": {"cli": ["lower/y.py:4"]},  # a stage imports a tool
        "fuse": {"partition": ["fuse.py:5"]},  # fine alone, but ...
        "partition": {"fuse": ["partition.py:6"]},  # ... a circle of rooms on one floor
        "new_room": {"ir": ["new_room.py:7"]},  # a room nobody placed
    }
    problems = violations(planted, known=())
    assert any(p.startswith("vulkan (runtime) imports compiler (stages)") for p in problems)
    assert any(p.startswith("reference (op library) imports session (backends)") for p in problems)
    assert any(p.startswith("reference (op library) imports vulkan (runtime)") for p in problems)
    assert any(p.startswith("lower (stages) imports cli (tools)") for p in problems)
    assert "circle of rooms: fuse <-> partition" in problems
    assert any(p.startswith("new_room: a room with no layer") for p in problems)
    assert len(problems) == 6, problems
    # a KNOWN pair is passed over, and breaks the circle it closes
    assert "circle of rooms: fuse <-> partition" not in violations(planted, known=[("partition", "fuse")])


def test_the_package_graph_sees_every_kind_of_import(tmp_path, monkeypatch):
    """Relative and absolute, module and name, inside a function and under TYPE_CHECKING: each is an arrow."""
    pkg = tmp_path / "tosa_vk"
    (pkg / "vulkan").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "session.py").write_text("")
    (pkg / "compiler.py").write_text("X = 1\n")
    (pkg / "ir.py").write_text("")
    (pkg / "vulkan" / "__init__.py").write_text("from .. import ir\n")
    (pkg / "vulkan" / "builtin.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..session import Model\n"
        "def collect():\n    from tosa_vk.compiler import X\n    import tosa_vk.cli\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    graph = package_graph()
    assert set(graph["vulkan"]) == {"ir", "session", "compiler", "cli"}

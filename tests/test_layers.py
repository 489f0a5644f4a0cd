"""The layer gate (issues 35, 47): the folders of tosa_vk/ are the floors of ARCHITECTURE.md's picture, every import
points down them, no modules import each other round a circle, and no module takes another's `_private` names.

A module's floor is its folder's (`tosa_vk/stages/lower/fused/rows.py` stands on `stages`); only the modules at the
package root are placed by name: the contracts, `session` and the package face. Bottom to top:

1. contracts: the data every floor reads — Program, Target and the device classes, errors, paths, the custom-op
   registry's declarations (root modules), the IR (`ir/`), the kernel ABI and SPIR-V checks (`abi/`), bytes at rest
   (`store/`: data files, the program cache)
2. the runtime `vulkan/` and the op library `reference/` (numpy, one module per spec chapter) — side by side, neither
   imports the other
3. the compile stages (`stages/`: passes, partition, fuse, lower, plan, the compiler)
4. other toolchains' files (`formats/`: VGF, SPIR-V graphs, .pte, TFLite import), which may compile (VGF export)
5. the backends (`backends/`) and `session` (load)
6. tools (`tools/`: CLI, bench, conformance, compare / profile, integrations) and the package face `__init__`

An import may point to its own floor or lower; the runtime and the op library may not import each other; no two
modules may import each other, directly or round a circle, inside a folder too. Every import counts: at module level,
inside functions and under `if TYPE_CHECKING:` (a type is a dependency too). Read from the source with `ast`, nothing
is imported: well under a second, so it runs in the fast tier beside ruff.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tosa_vk"

CONTRACTS, RUNTIME, OP_LIBRARY, STAGES, FORMATS, BACKENDS, TOOLS = (
    "contracts",
    "runtime",
    "op library",
    "stages",
    "formats",
    "backends",
    "tools",
)
FLOOR = {CONTRACTS: 1, RUNTIME: 2, OP_LIBRARY: 2, STAGES: 3, FORMATS: 4, BACKENDS: 5, TOOLS: 6}

# Each folder of tosa_vk/ is one floor: a module takes its folder's, so a new module needs no entry here.
FOLDERS: dict[str, str] = {
    "ir": CONTRACTS,
    "abi": CONTRACTS,
    "store": CONTRACTS,
    "vulkan": RUNTIME,
    "reference": OP_LIBRARY,
    "stages": STAGES,
    "formats": FORMATS,
    "backends": BACKENDS,
    "tools": TOOLS,
}
# The package root: the contracts and the public face over them (at most MAX_ROOT modules: the rest live in folders).
ROOT: dict[str, str] = {
    **dict.fromkeys(
        ("builder", "custom", "device_class", "errors", "paths", "program", "target", "timeout", "version"), CONTRACTS
    ),
    "session": BACKENDS,
    "__init__": TOOLS,
    "__main__": TOOLS,
}
MAX_ROOT = 12


def layer(module: str, folders: Mapping[str, str] = FOLDERS, root: Mapping[str, str] = ROOT) -> str | None:
    """The floor of a dotted module name ('tosa_vk.stages.lower.push' -> stages, 'tosa_vk' -> tools), None for a
    root module nobody placed or a folder with no floor."""
    parts = module.split(".")
    if len(parts) == 1:
        return root.get("__init__")
    if (PACKAGE / parts[1]).is_dir() or len(parts) > 2 or parts[1] in folders:
        return folders.get(parts[1])
    return root.get(parts[1])


def _is_module(dotted: str, package: Path) -> bool:
    path = package.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _sources(package: Path) -> Iterable[tuple[Path, str]]:
    """Every module of the package with its dotted name (generated flatbuffer accessors, fbs/, left out: they import
    only each other)."""
    for path in sorted(package.rglob("*.py")):
        if "fbs" in path.parts:
            continue
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        yield path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str, package: Path) -> Iterable[tuple[str, str, int]]:
    """(module imported, name taken from it or "", line) for every tosa_vk import in `path`, anywhere in it."""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import session` imports the module, `from . import Model` a name
                name = f"{target}.{alias.name}"
                yield (name, "", node.lineno) if _is_module(name, package) else (target, alias.name, node.lineno)


def module_graph(package: Path | None = None) -> dict[str, dict[str, list[str]]]:
    """module -> the tosa_vk modules it imports -> where ('tosa_vk/vulkan/builtin.py:147'), for every module."""
    return _graph(package or PACKAGE)


@cache
def _graph(package: Path) -> dict[str, dict[str, list[str]]]:
    graph: dict[str, dict[str, list[str]]] = {}
    for path, module in _sources(package):
        arrows = graph.setdefault(module, {})
        for target, _, line in _imports(path, module, package):
            if target.split(".")[0] == "tosa_vk" and target != module:
                where = arrows.setdefault(target, [])
                rel = f"{path.relative_to(package.parent)}:{line}"
                if rel not in where:
                    where.append(rel)
    return graph


def private_imports(package: Path | None = None) -> list[str]:
    """Every `_private` name (not a module, not a dunder) one module imports from another, as sentences."""
    package = package or PACKAGE
    found = []
    for path, module in _sources(package):
        for target, name, line in _imports(path, module, package):
            if name.startswith("_") and not name.startswith("__") and target.split(".")[0] == "tosa_vk":
                found.append(f"{path.relative_to(package.parent)}:{line} takes {target}'s private {name}")
    return found


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The modules that import each other round a circle (strongly connected components of two or more)."""
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
    graph: Mapping[str, Mapping[str, list[str]]], folders: Mapping[str, str] = FOLDERS, root: Mapping[str, str] = ROOT
) -> list[str]:
    """Every import against the floors and every circle of modules, as sentences."""
    floor = {m: layer(m, folders, root) for m in {*graph, *(t for arrows in graph.values() for t in arrows)}}
    problems = [f"{m}: a module with no floor (a root module goes in ROOT)" for m in sorted(graph) if not floor[m]]
    for source, arrows in sorted(graph.items()):
        for target, where in sorted(arrows.items()):
            low, high = floor[source], floor[target]
            if low and high and (FLOOR[high] > FLOOR[low] or {low, high} == {RUNTIME, OP_LIBRARY}):
                problems.append(f"{source} ({low}) imports {target} ({high}) at {', '.join(where)}")
    problems += [f"circle of modules: {' <-> '.join(c)}" for c in circles(graph)]
    return problems


def test_imports_point_down():
    problems = violations(module_graph())
    assert not problems, "imports against the layers (ARCHITECTURE.md):\n" + "\n".join(problems)


def test_no_module_takes_another_modules_private_names():
    found = private_imports()
    assert not found, "a helper two modules need lives in a module both import:\n" + "\n".join(found)


def test_the_root_holds_the_public_face_only():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(modules) <= MAX_ROOT, f"{len(modules)} modules at the package root: {modules}"
    assert set(modules) <= set(ROOT), f"root modules with no floor: {sorted(set(modules) - set(ROOT))}"
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} - {"shaders"}
    assert folders == set(FOLDERS), f"folders with no floor, or floors with no folder: {folders ^ set(FOLDERS)}"


def test_the_gate_fails_on_planted_violations():
    """The test of the test: a synthetic module graph with one violation of each rule."""
    t = "tosa_vk."
    clean = {
        t + "vulkan.device": {t + "ir.graph": ["a"]},
        t + "stages.lower.push": {t + "vulkan.device": ["b"], t + "ir": ["c"]},
        t + "session": {t + "stages.compiler": ["d"]},
    }
    assert violations(clean) == []
    planted = {
        t + "vulkan.builtin": {t + "stages.compiler": ["vulkan/builtin.py:1"]},  # the runtime imports a stage
        t + "reference.x": {t + "session": ["reference/x.py:2"], t + "vulkan": ["reference/x.py:3"]},  # up, across
        t + "stages.lower.y": {t + "tools.cli": ["stages/lower/y.py:4"]},  # a stage imports a tool
        t + "stages.lower.fused.group": {t + "stages.lower.fused.rows": ["stages/lower/fused/group.py:5"]},  # fine
        t + "stages.lower.fused.rows": {t + "stages.lower.fused.group": ["stages/lower/fused/rows.py:6"]},  # a circle
        t + "new_module": {t + "ir": ["new_module.py:7"]},  # a root module nobody placed
        t + "formats.vgf_export": {t + "backends.vulkan": ["formats/vgf_export.py:8"]},  # a format imports a backend
    }
    problems = violations(planted)
    assert any(
        p.startswith("tosa_vk.vulkan.builtin (runtime) imports tosa_vk.stages.compiler (stages)") for p in problems
    )
    assert any(p.startswith("tosa_vk.reference.x (op library) imports tosa_vk.session (backends)") for p in problems)
    assert any(p.startswith("tosa_vk.reference.x (op library) imports tosa_vk.vulkan (runtime)") for p in problems)
    assert any(p.startswith("tosa_vk.stages.lower.y (stages) imports tosa_vk.tools.cli (tools)") for p in problems)
    assert any(p.startswith("tosa_vk.formats.vgf_export (formats) imports tosa_vk.backends.vulkan") for p in problems)
    assert "circle of modules: tosa_vk.stages.lower.fused.group <-> tosa_vk.stages.lower.fused.rows" in problems
    assert any(p.startswith("tosa_vk.new_module: a module with no floor") for p in problems)
    assert len(problems) == 7, problems


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "tosa_vk"
    for name, text in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


def test_the_gate_fails_on_a_planted_private_import(tmp_path):
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "stages/__init__.py": "",
            "stages/a.py": "def _helper(): ...\ndef helper(): ...\n",
            "stages/b.py": "from .a import helper\nfrom . import a\n",  # public names and modules: fine
            "stages/c.py": "def f():\n    from tosa_vk.stages.a import _helper\n",  # a private name, even lazily
            "stages/d.py": "from . import _private_module\n",  # a module whose name starts with _: a module, fine
            "stages/_private_module.py": "",
        },
    )
    assert private_imports(pkg) == ["tosa_vk/stages/c.py:2 takes tosa_vk.stages.a's private _helper"]


def test_the_module_graph_sees_every_kind_of_import(tmp_path, monkeypatch):
    """Relative and absolute, module and name, inside a function and under TYPE_CHECKING: each is an arrow, between
    modules inside one folder too."""
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "session.py": "",
            "stages/__init__.py": "",
            "stages/compiler.py": "X = 1\n",
            "ir.py": "",
            "vulkan/__init__.py": "from .. import ir\n",
            "vulkan/device.py": "",
            "vulkan/builtin.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from ..session import Model\n"
            "from . import device\n"
            "def collect():\n    from tosa_vk.stages.compiler import X\n    import tosa_vk.tools.cli\n",
        },
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    graph = module_graph(pkg)
    assert set(graph["tosa_vk.vulkan.builtin"]) == {
        "tosa_vk.session",
        "tosa_vk.vulkan.device",
        "tosa_vk.stages.compiler",
        "tosa_vk.tools.cli",
    }
    assert set(graph["tosa_vk.vulkan"]) == {"tosa_vk.ir"}


def test_session_names_its_backends_by_import():
    """session's backend table is real imports (lazy), so the graph of imports sees each backend."""
    assert {"tosa_vk.backends.reference", "tosa_vk.backends.vulkan", "tosa_vk.backends.vgf"} <= set(
        module_graph()["tosa_vk.session"]
    )


def test_the_module_paths_the_readme_documented_still_import():
    """tosa_vk.MOVED: each old path imports as the module itself (one object, its own name and spec)."""
    import importlib

    import tosa_vk

    for old, new in tosa_vk.MOVED.items():
        module = importlib.import_module(old)
        assert module is importlib.import_module(new) and module.__spec__.name == module.__name__ == new

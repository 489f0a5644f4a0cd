"""The fast tier (`-m "not conformance and not slow"`): tests/slow.py names real tests, and conftest.py's hook marks
what it names, and no more."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from types import SimpleNamespace

import conftest
import slow

TESTS = Path(__file__).resolve().parent


@functools.cache
def _functions(module: str) -> frozenset[str]:
    """The test functions of tests/<module>.py, a method as Class::name."""
    tree = ast.parse((TESTS / f"{module}.py").read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        names |= {f"{cls.name}::{n.name}" for n in cls.body if isinstance(n, ast.FunctionDef)}
    return frozenset(n for n in names if n.rsplit("::", 1)[-1].startswith("test"))


def test_every_slow_name_is_a_test():
    """A renamed or removed test left in tests/slow.py would silently put its new name back in the fast tier."""
    for module in [*slow.SLOW_MODULES, *(m for m in slow.SAMPLED if "::" not in m)]:
        assert (TESTS / f"{module}.py").is_file(), f"tests/slow.py: no test module {module}"
    for key in [*slow.SLOW_TESTS, *(k for k in slow.SAMPLED if "::" in k)]:
        module, function = key.split("::", 1)
        assert (TESTS / f"{module}.py").is_file(), f"tests/slow.py: {key}: no test module {module}"
        assert function in _functions(module), f"tests/slow.py: {key}: no such test function"
    assert not set(slow.SLOW_TESTS) & set(slow.SAMPLED), "a test is either slow or sampled"


def test_the_fast_tier_keeps_a_test_of_every_module_not_slow_as_a_whole():
    """Every layer stays in the fast tier: no module outside SLOW_MODULES has all its tests listed."""
    for path in sorted(TESTS.glob("test_*.py")):
        if path.stem in slow.SLOW_MODULES:
            continue
        listed = {k.split("::", 1)[1] for k in slow.SLOW_TESTS if k.split("::", 1)[0] == path.stem}
        functions = _functions(path.stem)
        assert not functions or functions - listed, f"tests/slow.py lists every test of {path.stem}"


class _Item(SimpleNamespace):
    def add_marker(self, mark):
        self.marks.append(mark.name)


def _item(module: str, function: str, params: str = "", cls: type | None = None) -> _Item:
    return _Item(path=TESTS / f"{module}.py", cls=cls, originalname=function, name=function + params, marks=[])


def test_the_hook_marks_what_slow_py_names(monkeypatch):
    monkeypatch.setattr(slow, "SLOW_MODULES", {"test_a": "why"})
    monkeypatch.setattr(slow, "SLOW_TESTS", {"test_b::test_slow": "why", "test_b::Suite::test_slow": "why"})
    monkeypatch.setattr(slow, "SAMPLED", {"test_b::test_sweep": "why"})
    suite = type("Suite", (), {})
    items = [
        _item("test_a", "test_x"),
        _item("test_b", "test_slow", "[1]"),
        _item("test_b", "test_slow", "[2]", cls=suite),
        _item("test_b", "test_fast"),
        *(_item("test_b", "test_sweep", f"[{i}]") for i in range(3)),
        _item("test_b", "test_sweep", "[0]", cls=suite),  # another function of the same name: its own first case
    ]
    conftest.pytest_collection_modifyitems(None, items)
    assert [bool(i.marks) for i in items] == [True, True, True, False, False, True, True, False]


def test_the_fast_tier_is_what_the_docs_name():
    """scripts/test.sh and the docs give the fast tier's expression; pyproject.toml registers the marker."""
    root = TESTS.parent
    for doc in ("scripts/test.sh", "docs/install.md", "docs/conformance.md"):
        assert f'-m "{slow.FAST_TIER}"' in (root / doc).read_text(), doc
    assert "slow:" in (root / "pyproject.toml").read_text()

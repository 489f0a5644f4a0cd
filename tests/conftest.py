"""Shared fixtures: the shipped models and Arm's generated conformance tests (generated once, then cached).

`tests/` is on sys.path (pytest's default "prepend" import mode), so test modules import the shared helpers as
`from helpers import ...`. A run whose `-m` expression deselects a conformance-parametrized test (e.g.
`-m "not conformance"`, or the fast tier `-m "not conformance and not slow"`) does not generate the conformance
selection at all. The `slow` marker comes from tests/slow.py (pytest_collection_modifyitems below).
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import re
import time
from pathlib import Path

import pytest
import slow

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted((ROOT / "resources" / "models").iterdir())


def conformance_selection(kind: str) -> list[Path]:
    """The default selection's test folders (every op x dtype x rank class once, special tests included), plus
    the FFT tests at sizes that give DOT_PRODUCT checks."""
    from tosa_vk.tools.conformance.generate import FFT_SELECTION, Selection, selected_tests

    extra = selected_tests(FFT_SELECTION) if kind == "positive" else []
    return selected_tests(Selection(test_type=kind)) + extra


def one_positive_test_per_op() -> list[Path]:
    """The first positive test of every operator in the selection."""
    seen, picked = set(), []
    for t in conformance_selection("positive"):
        op = json.loads((t / "desc.json").read_text())["test_details"]["operator"]
        if op not in seen:
            seen.add(op)
            picked.append(t)
    return picked


# Fixture name -> the generated test folders it is parametrized with (computed only for tests that will run).
@functools.cache
def one_positive_test_per_class() -> list[Path]:
    """The first positive test of each (operators, element types) class of the selection: every TOSA.001000.1
    instruction with each of its type-table rows that the generator covers."""
    from tosa_vk.ir import load_graph

    seen, picked = set(), []
    for folder in conformance_selection("positive"):
        main = load_graph(folder / "test.tosa").main
        key = (
            tuple(sorted({op.op for op in main.operators} - {"CONST", "CONST_SHAPE"})),
            tuple(sorted({t.dtype.name for t in main.tensors.values()})),
        )
        if key not in seen:
            seen.add(key)
            picked.append(folder)
    return picked


@functools.cache
def tosa_1_1_selection(kind: str) -> list[Path]:
    """The generated TOSA 1.1 selection's tests of `kind` (what 1.1 adds: tosa_vk/tools/conformance/generate.py). The
    default run takes one positive test per (operator, element types) class, each class once (the full selection
    has ~4,600, most of them CONV2D / MATMUL_T type pairs: `tosa-vk conformance --tosa-version 1.1` runs them all, as
    does TOSA_VK_CONFORMANCE_1_1=full here), and every negative test."""
    import os

    from tosa_vk.tools.conformance.generate import VERSION_OPS, Selection, selected_tests

    tests = selected_tests(Selection(VERSION_OPS["1.1"], test_type=kind, tosa_version="1.1"))
    if os.environ.get("TOSA_VK_CONFORMANCE_1_1") == "full" or kind == "negative":
        return tests
    from tosa_vk.ir import load_graph

    seen, picked = set(), []
    for folder in tests:
        blocks = load_graph(folder / "test.tosa").blocks()
        key = (
            json.loads((folder / "desc.json").read_text())["test_details"]["operator"],
            tuple(sorted({t.dtype.name for _, b in blocks for t in b.tensors.values()})),
        )
        if key not in seen:
            seen.add(key)
            picked.append(folder)
    return picked


@functools.cache
def mx_file_classes() -> list[Path]:
    """One test (the smallest) of each way TOSA 1.1's MX types reach files, from the 1.1 positive selection: inputs
    and outputs of each fp4 / fp6 type (stored packed) and of MXINT8 (uint8 bits), and a block-scaled input and output
    (a data, scale pair of files)."""
    from tosa_vk.ir import DType, load_graph

    packed = {DType.FP4E2M1, DType.FP6E2M3, DType.FP6E3M2}
    picked: dict[str, tuple[int, Path]] = {}
    for folder in tosa_1_1_selection("positive"):
        graph = load_graph(folder / "test.tosa")
        size = sum(f.stat().st_size for f in folder.glob("*.npy"))
        for side, tensors in (("input", graph.inputs), ("output", graph.outputs)):
            for t in tensors:
                kind = "block-scaled" if t.block_scaled and t.dtype in packed else None
                kind = kind or (t.dtype.name if t.dtype in packed or t.dtype == DType.MXINT8 else None)
                if kind and (f"{kind} {side}" not in picked or size < picked[f"{kind} {side}"][0]):
                    picked[f"{kind} {side}"] = (size, folder)
    return sorted({folder for _, folder in picked.values()})


CONFORMANCE_PARAMS = {
    "positive_test": lambda: conformance_selection("positive"),
    "negative_test": lambda: conformance_selection("negative"),
    "positive_test_1_1": lambda: tosa_1_1_selection("positive"),
    "negative_test_1_1": lambda: tosa_1_1_selection("negative"),
    "mx_files_test_1_1": mx_file_classes,
    "op_positive_test": one_positive_test_per_op,
    "class_test": one_positive_test_per_class,
}


def _marks_deselect(config, markers: set[str]) -> bool:
    """True when the run's `-m` expression deselects a test with these markers."""
    expression = config.option.markexpr
    if not expression:
        return False
    from _pytest.mark.expression import Expression  # what `-m` itself evaluates

    return not Expression.compile(expression).evaluate(lambda name, /, **kwargs: name in markers)


def _keywords_deselect(config, keywords: set[str]) -> bool:
    """True when the run's `-k` expression deselects a test with these keywords (its function, module and marker
    names) whatever its parameter ids, not known before the selection is generated. An identifier matching one of
    the keywords is true; one matching another test's function or module name names that test, so it is false
    here; any other may match an id, so the expression must be false for every choice of those."""
    expression = config.option.keyword
    if not expression:
        return False
    from _pytest.mark.expression import Expression  # what `-k` itself evaluates

    compiled = Expression.compile(expression)
    idents = sorted(set(re.findall(r"[^\s()]+", expression)) - {"and", "or", "not"})
    known = {i for i in idents if any(i.lower() in k.lower() for k in keywords)}
    elsewhere = {i for i in idents if any(i.lower() in name for name in _test_names())}
    free = [i for i in idents if i not in known and i not in elsewhere]
    if len(free) > 10:
        return False
    for bits in itertools.product((False, True), repeat=len(free)):
        matching = known | {i for i, on in zip(free, bits) if on}
        if compiled.evaluate(lambda name, /, **kwargs: name in matching):
            return False
    return True


@functools.cache
def _test_names() -> frozenset[str]:
    """Every test function and test module name of tests/ (lower case), read from the files."""
    names = set()
    for path in Path(__file__).parent.glob("test_*.py"):
        names.add(path.stem)
        names.update(n.name.lower() for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef))
    return frozenset(name for name in names if name.startswith("test"))


def _not_needed(metafunc, arg: str) -> bool:
    """True when `-m` deselects this test anyway, or when its selection is not generated yet and `-k` leaves it
    out (so that selection need not be generated now: pytest_sessionstart says so)."""
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    markers = {mark.name for mark in metafunc.definition.iter_markers()} | _slow_marker(module, metafunc.function)
    if _marks_deselect(metafunc.config, markers):
        return True
    keywords = {metafunc.function.__name__, module, f"{module}.py", "tests", *markers}
    if metafunc.cls is not None:
        keywords.add(metafunc.cls.__name__)
    return not _generated(arg) and _keywords_deselect(metafunc.config, keywords)


def pytest_generate_tests(metafunc):
    if "model_dir" in metafunc.fixturenames:
        metafunc.parametrize("model_dir", MODELS, ids=[m.name for m in MODELS])
    for arg, tests_of in CONFORMANCE_PARAMS.items():
        if arg in metafunc.fixturenames:
            tests = [] if _not_needed(metafunc, arg) else tests_of()
            metafunc.parametrize(arg, tests, ids=[t.name for t in tests])


def _slow_marker(module: str, function) -> set[str]:
    """{"slow"} where tests/slow.py says every case of this test function is slow (the marker the hook below adds)."""
    name = function if isinstance(function, str) else function.__qualname__.replace(".", "::")
    return {"slow"} if slow.why(module, name) else set()


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Marks `slow` what tests/slow.py names: every case of a slow module or test, and each case but the first of a
    sampled sweep (the fast tier, `-m "not conformance and not slow"`, leaves them out; the default run has them)."""
    seen = set()
    for item in items:
        if not hasattr(item, "originalname"):  # a pytest.Function (not a doctest)
            continue
        module = item.path.stem
        function = "::".join([*([item.cls.__name__] if item.cls is not None else []), item.originalname])
        first = (module, function) not in seen
        seen.add((module, function))
        if slow.why(module, function) or (not first and slow.sampled(module, function)):
            item.add_marker(pytest.mark.slow)


def _conformance_functions() -> dict[str, tuple[str, set[str]]]:
    """`module::function` -> (the conformance fixture it takes, its keywords), read from the test files (AST): what
    a run may need generated before any worker collects."""
    found = {}
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        marked = "pytest.mark.conformance" in path.read_text()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                args = [a.arg for a in node.args.args if a.arg in CONFORMANCE_PARAMS]
                if args:
                    keywords = {node.name, path.stem, path.name, "tests", *(["conformance"] if marked else []),
                                *_slow_marker(path.stem, node.name)}  # fmt: skip
                    found[f"{path.stem}::{node.name}"] = (args[0], keywords)
    return found


def _selections(arg: str) -> list:
    """The generated selections a conformance fixture's tests come from."""
    from tosa_vk.tools.conformance.generate import FFT_SELECTION, VERSION_OPS, Selection

    kind = "negative" if arg.startswith("negative") else "positive"
    if arg.endswith("_1_1"):
        return [Selection(VERSION_OPS["1.1"], test_type=kind, tosa_version="1.1")]
    return [Selection(test_type=kind)] + ([FFT_SELECTION] if kind == "positive" else [])


def _generated(arg: str) -> bool:
    from tosa_vk.tools.conformance.generate import is_generated

    return all(is_generated(sel) for sel in _selections(arg))


def pytest_sessionstart(session):
    """On the process that reports (not an xdist worker, whose output nobody sees): generate the conformance
    selections the run may select and that are not cached yet, saying so, so that a first run does not sit silent
    for minutes. Not when `-m` / `-k` leave none of those tests."""
    config = session.config
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    from tosa_vk.tools.conformance.generate import generate, is_generated

    needed, left_out = [], set()
    for arg, keywords in _conformance_functions().values():
        if _marks_deselect(config, {"conformance"} & keywords):
            continue
        if _keywords_deselect(config, keywords):
            left_out.update(sel.test_type for sel in _selections(arg) if not is_generated(sel))
            continue
        needed += [sel for sel in _selections(arg) if sel not in needed and not is_generated(sel)]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if left_out and reporter is not None:
        reporter.write_line(
            f"conformance: the {' and '.join(sorted(left_out))} selections are not generated yet and -k names other "
            "tests: their tests are left out of this run (a run without -k generates them once, minutes)"
        )
    for n, sel in enumerate(needed, 1):
        what = f"Arm's conformance tests, TOSA {sel.tosa_version} {sel.test_type} selection ({n} of {len(needed)})"
        start = time.monotonic()
        if reporter is not None:
            reporter.write_line(f"generating {what}: first run only, minutes on 2 cores; then cached")
        generate(sel)
        if reporter is not None:
            reporter.write_line(f"generated {what} in {time.monotonic() - start:.0f} s")


@pytest.fixture
def model_desc(model_dir: Path) -> dict:
    return json.loads((model_dir / "desc.json").read_text())


@pytest.fixture(scope="session")
def _vulkan_device():
    """One Vulkan device per test process, with the Khronos validation layer on."""
    from tosa_vk.vulkan import Device

    with Device(validation=True) as dev:
        yield dev


@pytest.fixture
def device(_vulkan_device):
    """The shared device; a test fails if the validation layer said anything during it."""
    _vulkan_device.validation_messages.clear()
    yield _vulkan_device
    messages = list(_vulkan_device.validation_messages)
    _vulkan_device.validation_messages.clear()
    assert messages == [], "validation layer: " + " | ".join(messages[:3])


@pytest.fixture
def no_vulkan_device(monkeypatch):
    """As if the machine had no Vulkan device: enumeration finds none. tosa_vk.session.vulkan_devices (what
    load()'s and the CLI's defaults ask) forgets its cached answer before and after."""
    import tosa_vk.vulkan
    from tosa_vk import session

    monkeypatch.setattr(tosa_vk.vulkan, "enumerate_devices", lambda **_: [])
    session.vulkan_devices.cache_clear()
    yield
    session.vulkan_devices.cache_clear()


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """Arm's vgf_dump and scenario-runner binaries, and the environment that gives scenario-runner the ML emulation
    layers (helpers.arm_flow runs them); skips where the Arm SDK is not installed."""
    import os

    from helpers import ArmTools

    from tosa_vk.tools.bench.anchors import arm_sdk

    reason = arm_sdk.available()
    if reason is not None:
        pytest.skip(reason)
    tools = arm_sdk._tool("vgf_lib", "vgf_dump"), arm_sdk._tool("scenario_runner", "scenario-runner")
    saved = dict(os.environ)
    try:  # the layer variables go to scenario-runner only, never to this process's own Vulkan instances
        arm_sdk._setup_layers(tmp_path_factory.mktemp("layers"))
        env = dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return ArmTools(*tools, env)


@pytest.fixture(scope="module")
def worker():
    """Arm's scenario-runner (ML emulation layer on this device) in a worker process (tosa_vk/tools/bench/anchors)."""
    from tosa_vk.tools.bench.anchors import arm_sdk

    reason = arm_sdk.available()
    if reason is not None:
        pytest.skip(reason)
    with arm_sdk.ArmSdkWorker() as w:
        yield w

"""Shared fixtures: the shipped models and Arm's generated conformance tests (generated once, then cached).

`tests/` is on sys.path (pytest's default "prepend" import mode), so test modules import the shared helpers as
`from helpers import ...`. A run whose `-m` expression deselects a conformance-parametrized test (e.g.
`-m "not conformance"`, the fast tier) does not generate the conformance selection at all.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted((ROOT / "resources" / "models").iterdir())


def conformance_selection(kind: str) -> list[Path]:
    """The default selection's test folders (every op x dtype x rank class once, special tests included), plus
    the FFT tests at sizes that give DOT_PRODUCT checks."""
    from tosa_vk.conformance.generate import FFT_SELECTION, Selection, selected_tests

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


# TOSA 1.1 (draft): the operators and rows tosa_vk runs so far, by family. A 1.1 test is in scope when its operator
# is a new operator done here (block-scaled tensors only for the operators in TOSA_1_1_MX_OPS_DONE), or a 1.0
# operator's INT64 row or other 1.1 row done (TOSA_1_1_ROWS_DONE); tests/test_conformance_1_1.py::test_scope reports
# the rest of the selection.
TOSA_1_1_NEW_OPS_DONE = (
    "dim add_shape sub_shape mul_shape div_ceil_shape div_floor_shape mod_shape min_shape max_shape exp2_shape "
    "log2_ceil_shape log2_floor_shape concat_shape slice_shape assert_equal_shape matmul_t row_gather "
    "avg_pool2d_adaptive max_pool2d_adaptive cast_to_block_scaled cast_from_block_scaled reshape_block_scaled "
    "row_gather_block_scaled matmul_t_block_scaled conv2d_block_scaled"
).split()
# new operators whose block-scaled (MX) tests are in scope
TOSA_1_1_MX_OPS_DONE = [op for op in TOSA_1_1_NEW_OPS_DONE if op.endswith("_block_scaled")] + ["matmul_t", "row_gather"]
# 1.0 operators whose 1.1 rows are all done (block-scaled tensors, fp8 RESIZE and MATMUL, CAST fp32 <-> bool, ...):
# every 1.1 test of theirs is in scope (the 1.1 selection holds a 1.0 operator's tests that only a 1.1 row types,
# tosa_vk/conformance/generate.py)
TOSA_1_1_ROWS_DONE = "cast concat reshape resize gather scatter matmul conv2d".split()


def tosa_1_1_ops() -> tuple[str, ...]:
    """The operators whose 1.1 tests are generated: the new ones done, the 1.0 operators with INT64 rows and those
    whose 1.1 rows are all done."""
    from tosa_vk.ir.dtype import DType
    from tosa_vk.ir.ops import OPS

    int64 = sorted(
        name.lower()
        for name, spec in OPS.items()
        if spec.since == (1, 0) and any(r.since > (1, 0) and DType.INT64 in r.types.values() for r in spec.types)
    )
    return (*int64, *(op for op in TOSA_1_1_ROWS_DONE if op not in int64), *TOSA_1_1_NEW_OPS_DONE)


def in_tosa_1_1_scope(folder: Path) -> bool:
    from tosa_vk.ir import load_graph
    from tosa_vk.ir.dtype import BLOCK_ELEMENTS, DType

    desc = json.loads((folder / "desc.json").read_text())
    op = desc["test_details"]["operator"].lower()
    if op in TOSA_1_1_ROWS_DONE:
        return True
    try:
        graph = load_graph(folder / desc["tosa_file"])
    except Exception:  # an unreadable negative test: in scope with its operator
        return op in TOSA_1_1_NEW_OPS_DONE
    tensors = [t for _, b in graph.blocks() for t in b.tensors.values()]
    mx = any(t.block_scaled or (t.dtype in BLOCK_ELEMENTS and t.dtype.since > (1, 0)) for t in tensors)
    mx = mx or any(t.dtype == DType.FP8UE8M0 for t in tensors)
    if op in TOSA_1_1_NEW_OPS_DONE:
        return not mx or op in TOSA_1_1_MX_OPS_DONE
    return not mx and any(t.dtype == DType.INT64 for t in tensors)


def tosa_1_1_selection(kind: str, everything: bool = False) -> list[Path]:
    """The generated 1.1 tests of `kind`: all of them (everything), or those in scope — in the default run one per
    (operator, element types) class, every class once; TOSA_VK_CONFORMANCE_1_1=full runs every test in scope."""
    import os

    from tosa_vk.conformance.generate import Selection, selected_tests

    tests = selected_tests(Selection(tosa_1_1_ops(), test_type=kind, tosa_version="1.1"))
    if everything:
        return tests
    tests = [t for t in tests if in_tosa_1_1_scope(t)]
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


CONFORMANCE_PARAMS = {
    "positive_test": lambda: conformance_selection("positive"),
    "negative_test": lambda: conformance_selection("negative"),
    "positive_test_1_1": lambda: tosa_1_1_selection("positive"),
    "negative_test_1_1": lambda: tosa_1_1_selection("negative"),
    "op_positive_test": one_positive_test_per_op,
    "class_test": one_positive_test_per_class,
}


def _deselected_by_mark(metafunc) -> bool:
    """True when the run's `-m` expression deselects this test anyway (so its parameters need not be generated)."""
    expression = metafunc.config.option.markexpr
    if not expression:
        return False
    from _pytest.mark.expression import Expression  # what `-m` itself evaluates

    names = {mark.name for mark in metafunc.definition.iter_markers()}
    return not Expression.compile(expression).evaluate(lambda name, /, **kwargs: name in names)


def pytest_generate_tests(metafunc):
    if "model_dir" in metafunc.fixturenames:
        metafunc.parametrize("model_dir", MODELS, ids=[m.name for m in MODELS])
    for arg, tests_of in CONFORMANCE_PARAMS.items():
        if arg in metafunc.fixturenames:
            tests = [] if _deselected_by_mark(metafunc) else tests_of()
            metafunc.parametrize(arg, tests, ids=[t.name for t in tests])


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

    monkeypatch.setattr(tosa_vk.vulkan, "enumerate_devices", lambda: [])
    session.vulkan_devices.cache_clear()
    yield
    session.vulkan_devices.cache_clear()


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """Arm's vgf_dump and scenario-runner binaries, and the environment that gives scenario-runner the ML emulation
    layers (helpers.arm_flow runs them); skips where the Arm SDK is not installed."""
    import os

    from helpers import ArmTools

    from tosa_vk.bench.anchors import arm_sdk

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
    """Arm's scenario-runner (ML emulation layer on this device) in a worker process (tosa_vk/bench/anchors)."""
    from tosa_vk.bench.anchors import arm_sdk

    reason = arm_sdk.available()
    if reason is not None:
        pytest.skip(reason)
    with arm_sdk.ArmSdkWorker() as w:
        yield w

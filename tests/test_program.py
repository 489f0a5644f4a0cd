"""The Program is plain data: no callables anywhere, and to_bytes() / from_bytes() round-trip it exactly."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, Program
from tosa_vk.ir import load_graph
from tosa_vk.ir.dtype import from_npy
from tosa_vk.reference.host_kernels import run as host
from tosa_vk.store.serial import SerialError
from tosa_vk.target import LAVAPIPE, MINIMUM
from tosa_vk.vulkan.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted((ROOT / "resources" / "models").iterdir())


def stateful_loop():
    """A variable, a WHILE_LOOP and a COND_IF: every step type (Kernel, StateCheck, Branch, Loop)."""
    b = Builder()
    x = b.input("x", (4,), "fp32")
    h = b.variable("h", (4,), "fp32", np.zeros(4, np.float32))
    n = b.input("n", (1,), "int32")
    _, y = b.while_loop(
        [n, b.add(b.variable_read(h), x)],
        lambda s, i, v: s.greater(i, s.const(np.zeros(1, np.int32))),
        lambda s, i, v: (s.sub(i, s.const(np.ones(1, np.int32))), s.mul(v, v)),
    )
    b.variable_write(h, y)
    b.output(y)
    return b.build()


def no_callables(value, path="program") -> None:
    """Walks the whole object tree: only data types may appear."""
    assert not callable(value) or isinstance(value, type), f"{path} is callable: {value!r}"
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            no_callables(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            no_callables(v, f"{path}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            no_callables(v, f"{path}[{i}]")


def programs():
    yield "stateful_loop", tosa_vk.compile(stateful_loop(), LAVAPIPE)
    for model in MODELS:
        yield model.name, tosa_vk.compile(load_graph(model / "model.tosa"), LAVAPIPE)
    # host steps (and their constant operands) too
    yield "resnet_int8@minimum", tosa_vk.compile(load_graph(ROOT / "resources/models/resnet_int8/model.tosa"), MINIMUM)


@pytest.mark.parametrize("name,program", list(programs()), ids=lambda v: v if isinstance(v, str) else "")
def test_round_trip_is_exact(name, program):
    no_callables(program)
    data = program.to_bytes()
    again = Program.from_bytes(data)
    no_callables(again)
    assert again.to_bytes() == data
    assert again.steps == program.steps or name.endswith("minimum")  # Host steps hold arrays (no ==)
    assert again.buffers == program.buffers and again.resources == program.resources
    assert again.placement == program.placement and again.memory == program.memory
    assert sorted(again.constants) == sorted(program.constants)
    for k, v in program.constants.items():
        assert again.constants[k].dtype == v.dtype and again.constants[k].tobytes() == v.tobytes()


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_a_loaded_program_runs_like_the_compiled_one(device, model):
    graph = load_graph(model / "model.tosa")
    desc = json.loads((model / "desc.json").read_text())
    feeds = {
        n: from_npy(np.load(model / f), graph.main.tensors[n].dtype) for n, f in zip(desc["ifm_name"], desc["ifm_file"])
    }
    program = tosa_vk.compile(graph, device.info.target)
    outs = []
    for p in (program, Program.from_bytes(program.to_bytes())):
        with Runtime(p, device, host=host) as runtime:
            outs.append(runtime.run(feeds))
    for name in outs[0]:
        assert np.array_equal(outs[0][name], outs[1][name])


def test_from_bytes_refuses_what_it_did_not_write():
    data = tosa_vk.compile(stateful_loop()).to_bytes()
    for bad in (b"", b"pickle" + data, data[:40], data.replace(b'"@c":"Kernel"', b'"@c":"Popen_"')):
        with pytest.raises(SerialError):
            Program.from_bytes(bad)

"""ExecuTorch programs (.pte) exported by ExecuTorch's Arm TOSA partitioner (tests/data/pte/make.py, committed with
their inputs and PyTorch eager's outputs) run on both backends to eager's outputs: float within 1e-4 of the largest
magnitude, int8 within one output quantization step. No torch needed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk.backends.pte import PteModel
from tosa_vk.formats.pte import Kernel, load_program
from tosa_vk.formats.pte.program import read_program
from tosa_vk.ir.dtype import DType
from tosa_vk.session import vulkan_devices

DATA = Path(__file__).resolve().parent / "data" / "pte"
FIXTURES = sorted(p.name for p in DATA.iterdir() if (p / "model.pte").is_file())


def feeds(name: str) -> dict[str, np.ndarray]:
    desc = json.loads((DATA / name / "desc.json").read_text())
    return {n: np.load(DATA / name / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}


def eager(name: str) -> list[np.ndarray]:
    desc = json.loads((DATA / name / "desc.json").read_text())
    return [np.load(DATA / name / f) for f in desc["expected_result_file"]]


def output_steps(name: str) -> list[float]:
    """Each output's quantization step: the scale of the dequantize that writes it (0 for a float output)."""
    plan = load_program(DATA / name / "model.pte")[0]
    steps = []
    for index in plan.outputs:
        writer = [k for k in plan.instructions if isinstance(k, Kernel) and index in k.args[-2:]]
        quantized = writer and "dequantize" in writer[-1].op
        steps.append(float(plan.values[writer[-1].args[1]]) if quantized else 0.0)
    return steps


def test_fixtures_are_there():
    assert set(FIXTURES) >= {"cnn_fp32", "cnn_int8", "transformer_fp32", "two_in_two_out_fp32", "two_delegates_int8",
                             "cnn_fp32_vgf", "cnn_int8_vgf", "two_delegates_int8_channels_last"}  # fmt: skip


def test_channels_last_values_reach_delegates_in_memory_order():
    """ExecuTorch hands a delegate a tensor's memory: a channels-last value (dim order 0, 2, 3, 1) is NHWC there,
    even where its NCHW shape is the same (the 8x8x8 tensor between the two delegates)."""
    plan = load_program(DATA / "two_delegates_int8_channels_last" / "model.pte")[0]
    assert plan.values[plan.inputs[0]].dim_order == (0, 2, 3, 1)
    with tosa_vk.load(DATA / "two_delegates_int8_channels_last" / "model.pte", backend="reference") as model:
        assert model.delegates[0].inputs == {"quantized_decomposed_quantize_per_tensor_default": ((1, 8, 8, 3), "INT8")}


def test_vgf_delegates():
    for name in ("cnn_fp32_vgf", "cnn_int8_vgf"):
        plan = load_program(DATA / name / "model.pte")[0]
        assert [d.backend for d in plan.delegates] == ["VgfBackend"]
        assert plan.delegates[0].processed[:4] == b"VGF1"  # model-converter's container as it is


@pytest.mark.parametrize("backend", ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("name", FIXTURES)
def test_pte_matches_eager(name, backend, request):
    options = {"device": request.getfixturevalue("device")} if backend == "vulkan" else {}
    with tosa_vk.load(DATA / name / "model.pte", backend=backend, **options) as model:
        assert isinstance(model, PteModel)
        assert list(model.inputs) == [f"input_{i}" for i in range(len(model.inputs))]
        results = model.run(feeds(name))
    expected = eager(name)
    assert list(results) == [f"output_{i}" for i in range(len(expected))]
    for got, want, step in zip(results.values(), expected, output_steps(name)):
        assert got.dtype == np.float32 and got.shape == want.shape
        error = float(np.abs(got - want).max())
        bound = step * 1.0001 if step else 1e-4 * float(np.abs(want).max())
        assert error <= bound, f"{name} on {backend}: max error {error}, bound {bound}"


def test_two_delegates_and_host_ops_between():
    plan = load_program(DATA / "two_delegates_int8" / "model.pte")[0]
    kinds = [k.name if isinstance(k, Kernel) else "delegate" for k in plan.instructions]
    assert kinds == [
        "quantized_decomposed::quantize_per_tensor.out",
        "delegate",
        "quantized_decomposed::dequantize_per_tensor.out",
        "aten::hardtanh.out",
        "quantized_decomposed::quantize_per_tensor.out",
        "delegate",
        "quantized_decomposed::dequantize_per_tensor.out",
    ]
    assert [d.backend for d in plan.delegates] == ["TOSABackend", "TOSABackend"]
    assert all(d.processed[4:8] == b"TOSA" for d in plan.delegates)  # the TOSA flatbuffer as it is, no header


def test_placement_shows_host_ops_and_delegates():
    with tosa_vk.load(DATA / "two_delegates_int8" / "model.pte", backend="reference", host_lowering=False) as model:
        host = [p.op for p in model.placement if p.reason.startswith("ExecuTorch host operator")]
    assert host[0] == "quantized_decomposed::quantize_per_tensor.out #0" and "aten::hardtanh.out #3" in host
    with tosa_vk.load(DATA / "two_delegates_int8" / "model.pte", backend="reference") as model:
        rows = model.placement
    assert not [p for p in rows if p.reason.startswith("ExecuTorch host operator")]
    assert any(p.op == "aten::hardtanh.out #3" and "lowered to TOSA CLAMP" in p.reason for p in rows)
    assert any(
        p.op == "quantized_decomposed::quantize_per_tensor.out #0" and "lowered to TOSA" in p.reason for p in rows
    )
    assert any(p.op.startswith("delegate_0::CONV2D") for p in rows)
    assert any(p.op.startswith("delegate_1::CONV2D") for p in rows)


def test_pte_by_identifier_whatever_its_name(tmp_path):
    copy = tmp_path / "model.bin"
    copy.write_bytes((DATA / "cnn_fp32" / "model.pte").read_bytes())
    with tosa_vk.load(copy, backend="reference") as model:
        assert isinstance(model, PteModel)


def test_not_a_pte(tmp_path):
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"\x10\x00\x00\x00TOSA" + bytes(64))
    with pytest.raises(tosa_vk.TosaFormatError, match=r"bad\.pte: not an ExecuTorch program .*b'TOSA'"):
        tosa_vk.load(bad, backend="reference")


@pytest.mark.parametrize("keep", [6, 100, 2000, 0.5, 0.9])
def test_truncated_pte(tmp_path, keep):
    data = (DATA / "cnn_fp32" / "model.pte").read_bytes()
    cut = tmp_path / "cut.pte"
    cut.write_bytes(data[: int(keep * len(data)) if isinstance(keep, float) else keep])
    with pytest.raises(tosa_vk.TosaFormatError, match=r"cut\.pte"):
        tosa_vk.load(cut, backend="reference")


def test_corrupt_bytes_are_format_errors():
    data = bytearray((DATA / "two_delegates_int8" / "model.pte").read_bytes())
    rng = np.random.default_rng(0)
    for _ in range(40):
        broken = bytearray(data)
        for i in rng.integers(8, 2000, 4):
            broken[i] = int(rng.integers(0, 256))
        try:
            read_program(bytes(broken), file="broken.pte")
        except tosa_vk.TosaError as err:
            assert "broken.pte" in str(err)


def test_unsupported_host_op_is_named(tmp_path):
    data = (DATA / "two_delegates_int8" / "model.pte").read_bytes()
    renamed = data.replace(b"aten::hardtanh", b"aten::hardtanX")  # same length: the flatbuffer stays valid
    assert renamed != data
    path = tmp_path / "m.pte"
    path.write_bytes(renamed)
    with pytest.raises(tosa_vk.TosaUnsupportedError, match=r"m\.pte: host operator aten::hardtanX\.out"):
        tosa_vk.load(path, backend="reference")


def test_wrong_input_is_a_tosa_error():
    with tosa_vk.load(DATA / "cnn_fp32" / "model.pte", backend="reference") as model:
        with pytest.raises(tosa_vk.TosaError, match="missing ExecuTorch program input"):
            model.run({})
        with pytest.raises(tosa_vk.TosaError, match="input_0"):
            model.run(input_0=np.zeros((1, 3, 4, 4), np.float32))


def test_unknown_delegate_backend_is_named(tmp_path):
    data = (DATA / "cnn_fp32" / "model.pte").read_bytes()
    path = tmp_path / "m.pte"
    path.write_bytes(data.replace(b"TOSABackend", b"XNNPBackend"))
    with pytest.raises(tosa_vk.TosaUnsupportedError, match=r"m\.pte \(delegate 0\): a delegate for ExecuTorch's XNNP"):
        tosa_vk.load(path, backend="reference")


def test_unknown_option_names_pte(tmp_path):
    with pytest.raises(tosa_vk.TosaError, match=r"reference backend \(\.pte\) takes no option 'strict'"):
        tosa_vk.load(DATA / "cnn_fp32" / "model.pte", backend="reference", strict=True)


def test_cli_info(capsys):
    from tosa_vk.tools.cli import main

    path = str(DATA / "two_delegates_int8" / "model.pte")
    assert main(["info", path]) == 0
    text = capsys.readouterr().out
    assert "ExecuTorch program" in text and "aten::hardtanh.out" in text and "delegate  1 TOSABackend" in text
    assert main(["info", path, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    steps = summary["methods"][0]["instructions"]
    assert [s.get("delegate") for s in steps if "delegate" in s] == [0, 1]
    assert steps[1]["tosa_operators"]["CONV2D"] == 1


@pytest.mark.parametrize("backend", ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("name", ["two_in_two_out_fp32", "two_delegates_int8"])
def test_cli_run_compare(capsys, name, backend):
    from tosa_vk.tools.cli import main

    assert main(["run", "--test-desc", str(DATA / name / "desc.json"), "--compare", "--backend", backend]) == 0
    text = capsys.readouterr().out
    assert "FAIL" not in text and text.count("PASS vs eager_") == len(eager(name))
    assert "ExecuTorch host operators on the host" in text


def test_cli_compare_fails_with_wrong_expectation(tmp_path, capsys):
    from tosa_vk.tools.cli import main

    folder = tmp_path / "m"
    folder.mkdir()
    for f in (DATA / "cnn_fp32").iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    np.save(folder / "eager_0.npy", np.load(folder / "eager_0.npy") + 0.01)
    assert main(["run", "--test-desc", str(folder / "desc.json"), "--compare", "--backend", "reference"]) == 1
    assert "FAIL vs eager_0.npy" in capsys.readouterr().out


@pytest.mark.vulkan
def test_cli_compare_backends(capsys):
    from tosa_vk.tools.cli import main

    name = "transformer_fp32"
    assert main(["compare", str(DATA / name / "model.pte"), "-i", f"input_0={DATA / name / 'input_0.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "tensors within tolerance" in out and "delegate_0/" in out


def test_host_ops_per_channel_and_layout():
    """The host operators the fixtures do not reach, on hand-made values (ExecuTorch's out-variant calling
    convention: inputs, then the out tensor and the returned value)."""
    from tosa_vk.formats.pte import host_ops
    from tosa_vk.formats.pte.program import Plan, TensorListValue, TensorValue

    def call(name: str, args: list, out_shape, out_dtype):
        n = host_ops.HOST_OPS[name].inputs
        out = TensorValue(np.dtype(out_dtype), tuple(out_shape), tuple(range(len(out_shape))))
        values = [*args, out, out]
        op, overload = name.rsplit(".", 1)
        kernel = Kernel(op, overload, tuple(range(len(values))))
        plan = Plan("forward", values, (), (), [kernel])
        host_ops.check(plan, "t.pte")
        assert len(args) == n
        env = list(values)
        host_ops.run(kernel, env, plan, "t.pte")
        return env[-1]

    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
    scales, zps = np.array([0.5, 0.25]), np.array([1, -2])
    q = call("quantized_decomposed::quantize_per_channel.out", [x, scales, zps, 0, -128, 127, 1], x.shape, "int8")
    assert q.tolist() == [[2, -1, 5], [4, -1, -5]]
    back = call("quantized_decomposed::dequantize_per_channel.out", [q, scales, zps, 0, -128, 127, 1, None],
                x.shape, "float32")  # fmt: skip
    assert np.allclose(back, [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    assert call("aten::permute_copy.out", [x, [1, 0]], (3, 2), "float32").tolist() == x.T.tolist()
    assert call("aten::view_copy.out", [x, [3, 2]], (3, 2), "float32").shape == (3, 2)
    assert call("aten::clamp.out", [x, None, 1.0], x.shape, "float32").max() == 1.0
    assert call("aten::add.out", [x, x, 2], x.shape, "float32").tolist() == (3 * x).tolist()
    # cat takes a tensor list: its members are other values of the plan
    members = TensorListValue((0, 1))
    values = [x, x, members, 1]
    out = TensorValue(np.dtype("float32"), (2, 6), (0, 1))
    cat = Kernel("aten::cat", "out", (2, 3, 4, 5))
    plan = Plan("forward", [*values, out, out], (), (), [cat])
    env = list(plan.values)
    host_ops.run(cat, env, plan, "t.pte")
    assert env[4].tolist() == np.concatenate([x, x], 1).tolist()


def test_a_graph_only_command_points_at_what_takes_a_pte(capsys):
    from tosa_vk.tools.cli import main

    assert main(["placement", str(DATA / "cnn_fp32" / "model.pte")]) == 2
    assert "an ExecuTorch program (.pte): tosa_vk.load() and tosa-vk run / info take it" in capsys.readouterr().err


# ---- issue 46: every index the reader follows is checked when the file is read ----------------------------------


def _edited(tmp_path: Path, name: str, edit) -> Path:
    """The committed program `name` with edit(plan) applied to its first execution plan (the schema's object API)."""
    from fuzz_pte import pack, unpack

    program, segments = unpack((DATA / name / "model.pte").read_bytes())
    edit(program.executionPlan[0])
    path = tmp_path / "edited.pte"
    path.write_bytes(pack(program, segments))
    return path


def _tensor_list(items: list[int], optional: bool = False):
    from tosa_vk.formats.pte.fbs.EValue import EValueT
    from tosa_vk.formats.pte.fbs.KernelTypes import KernelTypes
    from tosa_vk.formats.pte.fbs.OptionalTensorList import OptionalTensorListT
    from tosa_vk.formats.pte.fbs.TensorList import TensorListT

    value = EValueT()
    value.val = OptionalTensorListT() if optional else TensorListT()
    value.val.items = items
    value.valType = KernelTypes.OptionalTensorList if optional else KernelTypes.TensorList
    return value


def _delegate_call(plan):
    return next(i.instrArgs for c in plan.chains for i in c.instructions if hasattr(i.instrArgs, "delegateIndex"))


def test_edited_program_round_trips(tmp_path):
    path = _edited(tmp_path, "two_delegates_int8", lambda plan: None)
    with tosa_vk.load(path, backend="reference") as model:
        got = model.run(feeds("two_delegates_int8"))
    with tosa_vk.load(DATA / "two_delegates_int8" / "model.pte", backend="reference") as model:
        want = model.run(feeds("two_delegates_int8"))
    assert all(np.array_equal(got[k], want[k]) for k in want)


def _as_list(items: list[int], optional: bool = False):
    """An edit: a delegate's first argument becomes a (optional) tensor list of `items`, appended as a new value."""

    def edit(plan):
        plan.values.append(_tensor_list(items, optional))
        call = _delegate_call(plan)
        call.args = [len(plan.values) - 1, *list(call.args)[1:]]

    return edit


@pytest.mark.parametrize(
    "edit,message",
    [
        (_as_list([99]), r"execution_plan\[0\]\.values\[2\]\.items\[0\]: value index 99 out of range \(3 values\)"),
        (_as_list([-1]), r"execution_plan\[0\]\.values\[2\]\.items\[0\]: value index -1 in a TensorList"),
        (_as_list([2]), r"execution_plan\[0\]\.values\[2\]\.items\[0\]: value 2 is a tensor list, not a tensor"),
        (
            _as_list([-1], optional=True),
            r"execution_plan\[0\]\.chains\[0\]\.instructions\[0\]\.delegate_call\.args\[0\]: value 2 is a tensor "
            r"list with an item left out",
        ),
        (
            lambda plan: setattr(_delegate_call(plan), "args", [0, 99]),
            r"execution_plan\[0\]\.chains\[0\]\.instructions\[0\]\.delegate_call\.args\[1\]: value index 99 out of "
            r"range \(2 values\)",
        ),
        (
            lambda plan: setattr(plan.values[0].val, "dimOrder", [0, 1, 2, 3, 4]),
            r"execution_plan\[0\]\.values\[0\]\.dim_order: \[0, 1, 2, 3, 4\] is not an order of the 4 dimensions",
        ),
        (lambda plan: setattr(plan, "outputs", [5]), r"execution_plan\[0\]\.outputs\[0\]: value index 5 out of range"),
    ],
    ids=[
        "list-item-range",
        "list-item-none",
        "list-item-kind",
        "optional-to-delegate",
        "delegate-arg",
        "dim-order",
        "output",
    ],  # fmt: skip
)
def test_indices_are_checked_when_read(tmp_path, edit, message):
    """Each index the reader follows is checked at read time: `info` and `load` give one TosaFormatError naming the
    file and the field (a tensor list's bad item was an IndexError / TypeError at run before)."""
    from tosa_vk.tools.cli import EXIT_ERROR, main

    path = _edited(tmp_path, "cnn_fp32", edit)
    with pytest.raises(tosa_vk.TosaFormatError, match=r"edited\.pte: " + message):
        tosa_vk.load(path, backend="reference")
    with pytest.raises(tosa_vk.TosaFormatError, match=message):
        load_program(path)
    assert main(["info", str(path)]) == EXIT_ERROR


def test_values_that_are_not_tensors_where_tensors_are_needed(tmp_path, capsys):
    """A method input, or a delegate argument, that is a number: one clean error at read time (`info` stopped with
    an AttributeError, `load` ran into a shape error at run)."""
    from tosa_vk.formats.pte.fbs.EValue import EValueT
    from tosa_vk.formats.pte.fbs.KernelTypes import KernelTypes
    from tosa_vk.formats.pte.fbs.String import StringT
    from tosa_vk.tools.cli import EXIT_ERROR, main

    def string_input(plan):  # (a float, an int, a bool or None is taken: tests/test_pte_host_ops.py)
        value = EValueT()
        value.val, value.valType = StringT(), KernelTypes.String
        value.val.stringVal = "floor"
        plan.values.append(value)
        plan.inputs = [len(plan.values) - 1]

    path = _edited(tmp_path, "cnn_int8", string_input)
    assert main(["info", str(path)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "internal error" not in err and "edited.pte: execution_plan[0].inputs[0]: value 15 is str 'floor'" in err
    with pytest.raises(tosa_vk.TosaUnsupportedError, match=r"edited\.pte: execution_plan\[0\]\.inputs\[0\]"):
        tosa_vk.load(path, backend="reference")
    path = _edited(tmp_path, "cnn_int8", lambda plan: setattr(_delegate_call(plan), "args", [2, 7]))
    with pytest.raises(tosa_vk.TosaFormatError, match=r"delegate_call\.args\[0\]: value 2 is float 0\.0"):
        tosa_vk.load(path, backend="reference")


def test_info_parses_each_delegate_once(tmp_path, monkeypatch, capsys):
    """A plan of ~3,000 calls of its two delegates: `info` reads each delegate's TOSA graph once (it read one per
    call: 45 s), and the steps still show each call's operator counts."""
    import tosa_vk.ir.flatbuffer as flatbuffer
    from tosa_vk.tools.cli import main

    def repeat(plan):
        chain = plan.chains[0]
        chain.instructions = chain.instructions * 430

    path = _edited(tmp_path, "two_delegates_int8", repeat)
    parsed = []
    real = flatbuffer.read_graph
    monkeypatch.setattr(flatbuffer, "read_graph", lambda *a, **k: parsed.append(1) or real(*a, **k))
    assert main(["info", str(path), "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["methods"][0]["instructions"]
    assert len(steps) == 7 * 430 and len(parsed) == 2
    assert [s["tosa_operators"]["CONV2D"] for s in steps if "delegate" in s] == [1, 2] * 430


def test_signature_names_types_as_tosa_does():
    """Model.inputs / outputs name element types as TOSA does whatever the file (a .pte said 'float32' where a .tosa
    says 'FP32'), with numpy's dtype alongside; they still unpack as (shape, dtype)."""
    with tosa_vk.load(DATA / "cnn_fp32" / "model.pte", backend="reference") as model:
        ((name, spec),) = model.inputs.items()
        shape, dtype = spec
        assert dtype == spec.dtype == "FP32" and spec.np_dtype == np.float32 and shape == spec.shape
        assert {s.dtype for s in model.outputs.values()} == {"FP32"}
        graph_inputs = model.delegates[0].inputs
    assert {s.dtype for s in graph_inputs.values()} <= {"FP32", "INT8"}


def test_bench_pipeline_takes_a_pte_of_fp32_input():
    """The bench's pipeline case checks the first input is FP32: a .pte's used to read 'float32' and be refused
    ("needs an FP32 first input; 'input_0' is float32")."""
    from tosa_vk.tools.bench.flight import first_fp32_input

    with tosa_vk.load(DATA / "cnn_fp32" / "model.pte", backend="reference") as model:
        name, shape = first_fp32_input(model)
        assert (name, shape) == ("input_0", model.inputs["input_0"].shape)


@pytest.mark.vulkan
def test_every_backend_gives_tensor_specs():
    if not vulkan_devices():  # (no loader, driver or device: devices() would raise)
        pytest.skip("no Vulkan device")
    with tosa_vk.load(DATA / "cnn_fp32" / "model.pte", backend="vulkan") as model:
        for delegate in model.delegates:
            for spec in (*delegate.inputs.values(), *delegate.outputs.values()):
                assert spec.np_dtype == DType.of(spec.dtype).numpy

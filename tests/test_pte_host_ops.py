"""ExecuTorch host operators (tosa_vk/formats/pte/host_ops.py) and non-tensor method inputs (issue 50): arguments
decoded as ExecuTorch's runtime decodes them (an IntList holds value indices), each operator against PyTorch's own
kernel on the same inputs (skipped without torch), and the exported programs of tests/data/pte_host
(scripts/make_pte_host_ops.py, committed with their inputs and PyTorch eager's outputs: no torch needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import desc_arrays

import tosa_vk
from tosa_vk.formats.pte import Kernel, host_ops, load_program
from tosa_vk.formats.pte.program import IntListValue, Plan, TensorListValue, TensorValue

DATA = Path(__file__).resolve().parent / "data" / "pte_host"
FIXTURES = sorted(p.name for p in DATA.iterdir() if (p / "model.pte").is_file()) if DATA.is_dir() else []


def _tensor(shape, dtype) -> TensorValue:
    return TensorValue(np.dtype(dtype), tuple(shape), tuple(range(len(shape))))


def call(name: str, args: list, outs: list[tuple[tuple[int, ...], str]]):
    """Host operator `name` on `args` (arrays, numbers, None; a Python list of ints becomes an IntList of boxed Int
    values and a list of arrays a TensorList, as ExecuTorch serialises them), with out tensors `outs` (shape,
    dtype), in ExecuTorch's out-variant calling convention: inputs, the outs, the returned values."""
    values: list = []
    indices = []
    for a in args:
        if isinstance(a, list) and a and all(isinstance(v, np.ndarray) or v is None for v in a):
            members = []
            for v in a:
                members.append(None if v is None else len(values))
                if v is not None:
                    values.append(v)
            values.append(TensorListValue(tuple(members)))
        elif isinstance(a, list) and all(type(v) is int for v in a):
            start = len(values)
            values += a
            values.append(IntListValue(tuple(range(start, start + len(a)))))
        else:
            values.append(a)
        indices.append(len(values) - 1)
    op, overload = name.rsplit(".", 1) if "." in name else (name, "")
    if host_ops.HOST_OPS[name].in_place:  # copy_(self, src, ...): writes self, returns it
        values[indices[0]] = _tensor(*outs[0])
        kernel = Kernel(op, overload, (*indices, indices[0]))
        written = [indices[0]]
    else:  # the outs, then the returned value: the out again, or a list of the outs
        first = len(values)
        values += [_tensor(*o) for o in outs]
        written = list(range(first, first + len(outs)))
        values += [values[first]] if len(outs) == 1 else [TensorListValue(tuple(written))]
        kernel = Kernel(op, overload, (*indices, *written, len(values) - 1))
    plan = Plan("forward", values, (), (), [kernel])
    host_ops.check(plan, "t.pte")
    env = list(values)
    if host_ops.HOST_OPS[name].in_place:
        env[indices[0]] = args[0]
    host_ops.run(kernel, env, plan, "t.pte")
    results = [env[i] for i in written]
    return results[0] if len(outs) == 1 else results


# ---- step 1: arguments as ExecuTorch's runtime decodes them -------------------------------------------------------


def test_int_list_holds_value_indices_pte():
    """An IntList's items index the plan's values (boxed Ints), as method.cpp reads them: a host permute(x, [1, 0])
    whose Ints are values 15 and 16 permutes by 1, 0 (it read 15, 16: "axis 15 is out of bounds")."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    values: list = [x] + [None] * 14 + [1, 0, IntListValue((15, 16))]
    out = _tensor((3, 2), "float32")
    values += [out, out]
    kernel = Kernel("aten::permute_copy", "out", (0, 17, 18, 19))
    plan = Plan("forward", values, (), (), [kernel])
    env = list(values)
    host_ops.run(kernel, env, plan, "t.pte")
    assert env[19].tolist() == x.T.tolist()
    assert call("aten::view_copy.out", [x, [3, 2]], [((3, 2), "float32")]).shape == (3, 2)
    assert call("aten::squeeze_copy.dims_out", [x[None], [0]], [((2, 3), "float32")]).shape == (2, 3)


def test_int_list_read_from_a_program_pte(tmp_path):
    """The reader keeps an IntList as value indices and checks each is an Int of the plan at read time."""
    from test_pte import _edited

    from tosa_vk.formats.pte.fbs.EValue import EValueT
    from tosa_vk.formats.pte.fbs.IntList import IntListT
    from tosa_vk.formats.pte.fbs.KernelTypes import KernelTypes

    def add_list(items):
        def edit(plan):
            value = EValueT()
            value.val, value.valType = IntListT(), KernelTypes.IntList
            value.val.items = items
            plan.values.append(value)

        return edit

    plan = load_program(_edited(tmp_path, "cnn_int8", add_list([3, 4])))[0]
    assert plan.values[-1] == IntListValue((3, 4)) and plan.values[3] == -17  # (it read [3, 4] as the numbers)
    # value 2 of cnn_int8 is a float (a scale): not an int
    with pytest.raises(tosa_vk.TosaFormatError, match=r"values\[\d+\]\.items\[0\]: value 2 is float .*not an int"):
        load_program(_edited(tmp_path, "cnn_int8", add_list([2])))
    with pytest.raises(tosa_vk.TosaFormatError, match=r"items\[0\]: value index 999 out of range"):
        load_program(_edited(tmp_path, "cnn_int8", add_list([999])))


@pytest.mark.parametrize(
    "name",
    ["aten::_to_dim_order_copy.out", "dim_order_ops::_to_dim_order_copy.out", "dim_order_ops::_clone_dim_order.out"],
)
def test_dim_order_copy_casts_to_its_out_dtype_pte(name):
    """ExecuTorch's dim-order copies under both names (int8 programs call dim_order_ops::), casting to the out
    tensor's dtype (the .out schema has no dtype argument: `x.to(torch.int32)` gives an int32 out tensor)."""
    i = np.array([1, -2, 2**40 + 3], np.int64)
    got = call(name, [i, False, None], [((3,), "int32")])
    assert got.dtype == np.int32 and got.tolist() == i.astype(np.int32).tolist()
    f = np.array([1.7, -2.5, 0.2], np.float32)
    assert call(name, [f, False, [0]], [((3,), "int32")]).tolist() == [1, -2, 0]  # torch truncates toward zero


# ---- step 2: int / float / bool / tensor-list method inputs -------------------------------------------------------


def test_scalar_inputs_pte():
    """forward(x, y, alpha: float, n: int, flag: bool): the .pte's inputs 2..4 are a Double, an Int and a Bool (it
    was refused at load: "value 3 is float 0.5, not a tensor"). Model.inputs describes them as 0-d float64 / INT64 /
    BOOL; run takes Python or numpy scalars of the program's type and the exported value (ExecuTorch's set_input
    refuses another), and fills one not given."""
    path = DATA / "scalars_fp32" / "model.pte"
    with tosa_vk.load(path, backend="reference") as model:
        assert model.inputs == {
            "input_0": ((2, 3), "FP32"),
            "input_1": ((2, 3), "FP32"),
            "input_2": ((), "float64"),
            "input_3": ((), "INT64"),
            "input_4": ((), "BOOL"),
        }  # fmt: skip (TOSA's names; numpy's where TOSA has none)
        assert model.input_defaults == {"input_2": 0.5, "input_3": 3, "input_4": True}
        x, y = np.load(DATA / "scalars_fp32" / "input_0.npy"), np.load(DATA / "scalars_fp32" / "input_1.npy")
        want = np.load(DATA / "scalars_fp32" / "eager_0.npy")
        for scalars in ({"input_2": 0.5, "input_3": 3, "input_4": True}, {"input_2": np.float32(0.5),
                        "input_3": np.array(3)}, {}):  # fmt: skip
            got = model.run(input_0=x, input_1=y, **scalars)["output_0"]
            assert np.allclose(got, want, atol=1e-6)
        with pytest.raises(tosa_vk.TosaError, match=r"input 'input_3' is an ExecuTorch int .*got 0\.5"):
            model.run(input_0=x, input_1=y, input_3=0.5)
        with pytest.raises(tosa_vk.TosaError, match=r"input 'input_4' is an ExecuTorch bool"):
            model.run(input_0=x, input_1=y, input_4=1)
        with pytest.raises(tosa_vk.TosaError, match=r"exported with input_2=0\.5 .*got 0\.75"):
            model.submit(input_0=x, input_1=y, input_2=0.75).result()


def test_cli_info_names_dtypes_as_tosa_does(capsys):
    """`info model.pte` names inputs' / outputs' types as Model.inputs and a .tosa's `info` do (FP32, not float32)."""
    from tosa_vk.tools.cli import main

    path = DATA / "scalars_fp32" / "model.pte"
    assert main(["info", str(path), "--json"]) == 0
    method = json.loads(capsys.readouterr().out)["methods"][0]
    with tosa_vk.load(path, backend="reference") as model:
        for key, specs in (("inputs", model.inputs), ("outputs", model.outputs)):
            assert [(t["name"], tuple(t["shape"]), t["dtype"]) for t in method[key]] == [
                (name, spec.shape, spec.dtype) for name, spec in specs.items()
            ]
    assert method["inputs"][0]["dtype"] == "FP32" and method["inputs"][3]["dtype"] == "INT64"


def test_scalar_inputs_on_the_cli_pte(capsys, tmp_path):
    from tosa_vk.tools.cli import main

    path = str(DATA / "scalars_fp32" / "model.pte")
    x, y = (str(DATA / "scalars_fp32" / f"input_{i}.npy") for i in (0, 1))
    args = ["run", path, "-i", f"input_0={x}", "-i", f"input_1={y}", "--backend", "reference"]
    assert main([*args, "-i", "input_2=0.5", "-i", "input_3=3"]) == 0
    assert main([*args, "-i", "input_3=0.5"]) != 0
    assert "input_3" in capsys.readouterr().err
    assert main(["info", path]) == 0
    assert "input_2 [] float64, input_3 [] INT64, input_4 [] BOOL" in capsys.readouterr().out
    assert main(["run", "--test-desc", str(DATA / "scalars_fp32" / "desc.json"), "--compare", "--backend",
                 "reference"]) == 0  # fmt: skip


def test_tensor_list_input_pte():
    """A method input that is a tensor list takes a list of arrays, each checked against its member."""
    from tosa_vk.backends.pte import PteModel
    from tosa_vk.backends.reference import ReferenceModel

    a, b = _tensor((2,), "float32"), _tensor((3,), "float32")
    out = _tensor((5,), "float32")
    values = [a, b, TensorListValue((0, 1)), 0, out, out]
    plan = Plan("forward", values, (2,), (4,), [Kernel("aten::cat", "out", (2, 3, 4, 5))])
    with PteModel(plan, ReferenceModel, backend="reference", file="t.pte") as model:
        assert model.inputs == {"input_0": ((2,), "tensor list")}
        got = model.run(input_0=[np.ones(2), [2, 3, 4]])["output_0"]
        assert got.tolist() == [1, 1, 2, 3, 4]
        with pytest.raises(tosa_vk.TosaError, match=r"input 'input_0' is a list of 2 tensors; got a list of 1"):
            model.run(input_0=[np.ones(2)])
        with pytest.raises(tosa_vk.TosaError, match=r"input_0\[1\]"):
            model.run(input_0=[np.ones(2), np.ones(4)])


def test_none_input_pte(capsys):
    """forward(x, y, rounding_mode=None): the program's input 2 is None (it was refused at load: "value 2 is None,
    not a tensor"). It runs as exported: given nothing or None; anything else is an error naming the input; Model
    .inputs, `info` and `run -i` say what it is."""
    from tosa_vk.tools.cli import main

    folder = DATA / "none_input_fp32"
    feeds, (want,) = desc_arrays(folder)
    with tosa_vk.load(folder / "model.pte", backend="reference") as model:
        assert model.inputs["input_2"] == ((), "None") and model.input_defaults == {"input_2": None}
        for given in ({}, {"input_2": None}):
            assert np.allclose(model.run({**feeds, **given})["output_0"], want, rtol=1e-6)
        with pytest.raises(tosa_vk.TosaError, match=r"input 'input_2' is an optional argument the program was "
                           r"exported with as None .*got str"):  # fmt: skip
            model.run({**feeds, "input_2": "floor"})
    assert main(["info", str(folder / "model.pte")]) == 0
    assert "input_2 [] None" in capsys.readouterr().out
    args = ["run", str(folder / "model.pte"), "--backend", "reference", "--random", "1"]
    assert main(args) == 0
    assert main([*args, "-i", "input_2=3"]) != 0
    assert "input 'input_2' is an argument the program was exported with as None" in capsys.readouterr().err


def test_values_sharing_a_buffer_pte():
    """select_scatter(x, y, 0, 1): ExecuTorch's memory planner puts the host arange's result and its unsqueezed view
    in one buffer, and no instruction writes the view (the host eq read it unwritten: "made shape [], its out tensor
    is [3, 1]"). The reader keeps each planned value's place; a run gives the view the written bytes."""
    plan = load_program(DATA / "select_scatter_fp32" / "model.pte")[0]
    arange = next(k for k in plan.instructions if isinstance(k, Kernel) and k.op == "aten::arange")
    made = plan.values[host_ops.out_indices(arange)[0]]
    views = [v for v in plan.values if isinstance(v, TensorValue) and v is not made and v.storage == made.storage
             and v.nbytes == made.nbytes]  # fmt: skip
    assert made.storage is not None and [v.sizes for v in views] == [(3, 1)]
    feeds, (want,) = desc_arrays(DATA / "select_scatter_fp32")
    with tosa_vk.load(DATA / "select_scatter_fp32" / "model.pte", backend="reference") as model:
        assert np.allclose(model.run(feeds)["output_0"], want)


def test_complex_values_between_host_operators_pte():
    """rfft2(x).real / .imag: ExecuTorch leaves _fft_r2c (a ComplexFloat out tensor, which was refused at load:
    "scalar type 9") and view_as_real_copy on the host; complex values stay in numpy, the delegate gets the parts."""
    plan = load_program(DATA / "rfft2_fp32" / "model.pte")[0]
    assert [v.dtype for v in plan.values if isinstance(v, TensorValue) and v.dtype.kind == "c"] == [np.complex64]
    feeds, expected = desc_arrays(DATA / "rfft2_fp32")
    with tosa_vk.load(DATA / "rfft2_fp32" / "model.pte", backend="reference") as model:
        got = model.run(feeds)
    for g, w in zip(got.values(), expected):
        assert np.allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.abs(w).max()))


def test_export_returns_inputs_changed_in_place_pte():
    """LeakyReLU(inplace=True) on the input: the program returns the changed input, then the result (two outputs,
    where eager gave one: "2 outputs, PyTorch gives 1"). export_pte's eager returns both, as the program does, and
    leaves the caller's tensor as it was."""
    torch = pytest.importorskip("torch")
    from tosa_vk.tools.torch_export import export_pte

    class Leaky(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.leaky_relu(x, 0.1, inplace=True)

    x = torch.randn(1, 2, 3, 3)
    kept = x.clone()
    exported = export_pte(Leaky(), (x.clone(),))
    want = exported.eager(x)
    assert torch.equal(x, kept) and len(want) == 2
    with _loaded(exported.pte) as model:
        got = list(model.run(input_0=x.numpy()).values())
    assert len(got) == 2 and all(np.allclose(g, w.numpy(), atol=1e-6) for g, w in zip(got, want))


def _loaded(pte: bytes):
    from tosa_vk.session import load_pte

    return load_pte(pte, "reference", {}, file="t.pte")


# ---- step 3: the exported programs' host operators, against PyTorch eager -------------------------------------------


@pytest.mark.parametrize("backend", ["reference", pytest.param("vulkan", marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("name", FIXTURES)
def test_pte_host_fixture_matches_eager(name, backend, request):
    feeds, expected = desc_arrays(DATA / name)
    options = {"device": request.getfixturevalue("device")} if backend == "vulkan" else {}
    with tosa_vk.load(DATA / name / "model.pte", backend=backend, **options) as model:
        results = model.run(feeds)
    assert len(results) == len(expected)
    for (out, got), want in zip(results.items(), expected):
        assert got.shape == want.shape, f"{name} {out}"
        if want.dtype.kind in "iub":
            assert np.array_equal(got.astype(want.dtype), want), f"{name} {out}"
        else:
            assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(want).max()))), f"{name} {out}"


def test_pte_host_fixtures_are_there():
    assert set(FIXTURES) >= {"scalars_fp32", "embedding_fp32", "indexing_fp32", "reductions_fp32",
                             "pool_indices_fp32", "bitwise_int32", "casts_fp32", "permute_host_fp32",
                             "in_place_fp32", "full_fp32", "none_input_fp32", "leaky_in_place_fp32",
                             "select_scatter_fp32", "rfft2_fp32", "grid_sample_fp32"}  # fmt: skip


def test_in_place_input_write_back_pte():
    """forward(x, buf): buf.add_(x); the program's copy_ writes the sum back to its input buf, which the method
    returns first (as ExecuTorch's runtime does), and the caller's array is left alone."""
    buf = np.load(DATA / "in_place_fp32" / "input_1.npy")
    x = np.load(DATA / "in_place_fp32" / "input_0.npy")
    kept = buf.copy()
    with tosa_vk.load(DATA / "in_place_fp32" / "model.pte", backend="reference") as model:
        out = model.run(input_0=x, input_1=buf)
    assert np.allclose(out["output_0"], kept + x) and np.allclose(out["output_1"], 2 * (kept + x))
    assert np.array_equal(buf, kept)


# ---- each host operator against PyTorch's own kernel on the same inputs (the torch tier) --------------------------


def _torch_cases():
    """(operator, its inputs as host_ops takes them, the same in PyTorch as a function of torch) per case."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    img = rng.standard_normal((1, 2, 7, 9)).astype(np.float32)
    a = rng.integers(-8, 8, (3, 4)).astype(np.int32)
    b = rng.integers(-8, 8, (3, 4)).astype(np.int32)
    ids = np.array([[0, 3, 2], [1, 1, 4]], np.int64)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    idx = np.array([2, 0, 2], np.int64)
    gidx = rng.integers(0, 4, (2, 3, 5)).astype(np.int64)
    t = lambda v: __import__("torch").from_numpy(np.array(v))  # noqa: E731
    yield "aten::embedding.out", [w, ids, -1, False, False], lambda torch: torch.nn.functional.embedding(t(ids), t(w))
    yield "aten::index.Tensor_out", [x, [None, idx]], lambda torch: t(x)[:, t(idx)]
    yield (
        "aten::index_put.out",
        [x, [idx], np.float32(2.0), True],
        lambda torch: t(x).index_put((t(idx),), torch.tensor(2.0), accumulate=True),
    )
    yield (
        "aten::index_put.out",
        [x, [idx, None], np.ones(5, np.float32), False],
        lambda torch: t(x).index_put((t(idx),), torch.ones(5)),
    )
    yield "aten::gather.out", [x, 1, gidx, False], lambda torch: torch.gather(t(x), 1, t(gidx))
    yield "aten::expand_copy.out", [x[:, :1], [2, -1, 4, -1], False], lambda torch: t(x[:, :1]).expand(2, -1, 4, -1)
    yield "aten::slice_copy.Tensor_out", [x, 2, 1, 2**62, 2], lambda torch: t(x)[:, :, 1::2]
    yield "aten::slice_copy.Tensor_out", [x, -1, -3, None, 1], lambda torch: t(x)[..., -3:]
    yield "aten::select_copy.int_out", [x, 1, -1], lambda torch: t(x).select(1, -1)
    yield "aten::arange.start_out", [1.0, 3.0, 0.25], lambda torch: torch.arange(1.0, 3.0, 0.25)
    yield "aten::arange.out", [7], lambda torch: torch.arange(7)
    yield "aten::full.out", [[2, 3], 1.5], lambda torch: torch.full((2, 3), 1.5)
    yield "aten::where.self_out", [x > 0, x, -x], lambda torch: torch.where(t(x) > 0, t(x), -t(x))
    yield "aten::argmax.out", [x, 2, True], lambda torch: torch.argmax(t(x), 2, keepdim=True)
    yield "aten::argmin.out", [x, None, False], lambda torch: torch.argmin(t(x))
    yield "aten::max.dim_max", [x, 1, False], lambda torch: torch.max(t(x), 1)
    yield "aten::min.dim_min", [x, -1, True], lambda torch: torch.min(t(x), -1, keepdim=True)
    yield "aten::amax.out", [x, [0, 2], False], lambda torch: torch.amax(t(x), (0, 2))
    yield "aten::sum.IntList_out", [x, [0, -1], True, None], lambda torch: t(x).sum((0, -1), keepdim=True)
    yield "aten::sum.IntList_out", [a, None, False, None], lambda torch: t(a).sum()
    yield "aten::mean.out", [x, [1], False, None], lambda torch: t(x).mean(1)
    for pool in ([[3, 3], [2, 2], [1, 1], [1, 1], False], [[2, 3], [], [0, 1], [2, 1], True]):
        yield (
            "aten::max_pool2d_with_indices.out",
            [img, *pool],
            lambda torch, p=pool: torch.ops.aten.max_pool2d_with_indices(t(img), *p),
        )
    yield "aten::bitwise_and.Tensor_out", [a, b], lambda torch: t(a) & t(b)
    yield "aten::bitwise_or.Scalar_out", [a, 5], lambda torch: t(a) | 5
    yield "aten::bitwise_xor.Tensor_out", [a > 0, b > 0], lambda torch: (t(a) > 0) ^ (t(b) > 0)
    yield "aten::bitwise_not.out", [a], lambda torch: ~t(a)
    yield "aten::bitwise_not.out", [a > 0], lambda torch: ~(t(a) > 0)
    yield "aten::remainder.Scalar_out", [a, 3], lambda torch: torch.remainder(t(a), 3)
    yield "aten::remainder.Tensor_out", [x, np.float32(-0.7)], lambda torch: torch.remainder(t(x), -0.7)
    yield "aten::ge.Scalar_out", [x, 0.1], lambda torch: t(x) >= 0.1
    yield "aten::copy_", [x, x[0, :1], False], lambda torch: t(x).copy_(t(x[0, :1]))
    grid = rng.uniform(-1.4, 1.4, (1, 4, 5, 2)).astype(np.float32)  # beyond [-1, 1]: the padding modes
    grid[0, 0, :2] = [[-1.0, 1.0], [0.5, -0.5]]  # (exact corners and pixel-centre ties)
    for mode in (0, 1):
        for padding in (0, 1, 2):
            for align in (False, True):
                yield (
                    "aten::grid_sampler_2d.out",
                    [img, grid, mode, padding, align],
                    lambda torch, m=mode, p=padding, a=align: torch.grid_sampler_2d(t(img), t(grid), m, p, a),
                )
    yield "aten::_fft_r2c.out", [x, [1, 2], 0, True], lambda torch: torch.fft.rfft2(t(x))
    yield "aten::_fft_r2c.out", [x, [0, -1], 1, False], lambda torch: torch.fft.fftn(t(x), dim=(0, -1), norm="ortho")
    z = np.fft.rfft2(x).astype(np.complex64)
    yield "aten::view_as_real_copy.out", [z], lambda torch: torch.view_as_real(t(z))


TORCH_CASES = list(_torch_cases())


@pytest.mark.parametrize("case", range(len(TORCH_CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(TORCH_CASES)])
def test_host_op_matches_pytorch_kernel_pte(case):
    torch = pytest.importorskip("torch")
    name, args, reference = TORCH_CASES[case]
    want = reference(torch)
    want = [r.numpy() for r in (want if isinstance(want, tuple) else (want,))]
    got = call(name, args, [(r.shape, r.dtype.name) for r in want])
    for g, w in zip(got if len(want) > 1 else [got], want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if w.dtype.kind == "c":  # an FFT: float32 sums of n terms, as close as the largest term allows
            assert np.allclose(g, w, rtol=1e-6, atol=1e-6 * max(1.0, float(np.abs(w).max()))), name
            continue
        assert np.allclose(g, w, rtol=1e-6, atol=1e-6) if w.dtype.kind == "f" else np.array_equal(g, w), name

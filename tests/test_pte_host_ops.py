"""ExecuTorch host operators (tosa_vk/formats/pte/host_ops.py) and non-tensor method inputs (issue 50): arguments
decoded as ExecuTorch's runtime decodes them (an IntList holds value indices), each operator against PyTorch's own
kernel on the same inputs (skipped without torch), and the exported programs of tests/data/pte_host
(scripts/make_pte_host_ops.py, committed with their inputs and PyTorch eager's outputs: no torch needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

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
    out_values = [_tensor(*o) for o in outs]
    first = len(values)
    values += out_values + out_values
    op, overload = name.rsplit(".", 1)
    kernel = Kernel(op, overload, (*indices, *range(first, first + 2 * len(outs))))
    plan = Plan("forward", values, (), (), [kernel])
    host_ops.check(plan, "t.pte")
    env = list(values)
    host_ops.run(kernel, env, plan, "t.pte")
    results = [env[first + len(outs) + i] for i in range(len(outs))]
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

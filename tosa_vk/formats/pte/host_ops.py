"""The host operators an ExecuTorch partitioner leaves around and between its delegates, in numpy: quantize /
dequantize (per tensor and per channel, through tosa_vk.reference.quantization) and the common element-wise and layout
aten operators. Anything else is a TosaUnsupportedError naming the operator, raised when the program is loaded.

ExecuTorch calls out variants: a kernel call's arguments are the schema's inputs, then its `out` tensor, then the
returned value (the same tensor again). Each entry below takes the inputs (values: arrays, numbers, lists, None) and
returns the result, which is converted to the out tensor's dtype and checked against its shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...errors import TosaError, TosaUnsupportedError
from ...reference.quantization import QParams, dequantize, quantize
from .program import SCALAR_TYPES, IntListValue, Kernel, Plan, TensorListValue, TensorValue


class HostOp(NamedTuple):
    inputs: int  # arguments before the out tensor (keyword-only ones included)
    fn: Callable[..., np.ndarray]


def _dtype(code: Any) -> np.dtype:
    if code not in SCALAR_TYPES:
        raise TosaError(f"ExecuTorch scalar type {code} is not one tosa_vk reads")
    return SCALAR_TYPES[code]


def _q_tensor(x, scale, zp, qmin, qmax, dtype):
    return quantize(x, QParams(float(scale), int(zp), _dtype(dtype).name, qmin=qmin, qmax=qmax))


def _dq_tensor(q, scale, zp, qmin, qmax, dtype, out_dtype=None):
    return dequantize(q, QParams(float(scale), int(zp), _dtype(dtype).name, qmin=qmin, qmax=qmax))


def _q_channel(x, scales, zps, axis, qmin, qmax, dtype):
    return quantize(x, QParams(np.asarray(scales), np.asarray(zps), _dtype(dtype).name, axis, qmin, qmax))


def _dq_channel(q, scales, zps, axis, qmin, qmax, dtype, out_dtype=None):
    zps = np.zeros(np.size(scales), np.int64) if zps is None else np.asarray(zps)
    return dequantize(q, QParams(np.asarray(scales), zps, _dtype(dtype).name, axis, qmin, qmax))


def _clamp(x, lo, hi):
    return np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi).astype(np.asarray(x).dtype)


def _squeeze(x, dims):
    dims = [dims] if isinstance(dims, int) else dims
    return np.squeeze(x, tuple(d % x.ndim for d in dims if x.shape[d] == 1))


QD = "quantized_decomposed::"
HOST_OPS: dict[str, HostOp] = {
    QD + "quantize_per_tensor.out": HostOp(6, _q_tensor),
    QD + "dequantize_per_tensor.out": HostOp(7, _dq_tensor),
    QD + "quantize_per_channel.out": HostOp(7, _q_channel),
    QD + "dequantize_per_channel.out": HostOp(8, _dq_channel),
    "aten::add.out": HostOp(3, lambda a, b, alpha=1: a + b * alpha if alpha != 1 else a + b),
    "aten::sub.out": HostOp(3, lambda a, b, alpha=1: a - b * alpha if alpha != 1 else a - b),
    "aten::mul.out": HostOp(2, lambda a, b: a * b),
    "aten::div.out": HostOp(2, lambda a, b: a / b),
    "aten::neg.out": HostOp(1, np.negative),
    "aten::relu.out": HostOp(1, lambda x: np.maximum(x, np.zeros((), x.dtype))),
    "aten::hardtanh.out": HostOp(3, _clamp),
    "aten::clamp.out": HostOp(3, _clamp),
    "aten::sigmoid.out": HostOp(1, lambda x: 1 / (1 + np.exp(-x))),
    "aten::tanh.out": HostOp(1, np.tanh),
    "aten::view_copy.out": HostOp(2, lambda x, size: np.reshape(x, size)),
    "aten::permute_copy.out": HostOp(2, lambda x, dims: np.transpose(x, dims)),
    "aten::unsqueeze_copy.out": HostOp(2, lambda x, dim: np.expand_dims(x, dim % (x.ndim + 1))),
    "aten::squeeze_copy.dims_out": HostOp(2, _squeeze),
    "aten::squeeze_copy.dim_out": HostOp(2, _squeeze),
    "aten::cat.out": HostOp(2, lambda xs, dim=0: np.concatenate(xs, axis=dim)),
    "aten::clone.out": HostOp(2, lambda x, memory_format=None: np.array(x)),
}
# ExecuTorch's dim-order copies (`x.to(dtype)`, `.clone()`, `.to(memory_format=...)`): (self, non_blocking,
# dim_order) -> out, whose dtype is the target (run casts to it); values here are in logical order, so the copy is
# one whatever the dim order. The kernel is registered under dim_order_ops::, older programs call aten::.
for _name in ("aten::_to_dim_order_copy.out", "dim_order_ops::_to_dim_order_copy.out",
              "aten::_clone_dim_order.out", "dim_order_ops::_clone_dim_order.out"):  # fmt: skip
    HOST_OPS[_name] = HostOp(3, lambda x, non_blocking=False, dim_order=None: np.array(x))


def check(plan: Plan, file: str | None) -> None:
    """Every host operator of `plan` is one of HOST_OPS, with the arguments it takes; else a TosaUnsupportedError
    naming the first that is not (at load, before any run)."""
    for index, ins in enumerate(plan.instructions):
        if not isinstance(ins, Kernel):
            continue
        op = HOST_OPS.get(ins.name)
        if op is None:
            raise TosaUnsupportedError(
                f"host operator {ins.name} (instruction {index}) is not one tosa_vk runs; it runs "
                f"{', '.join(sorted(HOST_OPS))} on the host and TOSA delegates on the backend",
                file=file,
            )
        if len(ins.args) <= op.inputs or not isinstance(plan.values[ins.args[op.inputs]], TensorValue):
            raise TosaUnsupportedError(
                f"host operator {ins.name} (instruction {index}): {len(ins.args)} arguments, expected {op.inputs} "
                "inputs and an out tensor",
                file=file,
            )


def run(kernel: Kernel, env: list[Any], plan: Plan, file: str | None) -> None:
    """One host operator: its inputs read from `env` (the plan's values), its result stored at its out argument."""
    op = HOST_OPS[kernel.name]
    args = [_arg(env, plan, i) for i in kernel.args[: op.inputs]]
    out_index = kernel.args[op.inputs]
    out = plan.values[out_index]
    try:
        result = np.asarray(op.fn(*args))
    except (ValueError, TypeError, IndexError, np.exceptions.AxisError) as err:
        raise TosaError(f"host operator {kernel.name}: {err}", file=file) from None
    if result.size != int(np.prod(out.sizes, dtype=np.int64)):
        raise TosaError(f"host operator {kernel.name} made shape {list(result.shape)}, its out tensor is "
                        f"{list(out.sizes)}", file=file)  # fmt: skip
    value = result.reshape(out.sizes).astype(out.dtype, copy=False)
    for i in kernel.args[op.inputs :]:  # the out tensor and the returned value (the same tensor)
        env[i] = value


def _arg(env: list[Any], plan: Plan, index: int) -> Any:
    value = env[index]
    if isinstance(value, TensorListValue):
        return [None if i is None else env[i] for i in value.items]
    if isinstance(value, IntListValue):  # ExecuTorch boxes an int list's members: value indices, as method.cpp reads
        return [env[i] for i in value.items]
    return value

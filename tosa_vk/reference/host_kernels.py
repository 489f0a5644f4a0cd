"""Host kernels: how the Vulkan backend runs a Program's Host steps (operators placed on the host).

A Host step names its operator; the kernel is the reference backend's implementation registered under that name
(tosa_vk/reference/registry.py), called on numpy views of the arena. The runtime gets `run` as an argument, so
the Vulkan layer imports nothing of the reference backend.
"""

from __future__ import annotations

import numpy as np

from ..errors import TosaUnsupportedError
from ..ir.dtype import DType
from ..ir.graph import BLOCK_SCALED_INPUTS, Operator
from ..program import Host


def available(operator: str) -> bool:
    """Whether a host kernel exists for this operator (the partition asks before it places one on the host)."""
    return operator in _registry()


def run(step: Host, views: list[np.ndarray]) -> list[np.ndarray]:
    """Runs one Host step: `views` are the values of the buffers in `step.inputs` (constants come from the step)."""
    from ..ir.flatbuffer import ENUM_FIELDS  # (the flatbuffer accessors: imported by a host step, not at load)
    from .registry import Call

    fn = _registry().get(step.operator)
    if fn is None:
        raise TosaUnsupportedError(f"no host kernel for {step.operator}")
    values = iter(views)
    inputs = [next(values) if name else np.asarray(const) for name, const in zip(step.inputs, step.constants)]
    names = [name or f"const{i}" for i, name in enumerate(step.inputs)]
    # a Program read back from bytes (the program cache) holds enum attributes (acc_type, ...) as plain ints
    attrs = {k: ENUM_FIELDS[k](v) if k in ENUM_FIELDS and v is not None else v for k, v in step.attrs.items()}
    op = Operator(step.operator, names, list(step.writes), attrs)
    in_types = [DType[t] for t in step.in_types]
    # block-scaled inputs (TOSA 1.1, tosa_vk/stages/passes/block_scaled.py): their scales follow the spec inputs
    scaled: tuple[int, ...] = tuple(step.attrs.get(BLOCK_SCALED_INPUTS) or ())
    attrs.pop(BLOCK_SCALED_INPUTS, None)
    scales: list[np.ndarray | None] = []
    if scaled:
        n = len(inputs) - len(scaled)
        scales = [None] * n
        for i, s in zip(scaled, inputs[n:]):
            scales[i] = s
        inputs, in_types, op.inputs[:] = inputs[:n], in_types[:n], op.inputs[:n]
    call = Call(op, inputs, in_types, [DType[t] for t in step.out_types], [tuple(s) for s in step.out_shapes])
    call.scales = scales
    result = fn(call)
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _registry() -> dict:
    from . import load_all, registry

    load_all()
    return registry.OPS

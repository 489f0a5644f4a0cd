"""PyTorch -> ExecuTorch program (.pte) through ExecuTorch's Arm TOSA partitioner: the `torch` extra's one export
path, used by `tosa_vk.from_torch` and by tests/data/pte/make.py (the committed .pte fixtures).

Needs torch and executorch (pip install 'tosa_vk[torch]'); imported only when called. The steps, each ExecuTorch's
own API: torch.export; for int8, the Arm TOSAQuantizer's symmetric config (prepare_pt2e, calibration, convert_pt2e)
and a second export; to_edge_transform_and_lower with the TOSAPartitioner (TOSA-1.0+FP or TOSA-1.0+INT); to_executorch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from .errors import TosaError

FP_SPEC = "TOSA-1.0+FP"
INT_SPEC = "TOSA-1.0+INT"
INSTALL = "pip install 'tosa_vk[torch]' (torch==2.13.0 CPU, executorch==1.5.1, tosa-tools)"


def _torch():
    try:
        import executorch  # noqa: F401
        import torch
    except ImportError as err:
        raise TosaError(f"from PyTorch needs torch and executorch ({err.name} is missing): {INSTALL}") from None
    return torch


class Exported(NamedTuple):
    """An export's result: the program's bytes, and `eager`, the PyTorch module it matches: the module itself for
    float, the quantized (convert_pt2e) module for int8 — PyTorch's own int8 arithmetic, simulated in float."""

    pte: bytes
    eager: Callable[..., Any]


def export_pte(
    module: Any,
    example_inputs: Sequence[Any],
    *,
    quantize: Iterable[Sequence[Any]] | None = None,
    host_ops: Sequence[str] = (),
) -> Exported:
    """`module` (a torch.nn.Module, put in eval mode) as an ExecuTorch program's bytes. `quantize`: calibration
    batches (each a tuple of inputs like `example_inputs`) to quantize to int8 with the Arm quantizer; None for
    float. `host_ops`: aten operator names ("hardtanh") the partitioner must leave on the host."""
    torch = _torch()
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
    from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    from torch.fx.passes.operator_support import OperatorSupportBase

    inputs = tuple(example_inputs)
    module = module.eval()
    spec = TosaCompileSpec(FP_SPEC if quantize is None else INT_SPEC)
    exported = torch.export.export(module, inputs)
    eager = module
    if quantize is not None:
        from executorch.backends.arm.quantizer.arm_quantizer import (
            TOSAQuantizer,
            get_symmetric_quantization_config,
        )
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        quantizer = TOSAQuantizer(spec)
        quantizer.set_global(get_symmetric_quantization_config())
        prepared = prepare_pt2e(exported.module(check_guards=False), quantizer)
        with torch.no_grad():
            for batch in quantize:
                prepared(*batch)
        eager = convert_pt2e(prepared)
        exported = torch.export.export(eager, inputs)

    names = tuple(host_ops)

    class KeepOnHost(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            target = str(node.target)
            return not any(f"aten.{n}." in target for n in names)

    partitioner = TOSAPartitioner(spec, additional_checks=[KeepOnHost()] if names else None)
    edge = to_edge_transform_and_lower(
        exported, partitioner=[partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    return Exported(bytes(edge.to_executorch().buffer), eager)

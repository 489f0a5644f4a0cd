"""PyTorch -> ExecuTorch program (.pte) through ExecuTorch's Arm TOSA partitioner, and `tosa_vk.from_torch`: the
`torch` extra's one export path (tests/data/pte/make.py makes the committed .pte fixtures with it too).

Needs torch and executorch (pip install 'tosa_vk[torch]'); imported only when called. The steps, each ExecuTorch's
own API: torch.export; for int8, the Arm TOSAQuantizer's symmetric config (prepare_pt2e, calibration, convert_pt2e)
and a second export; to_edge_transform_and_lower with the TOSAPartitioner (TOSA-1.0+FP or TOSA-1.0+INT); to_executorch.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import TosaError
from ..paths import find_tool
from ..store.files import write_atomic

if TYPE_CHECKING:
    from ..backends.model import Model

FP_SPEC = "TOSA-1.0+FP"
INT_SPEC = "TOSA-1.0+INT"
# torch's CPU build first, from PyTorch's own index (PyPI's default wheel pulls gigabytes of CUDA libraries), then
# the extra: the one source for this command (the torch extra pins the same torch; scripts/test_torch.sh runs it)
TORCH_VERSION = "2.13.0"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INSTALL_TORCH = f"pip install torch=={TORCH_VERSION} --index-url {TORCH_CPU_INDEX}"
INSTALL = f"{INSTALL_TORCH} && pip install 'tosa_vk[torch]'"


# the libraries whose warnings (Python warnings, their loggers' WARNING records) an export keeps from the user's
# output unless verbose: deprecation notices and notes on their own internals, nothing a user can act on
THIRD_PARTY_LOGGERS = ("torch", "torchao", "executorch")
# the variable ExecuTorch's VGF partitioner reads model-converter's path from (else it looks on PATH only)
MODEL_CONVERTER_ENV = "MODEL_CONVERTER_PATH"


def model_name(module: Any) -> str:
    """What errors about an exported module name (it has no file): `from_torch(Net)`."""
    return f"from_torch({type(module).__qualname__})"


@contextmanager
def _quiet(verbose: bool) -> Iterator[None]:
    """THIRD_PARTY_LOGGERS' warnings kept out of the output for the block, unless verbose (errors still show):
    Python warnings filtered in a catch_warnings block, the loggers' levels raised to ERROR and put back after."""
    if verbose:
        yield
        return
    loggers = [logging.getLogger(name) for name in THIRD_PARTY_LOGGERS]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)


@contextmanager
def _model_converter_found() -> Iterator[None]:
    """ExecuTorch's VGF partitioner finds model-converter on PATH or at $MODEL_CONVERTER_PATH: this environment's
    (paths.find_tool: also an unactivated venv's bin/) is given it for the block, unless the user set the variable."""
    found = None if os.environ.get(MODEL_CONVERTER_ENV) else find_tool("model-converter")
    if found is None:
        yield
        return
    os.environ[MODEL_CONVERTER_ENV] = found
    try:
        yield
    finally:
        os.environ.pop(MODEL_CONVERTER_ENV, None)


def _torch():
    try:
        import executorch  # noqa: F401
        import torch
    except ImportError as err:
        raise TosaError(f"from PyTorch needs torch and executorch ({err.name} is missing): {INSTALL}") from None
    return torch


class Exported(NamedTuple):
    """An export's result: the program's bytes, and `eager`, the PyTorch module it matches: the module itself for
    float, the quantized (convert_pt2e) module for int8 — PyTorch's own int8 arithmetic, simulated in float. Where
    the module changes an input in place, `eager` returns what the program returns: the changed inputs first
    (torch.export's input-mutation outputs, which ExecuTorch keeps as method outputs), then the module's outputs;
    it runs on copies of the inputs, leaving the caller's tensors as they are."""

    pte: bytes
    eager: Callable[..., Any]


def export_pte(
    module: Any,
    example_inputs: Sequence[Any],
    *,
    quantize: Iterable[Sequence[Any]] | None = None,
    host_ops: Sequence[str] = (),
    delegate: str = "tosa",
    verbose: bool = False,
) -> Exported:
    """`module` (a torch.nn.Module, put in eval mode) as an ExecuTorch program's bytes. `quantize`: calibration
    batches (each a tuple of inputs like `example_inputs`) to quantize to int8 with the Arm quantizer; None for
    float. `host_ops`: aten operator names ("hardtanh") the partitioner must leave on the host. `delegate`: "tosa"
    (ExecuTorch's Arm TOSA partitioner: TOSA flatbuffers) or "vgf" (its VGF partitioner: model-converter's VGF
    containers; needs ai-ml-sdk-model-converter). ExecuTorch's refusal is a TosaError naming the module
    (model_name); torch's, torchao's and ExecuTorch's warnings are shown only with `verbose`."""
    if delegate not in ("tosa", "vgf"):
        raise TosaError(f"delegate= takes 'tosa' or 'vgf', got {delegate!r}")
    with _quiet(verbose), _model_converter_found():
        try:
            return _export(module, example_inputs, quantize, host_ops, delegate)
        except (TosaError, MemoryError):
            raise
        except Exception as err:  # torch.export's, torchao's and ExecuTorch's errors: the user's module refused
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            raise TosaError(
                f"ExecuTorch cannot export it ({type(err).__name__}: {lines[0][:500] if lines else 'no message'})",
                file=model_name(module),
            ) from err


def _export(
    module: Any,
    example_inputs: Sequence[Any],
    quantize: Iterable[Sequence[Any]] | None,
    host_ops: Sequence[str],
    delegate: str,
) -> Exported:
    torch = _torch()
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    from torch.fx.passes.operator_support import OperatorSupportBase

    if delegate == "tosa":
        from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec as Spec
        from executorch.backends.arm.tosa.partitioner import TOSAPartitioner as Partitioner
    else:
        from executorch.backends.arm.vgf import VgfCompileSpec as Spec
        from executorch.backends.arm.vgf import VgfPartitioner as Partitioner
    inputs = tuple(example_inputs)
    module = module.eval()
    spec = Spec(FP_SPEC if quantize is None else INT_SPEC)
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

    partitioner = Partitioner(spec, additional_checks=[KeepOnHost()] if names else None)
    edge = to_edge_transform_and_lower(
        exported, partitioner=[partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    return Exported(bytes(edge.to_executorch().buffer), _as_program(eager, edge.exported_program()))


def _as_program(eager: Callable[..., Any], exported: Any) -> Callable[..., Any]:
    """`eager` returning the program's outputs in the program's order (Exported): the inputs it changes in place
    first, in the order of the export's output specs; `eager` itself where it changes none."""
    from torch.export.graph_signature import InputKind, OutputKind
    from torch.utils import _pytree as pytree

    sig = exported.graph_signature
    users = [getattr(s.arg, "name", None) for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    changed = [users.index(s.target) for s in sig.output_specs if s.kind == OutputKind.USER_INPUT_MUTATION]
    if not changed:
        return eager

    def run(*args: Any) -> tuple[Any, ...]:
        import torch

        leaves, spec = pytree.tree_flatten(args, is_leaf=lambda x: x is None)  # (export's inputs: None is one)
        if len(leaves) != len(users):
            raise TosaError(f"the module takes {len(users)} inputs (flattened), got {len(leaves)}")
        leaves = [x.clone() if torch.is_tensor(x) else x for x in leaves]
        outputs = eager(*pytree.tree_unflatten(leaves, spec))
        return (*(leaves[i] for i in changed), *(outputs if isinstance(outputs, tuple) else (outputs,)))

    return run


def from_torch(
    module: Any,
    example_inputs: Sequence[Any],
    *,
    quantize: bool | Iterable[Sequence[Any]] = False,
    save: str | Path | None = None,
    backend: str | None = None,
    host_ops: Sequence[str] = (),
    delegate: str = "tosa",
    verbose: bool = False,
    **options: Any,
) -> Model:
    """A PyTorch module as a running tosa_vk Model, in one call: exported through ExecuTorch's Arm TOSA partitioner
    (export_pte) and loaded like a .pte (tosa_vk.load), its TOSA delegates on `backend`. The Model takes and returns
    float arrays named after the module's forward arguments (outputs: output_0, ...).

    quantize: False for float (TOSA-1.0+FP); True to quantize to int8 calibrated on `example_inputs`, or calibration
    batches (an iterable of input tuples). save: a folder to write model.pte, each delegate's TOSA graph
    (delegate_<i>.tosa), the inputs, PyTorch eager's outputs (for int8: the quantized module's) and a desc.json, so
    `tosa-vk run --test-desc <save>/desc.json --compare` checks the program against eager. `host_ops`: aten operator
    names the partitioner must leave on the host; `delegate`: "tosa" or "vgf" (ExecuTorch's Arm TOSA or VGF
    partitioner); `verbose`: show torch's, torchao's and ExecuTorch's warnings; `options`: the backend's load
    options. Errors name the module (`from_torch(Net)`), or save's model.pte when saved."""
    import inspect

    with _quiet(verbose):  # torchao's notes on its optional kernels come at import
        torch = _torch()
    from ..session import load_pte

    inputs = tuple(example_inputs)
    if quantize is True:
        calibration: Iterable[Sequence[Any]] | None = [inputs]
    elif quantize is False or quantize is None:
        calibration = None
    else:
        calibration = quantize
    exported = export_pte(module, inputs, quantize=calibration, host_ops=host_ops, delegate=delegate, verbose=verbose)
    try:
        params = list(inspect.signature(module.forward).parameters.values())
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][: len(inputs)]
    except (TypeError, ValueError):
        names = []
    if len(names) != len(inputs):
        names = [f"input_{i}" for i in range(len(inputs))]
    if save is None:  # loaded from its bytes: no file, so errors name the module, not a deleted temporary file
        return load_pte(exported.pte, backend, options, input_names=names, file=model_name(module))
    folder = Path(save)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.pte"
    write_atomic(path, exported.pte, overwrite=True, what="the ExecuTorch program")
    model = load_pte(path, backend, options, input_names=names)
    with torch.no_grad():
        eager = exported.eager(*inputs)
    _write_desc(folder, model, [t.detach().numpy() for t in inputs], _flat(eager))
    return model


def _flat(outputs: Any) -> list[Any]:
    """A module's outputs (a tensor, or nested tuples / lists of them) as numpy arrays, in order."""
    if isinstance(outputs, (tuple, list)):
        return [a for o in outputs for a in _flat(o)]
    return [outputs.detach().numpy()]


def _write_desc(folder: Path, model: Any, inputs: list[Any], eager: list[Any]) -> None:
    """from_torch(save=...)'s files: each delegate's .tosa, and the inputs and eager's outputs as write_case writes
    them."""
    from ..ir import save_graph

    for i, delegate in enumerate(model.delegates):
        save_graph(delegate.graph, folder / f"delegate_{i}.tosa")
    write_case(folder, inputs, eager)


def _array(value: Any) -> Any:
    """A tensor, array or Python int / float / bool as a numpy array (a scalar as a 0-d one)."""
    import numpy as np

    if hasattr(value, "detach"):
        return value.detach().contiguous().numpy()
    return np.asarray(value)


def write_case(
    folder: Path, inputs: Sequence[Any], outputs: Sequence[Any], pte: bytes | None = None, *, fresh: bool = False,
    input_types: bool = False, **extra: Any,
) -> None:  # fmt: skip
    """A program with its inputs and PyTorch's outputs in Arm's conformance layout, the one layout of every .pte
    fixture script and of from_torch(save=...): model.pte (when given), input_<i>.npy, eager_<i>.npy and a desc.json
    naming them (`run --compare` writes ofm_file results and reads expected_result_file), then `extra`'s keys. Named
    as the .pte names them when loaded from the file (input_0, ..., output_0, ...: it keeps no argument names).
    Inputs and outputs are tensors, arrays or Python scalars (saved 0-d); a None input has no file and no ifm entry.
    fresh: the folder is removed first and made (a fixture script's: a case's old files go; never a user's folder).
    input_types: also write method_inputs, each input's name -> tensor / int / float / bool / none (a scalar's .npy
    does not say whether the method took a Python scalar or a 0-d tensor)."""
    import shutil

    import numpy as np

    if fresh:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    if pte is not None:
        (folder / "model.pte").write_bytes(pte)
    desc: dict[str, Any] = {"tosa_file": "model.pte", "ifm_name": [], "ifm_file": [], "ofm_name": [],
                            "ofm_file": [], "expected_result_file": []}  # fmt: skip
    types: dict[str, str] = {}
    for i, value in enumerate(inputs):
        types[f"input_{i}"] = (
            "none" if value is None else "tensor" if hasattr(value, "detach") else type(value).__name__
        )
        if value is None:
            continue
        np.save(folder / f"input_{i}.npy", _array(value))
        desc["ifm_name"].append(f"input_{i}")
        desc["ifm_file"].append(f"input_{i}.npy")
    for i, value in enumerate(outputs):
        np.save(folder / f"eager_{i}.npy", _array(value))
        desc["ofm_name"].append(f"output_{i}")
        desc["ofm_file"].append(f"result_{i}.npy")
        desc["expected_result_file"].append(f"eager_{i}.npy")
    if input_types:
        desc["method_inputs"] = types
    (folder / "desc.json").write_text(json.dumps({**desc, **extra}, indent=1) + "\n")

"""The graph lowerer: TOSA operators -> Kernels (GLSL shader variants + bindings + push constants + grid).

Each spec chapter module registers lowerings with `@lowering("ADD")` on `def ADD(ctx: LowerCtx) -> list[Kernel]`.
An operator without a lowering (or whose lowering returns None for this variant) runs on the host with the
reference implementation, unless the caller asks for `strict` placement. CONST / CONST_SHAPE values are uploaded
once; RESHAPE and IDENTITY share their input's memory.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Block, Graph, Operator, Tensor
from ..program import Buffer, Host, Kernel, Program
from .types import binding_defines

LOWERINGS: dict[str, Callable[["LowerCtx"], list[Kernel] | None]] = {}
CHAPTERS = ("elementwise_binary", "elementwise_unary", "elementwise_ternary", "comparison", "activation",
            "type_conversion", "reduction", "data_layout", "scatter_gather", "image", "tensor_ops")
ALIASING = ("RESHAPE", "IDENTITY")  # outputs share the input's memory: no kernel at all
WORKGROUP = 64                      # invocations per workgroup of the 1-D kernels
MAX_GROUPS = 65535                  # maxComputeWorkGroupCount[0] guaranteed by the spec


def lowering(*names: str):
    def register(fn):
        for name in names:
            LOWERINGS[name] = fn
        return fn
    return register


def load_all() -> None:
    for chapter in CHAPTERS:
        try:
            importlib.import_module(f"{__name__}.{chapter}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{chapter}":
                raise


@dataclass
class LowerCtx:
    """What a lowering sees of one operator."""
    op: Operator
    index: int
    block: Block
    features: dict[str, bool]

    @property
    def inputs(self) -> list[Tensor]:
        return [self.block.tensors[n] for n in self.op.inputs]

    @property
    def outputs(self) -> list[Tensor]:
        return [self.block.tensors[n] for n in self.op.outputs]

    @property
    def label(self) -> str:
        return f"{self.op.op} #{self.index} '{self.op.outputs[0]}'" if self.op.outputs else f"{self.op.op} #{self.index}"

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.op.attrs.get(name, default)
        return default if value is None else value

    def constant(self, i: int) -> np.ndarray | None:
        """The value of input i when it is a compile-time constant (CONST / CONST_SHAPE), else None."""
        return self.inputs[i].data

    def kernel(self, shader: str, bindings: dict[str, str], defines: dict[str, str] | None = None,
               push: bytes = b"", groups: tuple[int, int, int] | None = None, invocations: int | None = None,
               ) -> Kernel:
        """A dispatch of shaders/<shader>.comp. `bindings` maps binding names (A, B, O, ...) -> tensor names,
        in binding order; each gets the type defines of its tensor. Outputs are the bindings whose tensor is an
        output of the operator. Give `groups`, or `invocations` for a 1-D grid of WORKGROUP-wide groups."""
        all_defines: dict[str, str] = {}
        for bname, tensor in bindings.items():
            all_defines.update(binding_defines(bname, self.block.tensors[tensor].dtype))
        all_defines.update(defines or {})
        if groups is None:
            groups = grid_1d(invocations)
        outs = set(self.op.outputs)
        names = tuple(bindings.values())
        return Kernel(self.label, shader, tuple(sorted(all_defines.items())), names, push, groups,
                      reads=tuple(n for n in names if n not in outs), writes=tuple(n for n in names if n in outs))


def grid_1d(invocations: int) -> tuple[int, int, int]:
    """Workgroup counts covering `invocations` (x up to MAX_GROUPS, the rest in y); shaders flatten with
    `gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WORKGROUP`."""
    groups = max(1, -(-invocations // WORKGROUP))
    if groups <= MAX_GROUPS:
        return (groups, 1, 1)
    return (MAX_GROUPS, -(-groups // MAX_GROUPS), 1)


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def compile_graph(graph: Graph, features: dict[str, bool] | None = None, alignment: int = 256,
                  strict: bool = False, host_runner: Callable[[Operator, Block, tuple[str, ...]], Callable] | None = None) -> Program:
    """Lowers the main block of a validated graph to a Program (buffers at `alignment`-byte offsets)."""
    load_all()
    features = features or {}
    block = graph.main
    buffers: dict[str, Buffer] = {}
    constants: dict[str, np.ndarray] = {}
    offset = 0
    graph_io = set(block.inputs) | set(block.outputs)

    def place(t: Tensor, kind: str) -> None:
        nonlocal offset
        nbytes = t.size * t.dtype.numpy.itemsize
        buffers[t.name] = Buffer(t.name, offset, nbytes, t.shape, t.dtype.numpy, kind, t.name)
        offset = _align(offset + max(nbytes, 1), alignment)

    for name in block.inputs:
        place(block.tensors[name], "input")
    steps: list[Kernel | Host] = []
    placement: list[tuple[str, str]] = []
    for index, op in enumerate(block.operators):
        ctx = LowerCtx(op, index, block, features)
        if op.op in ("CONST", "CONST_SHAPE"):
            t = block.tensors[op.outputs[0]]
            if t.dtype != DType.SHAPE:
                place(t, "constant")
                constants[t.name] = t.data
            continue
        if op.op in ALIASING and op.inputs[0] in buffers and op.outputs[0] not in graph_io - set(block.outputs):
            src, out = buffers[op.inputs[0]], block.tensors[op.outputs[0]]
            buffers[out.name] = Buffer(out.name, src.offset, src.nbytes, out.shape, out.dtype.numpy,
                                       "output" if out.name in block.outputs else src.kind, src.storage)
            placement.append((ctx.label, "alias"))
            continue
        for name in op.outputs:
            place(block.tensors[name], "output" if name in block.outputs else "intermediate")
        fn = LOWERINGS.get(op.op)
        kernels = fn(ctx) if fn is not None else None
        if kernels is None:
            if strict or host_runner is None:
                raise TosaError(f"no Vulkan kernel for this operator (types "
                                f"{', '.join(t.dtype.name for t in ctx.inputs)} -> "
                                f"{', '.join(t.dtype.name for t in ctx.outputs)})", op=op.op, index=index,
                                output=op.outputs[0] if op.outputs else None)
            reads = tuple(n for n in op.inputs if n in buffers)
            steps.append(Host(ctx.label, host_runner(op, block, reads), reads, tuple(op.outputs)))
            placement.append((ctx.label, "host"))
        else:
            steps.extend(kernels)
            placement.append((ctx.label, "vulkan"))
    for name in block.outputs:  # outputs that are constants or graph inputs passed through
        if name not in buffers:
            place(block.tensors[name], "output")
            if block.tensors[name].data is not None:
                constants[name] = block.tensors[name].data
    return Program(steps, buffers, max(offset, 16), list(block.inputs), list(block.outputs), constants, placement)

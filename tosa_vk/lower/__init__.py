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
from ..plan import memory
from .types import binding_defines

LOWERINGS: dict[str, Callable[["LowerCtx"], list[Kernel] | None]] = {}
CHAPTERS = ("elementwise_binary", "elementwise_unary", "elementwise_ternary", "comparison", "activation",
            "type_conversion", "reduction", "data_layout", "scatter_gather", "image", "tensor_ops",
            "convolution")
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
    """Imports every chapter module so its lowerings register (idempotent)."""
    for chapter in CHAPTERS:
        importlib.import_module(f"{__name__}.{chapter}")


@dataclass
class LowerCtx:
    """What a lowering sees of one operator."""
    op: Operator
    index: int
    block: Block
    features: dict[str, bool]
    temps: dict[str, Tensor]

    def add_constant(self, values: np.ndarray, dtype: DType) -> str:
        """A constant made at load time (e.g. weights packed into the layout a kernel wants); uploaded once.
        Returns its tensor name, usable in `kernel(bindings=...)`."""
        name = f"{self.label}/const{len(self.temps)}"
        self.temps[name] = Tensor(name, np.shape(values), dtype, np.asarray(values, dtype=dtype.numpy))
        return name

    def temporary(self, shape: tuple[int, ...], dtype: DType) -> str:
        """A scratch tensor for multi-pass kernels (e.g. a reduction's partial results); returns its name."""
        name = f"{self.label}/tmp{len(self.temps)}"
        self.temps[name] = Tensor(name, tuple(shape), dtype)
        return name

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
               writes: tuple[str, ...] | None = None) -> Kernel:
        """A dispatch of shaders/<shader>.comp. `bindings` maps binding names (A, B, O, ...) -> tensor names,
        in binding order; each gets the type defines of its tensor. The kernel writes the bindings whose tensor is
        an output of the operator, or the tensors named in `writes` (e.g. a temporary). Give `groups`, or
        `invocations` for a 1-D grid of WORKGROUP-wide groups."""
        all_defines: dict[str, str] = {}
        for bname, tensor in bindings.items():
            t = self.temps.get(tensor) or self.block.tensors[tensor]
            all_defines.update(binding_defines(bname, t.dtype))
        all_defines.update(defines or {})
        if groups is None:
            groups = grid_1d(invocations)
        outs = set(self.op.outputs if writes is None else writes)
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


def compile_graph(graph: Graph, features: dict[str, bool] | None = None, alignment: int = 256,
                  strict: bool = False,
                  host_runner: Callable[[Operator, Block, tuple[str, ...]], Callable] | None = None) -> Program:
    """Lowers the main block of a validated graph to a Program whose tensors are packed into one arena by
    liveness (tosa_vk/plan/memory.py) at `alignment`-byte offsets."""
    load_all()
    features = features or {}
    block = graph.main
    steps: list[Kernel | Host] = []
    placement: list[tuple[str, str]] = []
    root: dict[str, str] = {}            # alias -> the tensor whose memory it shares
    constants: dict[str, np.ndarray] = {}
    temps: dict[str, Tensor] = {}
    in_memory = set(block.inputs)        # tensors that will have a buffer

    for index, op in enumerate(block.operators):
        ctx = LowerCtx(op, index, block, features, temps)
        if op.op in ("CONST", "CONST_SHAPE"):
            t = block.tensors[op.outputs[0]]
            if t.dtype != DType.SHAPE:
                constants[t.name] = t.data
                in_memory.add(t.name)
            continue
        if op.op in ALIASING and op.inputs[0] in in_memory:
            root[op.outputs[0]] = root.get(op.inputs[0], op.inputs[0])
            in_memory.add(op.outputs[0])
            placement.append((ctx.label, "alias"))
            continue
        in_memory.update(op.outputs)
        fn = LOWERINGS.get(op.op)
        kernels = fn(ctx) if fn is not None else None
        if kernels is None:
            if strict or host_runner is None:
                raise TosaError(f"no Vulkan kernel for this operator (types "
                                f"{', '.join(t.dtype.name for t in ctx.inputs)} -> "
                                f"{', '.join(t.dtype.name for t in ctx.outputs)})", op=op.op, index=index,
                                output=op.outputs[0] if op.outputs else None)
            reads = tuple(n for n in op.inputs if n in in_memory)
            steps.append(Host(ctx.label, host_runner(op, block, reads), reads, tuple(op.outputs)))
            placement.append((ctx.label, "host"))
        else:
            steps.extend(kernels)
            placement.append((ctx.label, "vulkan"))
    for name in block.outputs:  # outputs that are constants or pass-through inputs need memory too
        if name not in in_memory and block.tensors[name].data is not None:
            constants[name] = block.tensors[name].data
        in_memory.add(name)
    constants.update({n: t.data for n, t in temps.items() if t.data is not None})
    tensors = {**{n: block.tensors[n] for n in in_memory}, **temps}
    buffers, arena, stats = _place(tensors, steps, root, constants, block, alignment)
    return Program(steps, buffers, arena, list(block.inputs), list(block.outputs), constants, placement, stats)


def _place(tensors: dict[str, Tensor], steps: list, root: dict[str, str], constants: dict, block: Block,
           alignment: int) -> tuple[dict[str, Buffer], int, dict[str, int]]:
    """Constants and variables first (uploaded once / persistent), then every other tensor packed by liveness."""
    forever = len(steps) + 1
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, step in enumerate(steps):
        for name in step.writes:
            r = root.get(name, name)
            first.setdefault(r, i)
            last[r] = max(last.get(r, i), i)
        for name in step.reads:
            r = root.get(name, name)
            last[r] = max(last.get(r, i), i)
    for name in block.outputs:
        last[root.get(name, name)] = forever
    static = [n for n, t in tensors.items() if n not in root and (n in constants or t.variable)]
    offset = 0
    intervals: dict[str, memory.Interval] = {}
    for name in static:
        t = tensors[name]
        intervals[name] = memory.Interval(name, t.size * t.dtype.numpy.itemsize, -1, forever, offset)
        offset = memory.align(offset + max(intervals[name].size, 1), alignment)
    dynamic = []
    for name, t in tensors.items():
        if name in root or name in intervals:
            continue
        lo = -1 if name in block.inputs else first.get(name, -1)
        iv = memory.Interval(name, t.size * t.dtype.numpy.itemsize, lo, max(last.get(name, lo), lo))
        intervals[name] = iv
        dynamic.append(iv)
    dynamic_bytes = memory.pack(dynamic, alignment)
    for iv in dynamic:
        iv.offset += offset
    stats = {"arena_bytes": offset + dynamic_bytes, "static_bytes": offset, "dynamic_bytes": dynamic_bytes,
             "dynamic_lower_bound_bytes": memory.lower_bound(dynamic),
             "dynamic_naive_bytes": sum(iv.size for iv in dynamic)}
    kinds = {**{n: "intermediate" for n in tensors}, **{n: "constant" for n in constants},
             **{n: "input" for n in block.inputs}, **{n: "output" for n in block.outputs}}
    buffers = {}
    for name, t in tensors.items():
        iv = intervals[root.get(name, name)]
        buffers[name] = Buffer(name, iv.offset, t.size * t.dtype.numpy.itemsize, t.shape, t.dtype.numpy,
                               "variable" if t.variable else kinds[name], iv.name, (iv.first, iv.last))
    return buffers, max(offset + dynamic_bytes, 16), stats

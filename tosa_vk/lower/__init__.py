"""The graph lowerer: TOSA operators -> Kernels (GLSL shader variants + bindings + push constants + grid).

Each spec chapter module registers lowerings with `@lowering("ADD")` on `def ADD(ctx: LowerCtx) -> list[Kernel]`.
An operator without a lowering (or whose lowering returns None for this variant) runs on the host with the
reference implementation, unless the caller asks for `strict` placement. CONST / CONST_SHAPE values are uploaded
once; RESHAPE and IDENTITY share their input's memory.
"""
from __future__ import annotations

import importlib
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import TosaError
from ..ir.dtype import DType
from ..ir.graph import Block, Graph, Operator, Tensor
from ..program import Branch, Buffer, Host, Kernel, Loop, Program, Step, VariableSpec
from ..plan import memory, resources
from .types import binding_defines

LOWERINGS: dict[str, Callable[["LowerCtx"], list[Step] | None]] = {}
CHAPTERS = ("elementwise_binary", "elementwise_unary", "elementwise_ternary", "comparison", "activation",
            "type_conversion", "reduction", "data_layout", "scatter_gather", "image", "tensor_ops",
            "convolution", "control_flow", "variable", "custom")
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
    """What a lowering sees of one operator. Tensor names are the block's; `kernel()` turns them into the
    program-wide names (a region's tensors are qualified by `prefix`, e.g. "BODY_BLOCK::x")."""
    op: Operator
    index: int
    block: Block
    features: dict[str, bool]
    temps: dict[str, Tensor]
    prefix: str = ""                          # "" in the main block
    compiler: "Compilation | None" = None     # for operators with regions or program-wide state

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

    def q(self, name: str) -> str:
        """The program-wide name of a tensor of this block (temporaries and qualified names pass through)."""
        return self.prefix + name if name in self.block.tensors and name not in self.temps else name

    def tensor(self, name: str) -> Tensor:
        """A tensor by block-local or program-wide name."""
        found = self.temps.get(name) or self.block.tensors.get(name)
        return found if found is not None else self.compiler.tensors[name]

    @property
    def inputs(self) -> list[Tensor]:
        return [self.block.tensors[n] for n in self.op.inputs]

    @property
    def outputs(self) -> list[Tensor]:
        return [self.block.tensors[n] for n in self.op.outputs]

    @property
    def label(self) -> str:
        where = f"{self.prefix}{self.op.op} #{self.index}"
        return f"{where} '{self.op.outputs[0]}'" if self.op.outputs else where

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
            all_defines.update(binding_defines(bname, self.tensor(tensor).dtype))
        all_defines.update(defines or {})
        if groups is None:
            groups = grid_1d(invocations)
        outs = {self.q(n) for n in (self.op.outputs if writes is None else writes)}
        names = tuple(self.q(n) for n in bindings.values())
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
    """Lowers a validated graph (its main block, and the regions its control-flow operators run) to a Program
    whose tensors are packed into one arena by liveness (tosa_vk/plan/memory.py) at `alignment`-byte offsets."""
    load_all()
    c = Compilation(graph, features or {}, strict, host_runner)
    block = graph.main
    for name in block.inputs:
        c.declare(name, block.tensors[name])
    steps = c.block(block)
    for name in block.outputs:  # outputs that are constants or pass-through inputs need memory too
        if name not in c.tensors and block.tensors[name].data is not None:
            c.constants[name] = block.tensors[name].data
        c.declare(name, block.tensors[name])
    c.constants.update({n: t.data for n, t in c.temps.items() if t.data is not None})
    tensors = {**c.tensors, **c.temps}
    buffers, arena, stats = _place(tensors, steps, c.root, c.constants, block, alignment)
    return Program(steps, buffers, arena, list(block.inputs), list(block.outputs), c.constants, c.placement,
                   stats, c.variables, resources.plan_resources(tensors, steps, c.root))


class Compilation:
    """The state of one compile_graph call: every tensor that gets memory (by program-wide name), which ones
    share memory (`root`), constants, variables and where each operator runs."""

    def __init__(self, graph: Graph, features: dict[str, bool], strict: bool, host_runner):
        self.regions = {r.name: r.blocks[0] for r in graph.regions}
        self.features, self.strict, self.host_runner = features, strict, host_runner
        self.tensors: dict[str, Tensor] = {}      # program-wide name -> tensor (named so)
        self.root: dict[str, str] = {}            # alias -> the tensor whose memory it shares
        self.constants: dict[str, np.ndarray] = {}
        self.temps: dict[str, Tensor] = {}
        self.placement: list[tuple[str, str]] = []
        self.variables: dict[str, VariableSpec] = {}
        self._instances: dict[str, int] = {}

    def prefix_for(self, region: str) -> str:
        """The name prefix of one compiled instance of `region` (a region run by two operators compiles twice)."""
        n = self._instances[region] = self._instances.get(region, 0) + 1
        return f"{region}::" if n == 1 else f"{region}#{n}::"

    def declare(self, name: str, t: Tensor) -> None:
        """Tensor `t` gets memory under the program-wide `name`."""
        self.tensors.setdefault(name, t if t.name == name else dataclasses.replace(t, name=name))

    def alias(self, name: str, t: Tensor, target: str) -> None:
        """`name` shares the memory of `target` (RESHAPE / IDENTITY outputs, region inputs, variables)."""
        self.declare(name, t)
        self.root[name] = self.root.get(target, target)

    def block(self, block: Block, prefix: str = "") -> list[Step]:
        """The steps of one block; a region's inputs must already be aliased (see control_flow.py)."""
        steps: list[Step] = []
        for index, op in enumerate(block.operators):
            ctx = LowerCtx(op, index, block, self.features, self.temps, prefix, self)
            if op.op in ("CONST", "CONST_SHAPE"):
                t = block.tensors[op.outputs[0]]
                if t.dtype != DType.SHAPE:
                    self.constants[ctx.q(t.name)] = t.data
                    self.declare(ctx.q(t.name), t)
                continue
            if op.op in ALIASING and ctx.q(op.inputs[0]) in self.tensors:
                self.alias(ctx.q(op.outputs[0]), ctx.outputs[0], ctx.q(op.inputs[0]))
                self.placement.append((ctx.label, "alias"))
                continue
            for t in ctx.outputs:
                self.declare(ctx.q(t.name), t)
            fn = LOWERINGS.get(op.op)
            lowered = fn(ctx) if fn is not None else None
            if lowered is None:
                if self.strict or self.host_runner is None:
                    raise TosaError(f"no Vulkan kernel for this operator (types "
                                    f"{', '.join(t.dtype.name for t in ctx.inputs)} -> "
                                    f"{', '.join(t.dtype.name for t in ctx.outputs)})", op=op.op, index=index,
                                    output=op.outputs[0] if op.outputs else None,
                                    region=prefix.removesuffix("::") or None)
                reads = tuple(n for n in op.inputs if ctx.q(n) in self.tensors)
                steps.append(Host(ctx.label, self.host_runner(op, block, reads), tuple(map(ctx.q, reads)),
                                  tuple(map(ctx.q, op.outputs))))
                self.placement.append((ctx.label, "host"))
            else:
                steps.extend(lowered)
                self.placement.append((ctx.label, "vulkan"))
        return steps


def _liveness(steps: list[Step], root: dict[str, str]) -> tuple[dict[str, int], dict[str, int], int]:
    """First write and last use of every memory root, in a depth-first numbering of the (nested) steps. A tensor
    used inside a WHILE_LOOP but made before it lives across the whole loop (the next iteration reads it again)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    count = 0

    def use(name: str, i: int, write: bool) -> None:
        r = root.get(name, name)
        if write:
            first.setdefault(r, i)
        last[r] = max(last.get(r, i), i)

    def visit(items: list[Step]) -> None:
        nonlocal count
        for step in items:
            i, count = count, count + 1
            for name in step.writes:
                use(name, i, True)
            for name in step.reads:
                use(name, i, False)
            if isinstance(step, Branch):
                visit(step.then)
                visit(step.orelse)
            elif isinstance(step, Loop):
                visit(step.cond)
                visit(step.body)
                end, count = count, count + 1
                for name in filter(None, (step.condition, step.predicate)):  # read between iterations
                    use(name, end, False)
                for r, lo in list(last.items()):
                    if lo >= i and first.get(r, -1) < i:
                        last[r] = end
    visit(steps)
    return first, last, count


def _place(tensors: dict[str, Tensor], steps: list, root: dict[str, str], constants: dict, block: Block,
           alignment: int) -> tuple[dict[str, Buffer], int, dict[str, int]]:
    """Constants and variables first (uploaded once / persistent), then every other tensor packed by liveness."""
    first, last, count = _liveness(steps, root)
    forever = count + 1
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

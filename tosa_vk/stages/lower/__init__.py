"""The lower stage: TOSA operators -> Kernels (GLSL shader variants + bindings + push constants + grid).

Each spec chapter module registers lowerings with `@lowering("ADD")` on `def ADD(ctx: LowerCtx) -> list[Kernel]`;
a lowering returns None when no kernel does this variant (types, device features), and the partition stage
(tosa_vk/stages/partition.py) then places the operator on the host: lower() turns it into a Host step. CONST /
CONST_SHAPE values are uploaded once; RESHAPE and IDENTITY share their input's memory. Memory is the plan stage's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ...errors import TosaError
from ...ir.dtype import DType
from ...ir.graph import Block, Graph, Operator, Tensor
from ...ir.shape_ops import FOLDED
from ...program import Host, Kernel, Placement, Step, VariableSpec
from ...target import Target
from ..records import Fusion, Lowered, Partition
from .context import (  # noqa: F401  (the stage's names, as partition / compiler / vgf_export import them)
    ALIASING,
    LOWERINGS,
    MAX_GROUPS,
    LowerCtx,
    Made,
    grid_1d,
    load_all,
    spill,
)
from .fused.group import lower_group


def lower(
    graph: Graph,
    target: Target,
    partition: Partition,
    fusion: Fusion | None = None,
    answers: Answers | None = None,
) -> Lowered:
    """Lowers a validated, partitioned graph (its main block, and the regions its control-flow operators run) to
    steps: the operators placed on Vulkan become kernels (fused ones as `fusion` says: the fuse stage kept only the
    fusions each lowering accepts, can_fuse / can_group), the others Host steps. `answers`: the Answers the fuse
    stage asked, whose kernels the main block's fused operators take as they are (lowered once)."""
    load_all()
    c = Compilation(graph, target, partition, fusion or Fusion(), answers)
    block = graph.main
    for name in block.inputs:
        c.declare(name, block.tensors[name])
    steps = c.block(block, graph.regions[0].name)
    for name in block.outputs:  # outputs that are constants or pass-through inputs need memory too
        data = block.tensors[name].data
        if name not in c.tensors and data is not None:
            c.constants[name] = data
        c.declare(name, block.tensors[name])
    c.constants.update({n: t.data for n, t in c.temps.items() if t.data is not None})
    return Lowered(
        steps,
        {**c.tensors, **c.temps},
        c.root,
        c.offsets,
        c.constants,
        c.variables,
        c.placement,
        list(block.inputs),
        list(block.outputs),
    )


def try_lower(op: Operator, index: int, block: Block, target: Target) -> tuple[list[Step], dict[str, Tensor]] | None:
    """The kernels of one operator of `block` and the temporaries they use, or None when no Vulkan kernel does
    this variant. Only for operators that need no program-wide state (not control flow or variables): the
    partition stage asks this, and the lower stage reuses the answer for the main block."""
    load_all()
    fn = LOWERINGS.get(op.op)
    if fn is None:
        return None
    ctx = LowerCtx(op, index, block, target, {})
    steps = fn(ctx)
    return None if steps is None else (steps, ctx.temps)


Kept = tuple[list[Made], dict[str, Tensor]]  # a lowering's steps and the temporaries they use


class Answers:
    """The lower stage's answers to the fuse stage (can_fuse / can_group), each accepted lowering kept so that the
    lower stage takes its kernels rather than lowering the same fusion again (lower once). Kept by block and the
    fusion asked about: the block's main-block kernels carry unqualified names, as the lower stage's do there."""

    def __init__(self, target: Target, kernels: Callable[[Kernel], bool] | None = None):
        load_all()
        self.target, self.kernels = target, kernels
        self._kept: dict[tuple, tuple[Block, Kept]] = {}

    def can_fuse(self, block: Block, index: int, chain: list[int], prologue: int | None) -> str | None:
        ctx = _fused_ctx(block, index, chain, prologue, self.target)
        return self._keep(("chain", id(block), index, tuple(chain), prologue), block, ctx, LOWERINGS[ctx.op.op](ctx))

    def can_group(self, block: Block, members: list[int]) -> str | None:
        ctx = _group_ctx(block, members, self.target)
        return self._keep(("group", id(block), tuple(members)), block, ctx, lower_group(ctx, members))

    def _keep(self, key: tuple, block: Block, ctx: LowerCtx, made: list[Made] | None) -> str | None:
        reason = _refusal(ctx, made, self.kernels)
        if reason is None and made is not None:
            self._kept[key] = (block, (made, ctx.temps))
        return reason

    def take(self, block: Block, index: int, chain: list[int], prologue: int | None) -> Kept | None:
        """The kernels can_fuse built for this fusion (None: not asked), handed out once."""
        return self._take(("chain", id(block), index, tuple(chain), prologue), block)

    def take_group(self, block: Block, members: list[int]) -> Kept | None:
        return self._take(("group", id(block), tuple(members)), block)

    def _take(self, key: tuple, block: Block) -> Kept | None:
        found = self._kept.pop(key, None)
        return found[1] if found is not None and found[0] is block else None


def _fused_ctx(block: Block, index: int, chain: list[int], prologue: int | None, target: Target) -> LowerCtx:
    ctx = LowerCtx(block.operators[index], index, block, target, {})
    ctx.epilogue = [(i, block.operators[i]) for i in chain]
    ctx.prologue = (prologue, block.operators[prologue]) if prologue is not None else None
    return ctx


def _group_ctx(block: Block, members: list[int], target: Target) -> LowerCtx:
    ctx = LowerCtx(block.operators[members[0]], members[0], block, target, {})
    ctx.epilogue = [(i, block.operators[i]) for i in members[1:]]
    return ctx


def can_fuse(
    block: Block,
    index: int,
    chain: list[int],
    prologue: int | None,
    target: Target,
    kernels: Callable[[Kernel], bool] | None = None,
) -> str | None:
    """Why the kernel of operator `index` of `block` cannot apply `chain` after it (and read through the operator
    `prologue` before it), or None when it can: the fuse stage asks before the lower stage builds anything, so the
    lower stage never declines what fusion chose. `kernels`: whether a kernel may be used (compile()'s option)."""
    load_all()
    return Answers(target, kernels).can_fuse(block, index, chain, prologue)


def can_group(
    block: Block, members: list[int], target: Target, kernels: Callable[[Kernel], bool] | None = None
) -> str | None:
    """Why no generated kernel does the element-wise group `members` of `block` (fuse.py), or None when one does."""
    return Answers(target, kernels).can_group(block, members)


def _refusal(ctx: LowerCtx, made: list | None, kernels: Callable[[Kernel], bool] | None) -> str | None:
    if made is None:
        return f"no kernel does {ctx.label} on {ctx.target.name} (its types, shapes or a device feature)"
    if kernels is not None and not all(kernels(k) for k in made if isinstance(k, Kernel)):
        return f"{ctx.label}: not among the usable kernels (without glslc: the shipped ones)"
    return None


def _accepted(ctx: LowerCtx, made: list[Made] | None) -> list[Made]:
    """A fused lowering's steps: the fuse stage asked can_fuse / can_group first, so it cannot decline here."""
    if made is None:
        raise TosaError("internal: a lowering declined the fusion its can_fuse accepted", op=ctx.op.op, index=ctx.index)
    return made


class Compilation:
    """The state of one lower() call: every tensor that gets memory (by program-wide name), which ones share
    memory (`root`), constants, variables and where each operator runs."""

    def __init__(
        self,
        graph: Graph,
        target: Target,
        partition: Partition,
        fusion: Fusion,
        answers: Answers | None = None,
    ):
        self.regions = {r.name: r.blocks[0] for r in graph.regions}
        self.target, self.partition, self.fusion = target, partition, fusion
        self.answers = answers
        self.tensors: dict[str, Tensor] = {}  # program-wide name -> tensor (named so)
        self.root: dict[str, str] = {}  # alias -> the tensor whose memory it shares
        self.offsets: dict[str, int] = {}  # a view -> where its bytes start in its root's memory
        self.constants: dict[str, np.ndarray] = {}
        self.temps: dict[str, Tensor] = {}
        self.placement: list[Placement] = []
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
        if target in self.offsets:  # an alias of a view is that view
            self.offsets[name] = self.offsets[target]

    def view(self, name: str, t: Tensor, target: str, offset: int) -> None:
        """`name` is part of the bytes of `target`, from `offset` on (a SLICE of one contiguous run, a CONCAT's
        input)."""
        self.declare(name, t)
        self.root[name] = self.root.get(target, target)
        self.offsets[name] = self.offsets.get(target, 0) + offset

    def _views(self, ctx: LowerCtx, offsets: list[int]) -> bool:
        """A SLICE or CONCAT done by views (Fusion.views): no kernel. False where memory sharing forbids it."""
        op = ctx.op
        if op.op == "SLICE":
            src = ctx.q(op.inputs[0])
            if self.tensors[self.root.get(src, src)].variable:
                return False
            self.view(ctx.q(op.outputs[0]), ctx.outputs[0], src, offsets[0])
            reason = "no work: a contiguous run of its input's memory"
        else:
            if any(ctx.q(n) in self.root or ctx.q(n) in self.offsets for n in op.inputs):
                return False  # an input sharing memory already (a view, an alias's root) cannot move
            out = ctx.q(op.outputs[0])
            self.declare(out, ctx.outputs[0])
            for n, offset in zip(op.inputs, offsets):
                self.view(ctx.q(n), ctx.tensor(n), out, offset)
            reason = "no work: its inputs' producers write into its output"
        self.placement.append(Placement(ctx.label, "alias", reason))
        return True

    def block(self, block: Block, region: str, prefix: str = "") -> list[Step]:
        """The steps of one block of `region`; a region's inputs must already be aliased (see control_flow.py)."""
        steps: list[Step] = []
        produced = {n for op in block.operators for n in op.outputs}
        read = {n for op in block.operators for n in op.inputs}
        for t in block.tensors.values():  # data a file gives without a CONST operator is a constant too
            if (
                t.data is not None
                and not t.variable
                and t.dtype != DType.SHAPE
                and t.name in read
                and t.name not in produced
                and t.name not in block.inputs
            ):
                name = prefix + t.name
                self.constants[name] = t.data
                self.declare(name, t)
        fused: dict[int, str] = {}  # operator index -> the label of the kernel that does it
        pending: dict[int, list[Step]] = {}  # a fused kernel waits for its chain's last operator's place
        deferred: dict[int, LowerCtx] = {}  # a prologue waits for the operator whose kernel does it
        for index, op in enumerate(block.operators):
            ctx = LowerCtx(op, index, block, self.target, {}, prefix, self)
            placed = self.partition.of(region, index)
            if index in fused:
                self.placement.append(Placement(ctx.label, "fused", f"done by the kernel of {fused[index]}"))
                steps.extend(pending.pop(index, []))
                continue
            offsets = self.fusion.view(region, index)
            if offsets is not None and placed.where == "vulkan" and self._views(ctx, offsets):
                continue
            group = self.fusion.group(region, index)
            if group and placed.where == "vulkan":
                ctx.epilogue = [(i, block.operators[i]) for i in group[1:]]
                kept = self.answers.take_group(block, group) if self.answers and not prefix else None
                kernels = kept[0] if kept is not None else _accepted(ctx, lower_group(ctx, group))
                for kernel in kernels:
                    for name in kernel.writes:
                        self.declare(name, block.tensors[name.removeprefix(prefix)])
                steps.extend(kernels)
                fused.update((i, ctx.label) for i in group[1:])
                self.placement.append(Placement(op.label(index, prefix), placed.where, placed.reason))
                continue
            if self.fusion.absorbed(region, index) is not None and placed.where == "vulkan":
                deferred[index] = ctx  # done by that operator's kernel
                continue
            chain = self.fusion.chain(region, index)
            first = self.fusion.prologues.get((region, index))
            if (chain or first is not None) and placed.where == "vulkan":
                ctx.epilogue = [(i, block.operators[i]) for i in chain]
                before = deferred.pop(first) if first is not None else None
                ctx.prologue = (first, block.operators[first]) if first is not None else None
                kept = self.answers.take(block, index, chain, first) if self.answers and not prefix else None
                if kept is not None:  # what can_fuse built (in the main block, whose names are unqualified)
                    lowered, ctx.temps = kept
                else:
                    lowered = _accepted(ctx, LOWERINGS[op.op](ctx))
                self.declare(ctx.q(ctx.result.name), ctx.result)
                if chain:  # (a strided CONCAT ends the chains of all its inputs: their kernels wait for it)
                    pending.setdefault(chain[-1], []).extend(lowered)
                else:
                    steps.extend(lowered)
                self.temps.update(ctx.temps)
                for i in chain:
                    fused[i] = f"{fused[i]}, {ctx.label}" if i in fused else ctx.label
                if before is not None:
                    self.placement.append(Placement(before.label, "fused", f"done by the kernel of {ctx.label}"))
                self.placement.append(Placement(op.label(index, prefix), placed.where, placed.reason))
                continue
            if op.op in ("CONST", "CONST_SHAPE"):
                t = block.tensors[op.outputs[0]]
                if t.dtype != DType.SHAPE and t.data is not None:
                    self.constants[ctx.q(t.name)] = t.data
                    self.declare(ctx.q(t.name), t)
                if op.attrs.get(FOLDED):  # a shape operator the passes evaluated (tosa_vk/stages/passes/shape.py)
                    label = f"{prefix}{op.attrs[FOLDED]} #{index} '{t.name}'"
                    value = [int(v) for v in np.asarray(t.data).reshape(-1)]
                    self.placement.append(
                        Placement(label, "constant", f"shape operator: evaluated at compile time, {value}")
                    )
                continue
            if placed.where == "alias":
                self.alias(ctx.q(op.outputs[0]), ctx.outputs[0], ctx.q(op.inputs[0]))
                self.placement.append(Placement(ctx.label, placed.where, placed.reason))
                continue
            steps.extend(self._plain(ctx, placed, region))
        return steps

    def _plain(self, ctx: LowerCtx, placed: Placement, region: str) -> list[Step]:
        """One operator's own kernels (or host step), unfused."""
        for t in ctx.outputs:
            self.declare(ctx.q(t.name), t)
        self.placement.append(Placement(ctx.label, placed.where, placed.reason))
        if placed.where == "host":
            return [host_step(ctx, self.tensors)]
        found = self.partition.lowered.pop((region, ctx.index), None) if not ctx.prefix else None
        if found is None:
            lowered = LOWERINGS[ctx.op.op](ctx)
            found = None if lowered is None else (lowered, ctx.temps)
        if found is None:  # the partition saw a kernel for this variant: the lowering must agree
            raise TosaError(
                "internal: the lowering declined an operator placed on Vulkan",
                op=ctx.op.op,
                index=ctx.index,
                region=ctx.prefix.removesuffix("::") or None,
            )
        self.temps.update(found[1])
        return list(found[0])


def host_step(ctx: LowerCtx, tensors: dict[str, Tensor]) -> Host:
    """A Host step running `ctx.op` (inputs in memory are read from the arena; the others are compile-time
    constants, e.g. shape values)."""
    op = ctx.op
    names = tuple(ctx.q(n) if ctx.q(n) in tensors else "" for n in op.inputs)
    constants = tuple(None if name else ctx.block.tensors[n].data for name, n in zip(names, op.inputs))
    return Host(
        ctx.label,
        op.op,
        dict(op.attrs),
        names,
        constants,
        tuple(t.dtype.name for t in ctx.inputs),
        tuple(t.dtype.name for t in ctx.outputs),
        tuple(t.shape for t in ctx.outputs),
        reads=tuple(n for n in names if n),
        writes=tuple(map(ctx.q, op.outputs)),
    )

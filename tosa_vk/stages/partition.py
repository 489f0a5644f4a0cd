"""The partition stage: every operator of every block placed on Vulkan or on the host, with the reason.

RESHAPE and IDENTITY are aliases (no work at all). An operator goes to Vulkan when a lowering (tosa_vk/stages/lower/)
has a kernel for its variant on the target: the partition asks the lowering, and keeps the kernels it got for the main
block so the lower stage does not redo them. Otherwise it goes to the host, where the reference implementation runs
on views of the device memory — unless the compile is strict, which makes that an error naming the operator.
`host_ops` moves operators to the host by rules (tosa_vk/stages/host_rules.py: an operator name, an output tensor name
or an NNAdapter rule "OP:in,...:out,..."); each placement it makes names its rule, and a rule that matches no operator
is an error. Control flow and variables always stay on Vulkan: their regions are partitioned operator by operator, and
their state never leaves the device.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import TosaError, TosaUnsupportedError
from ..ir.dtype import DType
from ..ir.graph import Block, Graph, Operator
from ..program import Placement, Step
from ..reference import host_kernels
from ..target import Target
from .host_rules import Rule, collect, unmatched
from .lower import ALIASING, LOWERINGS, load_all, try_lower
from .records import Partition

STRUCTURAL = {
    "COND_IF": "control flow: its regions are compiled into the program, their values stay on the device",
    "WHILE_LOOP": "control flow: its regions are compiled into the program, their values stay on the device",
    "VARIABLE": "variable: its value lives in device memory",
    "VARIABLE_WRITE": "variable: its value lives in device memory",
    "VARIABLE_READ": "variable: its value lives in device memory",
    "CONST": "constant: uploaded once at load",
    "CONST_SHAPE": "shape constant: known at compile time",
}


def partition(
    graph: Graph, target: Target, strict: bool = False, host_ops: str | Iterable[str | Rule] = ()
) -> Partition:
    """`host_ops`: rules (strings or host_rules.Rule records) that put operators on the host; every one must match."""
    load_all()
    rules = collect(host_ops)
    used: set[int] = set()
    result = Partition({})
    main = graph.regions[0].name
    for region in graph.regions:
        block = region.blocks[0]
        inner = "" if region.name == main else region.name  # how errors and labels name the region
        for index, op in enumerate(block.operators):
            matching = [i for i, r in enumerate(rules) if r.matches(op)]  # the first names the placement
            used.update(matching)
            placed = _place(op, index, block, inner, target, rules[matching[0]] if matching else None)
            if not isinstance(placed, Placement):  # a kernel: keep it for the lower stage (the main block's only)
                placed, found = placed
                if region.name == main:
                    result.lowered[(region.name, index)] = found
            elif placed.where == "host" and (strict or not host_kernels.available(op.op)):
                types = (
                    ", ".join(block.tensors[n].dtype.name for n in op.inputs)
                    + " -> "
                    + ", ".join(block.tensors[n].dtype.name for n in op.outputs)
                )
                what = "placed on the host" if matching else "no Vulkan kernel for this operator"
                why = "strict placement" if strict else "no host kernel" + ("" if matching else " either")
                raise TosaUnsupportedError(
                    f"{what} (types {types}): {placed.reason}; {why}",
                    op=op.op,
                    index=index,
                    output=op.outputs[0] if op.outputs else None,
                    region=inner or None,
                )
            result.placements[(region.name, index)] = placed
    for i, r in enumerate(rules):
        if i not in used:
            raise unmatched(r, graph)
    return result


def _place(
    op: Operator, index: int, block: Block, region: str, target: Target, forced: Rule | None
) -> Placement | tuple[Placement, tuple[list[Step], dict]]:
    label = op.label(index, f"{region}::" if region else "")
    if op.op in STRUCTURAL:
        if forced:
            raise TosaError(
                f"cannot be forced to the host ({forced.where}): {STRUCTURAL[op.op]}",
                op=op.op,
                index=index,
                output=op.outputs[0] if op.outputs else None,
                region=region or None,
            )
        return Placement(label, "constant" if op.op.startswith("CONST") else "vulkan", STRUCTURAL[op.op])
    if forced:  # an alias too: the caller asked for a copy on the host
        return Placement(label, "host", f"forced to the host by {forced.where}")
    if op.op in ALIASING and block.tensors[op.inputs[0]].dtype != DType.SHAPE:
        return Placement(label, "alias", "no work: shares its input's memory")
    if op.op not in LOWERINGS:
        return Placement(label, "host", f"tosa_vk has no Vulkan kernel for {op.op}")
    if not target.has("shaderInt64") and any(
        block.tensors[n].dtype == DType.INT64 for n in (*op.inputs, *op.outputs) if n in block.tensors
    ):
        return Placement(
            label, "host", f"its INT64 tensors (EXT-INT64) need the shaderInt64 feature, which {target.name} lacks"
        )
    found = try_lower(op, index, block, target)
    if found is None:
        return Placement(
            label,
            "host",
            f"no Vulkan kernel for this variant on {target.name} (its types, attributes or a device feature it needs)",
        )
    return Placement(label, "vulkan", "Vulkan kernel"), found

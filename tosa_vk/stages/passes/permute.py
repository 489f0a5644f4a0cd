"""Explicit permutes around operators whose shader ABI is NHWC (spec/arm-custom-operators-contract.md).

`insert_permutes` puts a TRANSPOSE NCHW -> NHWC before such an operator for each 4-D input the graph holds in NCHW,
and makes the operator write NHWC tensors that a TRANSPOSE NHWC -> NCHW turns back into the graph's NCHW outputs.
`merge_transposes` then removes TRANSPOSE pairs that undo each other (p followed by its inverse), as between two
adjacent NHWC operators, and makes other back-to-back pairs one TRANSPOSE. Permutes never hide inside a copy: they
are graph operators, visible in `tosa-vk info`.
`apply_custom_layouts` does both for the CUSTOM operators whose registered declaration says layout="NHWC".
"""

from __future__ import annotations

from collections.abc import Callable

from ... import custom
from ...ir.graph import Block, Graph, Operator, Tensor

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)


def fresh_name(block: Block, base: str) -> str:
    name, n = base, 0
    while name in block.tensors:
        n += 1
        name = f"{base}_{n}"
    return name


def _permuted(shape: tuple[int, ...], perms: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[p] for p in perms)


def insert_permutes(graph: Graph, layouts: dict[str, str], nhwc_abi: Callable[[Operator], bool]) -> int:
    """Rewrites the main block in place; `layouts` names the tensors the graph holds as NCHW ("NCHW"; others are
    NHWC, TOSA's convention). Returns the number of TRANSPOSE operators inserted."""
    block = graph.main
    out_ops: list[Operator] = []
    inserted = 0
    for op in block.operators:
        if not nhwc_abi(op):
            out_ops.append(op)
            continue
        for i, name in enumerate(op.inputs):
            t = block.tensors[name]
            if layouts.get(name) == "NCHW" and t.rank == 4:
                nhwc = block.add_tensor(
                    Tensor(fresh_name(block, f"{name}_nhwc"), _permuted(t.shape, NCHW_TO_NHWC), t.dtype)
                )
                out_ops.append(Operator("TRANSPOSE", [name], [nhwc.name], {"perms": NCHW_TO_NHWC}))
                op.inputs[i] = nhwc.name
                inserted += 1
        after = []
        for i, name in enumerate(op.outputs):
            t = block.tensors[name]
            if layouts.get(name) == "NCHW" and t.rank == 4:
                nhwc = block.add_tensor(
                    Tensor(fresh_name(block, f"{name}_nhwc"), _permuted(t.shape, NCHW_TO_NHWC), t.dtype)
                )
                op.outputs[i] = nhwc.name
                after.append(Operator("TRANSPOSE", [nhwc.name], [name], {"perms": NHWC_TO_NCHW}))
                inserted += 1
        out_ops.append(op)
        out_ops.extend(after)
    block.operators = out_ops
    return inserted


def _inverse(perms: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(perms)
    for i, p in enumerate(perms):
        inv[p] = i
    return tuple(inv)


def merge_transposes(graph: Graph) -> int:
    """Merges TRANSPOSE(p) -> TRANSPOSE(q) chains in the main block whose middle tensor nothing else reads: pairs
    that undo each other disappear (readers of the second's output read the first's input instead), other pairs
    become one TRANSPOSE of the composed permutation (one copy instead of two; attention's K^T after the head
    split). Returns the TRANSPOSEs removed."""
    block = graph.main
    removed = 0
    changed = True
    while changed:
        changed = False
        producer = {o: op for op in block.operators for o in op.outputs}
        readers: dict[str, int] = {}
        for op in block.operators:
            for n in op.inputs:
                readers[n] = readers.get(n, 0) + 1
        for second in block.operators:
            if second.op != "TRANSPOSE":
                continue
            first = producer.get(second.inputs[0])
            if first is None or first.op != "TRANSPOSE" or readers.get(first.outputs[0], 0) != 1:
                continue
            middle, source, result = first.outputs[0], first.inputs[0], second.outputs[0]
            if middle in block.outputs or block.tensors[middle].variable:
                continue
            p, q = tuple(first.attrs["perms"]), tuple(second.attrs["perms"])
            composed = tuple(int(p[i]) for i in q)  # result[.., j, ..] = source[.., composed[j], ..]
            if composed == tuple(range(len(composed))):
                if result in block.outputs:
                    continue  # graph outputs keep their names
                for op in block.operators:
                    op.inputs = [source if n == result else n for n in op.inputs]
                block.operators = [op for op in block.operators if op is not first and op is not second]
                del block.tensors[middle], block.tensors[result]
                removed += 2
            else:
                second.inputs[0] = source
                second.attrs["perms"] = list(composed)
                block.operators = [op for op in block.operators if op is not first]
                del block.tensors[middle]
                removed += 1
            changed = True
            break
    return removed


def custom_nhwc(op: Operator) -> bool:
    """A CUSTOM operator whose registered declaration has the NHWC shader-local layout (tosa_vk.custom_op)."""
    if op.op != "CUSTOM":
        return False
    decl = custom.lookup(op.attrs.get("domain_name") or "", op.attrs.get("operator_name") or "")
    return decl is not None and decl.layout == "NHWC"


def apply_custom_layouts(graph: Graph, layouts: dict[str, str] | str) -> tuple[int, int]:
    """The NHWC contract for registered custom ops: permutes around each NHWC-layout CUSTOM operator for the
    tensors `layouts` names NCHW ("NCHW" alone: every 4-D tensor of the main block), then elision of inverse
    pairs. Returns (TRANSPOSEs inserted, TRANSPOSEs removed)."""
    if isinstance(layouts, str):
        if layouts != "NCHW":
            raise ValueError(f"layouts must be a dict or 'NCHW', got {layouts!r}")
        layouts = {n: "NCHW" for n, t in graph.main.tensors.items() if t.rank == 4}
    return insert_permutes(graph, layouts, custom_nhwc), merge_transposes(graph)

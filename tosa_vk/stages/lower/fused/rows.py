"""Row groups (tosa_vk/stages/fuse.py) as one generated kernel, shaders/fused/rows.comp: element-wise operators and
REDUCE_SUM / REDUCE_MAX / REDUCE_MIN along the last axis (softmax, layer norm, their int8 forms), one row per
RG_LANES invocations. Each reduction is a pass over the row that recomputes the element-wise values it reads from
the group's inputs; its result is then a scalar of the row that later expressions read; a last pass stores the
values used outside the group.

Every value is what the operator's own kernel computes: element-wise steps are tosa_vk/stages/lower/fused/epilogue.py's
expressions (precise floats), reductions fold as reduce.comp does (fp32 sums in fp64 where the target has it,
rounded once; int32 sums wrap; max / min with nan_mode). With one lane per row (the register class: lavapipe) the
fold order is reduce.comp's, so results equal the unfused program's; with more lanes fp32 sums are added in another
order, as the subgroup family's are (the spec's REDUCE_SUM bound allows it).

Done here: operands of the row's shape or broadcast along size-1 dimensions (a row's scalar: last dimension 1);
anything else declines (None) and the operators keep their kernels."""

from __future__ import annotations

import math

from ....ir.dtype import DType
from ....ir.graph import NanPropagationMode
from ....program import Kernel
from ...fuse import GROUPED, REDUCTIONS, ROW_REDUCTIONS, data_inputs
from ..context import LowerCtx
from ..families.reduction_subgroup import workgroup
from ..types import glsl_store
from . import render
from .epilogue import COMPUTE, bind, expression
from .operands import broadcast_load, stored_outputs

REGISTER_WG = 64  # invocations per workgroup at most with one lane per row (rows walked as reduce.comp walks them)
REGISTER_MIN_WG = 8  # and at least (lavapipe's SIMD width)
_ELEMENTWISE = tuple(op for op in GROUPED if op != "SLICE")  # SLICE: element-wise groups only
GPU_ROWS_WG = 64  # a workgroup holds at least this many invocations on GPU classes (several short rows)
_NAN = "uintBitsToFloat(0x7fc00000u)"
_INF = "uintBitsToFloat(0x7f800000u)"


def row_shape(ctx: LowerCtx, members: list[int]) -> tuple[int, ...] | None:
    """The row shape of a group: the input shape of its reductions (all along the last axis, one shape)."""
    shapes = set()
    for i in members:
        op = ctx.block.operators[i]
        if op.op in REDUCTIONS:
            shape = tuple(ctx.block.tensors[op.inputs[0]].shape)
            if op.op not in ROW_REDUCTIONS or not shape or int(op.attrs.get("axis") or 0) != len(shape) - 1:
                return None
            shapes.add(shape)
    return shapes.pop() if len(shapes) == 1 else None


def _fold(op, dtype: DType, fp64: bool) -> tuple[str, str, str, str] | None:
    """(accumulator type, initial value, step function body on (a, b), the result from acc) of a reduction, as
    reduce.comp folds it (lower/reduction.py)."""
    if op.op == "REDUCE_SUM":
        if dtype == DType.INT32:
            return "int", "0", "a + b", "acc"
        if dtype == DType.FP32:
            return ("double", "0.0lf", "a + b", "float(acc)") if fp64 else ("float", "0.0", "a + b", "acc")
        return None
    fn = "max" if op.op == "REDUCE_MAX" else "min"
    if dtype == DType.FP32:
        if op.attrs.get("nan_mode") == NanPropagationMode.IGNORE:
            return "float", _NAN, f"{fn}_ignore(a, b)", "acc"
        return "float", f"(-{_INF})" if fn == "max" else _INF, f"{fn}_propagate(a, b)", "acc"
    if dtype in (DType.INT8, DType.INT16, DType.INT32):
        return "int", "(-2147483647 - 1)" if fn == "max" else "2147483647", f"{fn}(a, b)", "acc"
    return None


def plan(ctx: LowerCtx, rows: int, length: int, passes: int) -> tuple[int, int] | None:
    """(lanes per row, invocations per workgroup): one lane on the register class (lavapipe), a power of two up to
    the class's reduction workgroup elsewhere; None when a lane's loops would pass the target's loop budget."""
    if ctx.target.family("REDUCE") == "subgroup":
        lanes = min(1 << max(0, length - 1).bit_length(), workgroup(ctx.target))
        wg = max(lanes, min(GPU_ROWS_WG, ctx.target.max_workgroup_invocations))
    else:  # lavapipe runs a workgroup on one thread: enough workgroups for its threads, each SIMD-wide
        lanes, wg = 1, max(REGISTER_MIN_WG, min(REGISTER_WG, 1 << max(0, rows // 4).bit_length() >> 1))
    per_lane = -(-length // lanes)
    if passes * (per_lane + lanes.bit_length()) > ctx.target.loop_budget:
        return None
    return lanes, wg


def lower_rows(ctx: LowerCtx, members: list[int]) -> list[Kernel] | None:
    """The kernel of the row group `members` (ctx.op is its first operator)."""
    block = ctx.block
    shape = row_shape(ctx, members)
    if shape is None or shape[-1] < 2 or math.prod(shape) >= 1 << 31:
        return None
    length, rows = shape[-1], math.prod(shape[:-1])
    reduced = (*shape[:-1], 1)
    ops = [block.operators[i] for i in members]
    passes = 1 + sum(op.op in REDUCTIONS for op in ops)
    planned = plan(ctx, rows, length, passes)
    if planned is None:
        return None
    lanes, wg = planned
    last = len(shape) - 1  # a pass's loop names the last coordinate c<last> (element_index) and the channel c
    fp64 = ctx.target.has("shaderFloat64")
    bindings: dict[str, str] = {}
    decls: list[str] = []
    defines: dict[str, str] = {}
    # row-level code: coordinates of the leading dimensions (group.py's, from i = the row), scalar loads and values,
    # passes (their loops name the last coordinate too)
    top: list[str] = render.coordinates((*shape[:-1], 1), "row")
    lines: dict[str, tuple[str, list[str]]] = {}  # per-element values: name -> (declaration, what it reads)
    kind: dict[str, str] = {}  # a tensor's variable ("v3", "x1") and whether it is per element ("row") or not
    var: dict[str, str] = {}
    shared: set[str] = set()
    stored = stored_outputs(block, members)

    def operand(name: str) -> str | None:
        if name in var:
            return var[name]
        t, v = block.tensors[name], f"x{len(var)}"
        load = broadcast_load(ctx, bindings, decls, t, shape, v)
        if load is None:
            return None
        var[name] = v
        if t.shape[-1] == length:
            kind[v] = "row"
            lines[v] = (load, [])
        else:
            kind[v] = "scalar"
            top.append(load)
        return v

    for k, op in enumerate(ops):
        out = block.tensors[op.outputs[0]]
        if out.dtype not in COMPUTE or len(op.outputs) != 1:
            return None
        if op.op in REDUCTIONS:
            x = operand(op.inputs[0])
            fold = _fold(op, block.tensors[op.inputs[0]].dtype, fp64)
            if x is None or fold is None or kind[x] != "row" or tuple(out.shape) != reduced:
                return None
            acc_t, init, step, finish = fold
            decls.append(render.fold_step(f"rg_step{k}", acc_t, step))
            shared.add(acc_t)
            body = [lines[n][0] for n in _closure(lines, [x])]
            top.append(render.row_fold(acc_t, f"a{k}", init, length, lanes, last, body, f"rg_step{k}", x))
            top.append(render.row_combine(f"rg_{acc_t[0]}", f"a{k}", f"rg_step{k}"))
            value = render.convert(COMPUTE[out.dtype], finish.replace("acc", f"a{k}"))
            top.append(render.let(COMPUTE[out.dtype], f"v{k}", value))
            var[op.outputs[0]], kind[f"v{k}"] = f"v{k}", "scalar"
            continue
        if op.op not in _ELEMENTWISE:
            return None
        args = [operand(n) for n in data_inputs(op)]
        if any(a is None for a in args):
            return None
        expr = expression(ctx, op, [str(a) for a in args], k, bindings, decls, defines)
        if expr is None:
            return None
        decl = render.let(COMPUTE[out.dtype], f"v{k}", expr)
        var[op.outputs[0]] = f"v{k}"
        if tuple(out.shape) == tuple(shape):
            kind[f"v{k}"] = "row"
            lines[f"v{k}"] = (decl, [str(a) for a in args if kind[str(a)] == "row"])
        elif tuple(out.shape) == reduced and all(kind[str(a)] == "scalar" for a in args):
            kind[f"v{k}"] = "scalar"
            top.append(decl)
        else:
            return None
    row_out = [n for n in stored if kind[var[n]] == "row"]
    scalar_out = [n for n in stored if kind[var[n]] == "scalar"]
    if not stored or not any(op.op in REDUCTIONS for op in ops):
        return None
    outs = {n: bind(bindings, decls, f"O{len(bindings)}", block.tensors[n], "writeonly") for n in stored}
    if row_out:
        body = [lines[n][0] for n in _closure(lines, [var[n] for n in row_out])]
        at = f"row * {length}u + j"
        saves = [render.store(outs[n], at, glsl_store(block.tensors[n].dtype, var[n])) for n in row_out]
        top.append(render.row_stores(length, lanes, last, body, saves))
    for n in scalar_out:
        top.append(render.row_scalar_store(outs[n], glsl_store(block.tensors[n].dtype, var[n])))
    defines.update({"RG_ROWS": str(rows), "RG_LANES": str(lanes), "RG_WG": str(wg)})
    defines.update({f"RG_SHARED_{t.upper()}": "1" for t in shared})
    defines.update({"EP_DECLS": render.items(decls), "ROW_BODY": render.items(top)})
    groups = ctx.groups(-(-rows // (wg // lanes)))
    return [ctx.kernel("fused/rows", bindings, defines, groups=groups, writes=tuple(stored))]


def _closure(lines: dict[str, tuple[str, list[str]]], wanted: list[str]) -> list[str]:
    """The per-element values `wanted` reads, transitively, in the order they were made (dependencies first)."""
    need: set[str] = set()
    todo = [w for w in wanted if w in lines]
    while todo:
        n = todo.pop()
        if n not in need:
            need.add(n)
            todo.extend(d for d in lines[n][1] if d in lines)
    return [n for n in lines if n in need]

"""Static validation of a TOSA 1.0 graph against the specification.

`validate(graph)` raises the first `TosaError` found. It checks what needs no runtime tensor values (constants and
shape values are known and used):

1. structure: regions and blocks, tensors defined before use and written once, known operators, input / output
   counts and attributes per the operator catalogue (`ops.py`), control-flow regions and their signatures;
2. types: each operator's dtypes match a row of its Supported Data Types table (any profile or extension),
   acc_type, fixed-type operands, constants against their data;
3. shapes: declared outputs against `shapes.infer`, the static ERROR_IFs of each operator's pseudocode (zero
   points, CLAMP bounds, RESCALE flags, ...) and the LEVEL_CHECKs of level 8K;
4. the REQUIREs whose every operand value is used and known (constant RESCALE multipliers and shifts, shift
   amounts, INTDIV divisors, gather / scatter indices): the reference backend checks them on the values at run
   time, a Vulkan kernel cannot report them, so every backend refuses them here, at load, with the reference's
   text. (An int16 TABLE's slope REQUIRE holds only for the entries the input looks up: not decidable here.)

Errors name the operator, its index in its block, its first output and region, and the rule (spec text).
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import replace
from fractions import Fraction
from typing import Any, NoReturn, Unpack

import numpy as np

from ..errors import Site, TosaError, TosaValidationError
from . import ops as _ops
from .dtype import DType
from .graph import (
    Block,
    BlockSize,
    Graph,
    NanPropagationMode,
    Operator,
    Region,
    ResizeMode,
    RoundingMode,
    Tensor,
    version_text,
)
from .shape_ops import SHAPE_OPS
from .shapes import infer_detailed, shape_value

# Table 4 "Level maxima"
LEVELS: dict[str, dict[str, int]] = {
    "8K": dict(
        MAX_RANK=6,
        MAX_KERNEL=8192,
        MAX_STRIDE=8192,
        MAX_SCALE=256,
        MAX_LOG2_SIZE=31,
        MAX_NESTING=6,
        MAX_TENSOR_LIST_SIZE=64,
        MAX_SHAPE_LEN=16,  # TOSA 1.1
    ),
    "none": dict(
        MAX_RANK=32,
        MAX_KERNEL=2147483647,
        MAX_STRIDE=2147483647,
        MAX_SCALE=2048,
        MAX_LOG2_SIZE=63,
        MAX_NESTING=256,
        MAX_TENSOR_LIST_SIZE=256,
        MAX_SHAPE_LEN=64,  # TOSA 1.1
    ),
}

_ACC_TYPES = (DType.INT32, DType.INT48, DType.FP16, DType.FP32)  # acc_type_t
_ACC_TYPES_1_1 = (*_ACC_TYPES, DType.BF16)  # TOSA 1.1 adds BF16 (CONV2D's mixed-precision rows)
# Type rows newer than spec 1.0.1 that the conformance suite (format 1.0.2) already tests as valid.
_LATER_TYPES = {op: ({"index_t": DType.INT32, "in_out_t": DType.BOOL},) for op in ("GATHER", "SCATTER")}
_CONTROL_FLOW = {"COND_IF": ("then_graph", "else_graph"), "WHILE_LOOP": ("cond_graph", "body_graph")}
# Zero-point inputs: op -> ((input index, name, type variable it is typed by), ...)
_ZERO_POINTS = {
    "AVG_POOL2D": ((1, "input_zp", "in_out_t"), (2, "output_zp", "in_out_t")),
    "CONV2D": ((3, "input_zp", "in_t"), (4, "weight_zp", "weight_t")),
    "CONV3D": ((3, "input_zp", "in_t"), (4, "weight_zp", "weight_t")),
    "DEPTHWISE_CONV2D": ((3, "input_zp", "in_t"), (4, "weight_zp", "weight_t")),
    "TRANSPOSE_CONV2D": ((3, "input_zp", "in_t"), (4, "weight_zp", "weight_t")),
    "MATMUL": ((2, "A_zp", "A_t"), (3, "B_zp", "B_t")),
    "AVG_POOL2D_ADAPTIVE": ((1, "input_zp", "in_out_t"), (2, "output_zp", "in_out_t")),
    "MATMUL_T": ((2, "A_zp", "A_t"), (3, "B_zp", "B_t")),
    "NEGATE": ((1, "input1_zp", "in_out_t"), (2, "output_zp", "in_out_t")),
}


def validate(graph: Graph, file: str | None = None, level: str = "8K") -> None:
    """Raise the first TosaError that makes `graph` invalid per the TOSA spec of its version (at `level`): a
    TosaValidationError (the checks below raise TosaError; one place says which kind it is)."""
    try:
        _Validator(graph, file, LEVELS[level]).run()
    except TosaError as err:
        if isinstance(err, TosaValidationError):
            raise
        raise TosaValidationError(
            err.rule, op=err.op, index=err.index, output=err.output, file=err.file, region=err.region
        ) from None


class _Validator:
    def __init__(self, graph: Graph, file: str | None, level: dict[str, int]):
        self.graph = graph
        self.file = file
        self.L = level
        self.regions: dict[str, Region] = {}
        self.depth: dict[str, int] = {}  # region name -> tosa_nesting_depth its operators run at

    # --- driver -----------------------------------------------------------------------------------------------

    def run(self) -> None:
        self.structure()
        for region in self.graph.regions:
            if region.name not in self.depth:
                continue  # not reachable from the main graph: never executed
            for block in region.blocks:
                self.block(region, block)

    def fail(self, rule: str, **where: Unpack[Site]) -> NoReturn:
        raise TosaError(rule, file=self.file, **where)

    def structure(self) -> None:
        if not self.graph.regions:
            self.fail("the graph has no region (regions[0] must be the main graph)")
        for region in self.graph.regions:
            if region.name in self.regions:
                self.fail(f"region name '{region.name}' is used twice", region=region.name)
            self.regions[region.name] = region
            if not region.blocks:
                self.fail(f"region '{region.name}' has no block", region=region.name)
            for block in region.blocks:
                for kind, names in (("input", block.inputs), ("output", block.outputs)):
                    missing = [n for n in names if n not in block.tensors]
                    if missing:
                        self.fail(
                            f"block '{block.name}' {kind} '{missing[0]}' is not a tensor of the block",
                            region=region.name,
                        )
        main = self.graph.regions[0]
        for name in main.blocks[0].inputs + main.blocks[0].outputs:
            t = main.blocks[0].tensors.get(name)
            if t is not None and t.dtype == DType.SHAPE:
                self.fail(f"graph inputs and outputs may not be shape_t values: '{name}'", region=main.name)
        # Nesting depth of each region reachable from main (ERROR_IF(tosa_nesting_depth >= MAX_NESTING)).
        self.depth[main.name] = 0
        stack: list[tuple[str, tuple[str, ...]]] = [(main.name, (main.name,))]
        while stack:
            name, path = stack.pop()
            for block in self.regions[name].blocks:
                for i, op in enumerate(block.operators):
                    for attr in _CONTROL_FLOW.get(op.op, ()):
                        sub = op.attrs.get(attr)
                        where = Site(op=op.op, index=i, output=op.outputs[0] if op.outputs else None, region=name)
                        if not isinstance(sub, str) or sub not in self.regions:
                            self.fail(f"{attr} '{sub}' names no region of the graph", **where)
                        if sub in path:
                            self.fail(f"{attr} '{sub}' is recursive (regions {' -> '.join(path + (sub,))})", **where)
                        if len(path) - 1 >= self.L["MAX_NESTING"]:
                            self.fail(
                                f"ERROR_IF(tosa_nesting_depth >= MAX_NESTING): depth {len(path) - 1}, "
                                f"MAX_NESTING={self.L['MAX_NESTING']}",
                                **where,
                            )
                        if self.depth.get(sub, -1) < len(path):
                            self.depth[sub] = len(path)
                            stack.append((sub, path + (sub,)))

    # --- one block ---------------------------------------------------------------------------------------------

    def block(self, region: Region, block: Block) -> None:
        where = Site(region=region.name)  # (block inputs / outputs name tensors of the block: structure())
        if len(set(block.inputs)) != len(block.inputs):
            self.fail(f"block '{block.name}' lists an input twice: {block.inputs}", **where)
        for t in block.tensors.values():
            self.tensor(t, where)
        producers: dict[str, int] = {}
        for i, op in enumerate(block.operators):
            for o in op.outputs:
                variable = o in block.tensors and block.tensors[o].variable  # VARIABLE, then VARIABLE_WRITEs
                if o in producers and not variable:
                    self.fail(
                        f"tensor '{o}' is written twice (also by operator #{producers[o]})",
                        op=op.op,
                        index=i,
                        output=o,
                        region=region.name,
                    )
                if o in block.inputs:
                    self.fail(
                        f"tensor '{o}' is a block input and may not be written by an operator",
                        op=op.op,
                        index=i,
                        output=o,
                        region=region.name,
                    )
                producers[o] = i
        declared = {o for op in block.operators if op.op == "VARIABLE" for o in op.outputs}
        for n, t in block.tensors.items():
            if t.variable and n not in declared:  # a flag alone would turn a constant into state no run writes
                self.fail(
                    f"tensor '{n}' is flagged variable, but no VARIABLE operator of the block declares it", **where
                )
        # Shape values computed so far (TOSA 1.1 shape operators) are data of the tensors of this view only: the
        # caller's graph is never changed.
        view = Block(block.name, block.operators, dict(block.tensors), block.inputs, block.outputs)
        # Defined before use: block inputs, variables, constant data without a producer, earlier outputs.
        defined = set(block.inputs)
        defined |= {n for n, t in block.tensors.items() if n not in producers and (t.variable or t.data is not None)}
        for i, op in enumerate(block.operators):
            loc = Site(op=op.op, index=i, output=op.outputs[0] if op.outputs else None, **where)
            for n in op.inputs:
                if n not in block.tensors:
                    hint = (
                        ""
                        if region is self.graph.regions[0]
                        else ("; a control-flow graph reads only its own inputs, constants and earlier outputs")
                    )
                    self.fail(f"input '{n}' is not a tensor of block '{block.name}' (undefined name){hint}", **loc)
                if n not in defined:
                    later = f" (written later by operator #{producers[n]})" if n in producers else ""
                    self.fail(f"input '{n}' is used before it is defined{later}", **loc)
            for n in op.outputs:
                if n not in block.tensors:
                    self.fail(f"output '{n}' is not a tensor of block '{block.name}'", **loc)
            try:
                self.operator(op, view, region)
            except TosaError as err:
                raise err.located(file=self.file, **loc) from None
            defined.update(op.outputs)
        for n in block.outputs:
            if n not in defined:
                self.fail(f"block output '{n}' is never written", **where)
        for t in block.tensors.values():
            self.rank(t)

    def rank(self, t: Tensor) -> None:
        if not t.unranked and t.rank > self.L["MAX_RANK"]:
            raise TosaError(
                f"LEVEL_CHECK(rank(shape) <= MAX_RANK): tensor '{t.name}' has rank {t.rank}, "
                f"MAX_RANK={self.L['MAX_RANK']}",
                file=self.file,
            )

    def tensor(self, t: Tensor, where: Site) -> None:
        if t.unranked:
            return
        if t.dtype != DType.SHAPE and any(d < 1 for d in t.shape):
            self.fail(f"tensor '{t.name}' has shape {list(t.shape)}: every dimension must be >= 1", **where)
        if t.dtype == DType.UNKNOWN:
            self.fail(f"tensor '{t.name}' has no element type (UNKNOWN)", **where)
        for dtype in (t.dtype, t.scale_dtype):
            if dtype is not None and dtype.since > self.graph.tosa_version:
                self.fail(
                    f"tensor '{t.name}' is {dtype.name}, a TOSA {version_text(dtype.since)} type; the graph "
                    f"is TOSA {version_text(self.graph.tosa_version)}",
                    **where,
                )
        if t.block_scaled and (not t.shape or t.block_size < 1 or t.shape[-1] % t.block_size):
            # every operator's ERROR_IF(is_block_scale<t>() && (rank(shape) == 0 || shape[rank(shape)-1] %
            # get_innermost_block_size<t>() != 0)) (CAST, CONCAT, RESHAPE, RESIZE ...), once for every tensor
            self.fail(
                f"ERROR_IF(is_block_scale && shape[rank(shape)-1] % block_size != 0): tensor '{t.name}' of shape "
                f"{list(t.shape)} is block-scaled in blocks of {t.block_size}",
                **where,
            )
        size = int(np.prod(t.shape, dtype=object)) * max(1, t.dtype.bits // 8)
        if size > (1 << self.L["MAX_LOG2_SIZE"]) - 1:
            self.fail(
                f"tensor '{t.name}' of {list(t.shape)} {t.dtype} has {size} bytes, more than tensor_size_t "
                f"holds (1 << MAX_LOG2_SIZE) - 1",
                **where,
            )
        if t.data is not None:
            data = np.asarray(t.data)
            if data.size != t.size:
                self.fail(f"constant '{t.name}' has {data.size} values but shape {list(t.shape)}", **where)

    # --- one operator ------------------------------------------------------------------------------------------

    def operator(self, op: Operator, block: Block, region: Region) -> None:
        spec = _ops.OPS.get(op.op)
        if spec is None:
            raise TosaError(f"unknown operator {op.op!r}")
        version = self.graph.tosa_version
        if spec.since > version:
            raise TosaError(
                f"{op.op} is a TOSA {version_text(spec.since)} operator; the graph is TOSA {version_text(version)}"
            )
        ins = [block.tensors[n] for n in op.inputs]
        outs = [block.tensors[n] for n in op.outputs]
        for t in ins + outs:
            self.rank(t)
        self.arity(spec, op, ins, outs)
        self.attributes(spec, op)
        self.operand_ranks(spec, op, ins, outs)
        bound = self.types(spec, op, block, ins, outs)
        check = getattr(self, "op_" + op.op.lower(), None)
        if check is not None:
            check(op, ins, outs, bound)
        if op.op in _CONSTANT_REQUIRES and all(math.prod(t.shape) for t in outs):  # (no output: nothing computed)
            getattr(self, _CONSTANT_REQUIRES[op.op])(op, ins, outs, bound)
        for family, names in _FAMILY_CHECKS.items():
            if op.op in names:
                getattr(self, family)(op, ins, outs, bound)
        self.outputs(op, block, outs)

    def arity(self, spec: _ops.OpSpec, op: Operator, ins: list[Tensor], outs: list[Tensor]) -> None:
        if spec.chapter == "variable":
            return  # the .tosa encoding of variables may name the variable tensor as an extra operand
        for kind, have, operands in (("inputs", ins, spec.inputs), ("outputs", outs, spec.outputs)):
            fixed = [o.name for o in operands if not o.is_list]
            lists = [o.name for o in operands if o.is_list]
            if lists:
                if len(have) < len(fixed):
                    raise TosaError(
                        f"wrong number of {kind}: {op.op} takes {', '.join(fixed)} and a list "
                        f"{lists[0]}, got {len(have)}"
                    )
                n = len(have) - len(fixed)
                if n > self.L["MAX_TENSOR_LIST_SIZE"]:
                    raise TosaError(
                        f"LEVEL_CHECK(tensor_list_shape({lists[0]}) <= MAX_TENSOR_LIST_SIZE): "
                        f"{n} tensors, MAX_TENSOR_LIST_SIZE={self.L['MAX_TENSOR_LIST_SIZE']}"
                    )
            elif len(have) != len(fixed):
                raise TosaError(
                    f"wrong number of {kind}: {op.op} takes {len(fixed)} ({', '.join(fixed) or 'none'}),"
                    f" got {len(have)}"
                )

    def attributes(self, spec: _ops.OpSpec, op: Operator) -> None:
        if spec.chapter == "variable":
            return  # VARIABLE attributes live on the variable tensor in the .tosa encoding
        for o in spec.attributes:
            if o.name in ("values",):  # CONST / CONST_SHAPE values are the output tensor's data
                continue
            value = op.attrs.get(o.name)
            if value is None:
                if o.optional or o.type == "nan_propagation_mode_t":  # nan_mode defaults to PROPAGATE
                    continue
                raise TosaError(f"missing attribute '{o.name}' ({o.type})")
            ok = True
            if o.type == "T<i32_t>" or (o.tensor and o.type == "i32_t"):
                ok = isinstance(value, (tuple, list, np.ndarray)) and all(_is_int(v) for v in value)
                m = re.fullmatch(r"\[(\d+)\]", o.shape)
                if ok and m and len(value) != int(m.group(1)):
                    raise TosaError(f"attribute '{o.name}' must have {m.group(1)} values {o.shape}, got {list(value)}")
            elif o.type == "i32_t":
                ok = _is_int(value)
            elif o.type == "bool_t" and not o.tensor:
                ok = isinstance(value, (bool, np.bool_))
            elif o.type == "acc_type_t":
                allowed = _ACC_TYPES_1_1 if self.graph.tosa_version >= (1, 1) else _ACC_TYPES
                ok = _dtype(value) in allowed
                if not ok:
                    names = ", ".join(t.name for t in allowed)
                    raise TosaError(f"attribute acc_type must be one of {names}, got {value!r}")
            elif o.type == "nan_propagation_mode_t":
                ok = _enum(NanPropagationMode, value) is not None
            elif o.type == "resize_mode_t":
                ok = _enum(ResizeMode, value) in (ResizeMode.NEAREST, ResizeMode.BILINEAR)
            elif o.type == "rounding_mode_t":
                ok = _enum(RoundingMode, value) in (
                    RoundingMode.SINGLE_ROUND,
                    RoundingMode.INEXACT_ROUND,
                    RoundingMode.DOUBLE_ROUND,
                )
            elif o.type == "block_size_t":
                ok = _enum(BlockSize, value) in (BlockSize.BLOCK_SIZE_1, BlockSize.BLOCK_SIZE_32)
            elif o.type == "tosa_graph_t":
                ok = isinstance(value, str)
            if not ok:
                raise TosaError(f"attribute '{o.name}' has an invalid value {value!r} (must be {o.type})")

    def operand_ranks(self, spec: _ops.OpSpec, op: Operator, ins: list[Tensor], outs: list[Tensor]) -> None:
        """Rank column of the argument table (fixed ranks are argument requirements; MAX_RANK a LEVEL_CHECK)."""
        for operands, tensors in ((spec.inputs, ins), (spec.outputs, outs)):
            for o, _var, t in _ops.typed_operands(operands, tensors):
                if t.unranked or o.type in ("tensor_list_t",):
                    continue
                if o.type == "shape_t":
                    if t.dtype != DType.SHAPE:
                        raise TosaError(
                            f"{o.name} must be a shape_t value (a CONST_SHAPE output), '{t.name}' is a {t.dtype} tensor"
                        )
                    if shape_value(t) is None and operands is spec.inputs:  # (outputs: computed by outputs())
                        raise TosaError(
                            f"{o.name} '{t.name}': shape_t values must be resolvable to constants at "
                            f"backend compile time (a CONST_SHAPE output)"
                        )
                    continue
                lo, hi = _rank_range(o.rank, self.L["MAX_RANK"])
                if lo is None:
                    continue
                if t.rank < lo or (t.rank > hi and lo == hi):
                    want = f"rank {lo}" if lo == hi else f"rank {o.rank}"
                    shape = f" {o.shape}" if o.shape.startswith("[") else ""
                    raise TosaError(f"{o.name} must have {want}{shape}, '{t.name}' has shape {list(t.shape)}")
                if t.rank > hi:
                    raise TosaError(
                        f"LEVEL_CHECK(rank({o.shape}) <= MAX_RANK): {o.name} '{t.name}' has rank {t.rank}, limit {hi}"
                    )
                if o.shape == "[1]" and t.shape != (1,):
                    raise TosaError(f"{o.name} must have shape [1], '{t.name}' has {list(t.shape)}")

    def types(
        self, spec: _ops.OpSpec, op: Operator, block: Block, ins: list[Tensor], outs: list[Tensor]
    ) -> dict[str, _ops.ElementType]:
        """Bind type variables from the tensors and find a Supported Data Types row."""
        if not spec.types or (
            spec.chapter == "variable" and (len(ins), len(outs)) != (len(spec.inputs), len(spec.outputs))
        ):
            return {}
        bound: dict[str, _ops.ElementType] = {}
        seen: list[str] = []
        for operands, tensors in ((spec.inputs, ins), (spec.outputs, outs)):
            for o, var, t in _ops.typed_operands(operands, tensors):
                if var == "tensor_list_t":
                    continue
                dtype = _ops.tensor_type(t)  # BlockScaled for a block-scaled tensor: never a plain type's match
                seen.append(f"{o.name}={dtype}")
                fixed = _ops.SPEC_TYPES.get(var)
                if fixed is not None:
                    if dtype != fixed:
                        raise TosaError(f"{o.name} must be {var} ({fixed}), '{t.name}' is {dtype}")
                    continue
                if o.type == "mul_t":  # RESCALE: mul_t = scale32 ? i32_t : i16_t
                    want = DType.INT32 if op.attrs.get("scale32") else DType.INT16
                    if t.dtype != want:
                        raise TosaError(
                            f"multiplier must be {want} when scale32={bool(op.attrs.get('scale32'))}, "
                            f"'{t.name}' is {t.dtype}"
                        )
                    continue
                if bound.setdefault(var, dtype) != dtype:
                    raise TosaError(
                        f"ERROR_IF(operator data types do not meet requirement of operator Supported Data"
                        f" Types): {o.name} is {dtype} but another {var} operand is {bound[var]}"
                        f" ({', '.join(seen)})"
                    )
        _ops.unscaled(spec, bound)
        if op.op == "CONST" and outs:
            bound["out_t"] = _ops.tensor_type(outs[0])
        if "acc_t" in spec.type_vars:
            acc = _dtype(op.attrs.get("acc_type"))
            if acc is not None:
                bound["acc_t"] = acc
                seen.append(f"acc_type={acc}")
        version = self.graph.tosa_version
        supported = bool(_ops.matching_types(op.op, bound, version)) or any(
            all(r.get(k, v) == v for k, v in bound.items()) for r in _LATER_TYPES.get(op.op, ())
        )
        if not supported:
            allowed = "; ".join(
                dict.fromkeys(
                    ", ".join(f"{k}={v}" for k, v in r.types.items() if k in bound)
                    for r in spec.types
                    if r.since <= version
                )
            )
            later = _ops.matching_types(op.op, bound)
            if later:  # a row of a later TOSA version than the graph's
                allowed += f" (TOSA {version_text(later[0].since)} adds {later[0].mode})"
            rule = (
                "ERROR_IF(acc_type does not match acc_t in Supported Data Types)"
                if "acc_t" in bound
                and _ops.matching_types(op.op, {k: v for k, v in bound.items() if k != "acc_t"}, version)
                else "ERROR_IF(operator data types do not meet requirement of operator Supported Data Types)"
            )
            raise TosaError(f"{rule}: {', '.join(seen)}; supported: {allowed}")
        return bound

    def outputs(self, op: Operator, block: Block, outs: list[Tensor]) -> None:
        """Declared output shapes / dtypes against the inferred ones."""
        inferred = infer_detailed(op, block, self.graph)
        if op.op in ("CUSTOM", "VARIABLE", "VARIABLE_WRITE", "VARIABLE_READ"):
            return
        if len(inferred) != len(outs):
            raise TosaError(f"{op.op} produces {len(inferred)} outputs, {len(outs)} are declared")
        for inf, t in zip(inferred, outs):
            if inf.dtype is not None and t.dtype != inf.dtype:
                raise TosaError(
                    f"{_out_rule(op, inf.rule, 'dtype')}: output '{t.name}' is declared {t.dtype}, computed {inf.dtype}"
                )
            if inf.shape is None or t.unranked:
                continue
            if len(inf.shape) != t.rank:
                raise TosaError(
                    f"{_out_rule(op, inf.rule, 'rank')}: output '{t.name}' is declared "
                    f"{list(t.shape)}, computed {list(inf.shape)}"
                )
            for d, (have, want) in enumerate(zip(t.shape, inf.shape)):
                if have != want:
                    rule = inf.dim_rules.get(d, inf.rule)
                    name = inf.dims[d] if inf.dims else f"shape[{d}]"
                    more = "" if inf.dims else f" (declared {list(t.shape)}, computed {list(inf.shape)})"
                    raise TosaError(f"{rule}: declared {name}={have}, computed {want}{more}")
            if inf.value is not None:
                self.shape_value(block, t, inf.value)

    def shape_value(self, block: Block, t: Tensor, value: list[int]) -> None:
        """A shape operator's output value becomes the data of its tensor in the validator's view of the block."""
        if t.data is None:
            block.tensors[t.name] = replace(t, data=np.asarray(value, dtype=np.int64))
        elif shape_value(t) != value:
            raise TosaError(f"output '{t.name}' holds the shape value {shape_value(t)}, the operator computes {value}")

    # --- operator families: static ERROR_IFs and LEVEL_CHECKs ---------------------------------------------------

    def zero_points(self, op: Operator, ins: list[Tensor], outs: list[Tensor], bound: dict[str, DType]) -> None:
        for i, name, var in _ZERO_POINTS[op.op]:
            t = ins[i]
            if bound.get(var) == DType.INT8 or t.data is None:
                continue
            value = np.asarray(t.data).reshape(-1)
            if value.size and value[0] != 0:
                rule = f"ERROR_IF(!is_same<{var},i8_t>() && {name} != 0)"
                raise TosaError(
                    f"{rule}: {name}={value[0]} for {bound.get(var)}; zero points must be 0 for non-int8 types"
                )

    def pool_levels(self, op: Operator, ins, outs, bound) -> None:
        self.level_le(op.attrs["kernel"], "MAX_KERNEL", ("kernel_y", "kernel_x"))
        self.level_le(op.attrs["stride"], "MAX_STRIDE", ("stride_y", "stride_x"))
        self.level_le(op.attrs["pad"], "MAX_KERNEL", ("pad_top", "pad_bottom", "pad_left", "pad_right"))

    def adaptive_pool_levels(self, op: Operator, ins, outs, bound) -> None:
        """pool_levels on the kernel, stride and pad inputs (shape_t values, known: operand_ranks checked)."""
        first = 3 if op.op == "AVG_POOL2D_ADAPTIVE" else 1
        kernel, stride, pad = (shape_value(ins[first + i]) or [] for i in range(3))
        self.level_le(kernel, "MAX_KERNEL", ("kernel_y", "kernel_x"))
        self.level_le(stride, "MAX_STRIDE", ("stride_y", "stride_x"))
        self.level_le(pad, "MAX_KERNEL", ("pad_top", "pad_bottom", "pad_left", "pad_right"))

    def conv_levels(self, op: Operator, ins, outs, bound) -> None:
        w = ins[1].shape
        if op.op == "CONV3D":
            ks, axes = w[1:4], "dyx"
            pads: tuple[str, ...] = ("pad_d0", "pad_d1", "pad_top", "pad_bottom", "pad_left", "pad_right")
        else:
            ks, axes = (w[0:2] if op.op == "DEPTHWISE_CONV2D" else w[1:3]), "yx"
            pads = ("pad_top", "pad_bottom", "pad_left", "pad_right")
        kn = {"d": "KD", "y": "KH", "x": "KW"}
        if op.op == "TRANSPOSE_CONV2D":
            self.level_le(ks, "MAX_KERNEL", ("KH", "KW"))
            self.level_le(
                op.attrs["out_pad"], "MAX_KERNEL", ("out_pad_top", "out_pad_bottom", "out_pad_left", "out_pad_right")
            )
        else:
            dil = op.attrs["dilation"]
            self.level_le(
                [d * k for d, k in zip(dil, ks)], "MAX_KERNEL", tuple(f"dilation_{a} * {kn[a]}" for a in axes)
            )
            self.level_le(op.attrs["pad"], "MAX_KERNEL", pads)
        self.level_le(op.attrs["stride"], "MAX_STRIDE", tuple(f"stride_{a}" for a in axes))

    def fft_levels(self, op: Operator, ins, outs, bound) -> None:
        self.level_le(ins[0].shape[1:3], "MAX_KERNEL", ("H", "W"))

    def level_le(self, values, limit: str, names: tuple[str, ...]) -> None:
        for v, n in zip(values, names):
            if int(v) > self.L[limit]:
                raise TosaError(f"LEVEL_CHECK({n} <= {limit}): {n}={int(v)}, {limit}={self.L[limit]}")

    def op_clamp(self, op: Operator, ins, outs, bound) -> None:
        lo, hi = op.attrs.get("min_val"), op.attrs.get("max_val")
        lo, hi = _scalar(lo), _scalar(hi)
        if ins[0].dtype.is_float and (np.isnan(lo) or np.isnan(hi)):
            raise TosaError(f"ERROR_IF(isNaN(min_val) || isNaN(max_val)): min_val={lo}, max_val={hi}")
        if hi < lo:
            raise TosaError(f"ERROR_IF(max_val < min_val): min_val={lo}, max_val={hi}")
        if ins[0].dtype.is_int:
            lo_t, hi_t = ins[0].dtype.int_range
            if not (lo_t <= lo <= hi_t and lo_t <= hi <= hi_t):
                raise TosaError(f"min_val / max_val must be values of {ins[0].dtype}: min_val={lo}, max_val={hi}")

    def op_rescale(self, op: Operator, ins, outs, bound) -> None:
        a = op.attrs
        in_t, out_t = ins[0].dtype, outs[0].dtype
        scale32, per_channel = bool(a["scale32"]), bool(a["per_channel"])
        iu, ou = bool(a["input_unsigned"]), bool(a["output_unsigned"])
        mode = _enum(RoundingMode, a["rounding_mode"])
        izp, ozp = _first(ins[3]), _first(ins[4])
        I8, I16, I32, I48 = DType.INT8, DType.INT16, DType.INT32, DType.INT48
        checks = [
            (
                in_t != I8 and (in_t != I16 or not iu) and izp not in (None, 0),
                "ERROR_IF(!is_same<in_t,i8_t>() && (!is_same<in_t,i16_t>() || input_unsigned == false) && "
                "input_zp != 0)",
                f"input_zp={izp}",
            ),
            (
                out_t != I8 and (out_t != I16 or not ou) and ozp not in (None, 0),
                "ERROR_IF(!is_same<out_t,i8_t>() && (!is_same<out_t,i16_t>() || output_unsigned == false) && "
                "output_zp != 0)",
                f"output_zp={ozp}",
            ),
            (
                in_t == I16 and iu and izp not in (None, 0, 32768) and izp != -32768,
                "ERROR_IF(is_same<in_t,i16_t>() && input_unsigned == true && input_zp != 0 && input_zp != 32768)",
                f"input_zp={izp}",
            ),
            (
                out_t == I16 and ou and ozp not in (None, 0, 32768) and ozp != -32768,
                "ERROR_IF(is_same<out_t,i16_t>() && output_unsigned == true && output_zp != 0 && output_zp != 32768)",
                f"output_zp={ozp}",
            ),
            (scale32 and in_t == I48, "ERROR_IF(scale32 && is_same<in_t,i48_t>())", ""),
            (
                not scale32 and mode == RoundingMode.DOUBLE_ROUND,
                "ERROR_IF(!scale32 && (rounding_mode == DOUBLE_ROUND))",
                "",
            ),
            (iu and ou, "ERROR_IF(input_unsigned && output_unsigned)", ""),
            (out_t == I32 and iu, "ERROR_IF(is_same<out_t,i32_t>() && input_unsigned)", ""),
            (in_t == I32 and ou, "ERROR_IF(is_same<in_t,i32_t>() && output_unsigned)", ""),
            (in_t == I48 and ou, "ERROR_IF(is_same<in_t,i48_t>() && output_unsigned)", ""),
            (in_t == I48 and iu, "ERROR_IF(is_same<in_t, i48_t> && input_unsigned)", ""),
            (in_t == I32 and iu, "ERROR_IF(is_same<in_t, i32_t> && input_unsigned)", ""),
            (out_t == I32 and ou, "ERROR_IF(is_same<out_t, i32_t> && output_unsigned)", ""),
            (per_channel and ins[0].rank < 1, "ERROR_IF(per_channel && rank(input) < 1)", ""),
        ]
        for bad, rule, detail in checks:
            if bad:
                raise TosaError(rule + (f": {detail}" if detail else ""))
        nc = ins[0].shape[-1] if per_channel and ins[0].rank else 1
        for i, name in ((1, "multiplier"), (2, "shift")):
            if ins[i].shape != (nc,):
                raise TosaError(
                    f"{name} must have shape [NC] with NC={nc} (per_channel={per_channel}), "
                    f"'{ins[i].name}' has {list(ins[i].shape)}"
                )

    def op_table(self, op: Operator, ins, outs, bound) -> None:
        size = 513 if ins[0].dtype == DType.INT16 else 256
        if ins[1].shape != (size,):
            raise TosaError(
                f"table must have shape [TABLE_SIZE] = [{size}] for {ins[0].dtype} input, "
                f"'{ins[1].name}' has {list(ins[1].shape)}"
            )

    def rescale_scales(self, op: Operator, ins, outs, bound) -> None:
        """apply_scale_32 / apply_scale_16 (their REQUIRE on the value's range depends on the input's values)."""
        _require(_values(ins[1]), 0, None, "multiplier >= 0")
        _require(_values(ins[2]), 2, 62, "2 <= shift && shift <= 62")

    def shift_amount(self, op: Operator, ins, outs, bound) -> None:
        bits = ins[0].dtype.bits
        _require(_values(ins[1]), 0, bits - 1, f"0 <= value2 && value2 <= {bits - 1}")

    def nonzero_divisor(self, op: Operator, ins, outs, bound) -> None:
        divisor = _values(ins[1])
        if divisor is not None and np.any(divisor == 0):
            raise TosaError("REQUIRE(value2 != 0) does not hold: 0 in a constant operand")

    def gather_indices(self, op: Operator, ins, outs, bound) -> None:
        if op.op in ("ROW_GATHER", "ROW_GATHER_BLOCK_SCALED"):
            rows = _values(ins[-1])
            if rows is None or rows.size != 1 or ins[0].rank != 3:
                return
            k = ins[0].shape[1]
            _require(_values(ins[-2]), 0, k - int(rows.reshape(-1)[0]), "0 <= k && (k+row_count) <= K")
            return
        indices = _values(ins[1])
        if ins[0].rank != 3 or indices is None:
            return
        _require(indices, 0, ins[0].shape[1] - 1, "0 <= k && k < K")
        if op.op == "SCATTER" and ins[0].shape[2] and indices.ndim == 2:
            ordered = np.sort(indices, axis=1)
            if np.any(ordered[:, 1:] == ordered[:, :-1]):
                raise TosaError("REQUIRE(output_modified[n,k,c] == false) does not hold: an index repeats in a batch")

    def op_mul(self, op: Operator, ins, outs, bound) -> None:
        shift = _first(ins[2])
        if shift is not None and ins[0].dtype != DType.INT32 and shift != 0:
            raise TosaError(f"REQUIRE(is_same<in_t,int32_t>() || shift == 0): shift={shift} for {ins[0].dtype}")
        if shift is not None and not 0 <= shift <= 63:
            raise TosaError(f"REQUIRE(0 <= shift && shift <= 63): shift={shift}")

    def op_reshape(self, op: Operator, ins, outs, bound) -> None:
        vals = shape_value(ins[1])
        if vals is not None and any(v < 1 for v in vals):  # shapes.infer resolves a -1 for builders; 1.0 has none
            raise TosaError(
                f"shape values must be >= 1 (tensor_size: REQUIRE(1 <= shape[i]); TOSA 1.0 has no -1 "
                f"placeholder): shape={vals}"
            )

    def op_resize(self, op: Operator, ins, outs, bound) -> None:
        scale = shape_value(ins[1])
        if scale is not None and len(scale) == 4 and min(scale) > 0:
            for (n, d), names in (
                ((scale[0], scale[1]), "scale_y_n/scale_y_d"),
                ((scale[2], scale[3]), "scale_x_n/scale_x_d"),
            ):
                if Fraction(n, d) > self.L["MAX_SCALE"]:
                    raise TosaError(f"LEVEL_CHECK({names} <= MAX_SCALE): {n}/{d}, MAX_SCALE={self.L['MAX_SCALE']}")

    def op_cond_if(self, op: Operator, ins, outs, bound) -> None:
        cond = ins[0]
        if cond.dtype != DType.BOOL:
            raise TosaError(f"condition must be T<bool_t>, '{cond.name}' is {cond.dtype}")
        if cond.size != 1:
            raise TosaError(f"ERROR_IF(tensor_size(shape) != 1): condition '{cond.name}' has shape {list(cond.shape)}")
        for attr in ("then_graph", "else_graph"):
            sub = self.regions[op.attrs[attr]].blocks[0]
            _same_list(
                ins[1:],
                sub,
                sub.inputs,
                f"ERROR_IF(tensor_list_shape(input_list) != tosa_input_shape({attr}))",
                "input_list",
                attr,
            )
            _same_list(
                outs,
                sub,
                sub.outputs,
                f"ERROR_IF(tensor_list_shape(output_list) != tosa_output_shape({attr}))",
                "output_list",
                attr,
            )

    def op_while_loop(self, op: Operator, ins, outs, bound) -> None:
        cond = self.regions[op.attrs["cond_graph"]].blocks[0]
        body = self.regions[op.attrs["body_graph"]].blocks[0]
        if len(ins) != len(outs) or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(ins, outs)):
            raise TosaError(
                "ERROR_IF(tensor_list_shape(input_list) != tensor_list_shape(output_list)): "
                f"inputs {_sig(ins)}, outputs {_sig(outs)}"
            )
        _same_list(
            ins,
            cond,
            cond.inputs,
            "ERROR_IF(tensor_list_shape(input_list) != tosa_input_shape(cond_graph))",
            "input_list",
            "cond_graph",
        )
        _same_list(
            ins,
            body,
            body.inputs,
            "ERROR_IF(tensor_list_shape(input_list) != tosa_input_shape(body_graph))",
            "input_list",
            "body_graph",
        )
        _same_list(
            ins,
            body,
            body.outputs,
            "ERROR_IF(tensor_list_shape(input_list) != tosa_output_shape(body_graph))",
            "input_list",
            "body_graph outputs",
        )
        couts = [cond.tensors[n] for n in cond.outputs]
        if len(couts) != 1 or couts[0].size != 1:
            raise TosaError(
                f"ERROR_IF(tensor_size(tosa_output_shape(cond_graph)) != 1): cond_graph outputs {_sig(couts)}"
            )
        if couts[0].dtype != DType.BOOL:
            raise TosaError(f"ERROR_IF(tosa_output_type(cond_graph) != bool_t): cond_graph output is {couts[0].dtype}")

    def op_const(self, op: Operator, ins, outs, bound) -> None:
        t = outs[0]
        if t.data is None:
            raise TosaError(f"CONST output '{t.name}' has no data")
        data = np.asarray(t.data)
        if data.size != t.size or (data.shape != t.shape and data.ndim != 1 and data.ndim != 0):
            raise TosaError(f"CONST values of shape {list(data.shape)} do not match the output shape {list(t.shape)}")
        if t.dtype not in (DType.SHAPE,) and data.dtype != t.dtype.numpy:
            raise TosaError(
                f"CONST values are stored as {data.dtype}, output '{t.name}' is {t.dtype} (storage {t.dtype.numpy})"
            )

    def op_const_shape(self, op: Operator, ins, outs, bound) -> None:
        t = outs[0]
        if t.dtype != DType.SHAPE:
            raise TosaError(f"CONST_SHAPE output must be shape_t, '{t.name}' is {t.dtype}")
        if t.data is None:
            raise TosaError(f"CONST_SHAPE output '{t.name}' has no values")
        if t.rank != 1 or t.shape[0] != np.size(t.data):
            raise TosaError(f"CONST_SHAPE output '{t.name}' has shape {list(t.shape)} but {np.size(t.data)} values")

    def shape_levels(self, op: Operator, ins, outs, bound) -> None:
        """LEVEL_CHECK(length(x) <= MAX_SHAPE_LEN) of the shape operators' shape_t inputs (and CONCAT_SHAPE's
        output)."""
        for t in ins + (outs if op.op == "CONCAT_SHAPE" else []):
            if t.dtype == DType.SHAPE and t.rank == 1 and t.shape[0] > self.L["MAX_SHAPE_LEN"]:
                raise TosaError(
                    f"LEVEL_CHECK(length({t.name}) <= MAX_SHAPE_LEN): {t.shape[0]} values, "
                    f"MAX_SHAPE_LEN={self.L['MAX_SHAPE_LEN']}"
                )


_FAMILY_CHECKS = {
    "shape_levels": SHAPE_OPS,
    "zero_points": tuple(_ZERO_POINTS),
    "pool_levels": ("AVG_POOL2D", "MAX_POOL2D"),
    "adaptive_pool_levels": ("AVG_POOL2D_ADAPTIVE", "MAX_POOL2D_ADAPTIVE"),
    "conv_levels": ("CONV2D", "CONV3D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D"),
    "fft_levels": ("FFT2D", "RFFT2D"),
}


# --- helpers ----------------------------------------------------------------------------------------------------


# operator -> the check of its REQUIREs on constant operands (run when the operator has output elements)
_CONSTANT_REQUIRES = {
    "RESCALE": "rescale_scales",
    "INTDIV": "nonzero_divisor",
    **dict.fromkeys(("ARITHMETIC_RIGHT_SHIFT", "LOGICAL_LEFT_SHIFT", "LOGICAL_RIGHT_SHIFT"), "shift_amount"),
    **dict.fromkeys(("GATHER", "SCATTER", "ROW_GATHER", "ROW_GATHER_BLOCK_SCALED"), "gather_indices"),
}


def _rank_range(text: str, max_rank: int) -> tuple[int | None, int]:
    text = text.strip()
    if text.isdigit():
        return int(text), int(text)
    m = re.fullmatch(r"(\d+) to MAX_RANK(?: - (\d+))?", text)
    if m:
        return int(m.group(1)), max_rank - int(m.group(2) or 0)
    return None, max_rank


def _same_list(tensors: list[Tensor], block: Block, names: list[str], rule: str, what: str, other: str) -> None:
    sub = [block.tensors[n] for n in names]
    if len(sub) != len(tensors):
        raise TosaError(f"{rule}: {what} has {len(tensors)} tensors, {other} {len(sub)}")
    for i, (a, b) in enumerate(zip(tensors, sub)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TosaError(
                f"{rule}: {what}[{i}] '{a.name}' is {list(a.shape)} {a.dtype}, {other} has "
                f"'{b.name}' {list(b.shape)} {b.dtype}"
            )


def _sig(ts: list[Tensor]) -> str:
    return "[" + ", ".join(f"{list(t.shape)} {t.dtype}" for t in ts) + "]"


def _out_rule(op: Operator, rule: str, what: str) -> str:
    return rule if rule.startswith("ERROR_IF") else f"output {what} ({rule})"


def _first(t: Tensor) -> int | None:
    if t.data is None or np.size(t.data) == 0:
        return None
    return int(np.asarray(t.data).reshape(-1)[0])


def _values(t: Tensor) -> np.ndarray | None:
    """A constant integer operand's values as int64, or None when they are not known statically."""
    if t.data is None or not t.dtype.is_int:
        return None
    return np.asarray(t.data).astype(np.int64)


def _require(values: np.ndarray | None, lo: int, hi: int | None, rule: str) -> None:
    """REQUIRE(rule) of a constant operand whose every value must lie in lo..hi (None: no upper bound); the
    reference backend's text, with the first value outside."""
    if values is None:
        return
    bad = values[(values < lo) | (values > hi if hi is not None else False)]
    if bad.size:
        raise TosaError(f"REQUIRE({rule}) does not hold: {int(bad[0])} in a constant operand")


def _scalar(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        v = v.reshape(-1)[0]
    return v.item() if isinstance(v, np.generic) else v


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _dtype(v: Any) -> DType | None:
    if v is None:
        return None
    try:
        return DType.of(v)
    except (ValueError, KeyError):
        return None


def _enum(cls: type[enum.IntEnum], v: Any):
    try:
        return cls[v.upper()] if isinstance(v, str) else cls(int(v))
    except (ValueError, KeyError, TypeError):
        return None

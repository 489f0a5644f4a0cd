"""The TOSA operator catalogue: each operator's arguments and supported type combinations.

TOSA 1.0 is transcribed from the specification (tosa-1.0.1, chapter 2 "Operators"; the `# spec line` comments point
into spec/tosa-1.0.1-spec.txt of the project's shared documents) with the extraction's OCR noise fixed by hand.
TOSA 1.1 (draft) adds operators and rows, each marked with the version that added it (`since`), as Arm's tosa-tools
2026.8 generates and runs them (the draft specification's tosa.xml of August 2026). A graph's own version decides
which apply. Inputs are listed in spec order, which is also their order in a .tosa file.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..errors import TosaError
from .dtype import BLOCK_ELEMENTS, DType
from .graph import RoundingMode


@dataclass(frozen=True)
class Operand:
    """One row of an operator's argument table."""

    name: str  # spec argument name: "input_zp", "weight", "pad"
    kind: str  # "input" | "attribute" | "output"
    type: str  # element type: a type variable ("in_t"), a fixed type ("i8_t", "shape_t") or an enum/other
    tensor: bool  # spec type is T<...> (and for tensor lists)
    shape: str  # spec shape text: "[N,IH,IW,IC]", "shape1", "-"
    rank: str  # spec rank text: "4", "0 to MAX_RANK", "-"
    is_list: bool = False  # a list of tensors (CONCAT input1, control-flow and CUSTOM input_list / output_list)
    optional: bool = False
    scaled: bool = False  # a (values, scales) list of TOSA 1.1: the second tensor, if any, is of type scale_t


@dataclass(frozen=True)
class BlockScaled:
    """A block-scaled element type (TOSA 1.1): the spec's block_scale_t<BLOCK_SHAPE_32, fp8ue8m0_t, value_t>, e.g.
    bs32_fp8ue8m0_fp4e2m1_t. A Tensor with `scale_dtype` set has this type (`tensor_type`); it binds a type variable
    as a DType does and never equals one, so a plain tensor never matches a block-scaled row, nor the other way.
    """

    value: DType  # one of dtype.BLOCK_ELEMENTS
    scale: DType = DType.FP8UE8M0
    block: int = 32  # elements of the last dimension per scale

    @property
    def name(self) -> str:
        """The spec's name: "bs32_fp8ue8m0_fp4e2m1_t"."""
        return f"bs{self.block}_{self.scale.name.lower()}_{self.value.name.lower()}_t"

    @property
    def since(self) -> tuple[int, int]:
        return (1, 1)

    def __str__(self) -> str:
        return self.name


ElementType = DType | BlockScaled  # what a type variable binds


def tensor_type(t: Any) -> ElementType:
    """A Tensor's element type for type binding: BlockScaled for a block-scaled tensor, else its DType."""
    if getattr(t, "scale_dtype", None) is not None:
        return BlockScaled(t.dtype, t.scale_dtype, t.block_size)
    return t.dtype


@dataclass(frozen=True)
class TypeSupport:
    """One row of an operator's "Supported Data Types" table.

    The spec's "PRO-INT or PRO-FP" rows appear twice, once per profile; "X and Y" rows (EXT-VARIABLE and PRO-FP,
    EXT-BF16 and EXT-FP8E4M3) name X as `profile` and Y in `also`: both are needed.
    """

    profile: str  # "PRO-INT", "PRO-FP", "EXT-INT16", ...
    mode: str  # "signed 8x8 with int32 accumulate"
    types: Mapping[str, ElementType] = field(hash=False)  # type variable -> DType or BlockScaled (UNKNOWN: absent)
    also: tuple[str, ...] = ()  # further profiles / extensions the row needs
    since: tuple[int, int] = (1, 0)  # the TOSA version that added the row

    @property
    def needs(self) -> tuple[str, ...]:
        return (self.profile, *self.also)


@dataclass(frozen=True)
class OpSpec:
    name: str
    chapter: str
    operands: tuple[Operand, ...]
    types: tuple[TypeSupport, ...]  # empty for ops without a type table (CUSTOM, COND_IF, WHILE_LOOP)
    since: tuple[int, int] = (1, 0)  # the TOSA version that added the operator

    @property
    def inputs(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.kind == "input")

    @property
    def attributes(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.kind == "attribute")

    @property
    def outputs(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.kind == "output")

    def operand(self, name: str) -> Operand:
        for o in self.operands:
            if o.name == name:
                return o
        raise TosaError(f"{self.name} has no argument {name!r}", op=self.name)

    @property
    def type_vars(self) -> tuple[str, ...]:
        """The type variables of the type table, in column order."""
        return tuple(self.types[0].types) if self.types else ()


# Spec element type names -> DType (fixed types; type variables such as in_t are bound per operator).
SPEC_TYPES: dict[str, DType] = {
    "bool_t": DType.BOOL,
    "i4_t": DType.INT4,
    "int4_t": DType.INT4,
    "i8_t": DType.INT8,
    "int8_t": DType.INT8,
    "i16_t": DType.INT16,
    "int16_t": DType.INT16,
    "i32_t": DType.INT32,
    "int32_t": DType.INT32,
    "i48_t": DType.INT48,
    "int48_t": DType.INT48,
    "fp16_t": DType.FP16,
    "bf16_t": DType.BF16,
    "fp32_t": DType.FP32,
    "fp8e4m3_t": DType.FP8E4M3,
    "fp8e5m2_t": DType.FP8E5M2,
    "shape_t": DType.SHAPE,
    # TOSA 1.1
    "i64_t": DType.INT64,
    "int64_t": DType.INT64,
    "fp6e2m3_t": DType.FP6E2M3,
    "fp6e3m2_t": DType.FP6E3M2,
    "fp4e2m1_t": DType.FP4E2M1,
    "fp8ue8m0_t": DType.FP8UE8M0,
    "mxint8_t": DType.MXINT8,
}
# The spec's bs32 block-scaled types by name (rows may name them; they are not operand types, so not in SPEC_TYPES)
BLOCK_SCALED_TYPES: dict[str, BlockScaled] = {
    b.name: b for b in (BlockScaled(v) for v in sorted(BLOCK_ELEMENTS, key=lambda d: d.name))
}
# Type sets a row may name for a type variable; such a row stands for one row per member (per combination when
# several variables name sets), e.g. the 1.0 operators' "block scaled" rows of TOSA 1.1.
TYPE_SETS: dict[str, tuple[ElementType, ...]] = {"bs32_fp8ue8m0_set_t": tuple(BLOCK_SCALED_TYPES.values())}
LATEST = (1, 1)  # the newest TOSA version the catalogue knows

OPS: dict[str, OpSpec] = {}

_KINDS = {"in": "input", "attr": "attribute", "out": "output"}


def _op(
    name: str,
    chapter: str,
    operands: list[tuple],
    type_vars: str = "",
    rows: Sequence[tuple[str, ...]] = (),
    since: str = "1.0",
) -> None:
    """Registers one operator from its literal tables below.

    operands: (kind, name, spec type, shape, rank[, flags]) with kind in/attr/out, type "T<x>" for a tensor of x,
    flags a space-separated subset of "list optional scaled". rows: (profile, mode, one spec type per type
    variable[, version that added the row, default `since`]); a type may be a bs32 type, a TYPE_SETS name (one row
    per member) or "-" (the spec's "no such tensor": the variable must stay unbound, e.g. a list without scales).
    since: the version that added the operator.
    """
    ops = []
    for kind, arg, typ, shape, rank, *flags in operands:
        flags = flags[0].split() if flags else []
        tensor = typ.startswith("T<")
        ops.append(
            Operand(
                arg,
                _KINDS[kind],
                typ[2:-1] if tensor else typ,
                tensor or "list" in flags,
                shape,
                rank,
                is_list="list" in flags,
                optional="optional" in flags,
                scaled="scaled" in flags,
            )
        )
    names = type_vars.split()
    support = []
    for profile, mode, typs, *added in rows:
        first, *also = profile.split(" and ")
        row_since = _version(added[0] if added else since)
        choices = [_row_types(t) for t in typs.split()]
        for combination in itertools.product(*choices):
            combination = _elem_types(names, typs.split(), combination)
            binding = MappingProxyType(dict(zip(names, combination, strict=True)))
            needs = [p for p in first.split(" or ")]
            more = tuple(also)
            if "DEDUCE-EXT" in (first, *also):  # the spec's marker: the extensions follow from the types
                deduced = list(dict.fromkeys(e for t in combination for e in deduced_extensions(t)))
                more = tuple(dict.fromkeys(a for a in (*also, *deduced) if a != "DEDUCE-EXT"))
                if first == "DEDUCE-EXT":
                    needs, more = ([more[0]], more[1:]) if more else (["PRO-FP"], ())
            for p in needs:
                support.append(TypeSupport(p, mode, binding, more, row_since))
    if name in OPS:  # a later version's rows for an operator already listed
        OPS[name] = replace(OPS[name], types=OPS[name].types + tuple(support))
        return
    OPS[name] = OpSpec(name, chapter, tuple(ops), tuple(support), _version(since))


# The spec's "Extension Data Type Mapping": the extensions a type brings to a DEDUCE-EXT row. int16 / int4 bring
# none: the draft's DEDUCE-EXT rows with them (ROW_GATHER's "Base INT") are PRO-INT / PRO-FP rows in Arm's 2026.8
# tests (desc.json requires no EXT-INT16), as EXT-INT16 / EXT-INT4 rows are written out as such elsewhere.
_TYPE_EXTENSIONS: dict[DType, tuple[str, ...]] = {
    DType.INT64: ("EXT-INT64",),
    DType.BF16: ("EXT-BF16",),
    DType.FP8E4M3: ("EXT-FP8E4M3",),
    DType.FP8E5M2: ("EXT-FP8E5M2",),
    DType.FP8UE8M0: ("EXT-MX-COMMON",),
    DType.FP4E2M1: ("EXT-MX-FP4E2M1",),
    DType.FP6E2M3: ("EXT-MX-FP6E2M3",),
    DType.FP6E3M2: ("EXT-MX-FP6E3M2",),
    DType.MXINT8: ("EXT-MX-INT8",),
}


def deduced_extensions(t: ElementType) -> tuple[str, ...]:
    """The extensions a type needs (spec: Extension Data Type Mapping; a bs32 type: EXT-MX-COMMON and its value's
    MX extension, e.g. EXT-MX-FP8E4M3 for bs32_fp8ue8m0_fp8e4m3_t)."""
    if isinstance(t, BlockScaled):
        return ("EXT-MX-COMMON", "EXT-MX-" + t.value.name.replace("MXINT8", "INT8"))
    return _TYPE_EXTENSIONS.get(t, ())


def _row_types(name: str) -> tuple[ElementType, ...]:
    """A type name of a row -> the types it stands for ("a_t|b_t": either)."""
    if "|" in name:
        return tuple(dict.fromkeys(t for part in name.split("|") for t in _row_types(part)))
    if name == "-":
        return (DType.UNKNOWN,)
    if name in TYPE_SETS:
        return TYPE_SETS[name]
    if name.startswith("access_elem_type<"):
        return (DType.UNKNOWN,)  # filled in per combination by _elem_types
    return (BLOCK_SCALED_TYPES[name] if name in BLOCK_SCALED_TYPES else SPEC_TYPES[name],)


def _elem_types(names: list[str], typs: list[str], combination: tuple) -> tuple:
    """The spec's access_elem_type<X> in a row: the element type of variable X's type in this combination, fp32_t for
    a block-scaled type (e.g. MATMUL_T's A_zp_t with a bs32 A_t)."""
    out = list(combination)
    for i, t in enumerate(typs):
        if t.startswith("access_elem_type<"):
            ref = combination[names.index(t[len("access_elem_type<") : -1])]
            out[i] = DType.FP32 if isinstance(ref, BlockScaled) else ref
    return tuple(out)


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def op_spec(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise TosaError(f"unknown operator {name!r}") from None


def matching_types(name: str, bound: Mapping[str, ElementType], version: tuple[int, int] = LATEST) -> list[TypeSupport]:
    """The type rows of `name` in TOSA `version` that agree with every binding; a variable a row does not have is
    unconstrained, one a row types "-" (UNKNOWN) must be unbound."""
    return [
        row
        for row in op_spec(name).types
        if row.since <= version and all(row.types.get(var, dt) == dt for var, dt in bound.items())
    ]


def typed_operands(operands: Sequence[Operand], items: Sequence[Any]) -> Iterator[tuple[Operand, str, Any]]:
    """(operand, its type variable or fixed type, item) for an operator's input or output `items` (tensors or
    names): operands take items by position, a list operand the surplus; the second item of a scaled list has
    type scale_t."""
    surplus = len(items) - sum(not o.is_list for o in operands)
    i = 0
    for o in operands:
        take = max(surplus, 0) if o.is_list else 1
        for k, item in enumerate(items[i : i + take]):
            yield o, "scale_t" if o.scaled and k == 1 else o.type, item
        i += take


def unscaled(spec: OpSpec, bound: dict[str, ElementType]) -> None:
    """A (values, scales) list given without scales binds scale_t to UNKNOWN: only the rows typing it "-" match."""
    if "scale_t" not in bound and any(o.scaled for o in spec.operands):
        bound["scale_t"] = DType.UNKNOWN


def bind_types(spec: OpSpec, op: Any, tensors: Mapping[str, Any]) -> dict[str, ElementType] | None:
    """Type variable -> DType (BlockScaled for a block-scaled tensor) from an Operator's tensors (looked up by name in
    `tensors`) and its acc_type.

    Operands map to op.inputs / op.outputs by position; a list operand takes the surplus. Tensors that are missing
    or of UNKNOWN dtype bind nothing. Returns None when the tensors contradict each other or a fixed operand type
    (e.g. MUL's shift must be i8_t, PAD's padding shape_t).
    """
    bound: dict[str, ElementType] = {}

    def bind(var: str, value: Any) -> bool:
        try:
            dtype = value if isinstance(value, BlockScaled) else DType.of(value)
        except ValueError:
            return False
        if dtype == DType.UNKNOWN:
            return True
        if var in SPEC_TYPES:
            return SPEC_TYPES[var] == dtype
        return bound.setdefault(var, dtype) == dtype

    for operands, names in ((spec.inputs, list(op.inputs)), (spec.outputs, list(op.outputs))):
        for _o, var, tname in typed_operands(operands, names):
            t = tensors.get(tname)
            if t is not None and var != "tensor_list_t" and not bind(var, tensor_type(t)):
                return None
    unscaled(spec, bound)
    attrs = getattr(op, "attrs", {}) or {}
    if "acc_type" in attrs and attrs["acc_type"] is not None:
        if not bind("acc_t", attrs["acc_type"]):
            return None
    if spec.name == "VARIABLE" and attrs.get("type") is not None:  # var_t: the variable's element type
        if not bind("in_t", attrs["type"]):
            return None
    return bound


def _enum_name(value: Any) -> str:
    """A RoundingMode given as the enum, its name or its number -> its name ("" when invalid)."""
    if isinstance(value, str):
        return value.upper()
    try:
        return RoundingMode(int(value)).name
    except ValueError:
        return ""


# Profiles each extension works with (spec section 6.2, "Compatible profiles").
COMPATIBLE_PROFILES: dict[str, tuple[str, ...]] = {
    "EXT-INT16": ("PRO-INT",),
    "EXT-INT4": ("PRO-INT",),
    "EXT-BF16": ("PRO-FP",),
    "EXT-FP8E4M3": ("PRO-FP",),
    "EXT-FP8E5M2": ("PRO-FP",),
    "EXT-FFT": ("PRO-FP",),
    "EXT-VARIABLE": ("PRO-INT", "PRO-FP"),
    "EXT-CONTROLFLOW": ("PRO-INT", "PRO-FP"),
    "EXT-DYNAMIC": ("PRO-INT", "PRO-FP"),
    "EXT-DOUBLEROUND": ("PRO-INT",),
    "EXT-INEXACTROUND": ("PRO-INT",),
    # TOSA 1.1
    "EXT-INT64": ("PRO-INT", "PRO-FP"),
    "EXT-SHAPE": ("PRO-INT", "PRO-FP"),
    "EXT-MX-COMMON": ("PRO-FP",),
    "EXT-MX-FP4E2M1": ("PRO-FP",),
    "EXT-MX-FP6E2M3": ("PRO-FP",),
    "EXT-MX-FP6E3M2": ("PRO-FP",),
    "EXT-MX-FP8E4M3": ("PRO-FP",),
    "EXT-MX-FP8E5M2": ("PRO-FP",),
    "EXT-MX-INT8": ("PRO-FP",),
    "EXT-MXFP-CONV": ("PRO-FP",),
}


def _add_compatible(needs: set[str]) -> None:
    """An extension usable with one profile only brings that profile along (a BF16-only graph needs PRO-FP)."""
    for ext in sorted(needs):
        profiles = COMPATIBLE_PROFILES.get(ext, ())
        if len(profiles) == 1 and not needs.intersection(profiles):
            needs.add(profiles[0])


def needs_1_1(graph: Any, rows: bool = True) -> bool:
    """Whether a Graph uses TOSA 1.1: an operator or element type 1.1 added, a block-scaled tensor, or (rows) an
    operator whose types only a 1.1 row has. An operator the catalogue does not know counts as 1.1."""
    for _, block in graph.blocks():
        if any(t.dtype.since > (1, 0) or t.block_scaled for t in block.tensors.values()):
            return True
        for op in block.operators:
            spec = OPS.get(op.op)
            if spec is None or spec.since > (1, 0):
                return True
            if rows and spec.types:
                bound = bind_types(spec, op, block.tensors)
                if bound is not None and not matching_types(op.op, bound, (1, 0)):
                    return True
    return False


def requirements(graph: Any) -> tuple[list[str], list[str]]:
    """(profiles, extensions) that a Graph needs, e.g. (["PRO-FP"], ["EXT-BF16"]).

    Per operator, the rows matching its tensor types decide: a row needing only PRO-INT / PRO-FP wins over rows
    needing extensions; where rows leave a choice (the spec's "PRO-INT or PRO-FP"), one already needed by the rest
    of the graph is taken, else the first. An extension that works with a single profile adds that profile.
    Operators matching no row are skipped (validation reports them).
    """
    every = {name: t for _, block in graph.blocks() for name, t in block.tensors.items()}
    needs: set[str] = set()
    pending: list[list[frozenset[str]]] = []
    for _, block in graph.blocks():
        lookup = {**every, **block.tensors}
        for op in block.operators:
            spec = OPS.get(op.op)
            if spec is None:
                continue
            if spec.chapter == "control_flow":
                needs.add("EXT-CONTROLFLOW")
            elif spec.chapter == "variable":
                needs.add("EXT-VARIABLE")
            elif spec.name == "RESCALE" and op.attrs.get("rounding_mode") is not None:
                mode = _enum_name(op.attrs["rounding_mode"])
                if mode in ("DOUBLE_ROUND", "INEXACT_ROUND"):
                    needs.add("EXT-" + mode.replace("_", ""))
            if not spec.types:
                continue
            bound = bind_types(spec, op, lookup)
            rows = matching_types(spec.name, bound, graph.tosa_version) if bound is not None else []
            choices = list(dict.fromkeys(frozenset(r.needs) for r in rows))
            base = [c for c in choices if all(p.startswith("PRO-") for p in c)]
            choices = base or choices
            if len(choices) == 1:
                needs |= choices[0]
            elif choices:
                pending.append(choices)
    _add_compatible(needs)
    for choices in pending:
        needs |= next((c for c in choices if c <= needs), choices[0])
    _add_compatible(needs)
    profiles = sorted(p for p in needs if p.startswith("PRO-"))
    return profiles, sorted(needs - set(profiles))


# ==== The catalogue ============================================================================================
# _op(NAME, chapter, [(kind, name, spec type, shape, rank[, flags]), ...], "type variables", [(profile, mode, types)])
# The rows are aligned like the spec's tables, so the formatter leaves them alone.
# fmt: off

# ---- tensor_ops ---------------------------------------------------------------------------------

_op("ARGMAX", "tensor_ops", [  # spec line 875
    ("in",   "input",    "T<in_t>",                "shape1", "1 to MAX_RANK"),
    ("attr", "axis",     "i32_t",                  "-",      "-"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",      "-"),
    ("out",  "output",   "T<out_t>",               "shape",  "0 to MAX_RANK - 1"),
], "in_t out_t", [
    ("PRO-FP",      "fp16",      "fp16_t i32_t"),
    ("PRO-FP",      "fp32",      "fp32_t i32_t"),
    ("PRO-INT",     "signed 8",  "i8_t i32_t"),
    ("EXT-BF16",    "bf16",      "bf16_t i32_t"),
    ("EXT-FP8E4M3", "fp8e4m3",   "fp8e4m3_t i32_t"),
    ("EXT-FP8E5M2", "fp8e5m2",   "fp8e5m2_t i32_t"),
    ("EXT-INT16",   "signed 16", "i16_t i32_t"),
])

_op("AVG_POOL2D", "tensor_ops", [  # spec line 963
    ("in",   "input",     "T<in_out_t>", "[N,IH,IW,C]", "4"),
    ("in",   "input_zp",  "T<in_out_t>", "[1]",         "1"),
    ("in",   "output_zp", "T<in_out_t>", "[1]",         "1"),
    ("attr", "kernel",    "T<i32_t>",    "[2]",         "1"),
    ("attr", "stride",    "T<i32_t>",    "[2]",         "1"),
    ("attr", "pad",       "T<i32_t>",    "[4]",         "1"),
    ("attr", "acc_type",  "acc_type_t",  "-",           "-"),
    ("out",  "output",    "T<in_out_t>", "[N,OH,OW,C]", "4"),
], "in_out_t acc_t", [
    ("PRO-FP",      "fp16 with fp16 accumulate",       "fp16_t fp16_t"),
    ("PRO-FP",      "fp16 with fp32 accumulate",       "fp16_t fp32_t"),
    ("PRO-FP",      "fp32 with fp32 accumulate",       "fp32_t fp32_t"),
    ("PRO-INT",     "signed 8 with int32 accumulate",  "i8_t i32_t"),
    ("EXT-BF16",    "bf16 with fp32 accumulate",       "bf16_t fp32_t"),
    ("EXT-FP8E4M3", "fp8e4m3 with fp16 accumulate",    "fp8e4m3_t fp16_t"),
    ("EXT-FP8E5M2", "fp8e5m2 with fp16 accumulate",    "fp8e5m2_t fp16_t"),
    ("EXT-INT16",   "signed 16 with int32 accumulate", "i16_t i32_t"),
])

_op("AVG_POOL2D_ADAPTIVE", "tensor_ops", [  # tosa.xml line 256: kernel, stride, pad as shape_t inputs
    ("in",   "input",     "T<in_out_t>", "[N,IH,IW,C]", "4"),
    ("in",   "input_zp",  "T<in_out_t>", "[1]",         "1"),
    ("in",   "output_zp", "T<in_out_t>", "[1]",         "1"),
    ("in",   "kernel",    "shape_t",     "[2]",         "1"),
    ("in",   "stride",    "shape_t",     "[2]",         "1"),
    ("in",   "pad",       "shape_t",     "[4]",         "1"),
    ("attr", "acc_type",  "acc_type_t",  "-",           "-"),
    ("out",  "output",    "T<in_out_t>", "[N,OH,OW,C]", "4"),
], "in_out_t acc_t", [
    ("PRO-FP",      "fp16 with fp16 accumulate",       "fp16_t fp16_t"),
    ("PRO-FP",      "fp16 with fp32 accumulate",       "fp16_t fp32_t"),
    ("PRO-FP",      "fp32 with fp32 accumulate",       "fp32_t fp32_t"),
    ("PRO-INT",     "signed 8 with int32 accumulate",  "i8_t i32_t"),
    ("EXT-BF16",    "bf16 with fp32 accumulate",       "bf16_t fp32_t"),
    ("EXT-FP8E4M3", "fp8e4m3 with fp16 accumulate",    "fp8e4m3_t fp16_t"),
    ("EXT-FP8E5M2", "fp8e5m2 with fp16 accumulate",    "fp8e5m2_t fp16_t"),
    ("EXT-INT16",   "signed 16 with int32 accumulate", "i16_t i32_t"),
], since="1.1")

_op("CONV2D", "tensor_ops", [  # spec line 1074; tosa.xml types the zero points in_zp_t / weight_zp_t (1.1)
    ("in",   "input",       "T<in_t>",        "[N,IH,IW,IC]",  "4"),
    ("in",   "weight",      "T<weight_t>",    "[OC,KH,KW,IC]", "4"),
    ("in",   "bias",        "T<out_t>",       "[BC]",          "1"),
    ("in",   "input_zp",    "T<in_zp_t>",     "[1]",           "1"),
    ("in",   "weight_zp",   "T<weight_zp_t>", "[1]",           "1"),
    ("attr", "pad",         "T<i32_t>",       "[4]",           "1"),
    ("attr", "stride",      "T<i32_t>",       "[2]",           "1"),
    ("attr", "dilation",    "T<i32_t>",       "[2]",           "1"),
    ("attr", "acc_type",    "acc_type_t",     "-",             "-"),
    ("attr", "local_bound", "bool_t",         "-",             "-", "optional"),
    ("out",  "output",      "T<out_t>",       "[N,OH,OW,OC]",  "4"),
], "in_t weight_t out_t acc_t in_zp_t weight_zp_t", [
    ("PRO-FP",      "fp16 with fp16 accumulate",         "fp16_t fp16_t fp16_t fp16_t fp16_t fp16_t"),
    ("PRO-FP",      "fp16 with fp32 accumulate",         "fp16_t fp16_t fp16_t fp32_t fp16_t fp16_t"),
    ("PRO-FP",      "fp32 with fp32 accumulate",         "fp32_t fp32_t fp32_t fp32_t fp32_t fp32_t"),
    ("PRO-INT",     "signed 8x8 with int32 accumulate",  "i8_t i8_t i32_t i32_t i8_t i8_t"),
    ("EXT-BF16",    "bf16 with fp32 accumulate",         "bf16_t bf16_t bf16_t fp32_t bf16_t bf16_t"),
    ("EXT-FP8E4M3", "fp8e4m3 with fp16 accumulate",      "fp8e4m3_t fp8e4m3_t fp16_t fp16_t fp8e4m3_t fp8e4m3_t"),
    ("EXT-FP8E5M2", "fp8e5m2 with fp16 accumulate",      "fp8e5m2_t fp8e5m2_t fp16_t fp16_t fp8e5m2_t fp8e5m2_t"),
    ("EXT-INT16",   "signed 16x8 with int48 accumulate", "i16_t i8_t i48_t i48_t i16_t i8_t"),
    ("EXT-INT4",    "signed 8x4 with int32 accumulate",  "i8_t i4_t i32_t i32_t i8_t i4_t"),
])

_op("CONV3D", "tensor_ops", [  # spec line 1191
    ("in",   "input",       "T<in_t>",     "[N,ID,IH,IW,IC]",  "5"),
    ("in",   "weight",      "T<weight_t>", "[OC,KD,KH,KW,IC]", "5"),
    ("in",   "bias",        "T<out_t>",    "[BC]",             "1"),
    ("in",   "input_zp",    "T<in_t>",     "[1]",              "1"),
    ("in",   "weight_zp",   "T<weight_t>", "[1]",              "1"),
    ("attr", "pad",         "T<i32_t>",    "[6]",              "1"),
    ("attr", "stride",      "T<i32_t>",    "[3]",              "1"),
    ("attr", "dilation",    "T<i32_t>",    "[3]",              "1"),
    ("attr", "acc_type",    "acc_type_t",  "-",                "-"),
    ("attr", "local_bound", "bool_t",      "-",                "-", "optional"),
    ("out",  "output",      "T<out_t>",    "[N,OD,OH,OW,OC]",  "5"),
], "in_t weight_t out_t acc_t", [
    ("PRO-FP",      "fp16 with fp16 accumulate",         "fp16_t fp16_t fp16_t fp16_t"),
    ("PRO-FP",      "fp16 with fp32 accumulate",         "fp16_t fp16_t fp16_t fp32_t"),
    ("PRO-FP",      "fp32 with fp32 accumulate",         "fp32_t fp32_t fp32_t fp32_t"),
    ("PRO-INT",     "signed 8x8 with int32 accumulate",  "i8_t i8_t i32_t i32_t"),
    ("EXT-BF16",    "bf16 with fp32 accumulate",         "bf16_t bf16_t bf16_t fp32_t"),
    ("EXT-FP8E4M3", "fp8e4m3 with fp16 accumulate",      "fp8e4m3_t fp8e4m3_t fp16_t fp16_t"),
    ("EXT-FP8E5M2", "fp8e5m2 with fp16 accumulate",      "fp8e5m2_t fp8e5m2_t fp16_t fp16_t"),
    ("EXT-INT16",   "signed 16x8 with int48 accumulate", "i16_t i8_t i48_t i48_t"),
    ("EXT-INT4",    "signed 8x4 with int32 accumulate",  "i8_t i4_t i32_t i32_t"),
])

_op("DEPTHWISE_CONV2D", "tensor_ops", [  # spec line 1309
    ("in",   "input",       "T<in_t>",     "[N,IH,IW,C]",   "4"),
    ("in",   "weight",      "T<weight_t>", "[KH,KW,C,M]",   "4"),
    ("in",   "bias",        "T<out_t>",    "[BC]",          "1"),
    ("in",   "input_zp",    "T<in_t>",     "[1]",           "1"),
    ("in",   "weight_zp",   "T<weight_t>", "[1]",           "1"),
    ("attr", "pad",         "T<i32_t>",    "[4]",           "1"),
    ("attr", "stride",      "T<i32_t>",    "[2]",           "1"),
    ("attr", "dilation",    "T<i32_t>",    "[2]",           "1"),
    ("attr", "acc_type",    "acc_type_t",  "-",             "-"),
    ("attr", "local_bound", "bool_t",      "-",             "-", "optional"),
    ("out",  "output",      "T<out_t>",    "[N,OH,OW,C*M]", "4"),
], "in_t weight_t out_t acc_t", [
    ("PRO-FP",      "fp16 with fp16 accumulate",         "fp16_t fp16_t fp16_t fp16_t"),
    ("PRO-FP",      "fp16 with fp32 accumulate",         "fp16_t fp16_t fp16_t fp32_t"),
    ("PRO-FP",      "fp32 with fp32 accumulate",         "fp32_t fp32_t fp32_t fp32_t"),
    ("PRO-INT",     "signed 8x8 with int32 accumulate",  "i8_t i8_t i32_t i32_t"),
    ("EXT-BF16",    "bf16 with fp32 accumulate",         "bf16_t bf16_t bf16_t fp32_t"),
    ("EXT-FP8E4M3", "fp8e4m3 with fp16 accumulate",      "fp8e4m3_t fp8e4m3_t fp16_t fp16_t"),
    ("EXT-FP8E5M2", "fp8e5m2 with fp16 accumulate",      "fp8e5m2_t fp8e5m2_t fp16_t fp16_t"),
    ("EXT-INT16",   "signed 16x8 with int48 accumulate", "i16_t i8_t i48_t i48_t"),
    ("EXT-INT4",    "signed 8x4 with int32 accumulate",  "i8_t i4_t i32_t i32_t"),
])

_op("FFT2D", "tensor_ops", [  # spec line 1423
    ("in",   "input_real",  "T<in_out_t>", "[N,H,W]", "3"),
    ("in",   "input_imag",  "T<in_out_t>", "[N,H,W]", "3"),
    ("attr", "inverse",     "bool_t",      "-",       "-"),
    ("attr", "local_bound", "bool_t",      "-",       "-", "optional"),
    ("out",  "output_real", "T<in_out_t>", "[N,H,W]", "3"),
    ("out",  "output_imag", "T<in_out_t>", "[N,H,W]", "3"),
], "in_out_t", [
    ("EXT-FFT", "fp32", "fp32_t"),
])

# A_t / B_t as tosa.xml 1.1 names them (1.0's in_t for both): 1.1 adds fp32 accumulation and mixed fp8 pairs
_op("MATMUL", "tensor_ops", [  # spec line 1505
    ("in",  "A",      "T<A_t>",   "[N,H,C]", "3"),
    ("in",  "B",      "T<B_t>",   "[N,C,W]", "3"),
    ("in",  "A_zp",   "T<A_t>",   "[1]",     "1"),
    ("in",  "B_zp",   "T<B_t>",   "[1]",     "1"),
    ("out", "output", "T<out_t>", "[N,H,W]", "3"),
], "A_t B_t out_t", [
    ("PRO-FP",      "fp16 with fp16 accumulate",          "fp16_t fp16_t fp16_t"),
    ("PRO-FP",      "fp16 with fp32 accumulate",          "fp16_t fp16_t fp32_t"),
    ("PRO-FP",      "fp32 with fp32 accumulate",          "fp32_t fp32_t fp32_t"),
    ("PRO-INT",     "signed 8x8 with int32 accumulate",   "i8_t i8_t i32_t"),
    ("EXT-BF16",    "bf16 with fp32 accumulate",          "bf16_t bf16_t fp32_t"),
    ("EXT-FP8E4M3", "fp8e4m3 with fp16 accumulate",       "fp8e4m3_t fp8e4m3_t fp16_t"),
    ("EXT-FP8E5M2", "fp8e5m2 with fp16 accumulate",       "fp8e5m2_t fp8e5m2_t fp16_t"),
    ("EXT-INT16",   "signed 16x16 with int48 accumulate", "i16_t i16_t i48_t"),
    ("EXT-FP8E4M3", "fp8e4m3xfp8e4m3 with fp32 accumulate", "fp8e4m3_t fp8e4m3_t fp32_t", "1.1"),
    ("EXT-FP8E5M2", "fp8e5m2xfp8e5m2 with fp32 accumulate", "fp8e5m2_t fp8e5m2_t fp32_t", "1.1"),
    ("EXT-FP8E4M3 and EXT-FP8E5M2", "fp8e4m3xfp8e5m2 with fp16 accumulate", "fp8e4m3_t fp8e5m2_t fp16_t", "1.1"),
    ("EXT-FP8E4M3 and EXT-FP8E5M2", "fp8e4m3xfp8e5m2 with fp32 accumulate", "fp8e4m3_t fp8e5m2_t fp32_t", "1.1"),
    ("EXT-FP8E5M2 and EXT-FP8E4M3", "fp8e5m2xfp8e4m3 with fp16 accumulate", "fp8e5m2_t fp8e4m3_t fp16_t", "1.1"),
    ("EXT-FP8E5M2 and EXT-FP8E4M3", "fp8e5m2xfp8e4m3 with fp32 accumulate", "fp8e5m2_t fp8e4m3_t fp32_t", "1.1"),
])

# A_zp_t / B_zp_t are A_t / B_t for every row without a block-scaled type. The draft's S1_IN / S2_IN sets less
# bs32_fp8ue8m0_set_t (those rows come with block-scaled tensors); Arm's generator emits the same pairs.
# The draft's fp type sets (tosa.xml <type_set>): S1_IN_NO_FP16, S1_IN, S2_IN ("a_t|b_t" rows: one per member)
_A_NO_FP16, _B_ALL = "fp8e4m3_t|fp8e5m2_t|bf16_t", "fp8e4m3_t|fp8e5m2_t|fp16_t|bf16_t"
_FP32_ALL = f"{_B_ALL}|fp32_t"
_op("MATMUL_T", "tensor_ops", [  # tosa.xml line 942: B is [D,W,C], D == 1 broadcasts it
    ("in",  "A",      "T<A_t>",    "[N,H,C]", "3"),
    ("in",  "B",      "T<B_t>",    "[D,W,C]", "3"),
    ("in",  "A_zp",   "T<A_zp_t>", "[1]",     "1"),
    ("in",  "B_zp",   "T<B_zp_t>", "[1]",     "1"),
    ("out", "output", "T<out_t>",  "[N,H,W]", "3"),
], "A_t B_t out_t A_zp_t B_zp_t", [
    ("PRO-INT",   "signed 8x8 with int32 accumulate",   "i8_t i8_t i32_t i8_t i8_t"),
    ("EXT-INT16", "signed 16x16 with int48 accumulate", "i16_t i16_t i48_t i16_t i16_t"),
    # DEDUCE-EXT: a row's extensions are those of its types (PRO-FP where they need none)
    ("DEDUCE-EXT", "Mixed precision fp with bf16 accumulate",
     f"{_A_NO_FP16} {_B_ALL} bf16_t access_elem_type<A_t> access_elem_type<B_t>"),
    ("DEDUCE-EXT", "Mixed precision fp16 x fp input with bf16 accumulate",
     f"fp16_t {_A_NO_FP16} bf16_t fp16_t access_elem_type<B_t>"),
    ("DEDUCE-EXT", "Mixed precision fp with fp32 accumulate",
     f"{_FP32_ALL} {_FP32_ALL} fp32_t access_elem_type<A_t> access_elem_type<B_t>"),
    ("PRO-FP",    "fp16xfp16 with fp16 accumulate",     "fp16_t fp16_t fp16_t fp16_t fp16_t"),
], since="1.1")

_op("MAX_POOL2D", "tensor_ops", [  # spec line 1568
    ("in",   "input",    "T<in_out_t>",            "[N,IH,IW,C]", "4"),
    ("attr", "kernel",   "T<i32_t>",               "[2]",         "1"),
    ("attr", "stride",   "T<i32_t>",               "[2]",         "1"),
    ("attr", "pad",      "T<i32_t>",               "[4]",         "1"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",           "-"),
    ("out",  "output",   "T<in_out_t>",            "[N,OH,OW,C]", "4"),
], "in_out_t", [
    ("PRO-FP",      "fp16",      "fp16_t"),
    ("PRO-FP",      "fp32",      "fp32_t"),
    ("PRO-INT",     "signed 8",  "i8_t"),
    ("EXT-BF16",    "bf16",      "bf16_t"),
    ("EXT-FP8E4M3", "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2", "fp8e5m2",   "fp8e5m2_t"),
    ("EXT-INT16",   "signed 16", "i16_t"),
])

_op("MAX_POOL2D_ADAPTIVE", "tensor_ops", [  # tosa.xml line 1135: kernel, stride, pad as shape_t inputs
    ("in",   "input",    "T<in_out_t>",            "[N,IH,IW,C]", "4"),
    ("in",   "kernel",   "shape_t",                "[2]",         "1"),
    ("in",   "stride",   "shape_t",                "[2]",         "1"),
    ("in",   "pad",      "shape_t",                "[4]",         "1"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",           "-"),
    ("out",  "output",   "T<in_out_t>",            "[N,OH,OW,C]", "4"),
], "in_out_t", [
    ("PRO-FP",      "fp16",      "fp16_t"),
    ("PRO-FP",      "fp32",      "fp32_t"),
    ("PRO-INT",     "signed 8",  "i8_t"),
    ("EXT-BF16",    "bf16",      "bf16_t"),
    ("EXT-FP8E4M3", "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2", "fp8e5m2",   "fp8e5m2_t"),
    ("EXT-INT16",   "signed 16", "i16_t"),
], since="1.1")

_op("RFFT2D", "tensor_ops", [  # spec line 1662
    ("in",   "input_real",  "T<in_out_t>", "[N,H,W]",     "3"),
    ("attr", "local_bound", "bool_t",      "-",           "-", "optional"),
    ("out",  "output_real", "T<in_out_t>", "[N,H,W/2+1]", "3"),
    ("out",  "output_imag", "T<in_out_t>", "[N,H,W/2+1]", "3"),
], "in_out_t", [
    ("EXT-FFT", "fp32", "fp32_t"),
])

_op("TRANSPOSE_CONV2D", "tensor_ops", [  # spec line 1738
    ("in",   "input",       "T<in_t>",     "[N,IH,IW,IC]",  "4"),
    ("in",   "weight",      "T<weight_t>", "[OC,KH,KW,IC]", "4"),
    ("in",   "bias",        "T<out_t>",    "[BC]",          "1"),
    ("in",   "input_zp",    "T<in_t>",     "[1]",           "1"),
    ("in",   "weight_zp",   "T<weight_t>", "[1]",           "1"),
    ("attr", "out_pad",     "T<i32_t>",    "[4]",           "1"),
    ("attr", "stride",      "T<i32_t>",    "[2]",           "1"),
    ("attr", "acc_type",    "acc_type_t",  "-",             "-"),
    ("attr", "local_bound", "bool_t",      "-",             "-", "optional"),
    ("out",  "output",      "T<out_t>",    "[N,OH,OW,OC]",  "4"),
], "in_t weight_t out_t acc_t", [
    ("PRO-FP",      "fp16 with fp16 accumulate",         "fp16_t fp16_t fp16_t fp16_t"),
    ("PRO-FP",      "fp16 with fp32 accumulate",         "fp16_t fp16_t fp16_t fp32_t"),
    ("PRO-FP",      "fp32 with fp32 accumulate",         "fp32_t fp32_t fp32_t fp32_t"),
    ("PRO-INT",     "signed 8x8 with int32 accumulate",  "i8_t i8_t i32_t i32_t"),
    ("EXT-BF16",    "bf16 with fp32 accumulate",         "bf16_t bf16_t bf16_t fp32_t"),
    ("EXT-FP8E4M3", "fp8e4m3 with fp16 accumulate",      "fp8e4m3_t fp8e4m3_t fp16_t fp16_t"),
    ("EXT-FP8E5M2", "fp8e5m2 with fp16 accumulate",      "fp8e5m2_t fp8e5m2_t fp16_t fp16_t"),
    ("EXT-INT16",   "signed 16x8 with int48 accumulate", "i16_t i8_t i48_t i48_t"),
    ("EXT-INT4",    "signed 8x4 with int32 accumulate",  "i8_t i4_t i32_t i32_t"),
])


# ---- activation ---------------------------------------------------------------------------------

_op("CLAMP", "activation", [  # spec line 1857
    ("in",   "input",    "T<in_out_t>",            "shape", "0 to MAX_RANK"),
    ("attr", "min_val",  "in_out_t",               "-",     "-"),
    ("attr", "max_val",  "in_out_t",               "-",     "-"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",     "-"),
    ("out",  "output",   "T<in_out_t>",            "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",    "fp16",      "fp16_t"),
    ("PRO-FP",    "fp32",      "fp32_t"),
    ("PRO-INT",   "signed 8",  "i8_t"),
    ("EXT-BF16",  "bf16",      "bf16_t"),
    ("EXT-INT16", "signed 16", "i16_t"),
])

_op("ERF", "activation", [  # spec line 1914
    ("in",  "input",  "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("SIGMOID", "activation", [  # spec line 1971
    ("in",  "input",  "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("TANH", "activation", [  # spec line 2036
    ("in",  "input",  "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])


# ---- elementwise_binary -------------------------------------------------------------------------

_op("ADD", "elementwise_binary", [  # spec line 2112
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "signed 32", "i32_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
])

_op("ARITHMETIC_RIGHT_SHIFT", "elementwise_binary", [  # spec line 2164
    ("in",   "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",   "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("attr", "round",  "bool_t",      "-",      "-"),
    ("out",  "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT", "signed 16", "i16_t"),
    ("PRO-INT", "signed 32", "i32_t"),
    ("PRO-INT", "signed 8",  "i8_t"),
])

_op("BITWISE_AND", "elementwise_binary", [  # spec line 2217
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT", "signed 16", "i16_t"),
    ("PRO-INT", "signed 32", "i32_t"),
    ("PRO-INT", "signed 8",  "i8_t"),
])

_op("BITWISE_OR", "elementwise_binary", [  # spec line 2257
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT", "signed 16", "i16_t"),
    ("PRO-INT", "signed 32", "i32_t"),
    ("PRO-INT", "signed 8",  "i8_t"),
])

_op("BITWISE_XOR", "elementwise_binary", [  # spec line 2302
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT", "signed 16", "i16_t"),
    ("PRO-INT", "signed 32", "i32_t"),
    ("PRO-INT", "signed 8",  "i8_t"),
])

_op("INTDIV", "elementwise_binary", [  # spec line 2344
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "signed 32", "i32_t"),
])

_op("LOGICAL_AND", "elementwise_binary", [  # spec line 2381
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
])

_op("LOGICAL_LEFT_SHIFT", "elementwise_binary", [  # spec line 2419
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "signed 16", "i16_t"),
    ("PRO-INT or PRO-FP", "signed 32", "i32_t"),
    ("PRO-INT or PRO-FP", "signed 8",  "i8_t"),
])

_op("LOGICAL_RIGHT_SHIFT", "elementwise_binary", [  # spec line 2465
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "signed 16", "i16_t"),
    ("PRO-INT or PRO-FP", "signed 32", "i32_t"),
    ("PRO-INT or PRO-FP", "signed 8",  "i8_t"),
])

_op("LOGICAL_OR", "elementwise_binary", [  # spec line 2512
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
])

_op("LOGICAL_XOR", "elementwise_binary", [  # spec line 2550
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
])

_op("MAXIMUM", "elementwise_binary", [  # spec line 2590
    ("in",   "input1",   "T<in_out_t>",            "shape1", "0 to MAX_RANK"),
    ("in",   "input2",   "T<in_out_t>",            "shape2", "0 to MAX_RANK"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",      "-"),
    ("out",  "output",   "T<in_out_t>",            "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16",      "fp16_t"),
    ("PRO-FP",   "fp32",      "fp32_t"),
    ("PRO-INT",  "signed 32", "i32_t"),
    ("EXT-BF16", "bf16",      "bf16_t"),
])

_op("MINIMUM", "elementwise_binary", [  # spec line 2649
    ("in",   "input1",   "T<in_out_t>",            "shape1", "0 to MAX_RANK"),
    ("in",   "input2",   "T<in_out_t>",            "shape2", "0 to MAX_RANK"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",      "-"),
    ("out",  "output",   "T<in_out_t>",            "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16",      "fp16_t"),
    ("PRO-FP",   "fp32",      "fp32_t"),
    ("PRO-INT",  "signed 32", "i32_t"),
    ("EXT-BF16", "bf16",      "bf16_t"),
])

_op("MUL", "elementwise_binary", [  # spec line 2711
    ("in",  "input1", "T<in_t>",  "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_t>",  "shape2", "0 to MAX_RANK"),
    ("in",  "shift",  "T<i8_t>",  "[1]",    "1"),
    ("out", "output", "T<out_t>", "shape",  "0 to MAX_RANK"),
], "in_t out_t", [
    ("PRO-FP",            "fp16",      "fp16_t fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t fp32_t"),
    ("PRO-INT",           "signed 16", "i16_t i32_t"),
    ("PRO-INT or PRO-FP", "signed 32", "i32_t i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t i32_t"),
    ("EXT-BF16",          "bf16",      "bf16_t bf16_t"),
])

_op("POW", "elementwise_binary", [  # spec line 2785
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("SUB", "elementwise_binary", [  # spec line 2847
    ("in",  "input1", "T<in_out_t>", "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "signed 32", "i32_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
])

# TABLE_SIZE is 256 for the int8 row and 513 for the int16 row (a constant column of the spec table).
_op("TABLE", "elementwise_binary", [  # spec line 2900
    ("in",  "input1", "T<in_t>",    "shape",        "0 to MAX_RANK"),
    ("in",  "table",  "T<table_t>", "[TABLE_SIZE]", "1"),
    ("out", "output", "T<out_t>",   "shape",        "0 to MAX_RANK"),
], "in_t table_t out_t", [
    ("PRO-INT",   "signed 8",  "i8_t i8_t i8_t"),
    ("EXT-INT16", "signed 16", "i16_t i16_t i32_t"),
])


# ---- elementwise_unary --------------------------------------------------------------------------

_op("ABS", "elementwise_unary", [  # spec line 2953
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16",      "fp16_t"),
    ("PRO-FP",   "fp32",      "fp32_t"),
    ("PRO-INT",  "signed 32", "i32_t"),
    ("EXT-BF16", "bf16",      "bf16_t"),
])

_op("BITWISE_NOT", "elementwise_unary", [  # spec line 3010
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT", "signed 16", "i16_t"),
    ("PRO-INT", "signed 32", "i32_t"),
    ("PRO-INT", "signed 8",  "i8_t"),
])

_op("CEIL", "elementwise_unary", [  # spec line 3049
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("CLZ", "elementwise_unary", [  # spec line 3095
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT", "signed 32", "i32_t"),
])

_op("COS", "elementwise_unary", [  # spec line 3128
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("EXP", "elementwise_unary", [  # spec line 3175
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("FLOOR", "elementwise_unary", [  # spec line 3225
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("LOG", "elementwise_unary", [  # spec line 3270
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("LOGICAL_NOT", "elementwise_unary", [  # spec line 3317
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
])

_op("NEGATE", "elementwise_unary", [  # spec line 3350
    ("in",  "input1",    "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("in",  "input1_zp", "T<in_out_t>", "[1]",   "1"),
    ("in",  "output_zp", "T<in_out_t>", "[1]",   "1"),
    ("out", "output",    "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t acc_t", [
    ("PRO-FP",   "fp16",      "fp16_t fp16_t"),
    ("PRO-FP",   "fp32",      "fp32_t fp32_t"),
    ("PRO-INT",  "signed 16", "i16_t i32_t"),
    ("PRO-INT",  "signed 32", "i32_t i32_t"),
    ("PRO-INT",  "signed 8",  "i8_t i32_t"),
    ("EXT-BF16", "bf16",      "bf16_t bf16_t"),
])

_op("RECIPROCAL", "elementwise_unary", [  # spec line 3419
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("RSQRT", "elementwise_unary", [  # spec line 3465
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("SIN", "elementwise_unary", [  # spec line 3517
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])


# ---- elementwise_ternary ------------------------------------------------------------------------

_op("SELECT", "elementwise_ternary", [  # spec line 3569
    ("in",  "input1", "T<bool_t>",   "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_out_t>", "shape2", "0 to MAX_RANK"),
    ("in",  "input3", "T<in_out_t>", "shape3", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape",  "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 16", "i16_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
])


# ---- comparison ---------------------------------------------------------------------------------

_op("EQUAL", "comparison", [  # spec line 3631
    ("in",  "input1", "T<in_t>",  "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_t>",  "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<out_t>", "shape",  "0 to MAX_RANK"),
], "in_t out_t", [
    ("PRO-FP",   "fp16",      "fp16_t bool_t"),
    ("PRO-FP",   "fp32",      "fp32_t bool_t"),
    ("PRO-INT",  "signed 32", "i32_t bool_t"),
    ("EXT-BF16", "bf16",      "bf16_t bool_t"),
])

_op("GREATER", "comparison", [  # spec line 3684
    ("in",  "input1", "T<in_t>",  "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_t>",  "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<out_t>", "shape",  "0 to MAX_RANK"),
], "in_t out_t", [
    ("PRO-FP",   "fp16",      "fp16_t bool_t"),
    ("PRO-FP",   "fp32",      "fp32_t bool_t"),
    ("PRO-INT",  "signed 32", "i32_t bool_t"),
    ("EXT-BF16", "bf16",      "bf16_t bool_t"),
])

_op("GREATER_EQUAL", "comparison", [  # spec line 3739
    ("in",  "input1", "T<in_t>",  "shape1", "0 to MAX_RANK"),
    ("in",  "input2", "T<in_t>",  "shape2", "0 to MAX_RANK"),
    ("out", "output", "T<out_t>", "shape",  "0 to MAX_RANK"),
], "in_t out_t", [
    ("PRO-FP",   "fp16",      "fp16_t bool_t"),
    ("PRO-FP",   "fp32",      "fp32_t bool_t"),
    ("PRO-INT",  "signed 32", "i32_t bool_t"),
    ("EXT-BF16", "bf16",      "bf16_t bool_t"),
])


# ---- reduction ----------------------------------------------------------------------------------

_op("REDUCE_ALL", "reduction", [  # spec line 3795
    ("in",   "input",  "T<in_out_t>", "shape1", "1 to MAX_RANK"),
    ("attr", "axis",   "i32_t",       "-",      "-"),
    ("out",  "output", "T<in_out_t>", "shape",  "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
])

_op("REDUCE_ANY", "reduction", [  # spec line 3836
    ("in",   "input",  "T<in_out_t>", "shape1", "1 to MAX_RANK"),
    ("attr", "axis",   "i32_t",       "-",      "-"),
    ("out",  "output", "T<in_out_t>", "shape",  "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
])

_op("REDUCE_MAX", "reduction", [  # spec line 3879
    ("in",   "input",    "T<in_out_t>",            "shape1", "1 to MAX_RANK"),
    ("attr", "axis",     "i32_t",                  "-",      "-"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",      "-"),
    ("out",  "output",   "T<in_out_t>",            "shape",  "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16",      "fp16_t"),
    ("PRO-FP",   "fp32",      "fp32_t"),
    ("PRO-INT",  "signed 16", "i16_t"),
    ("PRO-INT",  "signed 32", "i32_t"),
    ("PRO-INT",  "signed 8",  "i8_t"),
    ("EXT-BF16", "bf16",      "bf16_t"),
])

_op("REDUCE_MIN", "reduction", [  # spec line 3950
    ("in",   "input",    "T<in_out_t>",            "shape1", "1 to MAX_RANK"),
    ("attr", "axis",     "i32_t",                  "-",      "-"),
    ("attr", "nan_mode", "nan_propagation_mode_t", "-",      "-"),
    ("out",  "output",   "T<in_out_t>",            "shape",  "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16",      "fp16_t"),
    ("PRO-FP",   "fp32",      "fp32_t"),
    ("PRO-INT",  "signed 16", "i16_t"),
    ("PRO-INT",  "signed 32", "i32_t"),
    ("PRO-INT",  "signed 8",  "i8_t"),
    ("EXT-BF16", "bf16",      "bf16_t"),
])

_op("REDUCE_PRODUCT", "reduction", [  # spec line 4015
    ("in",   "input",  "T<in_out_t>", "shape1", "1 to MAX_RANK"),
    ("attr", "axis",   "i32_t",       "-",      "-"),
    ("out",  "output", "T<in_out_t>", "shape",  "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",   "fp16", "fp16_t"),
    ("PRO-FP",   "fp32", "fp32_t"),
    ("EXT-BF16", "bf16", "bf16_t"),
])

_op("REDUCE_SUM", "reduction", [  # spec line 4070
    ("in",   "input",  "T<in_out_t>", "shape1", "1 to MAX_RANK"),
    ("attr", "axis",   "i32_t",       "-",      "-"),
    ("out",  "output", "T<in_out_t>", "shape",  "1 to MAX_RANK"),
], "in_out_t acc_t", [
    ("PRO-FP",   "fp16",      "fp16_t fp16_t"),
    ("PRO-FP",   "fp32",      "fp32_t fp32_t"),
    ("PRO-INT",  "signed 32", "i32_t i32_t"),
    ("EXT-BF16", "bf16",      "bf16_t fp32_t"),
])


# ---- data_layout --------------------------------------------------------------------------------

_op("CONCAT", "data_layout", [  # spec line 4126
    ("in",   "input1", "T<in_out_t>", "shapes1", "1 to MAX_RANK", "list"),
    ("attr", "axis",   "i32_t",       "-",       "-"),
    ("out",  "output", "T<in_out_t>", "shape",   "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t"),
    ("EXT-INT16",         "signed 16", "i16_t"),
])

_op("PAD", "data_layout", [  # spec line 4199
    ("in",  "input1",    "T<in_out_t>", "shape1",           "1 to MAX_RANK"),
    ("in",  "padding",   "shape_t",     "[2*rank(shape1)]", "1"),
    ("in",  "pad_const", "T<in_out_t>", "[1]",              "1"),
    ("out", "output",    "T<in_out_t>", "shape",            "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 16", "i16_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t"),
])

_op("RESHAPE", "data_layout", [  # spec line 4262
    ("in",  "input1", "T<in_out_t>", "shape1",        "0 to MAX_RANK"),
    ("in",  "shape",  "shape_t",     "[rank(shape)]", "1"),
    ("out", "output", "T<in_out_t>", "shape",         "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 16", "i16_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t"),
])

_op("REVERSE", "data_layout", [  # spec line 4317
    ("in",   "input1", "T<in_out_t>", "shape", "1 to MAX_RANK"),
    ("attr", "axis",   "i32_t",       "-",     "-"),
    ("out",  "output", "T<in_out_t>", "shape", "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 16", "i16_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t"),
])

_op("SLICE", "data_layout", [  # spec line 4361
    ("in",  "input1", "T<in_out_t>", "shape1",         "1 to MAX_RANK"),
    ("in",  "start",  "shape_t",     "[rank(shape1)]", "1"),
    ("in",  "size",   "shape_t",     "[rank(shape1)]", "1"),
    ("out", "output", "T<in_out_t>", "shape",          "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 16", "i16_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t"),
])

_op("TILE", "data_layout", [  # spec line 4431
    ("in",  "input1",    "T<in_out_t>", "shape1",         "1 to MAX_RANK"),
    ("in",  "multiples", "shape_t",     "[rank(shape1)]", "1"),
    ("out", "output",    "T<in_out_t>", "shape",          "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 16", "i16_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t"),
])

_op("TRANSPOSE", "data_layout", [  # spec line 4486
    ("in",   "input1", "T<in_out_t>", "shape1",         "1 to MAX_RANK"),
    ("attr", "perms",  "T<i32_t>",    "[rank(shape1)]", "1"),
    ("out",  "output", "T<in_out_t>", "shape",          "1 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",      "fp16_t"),
    ("PRO-FP",            "fp32",      "fp32_t"),
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t"),
    ("PRO-INT",           "signed 16", "i16_t"),
    ("PRO-INT",           "signed 32", "i32_t"),
    ("PRO-INT",           "signed 8",  "i8_t"),
    ("EXT-BF16",          "bf16",      "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t"),
])


# ---- scatter_gather -----------------------------------------------------------------------------

_op("GATHER", "scatter_gather", [  # spec line 4554
    ("in",  "values",  "T<in_out_t>", "[N,K,C]", "3"),
    ("in",  "indices", "T<index_t>",  "[N,W]",   "2"),
    ("out", "output",  "T<in_out_t>", "[N,W,C]", "3"),
], "index_t in_out_t", [
    ("PRO-FP",      "fp16",      "i32_t fp16_t"),
    ("PRO-FP",      "fp32",      "i32_t fp32_t"),
    ("PRO-INT",     "signed 16", "i32_t i16_t"),
    ("PRO-INT",     "signed 32", "i32_t i32_t"),
    ("PRO-INT",     "signed 8",  "i32_t i8_t"),
    ("EXT-BF16",    "bf16",      "i32_t bf16_t"),
    ("EXT-FP8E4M3", "fp8e4m3",   "i32_t fp8e4m3_t"),
    ("EXT-FP8E5M2", "fp8e5m2",   "i32_t fp8e5m2_t"),
])

# Base INT (S_INT), Base FP (S_FP adds fp16 / fp32) and Extension (S_EXT) rows over S_INDEX = i32_t, i64_t; the
# block-scaled S_EXT member (bs32_fp8ue8m0_set_t) comes with block-scaled tensors.
_op("ROW_GATHER", "scatter_gather", [  # tosa.xml line 3466
    ("in",  "values",    "T<in_out_t>", "[N,K,C]",           "3"),
    ("in",  "indices",   "T<index_t>",  "[N,W]",             "2"),
    ("in",  "row_count", "T<i32_t>",    "[1]",               "1"),
    ("out", "output",    "T<in_out_t>", "[N,W*row_count,C]", "3"),
], "index_t in_out_t", [
    # S_INDEX (i32_t, i64_t) x the draft's value sets; DEDUCE-EXT adds EXT-INT64 / EXT-FP8* / EXT-BF16 by type
    ("PRO-INT or PRO-FP and DEDUCE-EXT", "Integer", "i32_t|i64_t bool_t|i8_t|i16_t|i32_t|i64_t"),
    ("PRO-FP and DEDUCE-EXT",            "FP",      "i32_t|i64_t fp16_t|fp32_t"),
    ("DEDUCE-EXT",                       "Extension", "i32_t|i64_t fp8e4m3_t|fp8e5m2_t|bf16_t"),
], since="1.1")

_op("SCATTER", "scatter_gather", [  # spec line 4592
    ("in",  "values_in",  "T<in_out_t>", "[N,K,C]", "3"),
    ("in",  "indices",    "T<index_t>",  "[N,W]",   "2"),
    ("in",  "input",      "T<in_out_t>", "[N,W,C]", "3"),
    ("out", "values_out", "T<in_out_t>", "[N,K,C]", "3"),
], "index_t in_out_t", [
    ("PRO-FP",      "fp16",      "i32_t fp16_t"),
    ("PRO-FP",      "fp32",      "i32_t fp32_t"),
    ("PRO-INT",     "signed 16", "i32_t i16_t"),
    ("PRO-INT",     "signed 32", "i32_t i32_t"),
    ("PRO-INT",     "signed 8",  "i32_t i8_t"),
    ("EXT-BF16",    "bf16",      "i32_t bf16_t"),
    ("EXT-FP8E4M3", "fp8e4m3",   "i32_t fp8e4m3_t"),
    ("EXT-FP8E5M2", "fp8e5m2",   "i32_t fp8e5m2_t"),
])


# ---- image --------------------------------------------------------------------------------------

# resize_t is internal to the operation; no operand carries it.
_op("RESIZE", "image", [  # spec line 4655
    ("in",   "input",  "T<in_t>",       "[N,IH,IW,C]", "4"),
    ("in",   "scale",  "shape_t",       "[4]",         "1"),
    ("in",   "offset", "shape_t",       "[2]",         "1"),
    ("in",   "border", "shape_t",       "[2]",         "1"),
    ("attr", "mode",   "resize_mode_t", "-",           "-"),
    ("out",  "output", "T<out_t>",      "[N,OH,OW,C]", "4"),
], "resize_t in_t out_t", [
    ("PRO-FP",    "fp16",                "fp16_t fp16_t fp16_t"),
    ("PRO-FP",    "fp32",                "fp32_t fp32_t fp32_t"),
    ("PRO-INT",   "signed 8, bilinear",  "i16_t i8_t i32_t"),
    ("PRO-INT",   "signed 8, nearest",   "i16_t i8_t i8_t"),
    ("EXT-BF16",  "bf16",                "bf16_t bf16_t bf16_t"),
    ("EXT-INT16", "signed 16, bilinear", "i16_t i16_t i48_t"),
    ("EXT-INT16", "signed 16, nearest",  "i16_t i16_t i16_t"),
])


# ---- type_conversion ----------------------------------------------------------------------------

_op("CAST", "type_conversion", [  # spec line 4816
    ("in",  "input",  "T<in_t>",  "shape", "0 to MAX_RANK"),
    ("out", "output", "T<out_t>", "shape", "0 to MAX_RANK"),
], "in_t out_t", [
    ("PRO-FP",                   "fp16 to fp32",           "fp16_t fp32_t"),
    ("PRO-FP",                   "fp16 to signed 16",      "fp16_t i16_t"),
    ("PRO-FP",                   "fp16 to signed 32",      "fp16_t i32_t"),
    ("PRO-FP",                   "fp16 to signed 8",       "fp16_t i8_t"),
    ("PRO-FP",                   "fp32 to fp16",           "fp32_t fp16_t"),
    ("PRO-FP",                   "fp32 to signed 16",      "fp32_t i16_t"),
    ("PRO-FP",                   "fp32 to signed 32",      "fp32_t i32_t"),
    ("PRO-FP",                   "fp32 to signed 8",       "fp32_t i8_t"),
    ("PRO-FP",                   "signed 16 to fp16",      "i16_t fp16_t"),
    ("PRO-FP",                   "signed 16 to fp32",      "i16_t fp32_t"),
    ("PRO-FP",                   "signed 32 to fp16",      "i32_t fp16_t"),
    ("PRO-FP",                   "signed 32 to fp32",      "i32_t fp32_t"),
    ("PRO-FP",                   "signed 8 to fp16",       "i8_t fp16_t"),
    ("PRO-FP",                   "signed 8 to fp32",       "i8_t fp32_t"),
    ("PRO-INT",                  "bool to signed 16",      "bool_t i16_t"),
    ("PRO-INT",                  "bool to signed 32",      "bool_t i32_t"),
    ("PRO-INT",                  "bool to signed 8",       "bool_t i8_t"),
    ("PRO-INT",                  "signed 16 to bool",      "i16_t bool_t"),
    ("PRO-INT",                  "signed 16 to signed 32", "i16_t i32_t"),
    ("PRO-INT",                  "signed 16 to signed 8",  "i16_t i8_t"),
    ("PRO-INT",                  "signed 32 to bool",      "i32_t bool_t"),
    ("PRO-INT",                  "signed 32 to signed 16", "i32_t i16_t"),
    ("PRO-INT",                  "signed 32 to signed 8",  "i32_t i8_t"),
    ("PRO-INT",                  "signed 8 to bool",       "i8_t bool_t"),
    ("PRO-INT",                  "signed 8 to signed 16",  "i8_t i16_t"),
    ("PRO-INT",                  "signed 8 to signed 32",  "i8_t i32_t"),
    ("EXT-BF16",                 "bf16 to fp32",           "bf16_t fp32_t"),
    ("EXT-BF16",                 "bf16 to signed 16",      "bf16_t i16_t"),
    ("EXT-BF16",                 "bf16 to signed 32",      "bf16_t i32_t"),
    ("EXT-BF16",                 "bf16 to signed 8",       "bf16_t i8_t"),
    ("EXT-BF16",                 "fp32 to bf16",           "fp32_t bf16_t"),
    ("EXT-BF16",                 "signed 16 to bf16",      "i16_t bf16_t"),
    ("EXT-BF16",                 "signed 32 to bf16",      "i32_t bf16_t"),
    ("EXT-BF16",                 "signed 8 to bf16",       "i8_t bf16_t"),
    ("EXT-BF16 and EXT-FP8E4M3", "bf16 to fp8e4m3",        "bf16_t fp8e4m3_t"),
    ("EXT-BF16 and EXT-FP8E4M3", "fp8e4m3 to bf16",        "fp8e4m3_t bf16_t"),
    ("EXT-BF16 and EXT-FP8E5M2", "bf16 to fp8e5m2",        "bf16_t fp8e5m2_t"),
    ("EXT-BF16 and EXT-FP8E5M2", "fp8e5m2 to bf16",        "fp8e5m2_t bf16_t"),
    ("EXT-FP8E4M3",              "fp16 to fp8e4m3",        "fp16_t fp8e4m3_t"),
    ("EXT-FP8E4M3",              "fp32 to fp8e4m3",        "fp32_t fp8e4m3_t"),
    ("EXT-FP8E4M3",              "fp8e4m3 to fp16",        "fp8e4m3_t fp16_t"),
    ("EXT-FP8E4M3",              "fp8e4m3 to fp32",        "fp8e4m3_t fp32_t"),
    ("EXT-FP8E5M2",              "fp16 to fp8e5m2",        "fp16_t fp8e5m2_t"),
    ("EXT-FP8E5M2",              "fp32 to fp8e5m2",        "fp32_t fp8e5m2_t"),
    ("EXT-FP8E5M2",              "fp8e5m2 to fp16",        "fp8e5m2_t fp16_t"),
    ("EXT-FP8E5M2",              "fp8e5m2 to fp32",        "fp8e5m2_t fp32_t"),
])

# mul_t is i32_t when scale32 else i16_t; it is not a column of the type table.
# The spec spells the attribute "per_channnel"; the pseudocode and the .tosa schema say per_channel.
_op("RESCALE", "type_conversion", [  # spec line 4955
    ("in",   "input",           "T<in_t>",         "shape", "0 to MAX_RANK"),
    ("in",   "multiplier",      "T<mul_t>",        "[NC]",  "1"),
    ("in",   "shift",           "T<i8_t>",         "[NC]",  "1"),
    ("in",   "input_zp",        "T<in_t>",         "[1]",   "1"),
    ("in",   "output_zp",       "T<out_t>",        "[1]",   "1"),
    ("attr", "scale32",         "bool_t",          "-",     "-"),
    ("attr", "rounding_mode",   "rounding_mode_t", "-",     "-"),
    ("attr", "per_channel",     "bool_t",          "-",     "-"),
    ("attr", "input_unsigned",  "bool_t",          "-",     "-"),
    ("attr", "output_unsigned", "bool_t",          "-",     "-"),
    ("out",  "output",          "T<out_t>",        "shape", "0 to MAX_RANK"),
], "in_t out_t", [
    ("PRO-INT",   "16-bit to 16-bit", "i16_t i16_t"),
    ("PRO-INT",   "16-bit to 32-bit", "i16_t i32_t"),
    ("PRO-INT",   "16-bit to 8-bit",  "i16_t i8_t"),
    ("PRO-INT",   "32-bit to 16-bit", "i32_t i16_t"),
    ("PRO-INT",   "32-bit to 32-bit", "i32_t i32_t"),
    ("PRO-INT",   "32-bit to 8-bit",  "i32_t i8_t"),
    ("PRO-INT",   "8-bit to 16-bit",  "i8_t i16_t"),
    ("PRO-INT",   "8-bit to 32-bit",  "i8_t i32_t"),
    ("PRO-INT",   "8-bit to 8-bit",   "i8_t i8_t"),
    ("EXT-INT16", "48-bit to 16-bit", "i48_t i16_t"),
    ("EXT-INT16", "48-bit to 32-bit", "i48_t i32_t"),
    ("EXT-INT16", "48-bit to 8-bit",  "i48_t i8_t"),
])


# ---- data_node ----------------------------------------------------------------------------------

_op("CONST", "data_node", [  # spec line 5114
    ("attr", "values", "T<out_t>", "shape", "0 to MAX_RANK"),
    ("out",  "output", "T<out_t>", "shape", "0 to MAX_RANK"),
], "out_t", [
    ("PRO-FP",            "fp16",    "fp16_t"),
    ("PRO-FP",            "fp32",    "fp32_t"),
    ("PRO-INT or PRO-FP", "16-bit",  "i16_t"),
    ("PRO-INT or PRO-FP", "32-bit",  "i32_t"),
    ("PRO-INT or PRO-FP", "8-bit",   "i8_t"),
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
    ("EXT-BF16",          "bf16",    "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3", "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2", "fp8e5m2_t"),
    ("EXT-INT16",         "48-bit",  "i48_t"),
    ("EXT-INT4",          "4-bit",   "i4_t"),
])

_op("IDENTITY", "data_node", [  # spec line 5158
    ("in",  "input1", "T<in_out_t>", "shape", "0 to MAX_RANK"),
    ("out", "output", "T<in_out_t>", "shape", "0 to MAX_RANK"),
], "in_out_t", [
    ("PRO-FP",            "fp16",    "fp16_t"),
    ("PRO-FP",            "fp32",    "fp32_t"),
    ("PRO-INT or PRO-FP", "16-bit",  "i16_t"),
    ("PRO-INT or PRO-FP", "32-bit",  "i32_t"),
    ("PRO-INT or PRO-FP", "8-bit",   "i8_t"),
    ("PRO-INT or PRO-FP", "Boolean", "bool_t"),
    ("EXT-BF16",          "bf16",    "bf16_t"),
    ("EXT-FP8E4M3",       "fp8e4m3", "fp8e4m3_t"),
    ("EXT-FP8E5M2",       "fp8e5m2", "fp8e5m2_t"),
    ("EXT-INT16",         "48-bit",  "i48_t"),
    ("EXT-INT4",          "4-bit",   "i4_t"),
])


# ---- custom -------------------------------------------------------------------------------------

# The spec table allows "All" types under PRO-INT or PRO-FP; no type rows are kept.
_op("CUSTOM", "custom", [  # spec line 5201
    ("in",   "input_list",           "tensor_list_t", "-", "-", "list"),
    ("attr", "operator_name",        "String",        "-", "-"),
    ("attr", "domain_name",          "String",        "-", "-"),
    ("attr", "implementation_attrs", "String",        "-", "-"),
    ("out",  "output_list",          "tensor_list_t", "-", "-", "list"),
])


# ---- control_flow -------------------------------------------------------------------------------

# The spec table allows "All" types under EXT-CONTROLFLOW; no type rows are kept.
_op("COND_IF", "control_flow", [  # spec line 5234
    ("in",   "condition",   "T<bool_t>",     "shape", "0 to MAX_RANK"),
    ("in",   "input_list",  "tensor_list_t", "-",     "-",             "list"),
    ("attr", "then_graph",  "tosa_graph_t",  "-",     "-"),
    ("attr", "else_graph",  "tosa_graph_t",  "-",     "-"),
    ("out",  "output_list", "tensor_list_t", "-",     "-",             "list"),
])

# The spec table allows "All" types under EXT-CONTROLFLOW; no type rows are kept.
_op("WHILE_LOOP", "control_flow", [  # spec line 5281
    ("in",   "input_list",  "tensor_list_t", "-", "-", "list"),
    ("attr", "cond_graph",  "tosa_graph_t",  "-", "-"),
    ("attr", "body_graph",  "tosa_graph_t",  "-", "-"),
    ("out",  "output_list", "tensor_list_t", "-", "-", "list"),
])


# ---- variable -----------------------------------------------------------------------------------

# VARIABLE has no inputs or outputs in the spec: the variable tensor is declared by the attributes.
_op("VARIABLE", "variable", [  # spec line 5339
    ("attr", "name",          "String",           "-",         "-"),
    ("attr", "var_shape",     "T<tensor_size_t>", "var_shape", "1"),
    ("attr", "type",          "var_t",            "-",         "-"),
    ("attr", "initial_value", "T<in_t>",          "shape",     "0 to MAX_RANK", "optional"),
], "in_t", [
    ("EXT-VARIABLE and PRO-FP",  "fp16",     "fp16_t"),
    ("EXT-VARIABLE and PRO-FP",  "fp32",     "fp32_t"),
    ("EXT-VARIABLE and PRO-INT", "signed 8", "i8_t"),
])

_op("VARIABLE_WRITE", "variable", [  # spec line 5402
    ("in",   "input1", "T<in_t>", "shape", "0 to MAX_RANK"),
    ("attr", "name",   "String",  "-",     "-"),
], "in_t", [
    ("EXT-VARIABLE and PRO-FP",  "fp16",     "fp16_t"),
    ("EXT-VARIABLE and PRO-FP",  "fp32",     "fp32_t"),
    ("EXT-VARIABLE and PRO-INT", "signed 8", "i8_t"),
])

_op("VARIABLE_READ", "variable", [  # spec line 5452
    ("attr", "name",    "String",   "-",     "-"),
    ("out",  "output1", "T<out_t>", "shape", "0 to MAX_RANK"),
], "out_t", [
    ("EXT-VARIABLE and PRO-FP",  "fp16",     "fp16_t"),
    ("EXT-VARIABLE and PRO-FP",  "fp32",     "fp32_t"),
    ("EXT-VARIABLE and PRO-INT", "signed 8", "i8_t"),
])


# ---- shape --------------------------------------------------------------------------------------

_op("CONST_SHAPE", "shape", [  # spec line 5506
    ("attr", "values", "shape_t", "-", "-"),
    ("out",  "output", "shape_t", "-", "-"),
], "", [
    ("PRO-INT or PRO-FP", "shape", ""),
])

# TOSA 1.1, EXT-SHAPE (tosa.xml's rows bind shape_t to tensor_size_t: shape_t operands are fixed-type, no variable).
_SHAPE_ROWS = [("EXT-SHAPE", "shape", "")]
for _name in ("ADD_SHAPE", "DIV_CEIL_SHAPE", "DIV_FLOOR_SHAPE", "MAX_SHAPE", "MIN_SHAPE", "MOD_SHAPE", "MUL_SHAPE",
              "SUB_SHAPE"):
    _op(_name, "shape", [
        ("in",  "input1", "shape_t", "-", "-"),
        ("in",  "input2", "shape_t", "-", "-"),
        ("out", "output", "shape_t", "-", "-"),
    ], "", _SHAPE_ROWS, since="1.1")
for _name in ("EXP2_SHAPE", "LOG2_CEIL_SHAPE", "LOG2_FLOOR_SHAPE"):
    _op(_name, "shape", [
        ("in",  "input",  "shape_t", "-", "-"),
        ("out", "output", "shape_t", "-", "-"),
    ], "", _SHAPE_ROWS, since="1.1")

# ASSERT_EQUAL_SHAPE has no output: it only checks its inputs.
_op("ASSERT_EQUAL_SHAPE", "shape", [
    ("in",   "input1",          "shape_t", "-", "-"),
    ("in",   "input2",          "shape_t", "-", "-"),
    ("attr", "allow_broadcast", "bool_t",  "-", "-"),
], "", [("EXT-SHAPE", "shape", "")], since="1.1")

# input is a shape_list_t: a list of shape_t values.
_op("CONCAT_SHAPE", "shape", [
    ("in",  "input",  "shape_t", "-", "-", "list"),
    ("out", "output", "shape_t", "-", "-"),
], "", [("EXT-SHAPE", "shape", "")], since="1.1")

_op("SLICE_SHAPE", "shape", [
    ("in",  "input",  "shape_t",  "-",   "-"),
    ("in",  "start",  "T<i32_t>", "[1]", "1"),
    ("in",  "size",   "T<i32_t>", "[1]", "1"),
    ("out", "output", "shape_t",  "-",   "-"),
], "", [("EXT-SHAPE", "shape", "")], since="1.1")

# The rows tosa.xml lists, less its DEDUCE-EXT "MX" row (a block-scaled input: the element type's row applies and
# DIM checks the block rule). Arm's generator tests bool, int8 / 16 / 32 / 64, fp16, bf16, fp32 and both fp8s.
_op("DIM", "shape", [
    ("in",   "input1", "T<in_t>", "shape", "1 to MAX_RANK"),
    ("attr", "axis",   "i32_t",   "-",     "-"),
    ("out",  "output", "shape_t", "-",     "-"),
], "in_t", [
    ("PRO-INT or PRO-FP and EXT-SHAPE",  "Boolean",   "bool_t"),
    ("PRO-INT and EXT-SHAPE",            "signed 8",  "i8_t"),
    ("PRO-INT and EXT-SHAPE",            "signed 16", "i16_t"),
    ("PRO-INT and EXT-SHAPE",            "signed 32", "i32_t"),
    ("EXT-FP8E4M3 and EXT-SHAPE",        "fp8e4m3",   "fp8e4m3_t"),
    ("EXT-FP8E5M2 and EXT-SHAPE",        "fp8e5m2",   "fp8e5m2_t"),
    ("PRO-FP and EXT-SHAPE",             "fp16",      "fp16_t"),
    ("EXT-BF16 and EXT-SHAPE",           "bf16",      "bf16_t"),
    ("PRO-FP and EXT-SHAPE",             "fp32",      "fp32_t"),
    ("EXT-MX-FP6E3M2 and EXT-SHAPE",     "fp6e3m2",   "fp6e3m2_t"),
    ("EXT-MX-FP6E2M3 and EXT-SHAPE",     "fp6e2m3",   "fp6e2m3_t"),
    ("EXT-MX-FP4E2M1 and EXT-SHAPE",     "fp4e2m1",   "fp4e2m1_t"),
    ("EXT-MX-INT8 and EXT-SHAPE",        "mxint8",    "mxint8_t"),
    ("EXT-MX-COMMON and EXT-SHAPE",      "fp8ue8m0",  "fp8ue8m0_t"),
    ("EXT-INT64 and EXT-SHAPE",          "i64",       "i64_t"),
], since="1.1")

# ---- TOSA 1.1: EXT-INT64 rows -------------------------------------------------------------------
# The i64_t rows 1.1 adds to 1.0 operators (tosa.xml typesupport rows with version_added="1.1"), as Arm's generator
# emits them (*_i64*, *_outi64*, *_idxi64* tests). The operands are the 1.0 operator's; these calls append rows.

_I64 = ("EXT-INT64", "signed 64", "i64_t", "1.1")
for _name in (
    "ADD", "ARITHMETIC_RIGHT_SHIFT", "BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "INTDIV", "LOGICAL_LEFT_SHIFT",
    "LOGICAL_RIGHT_SHIFT", "MAXIMUM", "MINIMUM", "SUB", "ABS", "BITWISE_NOT", "CLZ", "SELECT", "REDUCE_MAX",
    "REDUCE_MIN", "CONCAT", "PAD", "RESHAPE", "REVERSE", "SLICE", "TILE", "TRANSPOSE",
):
    _op(_name, "", [], "in_out_t", [_I64])
for _name in ("EQUAL", "GREATER", "GREATER_EQUAL"):
    _op(_name, "", [], "in_t out_t", [("EXT-INT64", "signed 64", "i64_t bool_t", "1.1")])

_op("MUL", "", [], "in_t out_t", [
    ("EXT-INT64", "signed 64", "i64_t i64_t", "1.1"),
])

_op("NEGATE", "", [], "in_out_t acc_t", [
    ("EXT-INT64", "signed 64", "i64_t i64_t", "1.1"),
])

_op("REDUCE_SUM", "", [], "in_out_t acc_t", [
    ("EXT-INT64", "signed 64", "i64_t i64_t", "1.1"),
])

_op("ARGMAX", "", [], "in_t out_t", [
    ("EXT-INT64",                 "signed 8",  "i8_t i64_t",      "1.1"),
    ("EXT-INT64",                 "signed 16", "i16_t i64_t",     "1.1"),
    ("EXT-INT64",                 "signed 32", "i32_t i64_t",     "1.1"),
    ("EXT-INT64",                 "signed 64", "i64_t i64_t",     "1.1"),
    ("EXT-FP8E4M3 and EXT-INT64", "fp8e4m3",   "fp8e4m3_t i64_t", "1.1"),
    ("EXT-FP8E5M2 and EXT-INT64", "fp8e5m2",   "fp8e5m2_t i64_t", "1.1"),
    ("PRO-FP and EXT-INT64",      "fp16",      "fp16_t i64_t",    "1.1"),
    ("EXT-BF16 and EXT-INT64",    "bf16",      "bf16_t i64_t",    "1.1"),
    ("PRO-FP and EXT-INT64",      "fp32",      "fp32_t i64_t",    "1.1"),
])

# GATHER / SCATTER: i64_t indices for every value type, and i64_t values.
for _name in ("GATHER", "SCATTER"):
    _op(_name, "", [], "index_t in_out_t", [
        ("PRO-INT or PRO-FP and EXT-INT64", "signed 8",  "i64_t i8_t",      "1.1"),
        ("PRO-INT or PRO-FP and EXT-INT64", "signed 16", "i64_t i16_t",     "1.1"),
        ("PRO-INT or PRO-FP and EXT-INT64", "signed 32", "i64_t i32_t",     "1.1"),
        ("EXT-INT64",                       "signed 64", "i64_t i64_t",     "1.1"),
        ("EXT-FP8E4M3 and EXT-INT64",       "fp8e4m3",   "i64_t fp8e4m3_t", "1.1"),
        ("EXT-FP8E5M2 and EXT-INT64",       "fp8e5m2",   "i64_t fp8e5m2_t", "1.1"),
        ("PRO-FP and EXT-INT64",            "fp16",      "i64_t fp16_t",    "1.1"),
        ("EXT-BF16 and EXT-INT64",          "bf16",      "i64_t bf16_t",    "1.1"),
        ("PRO-FP and EXT-INT64",            "fp32",      "i64_t fp32_t",    "1.1"),
        ("PRO-INT or PRO-FP and EXT-INT64", "Boolean",   "i64_t bool_t",    "1.1"),
    ])

# CAST: only bool_t / i32_t to and from i64_t ("to signed 64", "signed 64 to bool/i32").
_op("CAST", "", [], "in_t out_t", [
    ("EXT-INT64", "bool to signed 64",      "bool_t i64_t", "1.1"),
    ("EXT-INT64", "signed 32 to signed 64", "i32_t i64_t",  "1.1"),
    ("EXT-INT64", "signed 64 to bool",      "i64_t bool_t", "1.1"),
    ("EXT-INT64", "signed 64 to signed 32", "i64_t i32_t",  "1.1"),
])

_op("CONST", "", [], "out_t", [("EXT-INT64", "64-bit", "i64_t", "1.1")])
_op("IDENTITY", "", [], "in_out_t", [("EXT-INT64", "64-bit", "i64_t", "1.1")])
del _name, _I64

# ==== TOSA 1.1: block-scaled (MX) operators =======================================================================
# As Arm's tosa-tools 2026.8 build them: data and scales are separate plain tensors (scale_t = fp8ue8m0_t); the
# (values, scales) lists of RESHAPE_BLOCK_SCALED / ROW_GATHER_BLOCK_SCALED hold one tensor (block_size 1, scale_t
# "-") or two. block_size is the deprecated block_size_t attribute that these operators still carry.

_MX_VALUES = ("fp4e2m1", "fp6e2m3", "fp6e3m2", "fp8e4m3", "fp8e5m2", "mxint8")
_MX_EXT = {v: f"EXT-MX-{v.upper().replace('MXINT8', 'INT8')}" for v in _MX_VALUES}

_op("CAST_FROM_BLOCK_SCALED", "type_conversion", [
    ("in",   "input_data",  "T<in_t>",      "shape",          "1 to MAX_RANK"),
    ("in",   "input_scale", "T<scale_t>",   "in_scale_shape", "1 to MAX_RANK"),
    ("attr", "block_size",  "block_size_t", "-",              "-"),
    ("out",  "output_data", "T<out_t>",     "shape",          "1 to MAX_RANK"),
], "in_t scale_t out_t", [
    *((f"EXT-MX-COMMON and {_MX_EXT[v]} and EXT-BF16", f"{v} with fp8ue8m0 scale to bf16", f"{v}_t fp8ue8m0_t bf16_t")
      for v in _MX_VALUES),
    *((f"EXT-MX-COMMON and {_MX_EXT[v]}", f"{v} with fp8ue8m0 scale to fp32", f"{v}_t fp8ue8m0_t fp32_t")
      for v in _MX_VALUES),
], since="1.1")

# The draft's bf16 -> fp4e2m1 row does not name EXT-BF16 (the other bf16 rows do).
_op("CAST_TO_BLOCK_SCALED", "type_conversion", [
    ("in",   "input_data",   "T<in_t>",      "shape",           "1 to MAX_RANK"),
    ("attr", "block_size",   "block_size_t", "-",               "-"),
    ("out",  "output_data",  "T<out_t>",     "shape",           "1 to MAX_RANK"),
    ("out",  "output_scale", "T<scale_t>",   "out_scale_shape", "1 to MAX_RANK"),
], "in_t scale_t out_t", [
    *((f"EXT-MX-COMMON and {_MX_EXT[v]}" + ("" if v == "fp4e2m1" else " and EXT-BF16"),
       f"bf16 to {v} with fp8ue8m0 scale", f"bf16_t fp8ue8m0_t {v}_t") for v in _MX_VALUES),
    *((f"EXT-MX-COMMON and {_MX_EXT[v]}", f"fp32 to {v} with fp8ue8m0 scale", f"fp32_t fp8ue8m0_t {v}_t")
      for v in _MX_VALUES),
], since="1.1")

_op("CONV2D_BLOCK_SCALED", "tensor_ops", [
    ("in",   "input_data",   "T<in_t>",      "[N,IH,IW,IC]",            "4"),
    ("in",   "input_scale",  "T<scale_t>",   "[N,IH,IW,IC/block_size]", "4"),
    ("in",   "weight_data",  "T<weight_t>",  "[OC,KH,KW,IC]",           "4"),
    ("in",   "weight_scale", "T<scale_t>",   "[OC,KH,KW,IC/block_size]", "4"),
    ("in",   "bias",         "T<out_t>",     "[BC]",                    "1"),
    ("in",   "pad",          "shape_t",      "[4]",                     "1"),
    ("in",   "stride",       "shape_t",      "[2]",                     "1"),
    ("in",   "dilation",     "shape_t",      "[2]",                     "1"),
    ("attr", "block_size",   "block_size_t", "-",                       "-"),
    ("out",  "output",       "T<out_t>",     "[N,OH,OW,OC]",            "4"),
], "in_t scale_t weight_t out_t", [
    *((f"EXT-MXFP-CONV and {_MX_EXT[v]} and EXT-MX-COMMON", f"{v} with fp8ue8m0 scale factor",
       f"{v}_t fp8ue8m0_t {v}_t fp32_t") for v in _MX_VALUES if v != "mxint8"),
], since="1.1")

_op("MATMUL_T_BLOCK_SCALED", "tensor_ops", [
    ("in",   "A_data",      "T<A_t>",       "[N,H,C]",            "3"),
    ("in",   "A_scale",     "T<scale_t>",   "[N,H,C/block_size]", "3"),
    ("in",   "B_data",      "T<B_t>",       "[D,W,C]",            "3"),
    ("in",   "B_scale",     "T<scale_t>",   "[D,W,C/block_size]", "3"),
    ("attr", "block_size",  "block_size_t", "-",                  "-"),
    ("out",  "output_data", "T<out_t>",     "[N,H,W]",            "3"),
], "A_t B_t scale_t out_t", [
    *((f"EXT-MX-COMMON and {_MX_EXT[v]}", f"Scaled {v} with fp8ue8m0 scale and fp32 accumulate",
       f"{v}_t {v}_t fp8ue8m0_t fp32_t") for v in _MX_VALUES),
], since="1.1")

_op("RESHAPE_BLOCK_SCALED", "data_layout", [
    ("in",   "input",           "T<in_out_t>",  "(value_shape1,scale_shape1)", "0 to MAX_RANK", "list scaled"),
    ("in",   "new_value_shape", "shape_t",      "[rank(new_value_shape)]",      "1"),
    ("attr", "block_size",      "block_size_t", "-",                            "-"),
    ("out",  "output",          "T<in_out_t>",  "(value_shape2,scale_shape2)", "0 to MAX_RANK", "list scaled"),
], "in_out_t scale_t", [
    ("PRO-INT or PRO-FP", "Boolean",   "bool_t -"),
    ("PRO-INT",           "signed 8",  "i8_t -"),
    ("PRO-INT",           "signed 16", "i16_t -"),
    ("PRO-INT",           "signed 32", "i32_t -"),
    ("EXT-INT64",         "signed 64", "i64_t -"),
    ("EXT-FP8E4M3",       "fp8e4m3",   "fp8e4m3_t -"),
    ("EXT-FP8E5M2",       "fp8e5m2",   "fp8e5m2_t -"),
    ("PRO-FP",            "fp16",      "fp16_t -"),
    ("EXT-BF16",          "bf16",      "bf16_t -"),
    ("PRO-FP",            "fp32",      "fp32_t -"),
    *((f"EXT-MX-COMMON and {_MX_EXT[v]}", f"{v} with fp8ue8m0 scale factor", f"{v}_t fp8ue8m0_t")
      for v in _MX_VALUES),
], since="1.1")

# The draft gives values / output rank 4 with shape [N,K,C]; Arm's tools use rank 3.
_op("ROW_GATHER_BLOCK_SCALED", "scatter_gather", [
    ("in",   "values",     "T<in_out_t>",  "[N,K,C]",           "3", "list scaled"),
    ("in",   "indices",    "T<index_t>",   "[N,W]",             "2"),
    ("in",   "row_count",  "T<i32_t>",     "[1]",               "1"),
    ("attr", "block_size", "block_size_t", "-",                 "-"),
    ("out",  "output",     "T<in_out_t>",  "[N,W*row_count,C]", "3", "list scaled"),
], "in_out_t index_t scale_t", [
    *((p, m, f"{t} {i} -") for i, x in (("i32_t", ""), ("i64_t", " and EXT-INT64")) for p, m, t in (
        (f"PRO-INT{x}", "signed 8", "i8_t"),
        (f"PRO-INT{x}", "signed 16", "i16_t"),
        (f"PRO-INT{x}", "signed 32", "i32_t"),
        (f"PRO-FP{x}", "signed 8", "i8_t"),
        (f"PRO-FP{x}", "signed 16", "i16_t"),
        (f"PRO-FP{x}", "signed 32", "i32_t"),
        (f"EXT-FP8E4M3{x}", "fp8e4m3", "fp8e4m3_t"),
        (f"EXT-FP8E5M2{x}", "fp8e5m2", "fp8e5m2_t"),
        (f"PRO-FP{x}", "fp16", "fp16_t"),
        (f"EXT-BF16{x}", "bf16", "bf16_t"),
        (f"PRO-FP{x}", "fp32", "fp32_t"),
        (f"PRO-INT{x}", "Boolean", "bool_t"),
        (f"PRO-FP{x}", "Boolean", "bool_t"),
    )),
    ("EXT-INT64", "signed 64", "i64_t i64_t -"),
    *((f"EXT-MX-COMMON and {_MX_EXT[v]}{x}", f"{v} with fp8ue8m0 scale factor", f"{v}_t {i} fp8ue8m0_t")
      for i, x in (("i32_t", ""), ("i64_t", " and EXT-INT64")) for v in _MX_VALUES),
], since="1.1")

# MX rows of 1.0 operators: plain MX element constants (Arm's tests hold block-scaled operands as two plain
# tensors) and block-scaled tensors
_op("CONST", "", [], "out_t", [
    ("EXT-MX-COMMON",  "fp8ue8m0", "fp8ue8m0_t",          "1.1"),
    ("EXT-MX-FP6E3M2", "fp6e3m2",  "fp6e3m2_t",           "1.1"),
    ("EXT-MX-FP6E2M3", "fp6e2m3",  "fp6e2m3_t",           "1.1"),
    ("EXT-MX-FP4E2M1", "fp4e2m1",  "fp4e2m1_t",           "1.1"),
    ("EXT-MX-INT8",    "mxint8",   "mxint8_t",            "1.1"),
    ("DEDUCE-EXT",     "MX",       "bs32_fp8ue8m0_set_t", "1.1"),
])

_op("IDENTITY", "", [], "in_out_t", [
    ("DEDUCE-EXT", "MX", "bs32_fp8ue8m0_set_t", "1.1"),
])

# The block-scaled rows of MATMUL_T's and ROW_GATHER's "Mixed precision" / "Extension" rows (the rows with a bs32
# operand; the plain ones are in those operators' own sections, which these calls append to).
_BS = "bs32_fp8ue8m0_set_t"
_ZPS = "access_elem_type<A_t> access_elem_type<B_t>"
_op("MATMUL_T", "", [], "A_t B_t out_t A_zp_t B_zp_t", [
    *(("DEDUCE-EXT", "Mixed precision fp with bf16 accumulate", f"{a} {b} bf16_t {_ZPS}")
      for a, b in ((_BS, f"{_B_ALL}|{_BS}"), (_A_NO_FP16, _BS))),
    ("DEDUCE-EXT", "Mixed precision fp16 x fp input with bf16 accumulate",
     f"fp16_t {_BS} bf16_t fp16_t access_elem_type<B_t>"),
    *(("PRO-FP and DEDUCE-EXT", "Mixed precision fp with fp32 accumulate",
       f"{a} {b} fp32_t {_ZPS}")
      for a, b in ((_BS, f"{_FP32_ALL}|{_BS}"), (_FP32_ALL, _BS))),
], since="1.1")
_op("ROW_GATHER", "", [], "in_out_t index_t", [
    ("DEDUCE-EXT", "Extension", f"{_BS} i32_t|i64_t"),
], since="1.1")

# The block-scaled and other non-INT64 1.1 rows of 1.0 operators (tosa.xml typesupport rows with
# version_added="1.1"): a block-scaled tensor's elements and scales move together (CONCAT, RESHAPE, RESIZE nearest),
# CAST converts between plain floats and block-scaled tensors as CAST_TO / CAST_FROM_BLOCK_SCALED do.
_FP_MX = "fp8e4m3_t|fp8e5m2_t|fp16_t|bf16_t|fp32_t"
_op("CAST", "", [], "in_t out_t", [
    ("PRO-FP",     "bool to fp32", "bool_t fp32_t",  "1.1"),
    ("PRO-FP",     "fp32 to bool", "fp32_t bool_t",  "1.1"),
    ("DEDUCE-EXT", "fp to MX",     f"{_FP_MX} {_BS}", "1.1"),
    ("DEDUCE-EXT", "MX to fp",     f"{_BS} {_FP_MX}", "1.1"),
])
for _name in ("CONCAT", "RESHAPE"):
    _op(_name, "", [], "in_out_t", [("DEDUCE-EXT", "block scaled with fp8ue8m0 scale", _BS, "1.1")])
# resize_t is fp32_t; out_t is in_t's type (the draft's same_as), so one row per member rather than a set product
_op("RESIZE", "", [], "resize_t in_t out_t", [
    *(("DEDUCE-EXT", "fp8", f"fp32_t {t} {t}", "1.1") for t in ("fp8e4m3_t", "fp8e5m2_t")),
    *(("DEDUCE-EXT", "block scaled with fp8ue8m0 scale factor, nearest neighbor", f"fp32_t {t} {t}", "1.1")
      for t in BLOCK_SCALED_TYPES),
])
# GATHER / SCATTER: the signed rows under PRO-FP too, and bool_t values with i32_t indices
for _name in ("GATHER", "SCATTER"):
    _op(_name, "", [], "index_t in_out_t", [
        ("PRO-FP",            "signed 8",  "i32_t i8_t",   "1.1"),
        ("PRO-FP",            "signed 16", "i32_t i16_t",  "1.1"),
        ("PRO-FP",            "signed 32", "i32_t i32_t",  "1.1"),
        ("PRO-INT or PRO-FP", "Boolean",   "i32_t bool_t", "1.1"),
    ])
del _name
# CONV2D's "Mixed precision" rows as Arm's generator emits them (and its reference model runs them): input and weight
# of any two types of a set, fp32 / bf16 / fp16 out. The draft's first row (out_t fp16_t, acc_t bf16_t or fp32_t,
# in / weight in S1 with bf16_t and fp16_t) differs: the generator pairs fp16 out with fp16 / fp32 accumulate and no
# bf16 operand, and adds bf16 out (bf16 / fp32 accumulate, no fp16 operand). Block-scaled zero points are fp32_t; a
# block-scaled operand also needs EXT-MXFP-CONV (the generator's tests require it; the draft deduces the rest).
_CONV_ZPS = "access_elem_type<in_t> access_elem_type<weight_t>"
_op("CONV2D", "", [], "in_t weight_t out_t acc_t in_zp_t weight_zp_t", [
    *((p, f"Mixed precision fp with {acc[:-2]} accumulate, {out[:-2]} out", f"{a} {b} {out} {acc} {_CONV_ZPS}", "1.1")
      for out, plain, accs in (
          ("fp16_t", "fp8e4m3_t|fp8e5m2_t|fp16_t", ("fp16_t", "fp32_t")),
          ("bf16_t", "fp8e4m3_t|fp8e5m2_t|bf16_t", ("bf16_t", "fp32_t")),
          ("fp32_t", _FP32_ALL, ("fp32_t",)),
      ) for acc in accs for p, a, b in (
          ("DEDUCE-EXT", plain, plain),
          ("DEDUCE-EXT and EXT-MXFP-CONV", _BS, f"{plain}|{_BS}"),
          ("DEDUCE-EXT and EXT-MXFP-CONV", plain, _BS),
      )),
])
# fmt: on


# The 70 operators of TOSA 1.0 conformance; the rest of OPS are format-level nodes and the experimental extras.
TOSA_1_0_OPS: frozenset[str] = frozenset(n for n, s in OPS.items() if s.since == (1, 0)) - {
    "CUSTOM",
    "VARIABLE",
    "VARIABLE_WRITE",
    "VARIABLE_READ",
    "CONST_SHAPE",
}

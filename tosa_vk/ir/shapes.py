"""Static shape and type inference for TOSA 1.0 operators.

`infer(op, block, graph)` computes the output shapes / dtypes of one operator from its input tensors, its constant
shape inputs (CONST_SHAPE values) and its attributes, following the pseudocode of each operator in the spec.
Rules that only involve inputs and attributes (stride >= 1, axis in range, perms a permutation, broadcastable
shapes, ...) raise `TosaError` with the spec's ERROR_IF text. Comparing the result with the *declared* outputs is
left to `validate`, which uses `infer_detailed` to name the offending dimension and its rule.

Where the spec does not determine an output type from the inputs (CAST, RESCALE, CUSTOM, MATMUL fp16
accumulation) the declared output dtype is returned; without one, None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import TosaError
from .dtype import DType, DTypeLike
from .graph import Block, BlockSize, Graph, Operator, ResizeMode, Tensor
from .shape_ops import SHAPE_OPS, evaluate

Shape = tuple[int, ...]


@dataclass
class Inferred:
    """One inferred output. `dims` names each dimension as the spec does ("OH") and `rules` gives the ERROR_IF that
    defines it, so a mismatch with the declared shape can be reported against the right rule."""

    shape: Shape | None
    dtype: DType | None
    rule: str = "output shape"  # the rule tying the whole output shape to the inputs
    dims: tuple[str, ...] | None = None
    dim_rules: dict[int, str] = field(default_factory=dict)
    value: list[int] | None = None  # a shape_t output's values, when known (shape operators: shape_ops.py)


@dataclass
class _Ctx:
    op: str
    inputs: list[Tensor]
    attrs: dict[str, Any]
    declared: list[Tensor] | None  # the operator's declared outputs, when known
    graph: Graph | None
    out_dtype: list[DType | None] | None = None

    def inp(self, i: int, name: str) -> Tensor:
        if i >= len(self.inputs):
            raise TosaError(f"missing input {i} ({name}): {self.op} takes it, the operator has {len(self.inputs)}")
        return self.inputs[i]

    def attr(self, name: str) -> Any:
        if name not in self.attrs or self.attrs[name] is None:
            raise TosaError(f"missing attribute '{name}'")
        return self.attrs[name]

    def ints(self, name: str, length: int) -> tuple[int, ...]:
        value = self.attr(name)
        try:
            value = tuple(int(v) for v in value)
        except TypeError:
            raise TosaError(f"attribute '{name}' must be a list of {length} integers, got {value!r}") from None
        if len(value) != length:
            raise TosaError(f"attribute '{name}' must have {length} values, got {list(value)}")
        return value

    def declared_dtype(self, i: int = 0) -> DType | None:
        if self.out_dtype is not None and i < len(self.out_dtype):
            return self.out_dtype[i]
        if self.declared is not None and i < len(self.declared):
            return self.declared[i].dtype
        return None

    def declared_shape(self, i: int = 0) -> Shape | None:
        if self.declared is not None and i < len(self.declared) and not self.declared[i].unranked:
            return self.declared[i].shape
        return None


def shape_value(t: Tensor) -> list[int] | None:
    """The values of a shape_t input (a CONST_SHAPE output), or None when not known statically."""
    if t.data is None:
        return None
    return [int(v) for v in np.asarray(t.data).reshape(-1)]


def idiv_check(a: int, b: int, rule: str) -> int:
    """The spec's idiv_check: exact division (ERROR_IF(input1 % input2 != 0))."""
    if b == 0 or a % b != 0:
        raise TosaError(f"{rule}: {a} is not a multiple of {b} (idiv_check)")
    return a // b


def power_of_two(v: int) -> bool:
    return v >= 1 and (v & (v - 1)) == 0


def _err(cond: bool, rule: str, detail: str = "") -> None:
    if cond:
        raise TosaError(rule + (f": {detail}" if detail else ""))


def _rank(t: Tensor, rank: int, what: str, dims: str) -> Shape:
    _err(t.rank != rank, f"{what} must have rank {rank} ({dims})", f"got shape {list(t.shape)}")
    return t.shape


def _positive(shape: Sequence[int], names: Sequence[str], rule: str) -> Shape:
    for n, d in zip(names, shape):
        _err(d < 1, rule, f"computed {n}={d}, output dimensions must be >= 1")
    return tuple(int(d) for d in shape)


def broadcast_shape(shape1: Shape, shape2: Shape) -> Shape:
    """The spec's broadcast_shape (ranks must match, a dimension broadcasts when it is 1)."""
    _err(
        len(shape1) != len(shape2),
        "ERROR_IF(rank(shape1) != rank(shape2)) in broadcast_shape",
        f"{list(shape1)} vs {list(shape2)}",
    )
    out = list(shape1)
    for i, (a, b) in enumerate(zip(shape1, shape2)):
        if a == 1:
            out[i] = b
        else:
            _err(
                b != 1 and b != a,
                "ERROR_IF(shape2[i] != 1 && shape2[i] != shape[i]) in broadcast_shape",
                f"{list(shape1)} and {list(shape2)} differ in dimension {i}",
            )
    return tuple(out)


# --- operator families ------------------------------------------------------------------------------------------

BINARY_SAME = (
    "ADD",
    "SUB",
    "MAXIMUM",
    "MINIMUM",
    "POW",
    "ARITHMETIC_RIGHT_SHIFT",
    "BITWISE_AND",
    "BITWISE_OR",
    "BITWISE_XOR",
    "INTDIV",
    "LOGICAL_AND",
    "LOGICAL_OR",
    "LOGICAL_XOR",
    "LOGICAL_LEFT_SHIFT",
    "LOGICAL_RIGHT_SHIFT",
)
COMPARISON = ("EQUAL", "GREATER", "GREATER_EQUAL")
UNARY_SAME = (
    "ABS",
    "BITWISE_NOT",
    "CEIL",
    "CLZ",
    "COS",
    "EXP",
    "FLOOR",
    "LOG",
    "LOGICAL_NOT",
    "NEGATE",
    "RECIPROCAL",
    "RSQRT",
    "SIN",
    "ERF",
    "SIGMOID",
    "TANH",
    "CLAMP",
    "IDENTITY",
)
REDUCE = ("REDUCE_ALL", "REDUCE_ANY", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PRODUCT", "REDUCE_SUM")

_BROADCAST_RULE = "ERROR_IF(shape != broadcast_shape(shape1, shape2))"


def _elementwise_binary(c: _Ctx) -> list[Inferred]:
    a, b = c.inp(0, "input1"), c.inp(1, "input2")
    shape = broadcast_shape(a.shape, b.shape)
    if c.op in COMPARISON:
        dtype = DType.BOOL
    elif c.op == "MUL":
        dtype = DType.INT32 if a.dtype in (DType.INT8, DType.INT16, DType.INT32) else a.dtype
    else:
        dtype = a.dtype
    return [Inferred(shape, dtype, _BROADCAST_RULE)]


def _select(c: _Ctx) -> list[Inferred]:
    s1, s2, s3 = (c.inp(i, n).shape for i, n in enumerate(("input1", "input2", "input3")))
    shape = broadcast_shape(broadcast_shape(s1, s2), s3)
    return [
        Inferred(
            shape, c.inputs[1].dtype, "ERROR_IF(shape != broadcast_shape(broadcast_shape(shape1, shape2), shape3))"
        )
    ]


def _elementwise_unary(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input")
    if c.op in ("CAST", "RESCALE"):
        dtype = c.declared_dtype()
    elif c.op == "TABLE":
        dtype = DType.INT32 if t.dtype == DType.INT16 else t.dtype
    else:
        dtype = t.dtype
    return [Inferred(t.shape, dtype, "output shape must equal the input shape")]


def _axis(c: _Ctx, rank: int, rule: str = "ERROR_IF(axis < 0 || axis >= rank(shape1))") -> int:
    axis = int(c.attr("axis"))
    _err(axis < 0 or axis >= rank, rule, f"axis={axis}, rank={rank}")
    return axis


def _argmax(c: _Ctx) -> list[Inferred]:
    s = c.inp(0, "input").shape
    axis = _axis(c, len(s))
    # out_t is i32_t, or i64_t with EXT-INT64 (TOSA 1.1): a declared INT64 output is the latter
    out_t = DType.INT64 if c.declared_dtype() == DType.INT64 else DType.INT32
    return [Inferred(s[:axis] + s[axis + 1 :], out_t, "ERROR_IF(flatten(left_shape, right_shape) != shape)")]


def _reduce(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input")
    axis = _axis(c, t.rank)
    shape = t.shape[:axis] + (1,) + t.shape[axis + 1 :]
    return [
        Inferred(
            shape,
            t.dtype,
            "output shape must equal the input shape with shape[axis] = 1",
            dim_rules={axis: "ERROR_IF(shape[axis] != 1)"},
        )
    ]


def _pool2d(c: _Ctx) -> list[Inferred]:
    return _pool2d_out(c, c.ints("kernel", 2), c.ints("stride", 2), c.ints("pad", 4))


def _pool2d_adaptive(c: _Ctx) -> list[Inferred]:
    """AVG_POOL2D_ADAPTIVE / MAX_POOL2D_ADAPTIVE: AVG_POOL2D / MAX_POOL2D with kernel, stride and pad as shape_t
    inputs (after AVG's two zero points)."""
    first = 3 if c.op == "AVG_POOL2D_ADAPTIVE" else 1
    kernel = _shape_input(c, first, "kernel", 2)
    stride = _shape_input(c, first + 1, "stride", 2)
    pad = _shape_input(c, first + 2, "pad", 4)
    if kernel is None or stride is None or pad is None:
        return [Inferred(c.declared_shape(), c.inp(0, "input").dtype)]
    return _pool2d_out(c, kernel, stride, pad)


def _pool2d_out(c: _Ctx, kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int]) -> list[Inferred]:
    t = c.inp(0, "input")
    n, ih, iw, ch = _rank(t, 4, "input", "[N,IH,IW,C]")
    ky, kx = kernel
    sy, sx = stride
    pt, pb, pl, pr = pad
    _err(ky < 1 or kx < 1, "ERROR_IF(kernel_y < 1 || kernel_x < 1)", f"kernel={[ky, kx]}")
    _err(sy < 1 or sx < 1, "ERROR_IF(stride_y < 1 || stride_x < 1)", f"stride={[sy, sx]}")
    _err(
        min(pt, pb, pl, pr) < 0,
        "ERROR_IF(pad_top < 0 || pad_bottom < 0 || pad_left < 0 || pad_right < 0)",
        f"pad={[pt, pb, pl, pr]}",
    )
    _err(
        pr >= kx or pl >= kx,
        "ERROR_IF(pad_right >= kernel_x || pad_left >= kernel_x)",
        f"pad={[pt, pb, pl, pr]}, kernel={[ky, kx]}",
    )
    _err(
        pt >= ky or pb >= ky,
        "ERROR_IF(pad_top >= kernel_y || pad_bottom >= kernel_y)",
        f"pad={[pt, pb, pl, pr]}, kernel={[ky, kx]}",
    )
    rh = "ERROR_IF(OH != idiv_check(IH + pad_top + pad_bottom - kernel_y, stride_y) + 1)"
    rw = "ERROR_IF(OW != idiv_check(IW + pad_left + pad_right - kernel_x, stride_x) + 1)"
    oh = idiv_check(ih + pt + pb - ky, sy, rh) + 1
    ow = idiv_check(iw + pl + pr - kx, sx, rw) + 1
    _positive((oh, ow), ("OH", "OW"), rh if oh < 1 else rw)
    return [Inferred((n, oh, ow, ch), t.dtype, "output shape [N,OH,OW,C]", ("N", "OH", "OW", "C"), {1: rh, 2: rw})]


def _conv_out(c: _Ctx, spatial: str, ins: Shape, ks: Shape) -> tuple[list[int], dict[str, str]]:
    """Output sizes of CONV2D / CONV3D / DEPTHWISE_CONV2D along the spatial axes (`spatial` = "HW" or "DHW")."""
    nd = len(spatial)
    pad = c.ints("pad", 2 * nd)
    stride = c.ints("stride", nd)
    dil = c.ints("dilation", nd)
    pad_names = {"D": ("pad_d0", "pad_d1"), "H": ("pad_top", "pad_bottom"), "W": ("pad_left", "pad_right")}
    axis_names = {"D": "d", "H": "y", "W": "x"}
    pn = [n for a in spatial for n in pad_names[a]]
    _err(min(pad) < 0, f"ERROR_IF({' || '.join(f'{n} < 0' for n in pn)})", f"pad={list(pad)}")
    sn = [f"stride_{axis_names[a]}" for a in spatial]
    _err(min(stride) < 1, f"ERROR_IF({' || '.join(f'{n} < 1' for n in sn)})", f"stride={list(stride)}")
    dn = [f"dilation_{axis_names[a]}" for a in spatial]
    _err(min(dil) < 1, f"ERROR_IF({' || '.join(f'{n} < 1' for n in dn)})", f"dilation={list(dil)}")
    outs, rules = [], {}
    for i, a in enumerate(spatial):
        p0, p1 = pad_names[a]
        ax = axis_names[a]
        rule = f"ERROR_IF(O{a} != idiv_check(I{a} - 1 + {p0} + {p1} - (K{a} - 1) * dilation_{ax}, stride_{ax}) + 1)"
        o = idiv_check(ins[i] - 1 + pad[2 * i] + pad[2 * i + 1] - (ks[i] - 1) * dil[i], stride[i], rule) + 1
        _positive((o,), (f"O{a}",), rule)
        outs.append(o)
        rules[f"O{a}"] = rule
    return outs, rules


def _bias(c: _Ctx, oc: int, oc_name: str) -> Tensor:
    bias = c.inp(2, "bias")
    _rank(bias, 1, "bias", "[BC]")
    _err(
        bias.shape[0] != oc and bias.shape[0] != 1,
        f"ERROR_IF(BC != {oc_name} && BC != 1)",
        f"BC={bias.shape[0]}, {oc_name}={oc}",
    )
    return bias


def _conv2d(c: _Ctx) -> list[Inferred]:
    n, ih, iw, ic = _rank(c.inp(0, "input"), 4, "input", "[N,IH,IW,IC]")
    oc, kh, kw, wic = _rank(c.inp(1, "weight"), 4, "weight", "[OC,KH,KW,IC]")
    _err(wic != ic, "weight [OC,KH,KW,IC] must have the input's IC", f"input IC={ic}, weight IC={wic}")
    bias = _bias(c, oc, "OC")
    (oh, ow), rules = _conv_out(c, "HW", (ih, iw), (kh, kw))
    return [
        Inferred(
            (n, oh, ow, oc),
            bias.dtype,
            "output shape [N,OH,OW,OC]",
            ("N", "OH", "OW", "OC"),
            {1: rules["OH"], 2: rules["OW"]},
        )
    ]


def _conv3d(c: _Ctx) -> list[Inferred]:
    n, id_, ih, iw, ic = _rank(c.inp(0, "input"), 5, "input", "[N,ID,IH,IW,IC]")
    oc, kd, kh, kw, wic = _rank(c.inp(1, "weight"), 5, "weight", "[OC,KD,KH,KW,IC]")
    _err(wic != ic, "weight [OC,KD,KH,KW,IC] must have the input's IC", f"input IC={ic}, weight IC={wic}")
    bias = _bias(c, oc, "OC")
    (od, oh, ow), rules = _conv_out(c, "DHW", (id_, ih, iw), (kd, kh, kw))
    return [
        Inferred(
            (n, od, oh, ow, oc),
            bias.dtype,
            "output shape [N,OD,OH,OW,OC]",
            ("N", "OD", "OH", "OW", "OC"),
            {1: rules["OD"], 2: rules["OH"], 3: rules["OW"]},
        )
    ]


def _depthwise_conv2d(c: _Ctx) -> list[Inferred]:
    n, ih, iw, ch = _rank(c.inp(0, "input"), 4, "input", "[N,IH,IW,C]")
    kh, kw, wc, m = _rank(c.inp(1, "weight"), 4, "weight", "[KH,KW,C,M]")
    _err(wc != ch, "weight [KH,KW,C,M] must have the input's C", f"input C={ch}, weight C={wc}")
    bias = _bias(c, ch * m, "C*M")
    (oh, ow), rules = _conv_out(c, "HW", (ih, iw), (kh, kw))
    return [
        Inferred(
            (n, oh, ow, ch * m),
            bias.dtype,
            "output shape [N,OH,OW,C*M]",
            ("N", "OH", "OW", "C*M"),
            {1: rules["OH"], 2: rules["OW"]},
        )
    ]


def _transpose_conv2d(c: _Ctx) -> list[Inferred]:
    n, ih, iw, ic = _rank(c.inp(0, "input"), 4, "input", "[N,IH,IW,IC]")
    oc, kh, kw, wic = _rank(c.inp(1, "weight"), 4, "weight", "[OC,KH,KW,IC]")
    _err(wic != ic, "weight [OC,KH,KW,IC] must have the input's IC", f"input IC={ic}, weight IC={wic}")
    bias = _bias(c, oc, "OC")
    pt, pb, pl, pr = c.ints("out_pad", 4)
    sy, sx = c.ints("stride", 2)
    _err(
        pt <= -kh or pb <= -kh,
        "ERROR_IF(out_pad_top <= -KH || out_pad_bottom <= -KH)",
        f"out_pad={[pt, pb, pl, pr]}, KH={kh}",
    )
    _err(
        pl <= -kw or pr <= -kw,
        "ERROR_IF(out_pad_left <= -KW || out_pad_right <= -KW)",
        f"out_pad={[pt, pb, pl, pr]}, KW={kw}",
    )
    _err(sy < 1 or sx < 1, "ERROR_IF(stride_y < 1 || stride_x < 1)", f"stride={[sy, sx]}")
    rh = "ERROR_IF(OH != (IH - 1) * stride_y + out_pad_top + out_pad_bottom + KH)"
    rw = "ERROR_IF(OW != (IW - 1) * stride_x + out_pad_left + out_pad_right + KW)"
    oh = (ih - 1) * sy + pt + pb + kh
    ow = (iw - 1) * sx + pl + pr + kw
    _positive((oh, ow), ("OH", "OW"), rh if oh < 1 else rw)
    return [Inferred((n, oh, ow, oc), bias.dtype, "output shape [N,OH,OW,OC]", ("N", "OH", "OW", "OC"), {1: rh, 2: rw})]


_MATMUL_OUT = {
    DType.INT8: DType.INT32,
    DType.INT16: DType.INT48,
    DType.FP16: DType.FP16,
    DType.FP32: DType.FP32,
    DType.BF16: DType.FP32,
    DType.FP8E4M3: DType.FP16,
    DType.FP8E5M2: DType.FP16,
}


def _matmul(c: _Ctx) -> list[Inferred]:
    n, h, ch = _rank(c.inp(0, "A"), 3, "A", "[N,H,C]")
    n2, c2, w = _rank(c.inp(1, "B"), 3, "B", "[N,C,W]")
    _err(n2 != n, "A [N,H,C] and B [N,C,W] must have the same N", f"{n} vs {n2}")
    _err(c2 != ch, "A [N,H,C] and B [N,C,W] must have the same C", f"{ch} vs {c2}")
    a = c.inputs[0].dtype
    dtype = _MATMUL_OUT.get(a)
    declared = c.declared_dtype()
    if a in (DType.FP16, DType.FP8E4M3, DType.FP8E5M2) and declared in (DType.FP16, DType.FP32):
        dtype = declared  # fp16 (fp8: 1.1) with fp16 or fp32 accumulate
    return [Inferred((n, h, w), dtype, "output shape [N,H,W]", ("N", "H", "W"))]


def _matmul_t(c: _Ctx) -> list[Inferred]:
    n, h, ch = _rank(c.inp(0, "A"), 3, "A", "[N,H,C]")
    d, w, c2 = _rank(c.inp(1, "B"), 3, "B", "[D,W,C]")
    _err(d != n and d != 1, "ERROR_IF(D != N && D != 1)", f"A has N={n}, B has D={d}")
    _err(c2 != ch, "A [N,H,C] and B [D,W,C] must have the same C", f"{ch} vs {c2}")
    a = c.inputs[0].dtype
    dtype: DType | None = _MATMUL_OUT.get(a) if not a.is_float else None
    if dtype is None:  # floating point: bf16, fp16 (fp16 x fp16 only) or fp32 as declared; fp32 fits every pair
        declared = c.declared_dtype()
        dtype = declared if declared in (DType.BF16, DType.FP16, DType.FP32) else DType.FP32
    return [Inferred((n, h, w), dtype, "output shape [N,H,W]", ("N", "H", "W"))]


def _fft_hw(h: int, w: int) -> None:
    _err(not power_of_two(h), "ERROR_IF(!power_of_two(H))", f"H={h}")
    _err(not power_of_two(w), "ERROR_IF(!power_of_two(W))", f"W={w}")


def _fft2d(c: _Ctx) -> list[Inferred]:
    re, im = c.inp(0, "input_real"), c.inp(1, "input_imag")
    n, h, w = _rank(re, 3, "input_real", "[N,H,W]")
    _err(
        im.shape != re.shape,
        "input_imag must have the shape of input_real [N,H,W]",
        f"{list(im.shape)} vs {list(re.shape)}",
    )
    _fft_hw(h, w)
    out = Inferred((n, h, w), re.dtype, "output shape [N,H,W]", ("N", "H", "W"))
    return [out, Inferred(out.shape, out.dtype, out.rule, out.dims)]


def _rfft2d(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input_real")
    n, h, w = _rank(t, 3, "input_real", "[N,H,W]")
    _fft_hw(h, w)
    shape = (n, h, w // 2 + 1)
    return [Inferred(shape, t.dtype, "output shape [N,H,W/2 + 1]", ("N", "H", "W/2 + 1")) for _ in range(2)]


def _concat(c: _Ctx) -> list[Inferred]:
    _err(not c.inputs, "ERROR_IF(input1 == [])", "CONCAT needs at least one input")
    shapes = [t.shape for t in c.inputs]
    axis = _axis(c, max(1, len(shapes[0])), "ERROR_IF(axis < 0 || axis >= max(1,rank(shapes1[0])))")
    total = 0
    for i, s in enumerate(shapes):
        _err(
            len(s) != len(shapes[0]),
            "ERROR_IF(rank(shapes1[shape_index]) != rank(shapes1[0]))",
            f"input {i} has shape {list(s)}, input 0 {list(shapes[0])}",
        )
        for d, (x, y) in enumerate(zip(s, shapes[0])):
            if d == axis:
                total += x
            else:
                _err(
                    x != y,
                    "ERROR_IF(shapes1[shape_index][axis_index] != shapes1[0][axis_index])",
                    f"input {i} has shape {list(s)}, input 0 {list(shapes[0])}",
                )
    shape = list(shapes[0])
    if shape:
        shape[axis] = total
    return [
        Inferred(tuple(shape), c.inputs[0].dtype, "output shape", dim_rules={axis: "ERROR_IF(axis_sum != shape[axis])"})
    ]


def _shape_input(c: _Ctx, i: int, name: str, length: int | None) -> list[int] | None:
    t = c.inp(i, name)
    _err(
        t.dtype != DType.SHAPE,
        f"input '{name}' must be a shape_t value (a CONST_SHAPE output)",
        f"got a {t.dtype} tensor",
    )
    vals = shape_value(t)
    if vals is not None and length is not None:
        _err(len(vals) != length, f"input '{name}' must hold {length} values", f"got {vals}")
    return vals


def _pad(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input1")
    pads = _shape_input(c, 1, "padding", 2 * t.rank)
    if pads is None:
        return [Inferred(c.declared_shape(), t.dtype)]
    for i in range(t.rank):
        _err(
            pads[2 * i] < 0 or pads[2 * i + 1] < 0,
            "ERROR_IF(padding[i * 2] < 0 || padding[(i * 2) + 1] < 0)",
            f"padding={pads}",
        )
    shape = tuple(pads[2 * i] + d + pads[2 * i + 1] for i, d in enumerate(t.shape))
    return [
        Inferred(
            shape,
            t.dtype,
            "ERROR_IF(rank(shape) != rank(shape1))",
            dim_rules={
                i: "ERROR_IF(shape[i] != padding[i * 2] + shape1[i] + padding[(i * 2) + 1])" for i in range(t.rank)
            },
        )
    ]


def _reshape(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input1")
    vals = _shape_input(c, 1, "shape", None)
    if vals is None:
        return [Inferred(c.declared_shape(), t.dtype)]
    rule = "ERROR_IF(tensor_size(shape1) != tensor_size(shape))"
    if vals.count(-1) == 1:  # not TOSA 1.0 (shape values must be >= 1); resolved here so validate can say so
        rest = int(np.prod([v for v in vals if v != -1], dtype=np.int64))
        if rest > 0 and t.size % rest == 0:
            vals[vals.index(-1)] = t.size // rest
    _err(any(v < 1 for v in vals), "shape values must be >= 1 (tensor_size: REQUIRE(1 <= shape[i]))", f"shape={vals}")
    size = int(np.prod(vals, dtype=np.int64))
    _err(size != t.size, rule, f"input {list(t.shape)} has {t.size} elements, shape {vals} has {size}")
    return [Inferred(tuple(vals), t.dtype, "output shape must equal the shape input")]


def _reverse(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input1")
    _axis(c, t.rank, "ERROR_IF(axis < 0 || axis >= rank(shape))")
    return [Inferred(t.shape, t.dtype, "output shape must equal the input shape")]


def _slice(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input1")
    start = _shape_input(c, 1, "start", None)
    size = _shape_input(c, 2, "size", None)
    if start is None or size is None:
        return [Inferred(c.declared_shape(), t.dtype)]
    _err(
        t.rank != len(start) or t.rank != len(size),
        "ERROR_IF(rank(shape1) != length(start) || rank(shape1) != length(size))",
        f"rank {t.rank}, start={start}, size={size}",
    )
    for i in range(t.rank):
        _err(start[i] < 0, "ERROR_IF(start[index] < 0)", f"start={start}")
        _err(size[i] <= 0, "ERROR_IF(size[index] <= 0)", f"size={size}")
        _err(
            start[i] + size[i] > t.shape[i],
            "ERROR_IF(start[index] + size[index] > shape1[index])",
            f"input {list(t.shape)}, start={start}, size={size}",
        )
    return [
        Inferred(
            tuple(size),
            t.dtype,
            "ERROR_IF(rank(shape1) != rank(shape))",
            dim_rules={i: "ERROR_IF(shape[index] != size[index])" for i in range(t.rank)},
        )
    ]


def _tile(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input1")
    mult = _shape_input(c, 1, "multiples", t.rank)
    if mult is None:
        return [Inferred(c.declared_shape(), t.dtype)]
    rule = "ERROR_IF(shape1[i] * multiples[i] != shape[i])"
    _err(any(m < 1 for m in mult), "multiples must be >= 1 (output dimensions must be >= 1)", f"multiples={mult}")
    return [
        Inferred(
            tuple(d * m for d, m in zip(t.shape, mult)),
            t.dtype,
            "ERROR_IF(rank(shape1) != rank(shape))",
            dim_rules={i: rule for i in range(t.rank)},
        )
    ]


def _transpose(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input1")
    perms = c.ints("perms", t.rank)
    used = set()
    for p in perms:
        _err(p >= t.rank, "ERROR_IF(index >= rank(shape1))", f"perms={list(perms)}, rank={t.rank}")
        _err(p < 0, "ERROR_IF(index < 0)", f"perms={list(perms)}")
        _err(p in used, "ERROR_IF(indexes_used[index] == true)", f"perms={list(perms)} repeats {p}")
        used.add(p)
    return [
        Inferred(
            tuple(t.shape[p] for p in perms),
            t.dtype,
            "ERROR_IF(rank(shape1) != rank(shape))",
            dim_rules={i: "ERROR_IF(shape1[perms[i]] != shape[i])" for i in range(t.rank)},
        )
    ]


def _gather(c: _Ctx) -> list[Inferred]:
    values = c.inp(0, "values")
    n, k, ch = _rank(values, 3, "values", "[N,K,C]")
    n2, w = _rank(c.inp(1, "indices"), 2, "indices", "[N,W]")
    _err(n2 != n, "values [N,K,C] and indices [N,W] must have the same N", f"{n} vs {n2}")
    return [Inferred((n, w, ch), values.dtype, "output shape [N,W,C]", ("N", "W", "C"))]


def _row_gather(c: _Ctx) -> list[Inferred]:
    values = c.inp(0, "values")
    n, k, ch = _rank(values, 3, "values", "[N,K,C]")
    n2, w = _rank(c.inp(1, "indices"), 2, "indices", "[N,W]")
    _err(n2 != n, "values [N,K,C] and indices [N,W] must have the same N", f"{n} vs {n2}")
    row_count = c.inp(2, "row_count")
    if row_count.data is None or np.size(row_count.data) != 1:
        return [Inferred(c.declared_shape(), values.dtype)]
    r = int(np.asarray(row_count.data).reshape(-1)[0])
    _err(r < 1, "ERROR_IF(row_count < 1)", f"row_count={r}")
    return [Inferred((n, w * r, ch), values.dtype, "output shape [N,W*row_count,C]", ("N", "W*row_count", "C"))]


def _scatter(c: _Ctx) -> list[Inferred]:
    values = c.inp(0, "values_in")
    n, k, ch = _rank(values, 3, "values_in", "[N,K,C]")
    n2, w = _rank(c.inp(1, "indices"), 2, "indices", "[N,W]")
    ishape = _rank(c.inp(2, "input"), 3, "input", "[N,W,C]")
    _err(n2 != n, "values_in [N,K,C] and indices [N,W] must have the same N", f"{n} vs {n2}")
    _err(ishape != (n, w, ch), "input must have shape [N,W,C]", f"got {list(ishape)}, expected {[n, w, ch]}")
    return [Inferred((n, k, ch), values.dtype, "values_out shape [N,K,C]", ("N", "K", "C"))]


_RESIZE_OUT = {(DType.INT8, ResizeMode.BILINEAR): DType.INT32, (DType.INT16, ResizeMode.BILINEAR): DType.INT48}


def _resize(c: _Ctx) -> list[Inferred]:
    t = c.inp(0, "input")
    n, ih, iw, ch = _rank(t, 4, "input", "[N,IH,IW,C]")
    scale = _shape_input(c, 1, "scale", 4)
    offset = _shape_input(c, 2, "offset", 2)
    border = _shape_input(c, 3, "border", 2)
    mode = c.attr("mode")
    dtype = _RESIZE_OUT.get((t.dtype, mode), t.dtype)
    _err(
        t.block_scaled and mode != ResizeMode.NEAREST,
        "ERROR_IF(is_block_scale<in_t>() && mode != NEAREST_NEIGHBOR)",
        f"mode={mode.name if isinstance(mode, ResizeMode) else mode}",
    )
    if scale is None or offset is None or border is None:
        return [Inferred(c.declared_shape(), dtype)]
    syn, syd, sxn, sxd = scale
    oy, ox = offset
    by, bx = border
    _err(
        min(scale) <= 0,
        "ERROR_IF(scale_y_n <= 0 || scale_y_d <= 0 || scale_x_n <= 0 || scale_x_d <= 0)",
        f"scale={scale}",
    )
    _err(
        syn > (1 << 11) or sxn > (1 << 11), "ERROR_IF(scale_y_n > (1 << 11) || scale_x_n > (1 << 11))", f"scale={scale}"
    )
    _err(
        syd >= 16 * syn or sxd >= 16 * sxn,
        "ERROR_IF(scale_y_d >= 16 * scale_y_n || scale_x_d >= 16 * scale_x_n)",
        f"scale={scale}",
    )
    _err(
        oy < -syn or oy >= 16 * syn,
        "ERROR_IF(offset_y < -scale_y_n || offset_y >= 16 * scale_y_n)",
        f"offset={offset}, scale={scale}",
    )
    _err(
        ox < -sxn or ox >= 16 * sxn,
        "ERROR_IF(offset_x < -scale_x_n || offset_x >= 16 * scale_x_n)",
        f"offset={offset}, scale={scale}",
    )
    _err(
        by < -16 * syn or by >= syn,
        "ERROR_IF(border_y < -16 * scale_y_n || border_y >= scale_y_n)",
        f"border={border}, scale={scale}",
    )
    _err(
        bx < -16 * sxn or bx >= sxn,
        "ERROR_IF(border_x < -16 * scale_x_n || border_x >= scale_x_n)",
        f"border={border}, scale={scale}",
    )
    rh = "ERROR_IF(OH != idiv_check((IH - 1) * scale_y_n - offset_y + border_y, scale_y_d) + 1)"
    rw = "ERROR_IF(OW != idiv_check((IW - 1) * scale_x_n - offset_x + border_x, scale_x_d) + 1)"
    oh = idiv_check((ih - 1) * syn - oy + by, syd, rh) + 1
    ow = idiv_check((iw - 1) * sxn - ox + bx, sxd, rw) + 1
    _positive((oh, ow), ("OH", "OW"), rh if oh < 1 else rw)
    _err(max(oh, ow, ih, iw) >= 16384, "ERROR_IF(max(OH,OW,IH,IW) >= 16384)", f"IH={ih} IW={iw} OH={oh} OW={ow}")
    return [Inferred((n, oh, ow, ch), dtype, "output shape [N,OH,OW,C]", ("N", "OH", "OW", "C"), {1: rh, 2: rw})]


def _const(c: _Ctx) -> list[Inferred]:
    shape = c.declared_shape()
    if c.declared and c.declared[0].data is not None and shape is None:
        shape = tuple(np.shape(c.declared[0].data))
    return [Inferred(shape, c.declared_dtype())]


def _const_shape(c: _Ctx) -> list[Inferred]:
    t = c.declared[0] if c.declared else None
    if t is not None and t.data is not None:
        return [Inferred((int(np.size(t.data)),), DType.SHAPE)]
    return [Inferred(c.declared_shape(), DType.SHAPE)]


def _shape_op(c: _Ctx) -> list[Inferred]:
    """TOSA 1.1's shape operators and DIM: the value is computed from the constant inputs (shape_ops.py)."""
    t = c.inputs[0] if c.inputs else None
    if c.op == "DIM":
        scaled = t is not None and t.block_scaled
        value = evaluate(c.op, [], c.attrs, None if t is None else t.shape, t.block_size if scaled and t else 0)
    else:
        value = evaluate(c.op, [shape_value(x) for x in c.inputs], c.attrs)
    if c.op == "ASSERT_EQUAL_SHAPE":
        return []
    if value is None:
        return [Inferred(c.declared_shape(), DType.SHAPE)]
    rule = (
        "ERROR_IF(length(output) != sum(length(input[k]) for all k))"
        if c.op == "CONCAT_SHAPE"
        else "output length (the number of values the operator computes)"
    )
    return [Inferred((len(value),), DType.SHAPE, rule, value=value)]


def _declared(c: _Ctx) -> list[Inferred]:
    """Outputs that cannot be inferred from the inputs (CUSTOM, VARIABLE_READ): the declared ones."""
    n = len(c.declared) if c.declared is not None else len(c.out_dtype or ())
    return [Inferred(c.declared_shape(i), c.declared_dtype(i)) for i in range(n)]


def _region_block(c: _Ctx, attr: str) -> Block | None:
    if c.graph is None:
        return None
    name = c.attr(attr)
    try:
        region = c.graph.region(name)
    except KeyError:
        raise TosaError(f"{attr} '{name}' names no region of the graph") from None
    _err(not region.blocks, f"{attr} region '{name}' has no block")
    return region.blocks[0]


def _cond_if(c: _Ctx) -> list[Inferred]:
    then = _region_block(c, "then_graph")
    if then is None:
        return _declared(c)
    return [
        Inferred(
            then.tensors[n].shape if n in then.tensors else None,
            then.tensors[n].dtype if n in then.tensors else None,
            "ERROR_IF(tensor_list_shape(output_list) != tosa_output_shape(then_graph))",
        )
        for n in then.outputs
    ]


def _while_loop(c: _Ctx) -> list[Inferred]:
    return [
        Inferred(t.shape, t.dtype, "ERROR_IF(tensor_list_shape(input_list) != tensor_list_shape(output_list))")
        for t in c.inputs
    ]


def _none(c: _Ctx) -> list[Inferred]:
    return []


# ---- TOSA 1.1 block-scaled (MX) operators ----------------------------------------------------------------------


def _block_size(c: _Ctx) -> int:
    """The block_size attribute as a number of elements (BlockSize values are their sizes)."""
    value = c.attr("block_size")
    try:
        return int(BlockSize[value.upper()] if isinstance(value, str) else value)
    except (KeyError, ValueError, TypeError):
        raise TosaError(f"attribute block_size has an invalid value {value!r}") from None


def _scale_shape(shape: Shape, block: int) -> Shape:
    return (*shape[:-1], shape[-1] // block)


def _scales_match(scale: Tensor, want: Shape, what: str, dims: str) -> None:
    _err(
        scale.shape != want,
        f"{what} must have shape {dims}",
        f"got {list(scale.shape)}, expected {list(want)}",
    )


def _cast_from_block_scaled(c: _Ctx) -> list[Inferred]:
    data, scale, block = c.inp(0, "input_data"), c.inp(1, "input_scale"), _block_size(c)
    shape = data.shape
    _err(
        not shape or shape[-1] % block != 0,
        "ERROR_IF(rank(shape) == 0 || shape[rank(shape)-1] % block_size != 0)",
        f"shape={list(shape)}, block_size={block}",
    )
    _err(
        len(shape) != scale.rank,
        "ERROR_IF(rank(shape) != rank(in_scale_shape))",
        f"{list(shape)} vs {list(scale.shape)}",
    )
    _err(block == 1, "ERROR_IF(block_size == 1)")
    for i in range(len(shape) - 1):
        _err(
            shape[i] != scale.shape[i],
            "ERROR_IF(shape[axis_index] != in_scale_shape[axis_index])",
            f"axis {i}: {shape[i]} vs {scale.shape[i]}",
        )
    _err(
        shape[-1] != scale.shape[-1] * block,
        "ERROR_IF(shape[rank(shape) - 1] != in_scale_shape[rank(shape) - 1] * block_size)",
        f"{shape[-1]} vs {scale.shape[-1]} * {block}",
    )
    return [Inferred(shape, c.declared_dtype(0), "output shape must equal the input_data shape")]


def _cast_to_block_scaled(c: _Ctx) -> list[Inferred]:
    shape, block = c.inp(0, "input_data").shape, _block_size(c)
    _err(
        not shape or shape[-1] % block != 0,
        "ERROR_IF(rank(shape) == 0 || shape[rank(shape)-1] % block_size != 0)",
        f"shape={list(shape)}, block_size={block}",
    )
    _err(block == 1, "ERROR_IF(block_size == 1)")
    return [
        Inferred(shape, c.declared_dtype(0), "output_data shape must equal the input_data shape"),
        Inferred(_scale_shape(shape, block), DType.FP8UE8M0, "output_scale shape [..., C/block_size]"),
    ]


def _conv2d_block_scaled(c: _Ctx) -> list[Inferred]:
    block = _block_size(c)
    n, ih, iw, ic = _rank(c.inp(0, "input_data"), 4, "input_data", "[N,IH,IW,IC]")
    oc, kh, kw, wic = _rank(c.inp(2, "weight_data"), 4, "weight_data", "[OC,KH,KW,IC]")
    _err(wic != ic, "weight_data [OC,KH,KW,IC] must have the input's IC", f"input IC={ic}, weight IC={wic}")
    _err(ic % block != 0, "ERROR_IF(IC % block_size != 0)", f"IC={ic}, block_size={block}")
    _err(block == 1, "ERROR_IF(block_size == 1)")
    _scales_match(c.inp(1, "input_scale"), (n, ih, iw, ic // block), "input_scale", "[N,IH,IW,IC/block_size]")
    _scales_match(c.inp(3, "weight_scale"), (oc, kh, kw, ic // block), "weight_scale", "[OC,KH,KW,IC/block_size]")
    bias = _rank(c.inp(4, "bias"), 1, "bias", "[BC]")
    _err(bias[0] != oc and bias[0] != 1, "ERROR_IF(BC != OC && BC != 1)", f"BC={bias[0]}, OC={oc}")
    values = {}
    for i, name, length in ((5, "pad", 4), (6, "stride", 2), (7, "dilation", 2)):
        values[name] = _shape_input(c, i, name, length)
    if any(v is None for v in values.values()):
        return [Inferred(c.declared_shape(), DType.FP32)]
    (oh, ow), rules = _conv_out(replace(c, attrs={**c.attrs, **values}), "HW", (ih, iw), (kh, kw))
    return [
        Inferred(
            (n, oh, ow, oc),
            DType.FP32,
            "output shape [N,OH,OW,OC]",
            ("N", "OH", "OW", "OC"),
            {1: rules["OH"], 2: rules["OW"]},
        )
    ]


def _matmul_t_block_scaled(c: _Ctx) -> list[Inferred]:
    block = _block_size(c)
    n, h, ch = _rank(c.inp(0, "A_data"), 3, "A_data", "[N,H,C]")
    d, w, c2 = _rank(c.inp(2, "B_data"), 3, "B_data", "[D,W,C]")
    _err(c2 != ch, "A_data [N,H,C] and B_data [D,W,C] must have the same C", f"{ch} vs {c2}")
    _err(ch % block != 0, "ERROR_IF(C % block_size != 0)", f"C={ch}, block_size={block}")
    _err(block == 1, "ERROR_IF(block_size == 1)")
    _err(d != n and d != 1, "ERROR_IF(D != N && D != 1)", f"D={d}, N={n}")
    _scales_match(c.inp(1, "A_scale"), (n, h, ch // block), "A_scale", "[N,H,C/block_size]")
    _scales_match(c.inp(3, "B_scale"), (d, w, ch // block), "B_scale", "[D,W,C/block_size]")
    return [Inferred((n, h, w), DType.FP32, "output shape [N,H,W]", ("N", "H", "W"))]


def _list_length(c: _Ctx, n: int, what: str, block: int) -> None:
    """The (values[, scales]) list rules shared by RESHAPE_BLOCK_SCALED and ROW_GATHER_BLOCK_SCALED."""
    _err(n not in (1, 2), f"ERROR_IF({what}_len != 1 && {what}_len != 2)", f"{what} has {n} tensors")
    if c.declared is not None:
        _err(len(c.declared) != n, f"ERROR_IF(output_len != {what}_len)", f"{len(c.declared)} vs {n}")
    _err(n == 1 and block != 1, f"ERROR_IF(({what}_len == 1) && (block_size != 1))", f"block_size={block}")
    _err(n == 2 and block == 1, f"ERROR_IF(({what}_len == 2) && (block_size == 1))")


def _reshape_block_scaled(c: _Ctx) -> list[Inferred]:
    block, n = _block_size(c), len(c.inputs) - 1
    _list_length(c, n, "input", block)
    values = c.inp(0, "input")
    new = _shape_input(c, n, "new_value_shape", None)
    if new is None:
        return [Inferred(c.declared_shape(i), t.dtype) for i, t in enumerate(c.inputs[:n])]
    size = int(np.prod(new, dtype=np.int64))
    _err(
        values.size != size,
        "ERROR_IF(tensor_size(value_shape1) != tensor_size(new_value_shape))",
        f"input {list(values.shape)} has {values.size} elements, new_value_shape {new} has {size}",
    )
    out = [Inferred(tuple(new), values.dtype, "output shape must equal new_value_shape")]
    if n == 2:
        scale = c.inputs[1]
        _err(
            values.rank == 0 or not new,
            "ERROR_IF(rank(value_shape1) == 0 || rank(new_value_shape) == 0)",
        )
        _err(
            values.rank != scale.rank,
            "ERROR_IF(rank(value_shape1) != rank(scale_shape1))",
            f"{list(values.shape)} vs {list(scale.shape)}",
        )
        _err(values.shape[-1] % block != 0, "ERROR_IF((value_shape1_last % block_size) != 0)")
        _err(new[-1] % block != 0, "ERROR_IF((new_value_shape_last % block_size) != 0)", f"{new}")
        _err(
            scale.shape[-1] != values.shape[-1] // block,
            "ERROR_IF(scale_shape1[-1] != (value_shape1_last / block_size))",
            f"{list(scale.shape)} for values {list(values.shape)}",
        )
        new_scale = _scale_shape(tuple(new), block)
        _err(
            scale.size != int(np.prod(new_scale, dtype=np.int64)),
            "ERROR_IF(tensor_size(scale_shape1) != tensor_size(new_scale_shape))",
            f"{list(scale.shape)} vs {list(new_scale)}",
        )
        out.append(Inferred(new_scale, scale.dtype, "scale output shape: new_value_shape in blocks"))
    return out


def _row_gather_block_scaled(c: _Ctx) -> list[Inferred]:
    block, n = _block_size(c), len(c.inputs) - 2
    _list_length(c, n, "values", block)
    nb, k, ch = _rank(c.inp(0, "values"), 3, "values", "[N,K,C]")
    _err(ch % block != 0, "ERROR_IF(C % block_size != 0)", f"C={ch}, block_size={block}")
    n2, w = _rank(c.inp(n, "indices"), 2, "indices", "[N,W]")
    _err(n2 != nb, "values [N,K,C] and indices [N,W] must have the same N", f"{nb} vs {n2}")
    if n == 2:
        _scales_match(c.inputs[1], (nb, k, ch // block), "values[1]", "[N,K,C/block_size]")
    count = c.inp(n + 1, "row_count")
    if count.data is None:
        return [Inferred(c.declared_shape(i), t.dtype) for i, t in enumerate(c.inputs[:n])]
    rows = int(np.asarray(count.data).reshape(-1)[0])
    _err(rows < 1, "ERROR_IF(row_count < 1)", f"row_count={rows}")
    dims = ("N", "W*row_count", "C")
    out = [Inferred((nb, w * rows, ch), c.inputs[0].dtype, "output shape [N,W*row_count,C]", dims)]
    if n == 2:
        out.append(
            Inferred((nb, w * rows, ch // block), c.inputs[1].dtype, "scale output [N,W*row_count,C/block_size]")
        )
    return out


_BLOCK_SCALED = {
    "CAST_FROM_BLOCK_SCALED": _cast_from_block_scaled,
    "CAST_TO_BLOCK_SCALED": _cast_to_block_scaled,
    "CONV2D_BLOCK_SCALED": _conv2d_block_scaled,
    "MATMUL_T_BLOCK_SCALED": _matmul_t_block_scaled,
    "RESHAPE_BLOCK_SCALED": _reshape_block_scaled,
    "ROW_GATHER_BLOCK_SCALED": _row_gather_block_scaled,
}


_FAMILIES: dict[str, Callable[[_Ctx], list[Inferred]]] = {
    **{op: _elementwise_binary for op in BINARY_SAME + COMPARISON + ("MUL",)},
    **{op: _elementwise_unary for op in UNARY_SAME + ("CAST", "RESCALE", "TABLE")},
    **{op: _reduce for op in REDUCE},
    "SELECT": _select,
    "ARGMAX": _argmax,
    "AVG_POOL2D": _pool2d,
    "MAX_POOL2D": _pool2d,
    "AVG_POOL2D_ADAPTIVE": _pool2d_adaptive,
    "MAX_POOL2D_ADAPTIVE": _pool2d_adaptive,
    "CONV2D": _conv2d,
    "CONV3D": _conv3d,
    "DEPTHWISE_CONV2D": _depthwise_conv2d,
    "TRANSPOSE_CONV2D": _transpose_conv2d,
    "MATMUL": _matmul,
    "MATMUL_T": _matmul_t,
    "FFT2D": _fft2d,
    "RFFT2D": _rfft2d,
    "CONCAT": _concat,
    "PAD": _pad,
    "RESHAPE": _reshape,
    "REVERSE": _reverse,
    "SLICE": _slice,
    "TILE": _tile,
    "TRANSPOSE": _transpose,
    "GATHER": _gather,
    "ROW_GATHER": _row_gather,
    "SCATTER": _scatter,
    "RESIZE": _resize,
    "CONST": _const,
    "CONST_SHAPE": _const_shape,
    **{op: _shape_op for op in SHAPE_OPS},
    "CUSTOM": _declared,
    "COND_IF": _cond_if,
    "WHILE_LOOP": _while_loop,
    "VARIABLE": _none,
    "VARIABLE_WRITE": _none,
    "VARIABLE_READ": _declared,
    **_BLOCK_SCALED,
}

SUPPORTED = frozenset(_FAMILIES)


def _run(c: _Ctx) -> list[Inferred]:
    fn = _FAMILIES.get(c.op)
    if fn is None:
        raise TosaError(f"unknown operator {c.op!r}")
    if c.op == "COND_IF":  # the condition is not part of the input list
        c = _Ctx(c.op, c.inputs[1:], c.attrs, c.declared, c.graph, c.out_dtype)
    return fn(c)


def infer_detailed(op: Operator, block: Block, graph: Graph | None = None) -> list[Inferred]:
    """Like `infer`, with the rule behind each output shape (for error messages)."""
    try:
        inputs = [block.tensors[n] for n in op.inputs]
    except KeyError as err:
        raise TosaError(f"input {err.args[0]!r} is not a tensor of block '{block.name}'") from None
    declared = [block.tensors[n] for n in op.outputs if n in block.tensors]
    complete = len(declared) == len(op.outputs)
    return _run(_Ctx(op.op, inputs, dict(op.attrs), declared if complete else None, graph))


def infer(op: Operator, block: Block, graph: Graph | None = None) -> list[tuple[Shape | None, DType | None]]:
    """Output (shape, dtype) of `op` computed from its inputs and attributes (shape None when it depends on
    values not known statically; dtype None when the spec leaves it to the declared output and there is none)."""
    return [(o.shape, o.dtype) for o in infer_detailed(op, block, graph)]


def infer_from(
    op_name: str,
    input_tensors: Sequence[Tensor],
    attrs: dict[str, Any],
    out_dtype: DTypeLike | list[DTypeLike | None] | tuple[DTypeLike | None, ...] | None = None,
    graph: Graph | None = None,
) -> list[tuple[Shape | None, DType | None]]:
    """`infer` without a Block, for graph builders. `out_dtype` supplies the output type where inputs don't
    determine it (CAST, RESCALE, CUSTOM, MATMUL with fp16 inputs); a list gives one per output."""
    dtypes: list[DType | None] | None
    if out_dtype is None:
        dtypes = None
    elif isinstance(out_dtype, (list, tuple)):
        dtypes = [None if d is None else DType.of(d) for d in out_dtype]
    else:
        dtypes = [DType.of(out_dtype)]
    ctx = _Ctx(op_name, list(input_tensors), dict(attrs), None, graph, dtypes)
    return [(o.shape, o.dtype) for o in _run(ctx)]


def shape_value_from(op_name: str, input_tensors: Sequence[Tensor], attrs: dict[str, Any]) -> list[int] | None:
    """The value of a shape operator's output (TOSA 1.1, shape_ops.py) for graph builders, or None when `op_name`
    computes none (or its inputs' values are not known)."""
    if op_name not in SHAPE_OPS:
        return None
    outs = _run(_Ctx(op_name, list(input_tensors), dict(attrs), None, None))
    return outs[0].value if outs else None

"""Host operators with a TOSA equivalent, lowered to a small TOSA graph each (issue 50): tosa_vk/backends/pte.py runs
it as a delegate of its own on the model's backend instead of the numpy kernel of host_ops.py, so the data stays on
the device. Only where the TOSA operators give the numpy kernel's results (integers bit-exact, floats within the
spec's compliance); anything else stays on the host, with the reason.

int64 (ExecuTorch's index and count type) has no TOSA type in the profiles tosa_vk runs: an int64 value is INT32 in
the graph. A constant is converted at load (lowered only if it fits); a run's value is checked as it is fed
(`Lowered.guards`): one that does not fit, or an index out of range, runs that call's numpy kernel instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ...builder import Builder, Value
from ...errors import TosaError
from ...ir import Graph
from ...ir.shapes import power_of_two
from ...ir.validate import LEVELS
from . import host_ops
from .program import DelegateRun, IntListValue, Kernel, Plan, TensorListValue, TensorValue

INT32 = np.iinfo(np.int32)
QD = host_ops.QD


class Lowered(NamedTuple):
    """A host operator as a TOSA graph: its inputs (plan values, in the graph's input order), its outputs (the
    kernel's out tensors), the TOSA operators it became, and per input the range [lo, hi) its values must be in to
    be fed (an int64 value: int32's; a GATHER's indices: the table's rows), else the numpy kernel runs. `absorbs`:
    the instructions right after it whose host operators the graph computes too (their out tensors are `outputs`):
    _fft_r2c's complex out, which no TOSA type holds, read by view_as_real_copy."""

    kernel: Kernel
    graph: Graph
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    ops: str
    guards: dict[int, tuple[int, int]]
    absorbs: tuple[int, ...] = ()


@dataclass(frozen=True)
class Absorbed:
    """An instruction of a lowered plan whose host operator `kernel` the lowered graph of instruction `into`
    computes: nothing runs there."""

    kernel: Kernel
    into: int


class _NotLowered(Exception):
    """Why a call stays on the host (its message; caught in this module, never reaching a user)."""


class _Ctx:
    """One call's graph under construction: its tensor arguments as graph inputs (int64 as INT32), constants as
    CONSTs, and the TOSA operators used (for placement)."""

    def __init__(self, plan: Plan, kernel: Kernel):
        self.plan, self.kernel, self.b = plan, kernel, Builder()
        self.inputs: list[int] = []
        self.values: dict[int, Value] = {}
        self.guards: dict[int, tuple[int, int]] = {}
        self.ops: list[str] = []

    def arg(self, index: int) -> Any:
        value = self.plan.values[index]
        if isinstance(value, TensorValue):
            return self.tensor(index)
        if isinstance(value, TensorListValue):
            return [None if i is None else self.tensor(i) for i in value.items]
        if isinstance(value, IntListValue):
            return [self.plan.values[i] for i in value.items]
        return value

    def tensor(self, index: int) -> Value:
        if index in self.values:
            return self.values[index]
        t = self.plan.values[index]
        if t.data is not None:
            data = t.data
            if data.dtype == np.int64:
                if data.size and (data.min() < INT32.min or data.max() > INT32.max):
                    raise _NotLowered("an int64 constant beyond int32 (TOSA has no INT64 here)")
                data = data.astype(np.int32)
            value = self.b.const(data.reshape(t.sizes))
        else:
            order = _order(t)  # a channels-last value comes in its memory layout, as to the program's delegates
            shape = t.sizes if order is None else [t.sizes[d] for d in order]
            value = self.b.input(f"in{len(self.inputs)}", shape, _tosa_dtype(t.dtype))
            if order is not None:
                value = self.op("TRANSPOSE", value, perms=[int(d) for d in np.argsort(order)])
            self.inputs.append(index)
            if t.dtype == np.int64:
                self.guards[index] = (int(INT32.min), int(INT32.max) + 1)
        self.values[index] = value
        return value

    def op(self, name: str, *args: Any, **attrs: Any) -> Value:
        if name not in self.ops:
            self.ops.append(name)
        return self.b.op(name, *args, **attrs)

    def guard(self, value: Value, lo: int, hi: int) -> None:
        """A graph input's values must lie in [lo, hi) (GATHER's indices: the spec leaves others undefined); a
        constant's are checked now."""
        index = next((i for i, v in self.values.items() if v.name == value.name), None)
        if index is None:
            raise _NotLowered("indices computed in the graph (unchecked)")
        data = self.plan.values[index].data
        if data is not None:
            if data.size and (data.min() < lo or data.max() >= hi):
                raise _NotLowered("constant indices out of range")
            return
        old = self.guards.get(index, (lo, hi))
        self.guards[index] = (max(lo, old[0]), min(hi, old[1]))

    # ---- helpers the lowerings share ----
    def reshape(self, v: Value, shape) -> Value:
        shape = [int(s) for s in shape]
        return v if list(v.shape) == shape else self.op("RESHAPE", v, shape)

    def rank(self, v: Value, rank: int) -> Value:
        """`v` with leading 1s to `rank` dims (TOSA broadcasts between operands of one rank)."""
        return self.reshape(v, [1] * (rank - len(v.shape)) + list(v.shape))

    def operand(self, a: Any, dtype: np.dtype, rank: int) -> Value:
        """A tensor argument of `dtype` at `rank`, or a Python number as a CONST of `dtype` (one it holds exactly)."""
        if isinstance(a, Value):
            if _np(a) != dtype:
                raise _NotLowered(f"operands of mixed types ({_np(a)}, {dtype}: PyTorch promotes)")
            return self.rank(a, rank)
        if isinstance(a, (bool, int, float)) and not (dtype.kind in "iu" and isinstance(a, float) and a != int(a)):
            c = np.asarray(a).astype(dtype)
            if c.item() != a:
                raise _NotLowered(f"the scalar {a!r} is not exact as {dtype}")
            return self.b.const(np.full([1] * rank, c, dtype))
        raise _NotLowered(f"an argument {a!r} of no TOSA form")


def _order(t: TensorValue) -> tuple[int, ...] | None:
    """A tensor value's dim order where it is not the identity (channels-last), else None."""
    return None if t.dim_order == tuple(range(len(t.sizes))) else t.dim_order


def _np(v: Value) -> np.dtype:
    if not isinstance(v, Value):  # a number where the schema has a tensor (a damaged program): host_ops.check says so
        raise _NotLowered(f"{type(v).__name__} {v!r} where a tensor argument is")
    return np.dtype(v.dtype.numpy)


def _tosa_dtype(dtype: np.dtype) -> str:
    if dtype == np.int64:
        return "int32"
    if dtype not in (np.float32, np.float16, np.int32, np.int16, np.int8, np.bool_):
        raise _NotLowered(f"{dtype} has no TOSA type the backends run")
    return dtype.name


def _out_type(out: TensorValue) -> np.dtype:
    return np.dtype(np.int32) if out.dtype == np.int64 else out.dtype


# ---- the lowerings: (context, the schema's inputs, the out tensors) -> the results --------------------------------


def _reshape(c: _Ctx, args, outs):
    return [c.reshape(args[0], outs[0].sizes)]


def _cast(c: _Ctx, x: Value, want: np.dtype) -> Value:
    """CAST to another dtype where TOSA's CAST is PyTorch's (not float -> int: TOSA rounds to nearest, PyTorch
    truncates)."""
    if _np(x).kind == "f" and want.kind != "f":
        raise _NotLowered("float to integer (TOSA CAST rounds to nearest, PyTorch truncates)")
    return c.op("CAST", x, out_dtype=want.name)


def _copy(c: _Ctx, args, outs):
    """A copy (clone, a dim-order copy in logical order, _to_copy): RESHAPE as the identity, else _cast."""
    x, want = args[0], _out_type(outs[0])
    if _np(x) == want:
        return [c.op("RESHAPE", x, list(outs[0].sizes))]
    return [_cast(c, x, want)]


def _copy_in_place(c: _Ctx, args, outs):
    """copy_(dst, src): dst's new value is src cast to dst's dtype (_cast) and broadcast to its shape (TILE); dst
    is only written (its shape and dtype), never fed."""
    src = args[1]
    if not isinstance(src, Value):
        raise _NotLowered(f"a source {src!r} that is not a tensor")
    want = _out_type(outs[0])
    return _expand(c, [src if _np(src) == want else _cast(c, src, want)], outs)


_copy_in_place.raw = (0,)  # type: ignore[attr-defined]  # dst: written, not read
_copy_in_place.in_place = True  # type: ignore[attr-defined]  # its out tensor is its first argument


_RFFT_MAX = LEVELS["8K"]["MAX_KERNEL"]  # RFFT2D's LEVEL_CHECK(H, W <= MAX_KERNEL)


def _fft_r2c(c: _Ctx, args, outs):
    """_fft_r2c(x, dim, normalization, onesided) + the view_as_real_copy(s) reading its complex out: RFFT2D over
    the last two dims (the last one: H = 1) of x as [N, H, W], real and imaginary parts stacked on a last axis of 2
    (RESHAPE + CONCAT), the normalization (1 / n, 1 / sqrt(n)) a MUL by a power of two, which is exact. What RFFT2D
    does not take (not fp32, other dims, H or W not powers of two or past MAX_KERNEL, two-sided, a 1 / sqrt(n)
    that is no power of two) stays on the host."""
    x, dims, normalization, onesided = args[:4]
    if _np(x) != np.float32:
        raise _NotLowered(f"an FFT of {_np(x)} (RFFT2D takes fp32)")
    rank = len(x.shape)
    dims = [d % rank for d in dims]
    if not onesided or dims not in ([rank - 1], [rank - 2, rank - 1]):
        raise _NotLowered(f"a{'' if onesided else ' two-sided'} FFT over dims {dims} (RFFT2D: one-sided, over the "
                          "last two dims or the last)")  # fmt: skip
    h, w = (x.shape[-2] if len(dims) == 2 else 1), x.shape[-1]
    if not (power_of_two(h) and power_of_two(w)) or max(h, w) > _RFFT_MAX:
        raise _NotLowered(f"H = {h}, W = {w} (RFFT2D: powers of two up to MAX_KERNEL {_RFFT_MAX})")
    log2n = (h * w).bit_length() - 1
    if normalization not in (0, 1, 2) or (normalization == 1 and log2n % 2):
        raise _NotLowered(f"normalization {normalization} over {h * w} points (not a power of two scale)")
    n, half = int(np.prod(x.shape[: rank - len(dims)], dtype=np.int64)), w // 2 + 1
    re, im = c.b.rfft2d(c.reshape(x, [n, h, w]))
    c.ops.append("RFFT2D")
    y = c.op("CONCAT", [c.reshape(re, [n, h, half, 1]), c.reshape(im, [n, h, half, 1])], axis=3)
    if normalization:
        scale = np.float32(2.0 ** -(log2n if normalization == 2 else log2n // 2))
        y = c.op("MUL", y, c.b.const(np.full([1] * 4, scale, np.float32)), 0)
    y = c.reshape(y, outs[0].sizes)
    return [y] + [c.op("RESHAPE", y, list(out.sizes)) for out in outs[1:]]  # each out a tensor of its own


def _view_as_real_readers(kernel: Kernel, plan: Plan) -> tuple[tuple[int, ...], list[int]]:
    """The instructions right after `kernel` (an _fft_r2c) that read its complex out, each a view_as_real_copy,
    and their out tensors; _NotLowered where anything else reads it (TOSA has no complex type)."""
    (value,) = host_ops.out_indices(kernel)
    at = next(i for i, ins in enumerate(plan.instructions) if ins is kernel)
    if value in plan.outputs or any(isinstance(v, TensorListValue) and value in v.items for v in plan.values):
        raise _NotLowered("its complex out is a method output or in a list (TOSA has no complex type)")
    absorbs: list[int] = []
    outs: list[int] = []
    for index, ins in enumerate(plan.instructions):
        if ins is kernel or value not in ins.args:
            continue
        if not (isinstance(ins, Kernel) and ins.name == "aten::view_as_real_copy.out" and ins.args[0] == value
                and index == at + 1 + len(absorbs)):  # fmt: skip
            what = f"delegate {ins.index}" if isinstance(ins, DelegateRun) else ins.name
            raise _NotLowered(f"its complex out is read by {what} #{index} (TOSA has no complex type)")
        absorbs.append(index)
        outs.append(ins.args[1])
    if not outs or len(set(outs)) != len(outs):
        raise _NotLowered("no view_as_real_copy of its own reads its complex out")
    return tuple(absorbs), outs


_fft_r2c.fuses = _view_as_real_readers  # type: ignore[attr-defined]


def _permute(c: _Ctx, args, outs):
    x = args[0]
    return [c.op("TRANSPOSE", x, perms=[d % len(x.shape) for d in args[1]])]


def _relu(c: _Ctx, args, outs):
    x = args[0]
    return [c.op("MAXIMUM", x, c.operand(0, _np(x), len(x.shape)))]


def _clamp(c: _Ctx, args, outs):
    x, lo, hi = args
    dt = _np(x)
    info = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)
    bounds = []
    for bound, default in ((lo, -np.inf if dt.kind == "f" else info.min), (hi, np.inf if dt.kind == "f" else info.max)):
        bound = default if bound is None else bound
        if dt.kind != "f" and (bound != int(bound) or not info.min <= bound <= info.max):
            raise _NotLowered(f"an integer clamp to {bound!r}")
        bounds.append(dt.type(bound))
    if dt.kind == "f" or dt in (np.int8, np.int16):
        return [c.op("CLAMP", x, min_val=bounds[0], max_val=bounds[1])]
    rank = len(x.shape)  # TOSA's CLAMP takes no INT32: MAXIMUM, MINIMUM
    y = x if lo is None else c.op("MAXIMUM", x, c.operand(int(bounds[0]), dt, rank))
    return [y if hi is None else c.op("MINIMUM", y, c.operand(int(bounds[1]), dt, rank))]


# |operands| of an int64 ADD / SUB / MUL (INT32 in the graph) whose result stays in int32, where TOSA computes it
_INT64_BOUND = {"ADD": 2**30 - 1, "SUB": 2**30 - 1, "MUL": 46340}  # 2 * (2**30 - 1), 46340**2 < 2**31


def _binary(name: str, alpha: bool = False) -> Callable:
    """ADD / SUB / MUL. TOSA's integer ADD and SUB make the whole graph unpredictable on overflow (the spec's
    REQUIRE; the reference backend raises), where PyTorch's int32 wraps: int32 as _wrapping's exact form; MUL keeps
    the low 32 bits (the spec's, PyTorch's); int8 / int16 (no ADD / SUB of theirs) in INT32, CAST back. int64
    (INT32 here) wraps at 2**63, not 2**32: operands guarded to where the result fits int32."""

    def lower(c: _Ctx, args, outs):
        if alpha and len(args) > 2 and args[2] != 1:
            raise _NotLowered("alpha other than 1")
        want = _out_type(outs[0])
        if want.kind not in "fi" or want == np.bool_:
            raise _NotLowered(f"{want} arithmetic")
        if outs[0].dtype == np.int64:
            for v in args[:2]:
                _bound(c, v, _INT64_BOUND[name])
        a, b = (c.operand(v, want, len(outs[0].sizes)) for v in args[:2])
        if want in (np.int8, np.int16):  # in INT32 (no overflow), CAST back: truncation, PyTorch's wrap
            a, b = (c.op("CAST", v, out_dtype="int32") for v in (a, b))
            y = c.op(name, a, b, 0) if name == "MUL" else c.op(name, a, b)
            return [c.op("CAST", y, out_dtype=want.name)]
        if name == "MUL":
            return [c.op("MUL", a, b, 0)]
        if want == np.int32 and outs[0].dtype == np.int32:
            return [_wrapping(c, name, a, b)]
        return [c.op(name, a, b)]

    return lower


def _bound(c: _Ctx, v: Any, bound: int) -> None:
    """An int64 operand within [-bound, bound]: a tensor guarded (else that call runs numpy's kernel), a number
    checked now."""
    if isinstance(v, Value):
        c.guard(v, -bound, bound + 1)
    elif not -bound <= v <= bound:
        raise _NotLowered(f"an int64 scalar {v} whose result may pass int32")


def _wrapping(c: _Ctx, name: str, a: Value, b: Value) -> Value:
    """int32 a + b (or a - b) modulo 2**32, as PyTorch computes it, with no TOSA operator overflowing: the low and
    high 16-bit halves apart (low: 0 .. 0xFFFF each, high: ARITHMETIC_RIGHT_SHIFT's -2**15 .. 2**15 - 1), the low
    half's carry (its arithmetic shift by 16: -1, 0 or 1) into the high, the high half's bits above 16 dropped by
    MUL's low 32 bits, the halves joined by BITWISE_OR."""
    rank = len(a.shape)

    def k(value: int) -> Value:
        return c.b.const(np.full([1] * rank, value, np.int32))

    def halves(v: Value) -> tuple[Value, Value]:
        return c.op("BITWISE_AND", v, k(0xFFFF)), c.op("ARITHMETIC_RIGHT_SHIFT", v, k(16), round=False)

    (la, ha), (lb, hb) = halves(a), halves(b)
    low = c.op(name, la, lb)
    high = c.op("ADD", c.op(name, ha, hb), c.op("ARITHMETIC_RIGHT_SHIFT", low, k(16), round=False))
    return c.op("BITWISE_OR", c.op("MUL", high, k(0x10000), 0), c.op("BITWISE_AND", low, k(0xFFFF)))


def _neg(c: _Ctx, args, outs):
    """NEGATE; an integer's least value negates to itself in PyTorch (it wraps), where TOSA's NEGATE overflows
    (unpredictable): int32 as NEGATE of MAXIMUM(x, least + 1), the least value put back by SELECT; int8 / int16
    negated in INT32 and CAST back (which truncates, as PyTorch wraps). int64 (INT32 here):
    guarded to int32's range less its least value, whose negation int32 does not hold."""
    x = args[0]
    dt = _np(x)
    if dt.kind == "f":
        return [c.op("NEGATE", x)]
    if outs[0].dtype == np.int64:
        c.guard(x, int(INT32.min) + 1, int(INT32.max) + 1)
        return [c.op("NEGATE", x)]
    if dt in (np.int8, np.int16):  # negated in INT32 (no overflow), CAST back: truncation, PyTorch's wrap
        return [c.op("CAST", c.op("NEGATE", c.op("CAST", x, out_dtype="int32")), out_dtype=dt.name)]
    if dt != np.int32:
        raise _NotLowered(f"a negation of {dt}")
    least = c.operand(int(np.iinfo(dt).min), dt, len(x.shape))
    safe = c.op("NEGATE", c.op("MAXIMUM", x, c.operand(int(np.iinfo(dt).min) + 1, dt, len(x.shape))))
    return [c.op("SELECT", c.op("EQUAL", x, least), x, safe)]


def _unary(name: str, kinds: str) -> Callable:
    def lower(c: _Ctx, args, outs):
        if _np(args[0]).kind not in kinds:
            raise _NotLowered(f"{_np(args[0])} (TOSA {name} differs there: it saturates or is not defined)")
        return [c.op(name, args[0])]

    return lower


def _compare(name: str, swap: bool = False, negate: bool = False) -> Callable:
    def lower(c: _Ctx, args, outs):
        rank = len(outs[0].sizes)
        tensor = next(a for a in args[:2] if isinstance(a, Value))
        a, b = (c.operand(v, _np(tensor), rank) for v in args[:2])
        y = c.op(name, *((b, a) if swap else (a, b)))
        return [c.op("LOGICAL_NOT", y) if negate else y]

    return lower


def _bitwise(name: str) -> Callable:
    def lower(c: _Ctx, args, outs):
        rank = len(outs[0].sizes)
        want = _out_type(outs[0])
        ops = [c.operand(v, want, rank) for v in args[: 2 if name != "NOT" else 1]]
        return [c.op(("LOGICAL_" if want == np.bool_ else "BITWISE_") + name, *ops)]

    return lower


def _logical(name: str) -> Callable:
    def lower(c: _Ctx, args, outs):
        n = 1 if name == "NOT" else 2
        if any(not isinstance(a, Value) or _np(a) != np.bool_ for a in args[:n]):
            raise _NotLowered("a logical operator on non-bool tensors")
        return [c.op("LOGICAL_" + name, *(c.rank(a, len(outs[0].sizes)) for a in args[:n]))]

    return lower


def _cat(c: _Ctx, args, outs):
    xs, dim = args[0], args[1] if len(args) > 1 else 0
    xs = [x for x in xs if x is not None and 0 not in x.shape]  # PyTorch skips empty members
    rank = len(outs[0].sizes)
    return [c.op("CONCAT", xs, axis=dim % rank) if len(xs) > 1 else c.reshape(xs[0], outs[0].sizes)]


def _slice(c: _Ctx, args, outs):
    x, dim, start, end, step = (list(args) + [0, None, None, 1])[:5]
    if step != 1:
        raise _NotLowered("a slice with a step")
    dim %= len(x.shape)
    lo, hi, _ = slice(start, end).indices(x.shape[dim])
    begin = [0] * len(x.shape)
    begin[dim] = lo
    size = list(x.shape)
    size[dim] = max(hi - lo, 0)
    return [c.op("SLICE", x, begin, size)]


def _select(c: _Ctx, args, outs):
    x, dim, index = args
    dim %= len(x.shape)
    begin = [0] * len(x.shape)
    begin[dim] = index % x.shape[dim]
    size = list(x.shape)
    size[dim] = 1
    return [c.reshape(c.op("SLICE", x, begin, size), outs[0].sizes)]


def _expand(c: _Ctx, args, outs):
    x, want = c.rank(args[0], len(outs[0].sizes)), outs[0].sizes
    multiples = [w // s if s != w else 1 for s, w in zip(x.shape, want)]
    return [c.op("TILE", x, multiples) if any(m != 1 for m in multiples) else x]


def _where(c: _Ctx, args, outs):
    cond, a, b = args
    rank, want = len(outs[0].sizes), _out_type(outs[0])
    if not isinstance(cond, Value) or _np(cond) != np.bool_:
        raise _NotLowered("a condition that is not a bool tensor")
    return [c.op("SELECT", c.rank(cond, rank), c.operand(a, want, rank), c.operand(b, want, rank))]


def _embedding(c: _Ctx, args, outs):
    """aten::embedding(weight (V, C), ids (...)) as GATHER's (N, K, C) values and (N, W) int32 indices."""
    weight, ids = args[:2]
    if len(weight.shape) != 2:
        raise _NotLowered("a weight that is not 2-D")
    rows, width = weight.shape
    c.guard(ids, 0, rows)
    n = int(np.prod(ids.shape, dtype=np.int64))
    table = c.reshape(weight, [1, rows, width])
    y = c.op("GATHER", table, c.reshape(ids, [1, n]))
    return [c.reshape(y, outs[0].sizes)]


def _index(c: _Ctx, args, outs):
    """x[idx] (one index tensor on the first dimension): GATHER over the rows."""
    x, indices = args
    if not indices or indices[0] is None or any(i is not None for i in indices[1:]):
        raise _NotLowered("indices other than one tensor on the first dimension")
    idx = indices[0]
    if _np(idx).kind != "i":
        raise _NotLowered("a mask index")
    rows, width = x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64))
    c.guard(idx, 0, rows)
    n = int(np.prod(idx.shape, dtype=np.int64))
    y = c.op("GATHER", c.reshape(x, [1, rows, width]), c.reshape(idx, [1, n]))
    return [c.reshape(y, outs[0].sizes)]


def _reduce_axes(x: Value, dims) -> list[int]:
    dims = host_ops.axes(dims, len(x.shape))
    return list(range(len(x.shape))) if dims is None else sorted(dims)


def _reduce(name: str, kinds: str = "f") -> Callable:
    """REDUCE_name over each dim (keepdim: TOSA keeps them; else RESHAPE to the out's shape). An integer sum
    (PyTorch's is int64, INT32 here) where no partial sum can leave int32 (REDUCE_SUM's overflow is unpredictable):
    bool / int8 / int16 CAST to INT32 when the count times their largest magnitude fits, int32 / int64 inputs
    guarded to within int32's largest / count (else that call runs numpy's kernel)."""

    def lower(c: _Ctx, args, outs):
        x, dims = args[0], args[1]
        if _np(x).kind not in kinds or (len(args) > 3 and args[3] is not None):
            raise _NotLowered(f"a reduction of {_np(x)}" + (" with a dtype" if len(args) > 3 and args[3] else ""))
        axes = _reduce_axes(x, dims)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        y = x
        if name == "REDUCE_SUM" and _np(x).kind in "ib":
            if _out_type(outs[0]) != np.int32:
                raise _NotLowered(f"an integer sum into {outs[0].dtype}")
            if _np(x) == np.int32:
                c.guard(x, -(int(INT32.max) // max(count, 1)), int(INT32.max) // max(count, 1) + 1)
            elif count * (1 if _np(x) == np.bool_ else -int(np.iinfo(_np(x)).min)) > INT32.max:
                raise _NotLowered(f"a sum of {count} {_np(x)} values that may pass int32")
            else:
                y = c.op("CAST", x, out_dtype="int32")
        for axis in axes:
            y = c.op(name, y, axis=axis)
        if c.kernel.name == "aten::mean.out":
            y = c.op("MUL", y, c.b.const(np.full([1] * len(y.shape), 1 / count, _np(x))), 0)
        return [c.reshape(y, outs[0].sizes)]

    return lower


def _argmax(c: _Ctx, x: Value, dim, negate: bool) -> Value:
    """The first index of the largest (`negate`: the least) value along `dim` (None: of the flattened tensor).
    Floats: ARGMAX (of NEGATE(x) for the least; NaN is the extreme either way, the first one, as PyTorch's; -0.0
    ties +0.0). int8 / int16: ARGMAX, of BITWISE_NOT(x) (-1 - x: the order reversed, no overflow) for the least.
    int32 (ARGMAX takes none): REDUCE_MAX / MIN, then the least index where x equals it."""
    if dim is None:
        x = c.reshape(x, [int(np.prod(x.shape, dtype=np.int64))])
        dim = 0
    axis, dt = dim % len(x.shape), _np(x)
    if dt.kind == "f":
        return c.op("ARGMAX", c.op("NEGATE", x) if negate else x, axis=axis)
    if dt in (np.int8, np.int16):
        return c.op("ARGMAX", c.op("BITWISE_NOT", x) if negate else x, axis=axis)
    if dt != np.int32:
        raise _NotLowered(f"an arg reduction of {dt}")
    rank, k = len(x.shape), x.shape[axis]
    extreme = c.op("REDUCE_MIN" if negate else "REDUCE_MAX", x, axis=axis)
    where = [1] * rank
    where[axis] = k
    iota = c.b.const(np.arange(k, dtype=np.int32).reshape(where))
    first = c.op("SELECT", c.op("EQUAL", x, extreme), iota, c.b.const(np.full([1] * rank, k, np.int32)))
    return c.op("REDUCE_MIN", first, axis=axis)


def _arg(negate: bool) -> Callable:
    def lower(c: _Ctx, args, outs):
        x, dim = args[0], args[1] if len(args) > 1 else None
        return [c.reshape(_argmax(c, x, dim, negate), outs[0].sizes)]

    return lower


def _with_index(name: str, negate: bool) -> Callable:
    """max.dim / min.dim: REDUCE_MAX / MIN and the (first) index, ARGMAX of the values (negated for min)."""

    def lower(c: _Ctx, args, outs):
        x, dim = args[:2]
        values = c.op(name, x, axis=dim % len(x.shape))
        index = _argmax(c, x, dim, negate)
        return [c.reshape(values, outs[0].sizes), c.reshape(index, outs[1].sizes)]

    return lower


def _constant(c: _Ctx, args, outs):
    """full / zeros / ones / arange: the numpy kernel's result (known at load) as a CONST."""
    out = outs[0]
    op = host_ops.HOST_OPS[c.kernel.name]
    return _const(c, np.asarray(op.fn(*args)).reshape(out.sizes).astype(out.dtype))


def _full_like(c: _Ctx, args, outs):
    """full_like(x, value): x's shape, the out's dtype, as a CONST (x is not read)."""
    out = outs[0]
    return _const(c, np.asarray(np.full(out.sizes, args[1])).astype(out.dtype))


def _const(c: _Ctx, data: np.ndarray):
    """A value known at load as a CONST: int64 as the graph's INT32 where it fits."""
    if data.dtype == np.int64:
        if data.size and (data.min() < INT32.min or data.max() > INT32.max):
            raise _NotLowered("an int64 constant beyond int32")
        data = data.astype(np.int32)
    _tosa_dtype(data.dtype)
    c.ops.append("CONST")
    return [c.b.const(data)]


_full_like.raw = (0,)  # type: ignore[attr-defined]  # the shape's tensor, never fed


def _div(c: _Ctx, args, outs):
    """Float true division by a constant power of two: MUL by its reciprocal, exact (x / 2**k and x * 2**-k are the
    same real, rounded once). Any other divisor stays on the host (TOSA has no division; RECIPROCAL + MUL is not
    IEEE's)."""
    x, d = args[:2]
    want = _out_type(outs[0])
    if not isinstance(x, Value) or want.kind != "f" or _np(x) != want:
        raise _NotLowered(HOST_ONLY["aten::div.out"])
    if isinstance(d, Value):
        index = next((i for i, v in c.values.items() if v.name == d.name), None)
        d = None if index is None else c.plan.values[index].data
        if d is None or np.asarray(d).dtype != want:
            raise _NotLowered(HOST_ONLY["aten::div.out"])
    elif not isinstance(d, (int, float)) or isinstance(d, bool):
        raise _NotLowered(HOST_ONLY["aten::div.out"])
    d = np.asarray(d, np.float64)
    mantissa, _ = np.frexp(d)
    inverse = (1 / d).astype(want)
    exact = np.all(np.abs(mantissa) == 0.5) and np.all(inverse.astype(np.float64) * d == 1)
    if not (exact and np.all(np.abs(inverse) >= np.finfo(want).tiny)):  # (a finite, normal reciprocal)
        raise _NotLowered(HOST_ONLY["aten::div.out"] + "; the divisor is not a power of two")
    rank = len(outs[0].sizes)
    return [
        c.op(
            "MUL",
            c.rank(x, rank),
            c.rank(c.b.const(inverse.reshape(np.shape(d))), rank)
            if inverse.ndim
            else c.b.const(np.full([1] * rank, inverse, want)),
            0,
        )
    ]


def _remainder(c: _Ctx, args, outs):
    """Integer x % d (Python's: the divisor's sign) by a number d: INTDIV truncates, r = x - q * d (|r| < |d|, no
    overflow), then d added where r and d differ in sign. d = 0 / -1 (INTDIV's undefined / overflowing cases) and
    |d| > 2**30 (r + d could overflow) stay on the host, as float remainders do (TOSA has no exact floor or fmod)."""
    x, d = args[:2]
    want = _out_type(outs[0])
    if not isinstance(x, Value) or _np(x) != np.int32 or want != np.int32:
        raise _NotLowered(HOST_ONLY["aten::remainder.Scalar_out"] + " (integers: by a number only)")
    if isinstance(d, bool) or not isinstance(d, int) or d in (0, -1) or abs(d) > 2**30:
        raise _NotLowered(f"an integer remainder by {d!r}")
    rank = len(x.shape)
    k = c.operand(d, np.dtype(np.int32), rank)
    zero = c.operand(0, np.dtype(np.int32), rank)
    r = c.op("SUB", x, c.op("MUL", c.op("INTDIV", x, k), k, 0))
    wrong = c.op("GREATER", zero, r) if d > 0 else c.op("GREATER", r, zero)
    return [c.op("SELECT", wrong, c.op("ADD", r, k), r)]


def _gather(c: _Ctx, args, outs):
    """aten::gather(x, dim, index): out[..., j, ...] = x[..., index[..., j, ...], ...] per element, as GATHER with
    one channel: `dim` moved last (TRANSPOSE), x cut to index's extent in the other dims (SLICE), each position of
    the other dims a batch of GATHER, then back. Indices guarded to [0, K) (else numpy's kernel runs that call)."""
    x, dim, index = args[:3]
    rank = len(x.shape)
    if rank == 0 or len(index.shape) != rank:
        raise _NotLowered("a gather of a scalar or of mixed ranks")
    dim %= rank
    c.guard(index, 0, x.shape[dim])
    if any(index.shape[d] > x.shape[d] for d in range(rank) if d != dim):
        raise _NotLowered("an index larger than the input")
    size = [index.shape[d] if d != dim else x.shape[dim] for d in range(rank)]
    part = c.op("SLICE", x, [0] * rank, size) if size != list(x.shape) else x
    perms = [d for d in range(rank) if d != dim] + [dim]
    if perms != list(range(rank)):
        part, index = c.op("TRANSPOSE", part, perms=perms), c.op("TRANSPOSE", index, perms=perms)
    n, k, w = int(np.prod(size, dtype=np.int64)) // size[dim], size[dim], index.shape[-1]
    y = c.op("GATHER", c.reshape(part, [n, k, 1]), c.reshape(index, [n, w]))
    y = c.reshape(y, index.shape)
    return [c.op("TRANSPOSE", y, perms=[int(p) for p in np.argsort(perms)]) if perms != list(range(rank)) else y]


# quantize / dequantize, bit-exact to host_ops' kernels (ExecuTorch's quantize_val / dequantize: float32
# x * (1 / scale), round half to even, + zp, clamp; (q - zp) * scale). Every step below is exact under the spec's
# rules for it: MUL fp32 is correctly rounded, CAST fp32 -> INT32 rounds to nearest even, integer ops are exact.
_FP32_EXACT = 2**24  # integers up to this are exact in float32
_INV_MAX = 2.0**125  # x * inv for a subnormal x (which MUL may flush to 0) stays under 0.5: it rounds to 0 either way


def _qparams(c: _Ctx, x: Value, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The float32 scale(s) and int64 zero point(s) (arguments 1 and 2) of a quantize / dequantize of `x`, shaped to
    broadcast against it (per channel: along `axis`, and constants of the program)."""

    def data(i: int) -> np.ndarray:
        v = c.plan.values[c.kernel.args[i]]
        if isinstance(v, TensorValue):
            if v.data is None:
                raise _NotLowered("per-channel scales or zero points computed at run time")
            return np.asarray(v.data)
        return np.asarray(0 if v is None else v)  # (dequantize_per_channel's zero points are optional)

    scale, zp = data(1).astype(np.float64), data(2)
    if zp.dtype.kind not in "iu":
        raise _NotLowered(f"{zp.dtype} zero points")
    shape = [1] * len(x.shape)
    if axis is not None:
        shape[axis] = x.shape[axis]
    if scale.size != int(np.prod(shape)) or zp.size not in (1, scale.size):
        raise _NotLowered(f"{scale.size} scales / {zp.size} zero points for shape {list(x.shape)}")
    scale32 = scale.astype(np.float32)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0) or np.any(scale32 < np.finfo(np.float32).tiny):
        raise _NotLowered("a scale that is not a positive normal float32 (the numpy kernel says why)")
    return scale32.reshape(shape), zp.astype(np.int64).reshape(shape if zp.size > 1 else [1] * len(shape))


def _quantize(per_channel: bool) -> Callable:
    """MUL by the float32 reciprocal, NaN -> 0 (EQUAL + SELECT: CAST leaves NaN unpredictable, numpy gives the zero
    point), clamp to [qmin - zp, qmax - zp] in float32 (integers, so clamping before rounding is clamping after,
    and CAST cannot overflow), CAST to INT32 (round half to even), ADD zp, CAST to the out type (in range)."""

    def lower(c: _Ctx, args, outs):
        x, qmin, qmax = args[0], args[-3], args[-2]
        axis = args[3] % len(x.shape) if per_channel else None
        want = _out_type(outs[0])
        if _np(x) not in (np.float32, np.float16) or want not in (np.int8, np.int16, np.int32):
            raise _NotLowered(f"a quantize from {_np(x)} to {want}")
        info = np.iinfo(want)
        if not info.min <= qmin <= qmax <= info.max:
            raise _NotLowered(f"quant_min {qmin} / quant_max {qmax} outside {want} (or crossed)")
        rank = len(x.shape)
        scale, zp = _qparams(c, x, axis)
        inv = np.float32(1) / scale
        lo, hi = qmin - zp, qmax - zp
        if inv.max() > _INV_MAX or max(np.abs(lo).max(), np.abs(hi).max(), abs(qmin), abs(qmax)) > _FP32_EXACT:
            raise _NotLowered("a scale or range beyond what float32 holds exactly")
        if _np(x) == np.float16:  # widened exactly: ExecuTorch's kernel multiplies a half by a float in float
            x = c.op("CAST", x, out_dtype="float32")
        y = c.op("MUL", x, c.b.const(inv), 0)
        zero = c.b.const(np.zeros([1] * rank, np.float32))
        y = c.op("SELECT", c.op("EQUAL", y, y), y, zero)
        if lo.size == 1:
            y = c.op("CLAMP", y, min_val=np.float32(lo.item()), max_val=np.float32(hi.item()))
        else:
            y = c.op("MINIMUM", c.op("MAXIMUM", y, c.b.const(lo.astype(np.float32))), c.b.const(hi.astype(np.float32)))
        q = c.op("CAST", y, out_dtype="int32")
        if np.any(zp != 0):
            q = c.op("ADD", q, c.b.const(zp.astype(np.int32)))
        return [q if want == np.int32 else c.op("CAST", q, out_dtype=want.name)]

    lower.raw = (1, 2)  # type: ignore[attr-defined]  # the scales and zero points: constants in the graph
    return lower


def _dequantize(per_channel: bool) -> Callable:
    """CAST to INT32, SUB zp, CAST to FP32 (exact: |q - zp| <= 2**24), MUL by the float32 scale; for a float16 out,
    CAST of that float32 product (rounded once, to nearest even, as ExecuTorch's kernel casts its float result)."""

    def lower(c: _Ctx, args, outs):
        q = args[0]
        axis = args[3] % len(q.shape) if per_channel else None
        want = _out_type(outs[0])
        if _np(q) not in (np.int8, np.int16) or want not in (np.float32, np.float16):
            raise _NotLowered(f"a dequantize from {_np(q)} to {want}")
        scale, zp = _qparams(c, q, axis)
        if np.abs(zp).max() + np.iinfo(_np(q)).max + 1 > _FP32_EXACT:
            raise _NotLowered("a zero point beyond what float32 holds exactly")
        v = c.op("CAST", q, out_dtype="int32")
        if np.any(zp != 0):
            v = c.op("SUB", v, c.b.const(zp.astype(np.int32)))
        y = c.op("MUL", c.op("CAST", v, out_dtype="float32"), c.b.const(scale), 0)
        return [y if want == np.float32 else c.op("CAST", y, out_dtype="float16")]

    lower.raw = (1, 2)  # type: ignore[attr-defined]
    return lower


LOWERINGS: dict[str, Callable] = {
    "aten::view_copy.out": _reshape,
    "aten::unsqueeze_copy.out": _reshape,
    "aten::squeeze_copy.dims_out": _reshape,
    "aten::squeeze_copy.dim_out": _reshape,
    "aten::clone.out": _copy,
    "aten::_to_copy.out": _copy,
    "aten::permute_copy.out": _permute,
    "aten::copy_": _copy_in_place,
    "aten::_fft_r2c.out": _fft_r2c,
    "aten::relu.out": _relu,
    "aten::hardtanh.out": _clamp,
    "aten::clamp.out": _clamp,
    "aten::add.out": _binary("ADD", alpha=True),
    "aten::sub.out": _binary("SUB", alpha=True),
    "aten::mul.out": _binary("MUL"),
    "aten::neg.out": _neg,
    "aten::div.out": _div,
    "aten::full_like.out": _full_like,
    "aten::remainder.Scalar_out": _remainder,
    "aten::gather.out": _gather,
    "aten::sigmoid.out": _unary("SIGMOID", "f"),
    "aten::tanh.out": _unary("TANH", "f"),
    "aten::cat.out": _cat,
    "aten::slice_copy.Tensor_out": _slice,
    "aten::select_copy.int_out": _select,
    "aten::expand_copy.out": _expand,
    "aten::where.self_out": _where,
    "aten::embedding.out": _embedding,
    "aten::index.Tensor_out": _index,
    "aten::argmax.out": _arg(False),
    "aten::argmin.out": _arg(True),
    "aten::max.dim_max": _with_index("REDUCE_MAX", False),
    "aten::min.dim_min": _with_index("REDUCE_MIN", True),
    "aten::amax.out": _reduce("REDUCE_MAX", "fi"),
    "aten::amin.out": _reduce("REDUCE_MIN", "fi"),
    "aten::sum.IntList_out": _reduce("REDUCE_SUM", "fib"),
    "aten::mean.out": _reduce("REDUCE_SUM"),
    "aten::bitwise_not.out": _bitwise("NOT"),
    "aten::logical_not.out": _logical("NOT"),
    "aten::full.out": _constant,
    "aten::zeros.out": _constant,
    "aten::ones.out": _constant,
    "aten::arange.out": _constant,
    "aten::arange.start_out": _constant,
    QD + "quantize_per_tensor.out": _quantize(False),
    QD + "quantize_per_channel.out": _quantize(True),
    QD + "dequantize_per_tensor.out": _dequantize(False),
    QD + "dequantize_per_channel.out": _dequantize(True),
}
for _name in ("aten::_to_dim_order_copy.out", "dim_order_ops::_to_dim_order_copy.out",
              "aten::_clone_dim_order.out", "dim_order_ops::_clone_dim_order.out"):  # fmt: skip
    LOWERINGS[_name] = _copy
for _op, _tosa in (("and", "AND"), ("or", "OR"), ("xor", "XOR")):
    for _overload in ("Tensor_out", "Scalar_out"):
        LOWERINGS[f"aten::bitwise_{_op}.{_overload}"] = _bitwise(_tosa)
    LOWERINGS[f"aten::logical_{_op}.out"] = _logical(_tosa)
for _op, _how in (("eq", ("EQUAL",)), ("ne", ("EQUAL", False, True)), ("gt", ("GREATER",)),
                  ("ge", ("GREATER_EQUAL",)), ("lt", ("GREATER", True)), ("le", ("GREATER_EQUAL", True))):  # fmt: skip
    for _overload in ("Tensor_out", "Scalar_out"):
        LOWERINGS[f"aten::{_op}.{_overload}"] = _compare(*_how)


# why the host operators without a lowering stay on the host
HOST_ONLY = {
    "aten::div.out": "TOSA has no float division (RECIPROCAL + MUL is not exact to IEEE division)",
    "aten::remainder.Scalar_out": "TOSA has no exact floor modulo of floats",
    "aten::remainder.Tensor_out": "TOSA has no exact floor modulo of floats, and INTDIV by a divisor fed at run "
    "time may meet 0 (undefined)",
    "aten::index_put.out": "a scatter that may accumulate and broadcast (TOSA SCATTER does neither)",
    "aten::max_pool2d_with_indices.out": "TOSA MAX_POOL2D gives no indices",
    "aten::view_as_real_copy.out": "a complex input (TOSA has no complex type; lowered with the _fft_r2c that "
    "writes it where that lowers)",
}


def lower(kernel: Kernel, plan: Plan) -> Lowered | str:
    """`kernel` as a Lowered graph, or why it stays on the host."""
    fn = LOWERINGS.get(kernel.name)
    op = host_ops.HOST_OPS.get(kernel.name)
    if fn is None or op is None:
        return HOST_ONLY.get(kernel.name, "no TOSA lowering in tosa_vk")
    if op.in_place and not getattr(fn, "in_place", False):
        return "an in-place operator (it writes its input)"
    raw = getattr(fn, "raw", ())  # arguments the lowering reads from the plan (not as graph tensors)
    c = _Ctx(plan, kernel)
    try:
        absorbs, outs_at = (), host_ops.out_indices(kernel)
        if hasattr(fn, "fuses"):  # an out no TOSA type holds: lowered with the operators that read it
            absorbs, outs_at = fn.fuses(kernel, plan)
        if not all(isinstance(plan.values[i], TensorValue) for i in outs_at):  # (info lowers before host_ops.check)
            return "an out argument that is not a tensor"
        if set(outs_at) & {i for at, i in enumerate(kernel.args[: op.inputs]) if at not in raw}:
            return "an out tensor that is also an input"
        outs = [plan.values[i] for i in outs_at]
        for out in outs:
            _tosa_dtype(out.dtype)
        args = [plan.values[i] if at in raw else c.arg(i) for at, i in enumerate(kernel.args[: op.inputs])]
        results = fn(c, args, outs)
        for out, result in zip(outs, results):
            if tuple(result.shape) != tuple(out.sizes) or _np(result) != _out_type(out):
                raise _NotLowered(f"TOSA gives {list(result.shape)} {_np(result)}, the out tensor is "
                                  f"{list(out.sizes)} {out.dtype}")  # fmt: skip
            if _order(out) is not None:  # written in its memory layout, as the program's delegates write it
                result = c.op("TRANSPOSE", result, perms=list(out.dim_order))
            elif result.name in c.b.block.inputs:  # an output that is an input: a copy, as every graph output is
                result = c.op("RESHAPE", result, list(out.sizes))
            c.b.output(result)
        graph = c.b.build()
    except _NotLowered as why:
        return str(why)
    except (TosaError, TypeError, ValueError, IndexError, ZeroDivisionError) as err:
        return f"no TOSA form for these arguments ({err})"
    ops = " + ".join(c.ops) or "RESHAPE"
    return Lowered(kernel, graph, tuple(c.inputs), tuple(outs_at), ops, c.guards, tuple(absorbs))


def lower_all(plan: Plan) -> list[Lowered | str | int | None]:
    """Per instruction of `plan`: its host operator as a Lowered graph, or why it stays on the host, or the index
    of the instruction whose graph computes it too (Lowered.absorbs); None for a delegate of the program."""
    result: list[Lowered | str | int | None] = [None] * len(plan.instructions)
    for index, ins in enumerate(plan.instructions):
        if not isinstance(ins, Kernel) or result[index] is not None:
            continue
        low = result[index] = lower(ins, plan)
        for absorbed in low.absorbs if isinstance(low, Lowered) else ():
            result[absorbed] = index
    return result

"""The one place fused kernels' GLSL is written (issue 47): epilogue chains, element-wise groups and row groups are
lists of calls of the macros and functions of shaders/include/fused.glsl (and fused/rows.comp's RG_* passes), with
names, numbers, types and the expressions of those calls as arguments. epilogue.py, group.py, rows.py and
operands.py decide what a fused kernel computes and ask this module for its text; no define value they make holds
a GLSL statement (`;`, `{`, `}`: tests/test_fused_render.py checks the shipped variants and these modules)."""

from __future__ import annotations

from dataclasses import dataclass


def call(function: str, *args: object) -> str:
    """`function(args...)`: the one form every piece of fused GLSL takes."""
    return f"{function}({', '.join(str(a) for a in args)})"


def items(calls: list[str]) -> str:
    """A define's value made of several calls (declarations, statements), in order."""
    return " ".join(c for c in calls if c)


@dataclass(frozen=True)
class Array:
    """A bound tensor as GLSL reads it: array[i] is element i's stored value, from a storage buffer or fetched from
    a texel buffer (lower/texels.py: the fetch gives the value as int / uint / float, which the kernel's compute
    conversion takes as it takes the storage type)."""

    name: str
    texel: bool = False

    def __getitem__(self, index) -> str:
        return f"texelFetch({self.name}, int({index})).x" if self.texel else f"{self.name}[{index}]"


def declare(binding: int, name: str, access: str, texel: bool) -> tuple[str, Array]:
    """The declaration of binding `binding`, named `name` (its <name>_T / TEXEL_<name> defines give the type), as
    the array name.lower(): a readonly or writeonly storage buffer, or a uniform texel buffer."""
    array = Array(name.lower(), texel)
    macro = "EP_TEX" if texel else {"readonly": "EP_BUF", "writeonly": "EP_WBUF"}[access]
    return call(macro, binding, name, array.name), array


# --- statements (fused.glsl's EP_LET, EP_STORE, EP_COORD)


def variable(compute: str) -> str:
    """The type of a step's value: floats are precise (no fused multiply-adds across steps)."""
    return "precise float" if compute == "float" else compute


def let(compute: str, name: str, value: str) -> str:
    return call("EP_LET", variable(compute), name, value)


def store(array: Array, at: str, value: str) -> str:
    return call("EP_STORE", array.name, at, value)


def coordinates(shape: tuple[int, ...], index: str = "i") -> list[str]:
    """The flat index `index` split into coordinates c0.. of the dimensions larger than 1."""
    return [call("EP_COORDS", index)] + [
        call("EP_COORD", f"c{d}", f"{shape[d]}u") for d in range(len(shape) - 1, -1, -1) if shape[d] > 1
    ]


# --- functions


def chain(tag: str, out: str, first: str, steps: list[tuple[str, str]]) -> str:
    """ep_chain<tag>(v, c, at): the steps (compute type, value of the previous value t<k-1> / v), each its own
    variable t0, t1, .. (a step may read the previous one's)."""
    lets = [let(compute, f"t{k}", value) for k, (compute, value) in enumerate(steps)]
    return call("EP_CHAIN_FN", f"ep_chain{tag}", out, first, items(lets), f"t{len(steps) - 1}")


def store_map(maps: list[str]) -> str:
    """ep_out(i): the index maps applied to i in order (EP_OUT(at) of epilogue.glsl)."""
    return call("EP_OUT_FN", items([call("EP_MAP", m) for m in maps]))


def fold_step(name: str, acc: str, value: str) -> str:
    """A reduction's fold step, name(a, b) -> value, on its accumulator type."""
    return call("EP_STEP_FN", name, acc, value)


# --- steps: each operator as its own kernel computes it (fused.glsl, elementwise.glsl, unary.glsl, conversion.glsl)

_SUFFIX = {"int": "i32", "float": "f32", "bool": "bool"}


def binary(op: str, compute: str, a: str, b: str) -> str:
    """ADD / SUB / MUL / MAXIMUM / MINIMUM of int32 (wrapping) or fp32 compute values; `nan` the fp32 min / max
    rule ("propagate" or "ignore")."""
    return call(f"ep_{op.lower()}_{_SUFFIX[compute]}", f"{compute}({a})", f"{compute}({b})")


def minmax(op: str, compute: str, a: str, b: str, nan: str) -> str:
    fn = "max" if op == "MAXIMUM" else "min"
    if compute == "float":
        return call(f"{fn}_{nan}", f"float({a})", f"float({b})")
    return call(f"ep_{fn}_i32", f"int({a})", f"int({b})")


def clamp(compute: str, x: str, lo: str, hi: str, nan: str) -> str:
    if compute == "float":
        return call(f"ep_clamp_f32_{nan}", f"float({x})", lo, hi)
    return call("ep_clamp_i32", f"int({x})", lo, hi)


def compare(op: str, compute: str, a: str, b: str) -> str:
    return call(f"ep_{op.lower()}_{_SUFFIX[compute]}", a, b)


def logical(op: str, args: list[str]) -> str:
    return call(f"ep_{op.lower()}", *args)


def select(compute: str, s: str, a: str, b: str) -> str:
    return call(f"ep_select_{_SUFFIX[compute]}", s, a, b)


def table(entries: Array, x: str) -> str:
    """TABLE of an int8 value: its entry at value + 128."""
    return call("int", entries[f"int({x}) + 128"])


def named(function: str, compute: str, x: str) -> str:
    return call(function, f"{compute}({x})")


def rescale(x: str, izp: str, multiplier: str, shift: str, scale32: bool, double_round: bool, ozp: str, lo, hi) -> str:
    """RESCALE of an int value as rescale.comp computes it (fused.glsl's ep_rescale)."""
    flags = ("true" if scale32 else "false", "true" if double_round else "false")
    return call("ep_rescale", x, izp, multiplier, f"int({shift})", *flags, ozp, lo, hi)


def convert(compute: str, value: str) -> str:
    """A value as compute type `compute` (a CAST's conversion, conversion.glsl's functions inside)."""
    return call(compute, value)


def wrap(x: str, bits: int) -> str:
    """An int narrowed to `bits` as an int8 / int16 store narrows it (wraps, sign-extended)."""
    return call("ep_wrap", f"int({x})", bits)


def add_bias(v: str, bias: str) -> str:
    """A convolution's bias added to its fp32 sum (as conv.comp adds it)."""
    return f"(({v}) + {bias})"


# --- row groups (fused/rows.comp's passes)


def row_fold(acc: str, name: str, init: str, length: int, lanes: int, last: int, body: list[str], step: str, x: str):
    """name = the fold with `step` of acc(x) over the lane's share of the row, `body` computing x per element."""
    return call("RG_FOLD", acc, name, init, f"{length}u", f"{lanes}u", f"c{last}", items(body), step, call(acc, x))


def row_combine(shared: str, name: str, step: str) -> str:
    return call("RG_COMBINE", shared, name, step)


def row_stores(length: int, lanes: int, last: int, body: list[str], stores: list[str]) -> str:
    """A last pass over the row: `body` per element, then its stores."""
    return call("RG_STORE_PASS", f"{length}u", f"{lanes}u", f"c{last}", items(body), items(stores))


def row_scalar_store(array: Array, value: str) -> str:
    return call("RG_STORE_SCALAR", array.name, value)

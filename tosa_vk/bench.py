"""The benchmark engine behind `tosa-vk bench` and benchmarks/run.py.

    tosa-vk bench --suite ops --quick            # a small subset (minutes)
    tosa-vk bench model.tosa other.tosa          # any graphs; inputs from a desc.json next to them, else random
    tosa-vk bench --device 1 --out results/      # another Vulkan device; JSON, markdown and PNG into results/

Per case every available backend is loaded (first run = load + compile + first run, timed), warmed up, then run
`repeats` times **interleaved** (the order rotates each round) so drift on a shared machine hits all alike.

Backends (a missing one, or one that cannot run a case, is skipped with a note):
  vulkan    tosa_vk Vulkan: host wall time of Model.run (input write, submit, wait, output copy) and device time
            (sum of the kernels' timestamp queries, from a second model of the graph: on lavapipe the queries
            about double the wall time of graphs of small kernels, so the timed model is not the one with a wall
            clock). First run cold (empty temporary SPIR-V cache, so glslc runs;
            Mesa's own pipeline / shader caches are not cleared) and warm (the same cache, now filled).
  reference tosa_vk's numpy reference backend (also the truth every backend's outputs are compared with).
  refmodel  Arm's C++ reference model in-process (tosa_reference_model.run; parses the flatbuffer on every call).
  numpy     a direct numpy expression, for ops that have one.
  arm_sdk   Arm's ML SDK pipeline (model-converter -> VGF -> scenario-runner + emulation layers) in a worker
            process: the time of Scenario.run() there; its first run is convert + load_scenario + first run.
Peak memory: growth of the process's peak RSS (VmHWM, reset through /proc/self/clear_refs) over load + first run,
so device memory of lavapipe counts too; for arm_sdk the worker process's peak RSS.
Correctness: max |diff| of each backend's first run against the reference backend's (graphs with variables change
state run by run); ok = integers exact, floats within rtol * (1 + max |ref|).
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("vulkan", "reference", "refmodel", "numpy", "arm_sdk")
ANCHORS = ("refmodel", "numpy", "arm_sdk")          # the table's ratios: anchor time / tosa_vk Vulkan wall time
LABELS = {"vulkan": "tosa_vk Vulkan", "reference": "tosa_vk reference", "refmodel": "tosa_reference_model",
          "numpy": "numpy", "arm_sdk": "Arm ML SDK + emulation"}
RTOL = {2: 1e-2, 4: 1e-4, 8: 1e-9}                   # float tolerance by element size (fp16 / bf16, fp32, fp64)

# ------------------------------------------------------------------------------------------------------------------
# The op suite: (op, dtype, input shape, options, in --quick). Built with tosa_vk.Builder by _build_op below.
S, L = (1, 64, 64, 32), (1, 256, 256, 64)            # 131k and 4M elements
OP_CASES = [
    ("ADD", "fp32", S, {}, True), ("ADD", "fp32", L, {}, False), ("ADD", "fp16", S, {}, False),
    ("ADD", "int32", S, {}, False),
    ("MUL", "fp32", S, {}, False), ("MUL", "fp32", L, {}, False),
    ("CLAMP", "fp32", S, {}, False), ("CLAMP", "int8", S, {}, False), ("CLAMP", "fp16", L, {}, False),
    ("SIGMOID", "fp32", S, {}, True), ("SIGMOID", "fp16", S, {}, False), ("SIGMOID", "fp32", L, {}, False),
    ("REDUCE_SUM", "fp32", S, {"axis": 3}, True), ("REDUCE_SUM", "int32", S, {"axis": 1}, False),
    ("REDUCE_SUM", "fp32", L, {"axis": 3}, False),
    ("TRANSPOSE", "fp32", S, {}, True), ("TRANSPOSE", "int8", L, {}, False),
    ("CONCAT", "fp32", S, {}, False), ("CONCAT", "int8", S, {}, False),
    ("PAD", "fp32", S, {}, False), ("PAD", "int8", S, {}, False),
    ("CONV2D", "fp32", (1, 32, 32, 16), {"oc": 16, "k": 3}, True), ("CONV2D", "fp32", S, {"oc": 32, "k": 3}, False),
    ("CONV2D", "fp16", (1, 32, 32, 16), {"oc": 16, "k": 3}, False),
    ("CONV2D", "int8", (1, 32, 32, 16), {"oc": 16, "k": 3}, True), ("CONV2D", "int8", S, {"oc": 32, "k": 3}, False),
    ("DEPTHWISE_CONV2D", "fp32", S, {"k": 3}, False), ("DEPTHWISE_CONV2D", "int8", S, {"k": 3}, False),
    ("TRANSPOSE_CONV2D", "fp32", (1, 16, 16, 16), {"oc": 16, "k": 3}, False),
    ("TRANSPOSE_CONV2D", "int8", (1, 16, 16, 16), {"oc": 16, "k": 3}, False),
    ("MATMUL", "fp32", (1, 128, 128), {}, True), ("MATMUL", "fp32", (1, 256, 256), {}, False),
    ("MATMUL", "fp16", (1, 128, 128), {}, False), ("MATMUL", "int8", (1, 128, 128), {}, False),
    ("AVG_POOL2D", "fp32", S, {}, False), ("AVG_POOL2D", "int8", S, {}, False),
    ("MAX_POOL2D", "fp32", S, {}, True), ("MAX_POOL2D", "int8", S, {}, False),
]


@dataclass
class Case:
    name: str
    suite: str                                  # "ops" | "models"
    make: Callable[[], tuple]                   # -> (Graph, feeds, numpy_fn or None, tosa path or None)
    info: dict = field(default_factory=dict)


def _random(rng, shape, dtype: str) -> np.ndarray:
    if dtype.startswith(("int", "uint")):
        lo, hi = {"int8": (-128, 128), "int16": (-1000, 1000), "int32": (-100000, 100000)}[dtype]
        return rng.integers(lo, hi, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype({"fp32": np.float32, "fp16": np.float16}[dtype])


def _windows(x, k, stride=1, pad=0):
    """NHWC -> (N, OH, OW, C, k, k) sliding windows (a view), for numpy pooling / convolution."""
    if pad:
        x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))[:, ::stride, ::stride]


def _build_op(op: str, dtype: str, shape: tuple, opts: dict):
    """One operator as a graph: (Graph, feeds, numpy equivalent of feeds -> output or None, None)."""
    from .builder import Builder
    rng = np.random.default_rng(0)
    b, feeds = Builder(), {}

    def inp(name, shp, dt=dtype):
        feeds[name] = _random(rng, shp, dt)
        return b.input(name, shp, dt)

    def const(shp, dt):
        return _random(rng, shp, dt)

    acc = "int32" if dtype == "int8" else dtype
    x = inp("x", shape)
    fn = None
    if op in ("ADD", "MUL"):
        y = inp("y", shape)
        out = b.add(x, y) if op == "ADD" else b.mul(x, y)
        fn = (lambda f: f["x"] + f["y"]) if op == "ADD" else (lambda f: f["x"] * f["y"])
    elif op == "CLAMP":
        lo, hi = (-50, 50) if dtype == "int8" else (-1.0, 1.0)
        out, fn = b.clamp(x, min_val=lo, max_val=hi), lambda f: np.clip(f["x"], lo, hi)
    elif op == "SIGMOID":
        out, fn = b.sigmoid(x), lambda f: (1 / (1 + np.exp(-f["x"].astype(np.float32)))).astype(f["x"].dtype)
    elif op == "REDUCE_SUM":
        axis = opts["axis"]
        out, fn = b.reduce_sum(x, axis=axis), lambda f: f["x"].sum(axis=axis, keepdims=True, dtype=f["x"].dtype)
    elif op == "TRANSPOSE":
        perms = (0, 3, 1, 2)
        out, fn = b.transpose(x, perms=perms), lambda f: np.ascontiguousarray(f["x"].transpose(perms))
    elif op == "CONCAT":
        y = inp("y", shape)
        out, fn = b.concat([x, y], axis=3), lambda f: np.concatenate([f["x"], f["y"]], axis=3)
    elif op == "PAD":
        out = b.pad(x, [0, 0, 1, 1, 1, 1, 0, 0])
        fn = lambda f: np.pad(f["x"], ((0, 0), (1, 1), (1, 1), (0, 0)))  # noqa: E731
    elif op == "CONV2D":
        k, w, bias = opts["k"], const((opts["oc"], opts["k"], opts["k"], shape[3]), dtype), const((opts["oc"],), acc)
        out = b.conv2d(x, w, bias, pad=(k // 2,) * 4)
        wide = np.int32 if dtype == "int8" else np.float32
        fn = lambda f: (np.tensordot(_windows(f["x"].astype(wide), k, pad=k // 2), w.astype(wide),  # noqa: E731
                                     axes=([3, 4, 5], [3, 1, 2])) + bias).astype(bias.dtype)
    elif op == "DEPTHWISE_CONV2D":
        k, w, bias = opts["k"], const((opts["k"], opts["k"], shape[3], 1), dtype), const((shape[3],), acc)
        out = b.depthwise_conv2d(x, w, bias, pad=(k // 2,) * 4)
        wide = np.int32 if dtype == "int8" else np.float32
        fn = lambda f: (np.einsum("nhwcij,ijc->nhwc", _windows(f["x"].astype(wide), k, pad=k // 2),  # noqa: E731
                                  w[..., 0].astype(wide)) + bias).astype(bias.dtype)
    elif op == "TRANSPOSE_CONV2D":
        w, bias = const((opts["oc"], opts["k"], opts["k"], shape[3]), dtype), const((opts["oc"],), acc)
        out = b.transpose_conv2d(x, w, bias, stride=(2, 2))
    elif op == "MATMUL":
        n, h, c = shape
        y = inp("y", (n, c, h))
        out = b.matmul(x, y)
        wide = np.int32 if dtype == "int8" else np.float32
        fn = lambda f: (f["x"].astype(wide) @ f["y"].astype(wide)).astype(  # noqa: E731
            np.int32 if dtype == "int8" else f["x"].dtype)
    elif op == "AVG_POOL2D":
        out = b.avg_pool2d(x, kernel=(2, 2), stride=(2, 2))
        if dtype != "int8":  # int8 average pooling rounds as the spec says; no one-line numpy equivalent
            fn = lambda f: _windows(f["x"], 2, 2).mean(axis=(-2, -1), dtype=np.float32).astype(f["x"].dtype)  # noqa
    elif op == "MAX_POOL2D":
        out, fn = b.max_pool2d(x, kernel=(2, 2), stride=(2, 2)), lambda f: _windows(f["x"], 2, 2).max(axis=(-2, -1))
    else:
        raise ValueError(f"no benchmark builder for {op}")
    b.output(out)
    return b.build(), feeds, fn, None


def op_cases(quick: bool = False) -> list[Case]:
    cases = []
    for op, dtype, shape, opts, in_quick in OP_CASES:
        if quick and not in_quick:
            continue
        extra = "".join(f" {k}{v}" for k, v in opts.items())
        name = f"{op} {'x'.join(map(str, shape))}{extra} {dtype}"
        cases.append(Case(name, "ops", lambda a=(op, dtype, shape, opts): _build_op(*a),
                          {"op": op, "dtype": dtype, "shape": list(shape), **opts}))
    return cases


def default_models() -> list[Path]:
    return sorted((ROOT / "resources" / "models").glob("*/model.tosa"))


def model_cases(paths: list[str | Path]) -> list[Case]:
    return [Case(_model_name(Path(p)), "models", lambda p=Path(p): _load_model(p), {"file": str(p)}) for p in paths]


def _model_name(path: Path) -> str:
    return path.parent.name if path.stem == "model" else path.stem


def _load_model(path: Path):
    """The graph with the inputs of a desc.json next to it (conformance layout), else seeded random inputs."""
    from .ir import load_graph
    from .ir.dtype import from_npy
    graph = load_graph(path)
    desc_path = path.parent / "desc.json"
    desc = json.loads(desc_path.read_text()) if desc_path.is_file() else {}
    if desc.get("tosa_file") == path.name:
        feeds = {n: from_npy(np.load(path.parent / f), graph.main.tensors[n].dtype)
                 for n, f in zip(desc["ifm_name"], desc["ifm_file"])}
    else:
        rng = np.random.default_rng(0)
        feeds = {t.name: _random(rng, t.shape, t.dtype.name.lower()) for t in graph.inputs}
    return graph, feeds, None, path


# ------------------------------------------------------------------------------------------------------------------
# Backends: setup() loads and runs once (timed: the first run) and returns a runner; runner.run() -> (outputs by
# name, wall seconds, device seconds or None). Each raises Skip when it cannot run a case.

class Skip(Exception):
    pass


@contextmanager
def _env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


@contextmanager
def _quiet_fd1():
    """Silences native writes to stdout (the reference model warns on every parse)."""
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def _rss_reset() -> int | None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_kb("self", "VmRSS")
    except OSError:
        return None


def _status_kb(pid, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _peak_since(rss0: int | None) -> dict:
    peak = _status_kb("self", "VmHWM")
    if rss0 is None or peak is None:
        return {"bytes": None, "method": "unavailable (no /proc/self/clear_refs)"}
    return {"bytes": (peak - rss0) * 1024, "method": "peak RSS growth (VmHWM) over load + first run"}


class _Vulkan:
    def __init__(self, graph, feeds, path, ctx):
        import tosa_vk
        def load(timestamps: bool = False):
            return tosa_vk.load(graph, backend="vulkan", device=ctx["device"], timestamps=timestamps)
        self.load, self.timed = load, None
        self.result, self.feeds = {}, feeds
        cache = Path(tempfile.mkdtemp(prefix="tosa_vk_bench_spirv_")) if ctx["cold"] else None
        if cache:  # cold: a fresh SPIR-V cache, so every shader goes through glslc
            ctx["cleanup"].append(cache)
            with _env("TOSA_VK_CACHE", str(cache)):
                t = time.perf_counter()
                with load() as model:
                    model.run(feeds)
                    self.result["first_run_cold_s"] = time.perf_counter() - t
        rss0 = _rss_reset()
        with _env("TOSA_VK_CACHE", str(cache)) if cache else nullcontext():  # warm: the cache the cold run filled
            t = time.perf_counter()
            self.model = load()
            try:
                self.outputs = self.model.run(feeds)
            except BaseException:
                self.model.close()
                raise
            self.result["first_run_s"] = time.perf_counter() - t
        self.result["peak_mem"] = _peak_since(rss0)
        where = [w for _, w in self.model.placement]
        self.result["placement"] = {k: where.count(k) for k in ("vulkan", "host", "alias")}

    def run(self):
        t = time.perf_counter()
        out = self.model.run(self.feeds)
        wall = time.perf_counter() - t
        if self.timed is None:  # device time from a twin with timestamp queries, which would inflate the wall time
            self.timed = self.load(timestamps=True)
        self.timed.run(self.feeds)
        return out, wall, sum(s for _, s in self.timed.profile()) or None

    def close(self):
        self.model.close()
        if self.timed is not None:
            self.timed.close()


class _Reference:
    def __init__(self, graph, feeds, path, ctx):
        import tosa_vk
        rss0 = _rss_reset()
        t = time.perf_counter()
        self.model = tosa_vk.load(graph, backend="reference")
        self.outputs = self.model.run(feeds)
        self.result = {"first_run_s": time.perf_counter() - t, "peak_mem": _peak_since(rss0)}
        self.feeds = feeds

    def run(self):
        t = time.perf_counter()
        out = self.model.run(self.feeds)
        return out, time.perf_counter() - t, None

    def close(self):
        self.model.close()


class _RefModel:
    def __init__(self, graph, feeds, path, ctx):
        try:
            import tosa_reference_model
        except ImportError as err:
            raise Skip(f"tosa_reference_model not importable ({err}; pip install tosa-tools)") from None
        from .ir import write_graph
        self.fn, self.names = tosa_reference_model.run, [t.name for t in graph.outputs]
        rss0 = _rss_reset()
        t = time.perf_counter()
        self.binary = write_graph(graph)
        self.inputs = [feeds[n] for n in graph.main.inputs]
        self.outputs = self.run()[0]
        self.result = {"first_run_s": time.perf_counter() - t, "peak_mem": _peak_since(rss0)}

    def run(self):
        with _quiet_fd1():
            t = time.perf_counter()
            outs, status = self.fn(self.binary, self.inputs)
            wall = time.perf_counter() - t
        if "VALID" not in str(status):
            raise Skip(f"tosa_reference_model returned {status}")
        return dict(zip(self.names, outs)), wall, None

    def close(self):
        pass


class _Numpy:
    def __init__(self, graph, feeds, path, ctx):
        if ctx["numpy_fn"] is None:
            raise Skip("no direct numpy equivalent")
        self.fn, self.feeds, self.name = ctx["numpy_fn"], feeds, graph.outputs[0].name
        rss0 = _rss_reset()
        t = time.perf_counter()
        self.outputs = self.run()[0]
        self.result = {"first_run_s": time.perf_counter() - t, "peak_mem": _peak_since(rss0)}

    def run(self):
        t = time.perf_counter()
        out = self.fn(self.feeds)
        return {self.name: out}, time.perf_counter() - t, None

    def close(self):
        pass


def _arm_module():
    """benchmarks/anchors/arm_sdk.py of a source checkout, or the reason it cannot be used."""
    if not (ROOT / "benchmarks" / "anchors" / "arm_sdk.py").is_file():
        return None, "benchmarks/anchors/arm_sdk.py not found (a source checkout of tosa_vk has it)"
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.anchors import arm_sdk
    why = arm_sdk.available()
    return (arm_sdk, None) if why is None else (None, why)


class _ArmSdk:
    def __init__(self, graph, feeds, path, ctx):
        sdk = ctx["arm_sdk"]
        if path is None:
            from .ir import save_graph
            tmp = Path(tempfile.mkdtemp(prefix="tosa_vk_bench_arm_"))
            ctx["cleanup"].append(tmp)
            path = tmp / "graph.tosa"
            save_graph(graph, path)
        try:
            self.anchor = sdk.ArmSdkAnchor(path)
            self.feeds = feeds
            self.outputs, times = self.anchor.run(feeds)
        except (sdk.ArmSdkError, OSError, KeyError, ValueError) as err:
            if hasattr(self, "anchor"):
                self.anchor.close()
            raise Skip(str(err)) from None
        hwm = _status_kb(self.anchor._proc.pid, "VmHWM")
        self.result = {"first_run_s": self.anchor.convert_seconds + self.anchor.load_seconds + times[0],
                       "convert_s": self.anchor.convert_seconds, "load_scenario_s": self.anchor.load_seconds,
                       "peak_mem": {"bytes": hwm * 1024 if hwm else None, "method": "worker process peak RSS"}}

    def run(self):
        outs, times = self.anchor.run(self.feeds)
        return outs, times[0], None

    def close(self):
        self.anchor.close()


RUNNERS = {"vulkan": _Vulkan, "reference": _Reference, "refmodel": _RefModel, "numpy": _Numpy, "arm_sdk": _ArmSdk}


# ------------------------------------------------------------------------------------------------------------------
# Measuring

def _stats(samples: list[float]) -> dict:
    if not samples:
        return {}
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "q1": q[0], "q3": q[2]}


def compare(got: dict, want: dict) -> dict:
    """Max |diff| over all outputs and whether it is within tolerance (integers exact)."""
    worst, ok = 0.0, True
    for name, ref in want.items():
        ref = np.asarray(ref)
        if name not in got:
            return {"max_abs_diff": None, "ok": False, "why": f"output {name!r} missing"}
        val = np.asarray(got[name])
        if val.shape != ref.shape:
            return {"max_abs_diff": None, "ok": False, "why": f"{name}: shape {val.shape} != {ref.shape}"}
        a, b = val.astype(np.float64), ref.astype(np.float64)
        diff = np.abs(a - b)
        diff[np.isnan(a) & np.isnan(b)] = 0.0
        d = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0
        worst = max(worst, d)
        if ref.dtype.kind in "f" or ref.dtype.kind == "V" or "float" in ref.dtype.name:
            scale = float(np.nanmax(np.abs(b), initial=0.0)) if b.size else 0.0
            ok &= d <= RTOL.get(ref.dtype.itemsize, 1e-2) * (1.0 + scale)
        else:
            ok &= d == 0.0
    return {"max_abs_diff": worst, "ok": bool(ok)}


def _short(err: BaseException) -> str:
    """A one-line note: a Skip's whole reason, or an error's type and first line."""
    if isinstance(err, Skip):
        return " ".join(str(err).split())[:300]
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}"[:300]


def bench_case(case: Case, backends: list[str], settings: dict, progress=None) -> dict:
    """Measures one case on every backend in `backends`; never raises for a backend's failure."""
    row = {"case": case.name, "suite": case.suite, **case.info, "results": {}}
    try:
        graph, feeds, numpy_fn, path = case.make()
    except Exception as err:  # noqa: BLE001 - a case that cannot be built is reported, not fatal
        row["error"] = _short(err)
        return row
    row["bytes_io"] = int(sum(v.nbytes for v in feeds.values()) +
                          sum(int(np.prod(t.shape)) * np.dtype(t.dtype.numpy).itemsize for t in graph.outputs))
    ctx = {**settings, "numpy_fn": numpy_fn, "cleanup": []}
    runners, results = {}, row["results"]
    truth = None
    try:
        for name in ["reference", *[b for b in backends if b != "reference"]]:  # the reference is the truth
            if name == "arm_sdk" and settings.get("arm_sdk") is None:
                results[name] = {"status": "skipped", "note": settings.get("arm_sdk_note") or "unavailable"}
                continue
            if progress:
                progress(f"{case.name}: loading {name}")
            try:
                runner = RUNNERS[name](graph, feeds, path, ctx)
            except Skip as err:
                results[name] = {"status": "skipped", "note": _short(err)}
                continue
            except Exception as err:  # noqa: BLE001
                results[name] = {"status": "error", "note": _short(err)}
                continue
            if name == "reference":
                truth = runner.outputs
                if "reference" not in backends:  # the truth only
                    runner.close()
                    continue
            runners[name] = runner
            results[name] = {"status": "ok", **runner.result, "wall_s": [], "device_s": []}
        order = list(runners)
        for _ in range(settings["warmup"]):
            for name in order:
                _guarded(runners, results, name, lambda r: r.run())
        for i in range(settings["repeats"]):
            if progress:
                progress(f"{case.name}: run {i + 1}/{settings['repeats']}")
            rotated = order[i % len(order):] + order[:i % len(order)] if order else []
            for name in rotated:
                if name not in runners:
                    continue
                got = _guarded(runners, results, name, lambda r: r.run())
                if got is not None:
                    _, wall, dev = got
                    results[name]["wall_s"].append(wall)
                    if dev is not None:
                        results[name]["device_s"].append(dev)
        for name, runner in runners.items():
            res = results[name]
            res["wall"], res["device"] = _stats(res["wall_s"]), _stats(res["device_s"])
            if truth is not None:
                res.update(compare(runner.outputs, truth))
    finally:
        for runner in runners.values():
            try:
                runner.close()
            except Exception:  # noqa: BLE001
                pass
        for folder in ctx["cleanup"]:
            shutil.rmtree(folder, ignore_errors=True)
    return row


def _guarded(runners, results, name, call):
    try:
        return call(runners[name])
    except Exception as err:  # noqa: BLE001 - a backend failing mid-way is dropped from this case
        results[name].update(status="error", note=_short(err))
        try:
            runners.pop(name).close()
        except Exception:  # noqa: BLE001
            pass
        return None


# ------------------------------------------------------------------------------------------------------------------
# Environment, report

def environment(device) -> dict:
    from importlib import metadata
    import tosa_vk
    env = {"machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                       "cpus": os.cpu_count(), "python": sys.version.split()[0]},
           "packages": {"tosa_vk": tosa_vk.__version__}}
    for dist in ("numpy", "ml_dtypes", "vulkan", "tosa-tools", "matplotlib", "ai-ml-sdk-model-converter",
                 "ai-ml-sdk-vgf-library", "ai-ml-sdk-scenario-runner", "ai-ml-emulation-layer-for-vulkan"):
        try:
            env["packages"][dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            env["packages"][dist] = None
    src, dst = np.ones(32 << 20, np.uint8), np.empty(32 << 20, np.uint8)
    copies = []
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(dst, src)
        copies.append(time.perf_counter() - t)
    env["machine"]["memcpy_GBps"] = 2 * src.nbytes / min(copies) / 1e9  # bytes read + written, best of 5
    try:
        from .vulkan import enumerate_devices, select
        from .vulkan.shaders import glslc_version
        devices = enumerate_devices()
        chosen = select(devices, device)
        env["device"] = {**{k: getattr(chosen, k) for k in ("index", "name", "type", "api_version", "driver_version",
                                                            "vendor_id", "device_id", "subgroup_size")},
                         **_driver(chosen.index), "features": chosen.features}
        env["devices"] = [d.name for d in devices]
        env["packages"]["glslc"] = glslc_version().splitlines()[0]
    except Exception as err:  # noqa: BLE001
        env["device"] = {"error": _short(err)}
    return env


def _driver(index: int) -> dict:
    """VkPhysicalDeviceDriverProperties of device `index`: e.g. llvmpipe, "Mesa 22.3.6 (LLVM 15.0.6)"."""
    import vulkan as vk
    from .vulkan.device import create_instance
    instance, _ = create_instance()
    try:
        drv = vk.VkPhysicalDeviceDriverProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES)
        props = vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=drv)
        vk.vkGetPhysicalDeviceProperties2(vk.vkEnumeratePhysicalDevices(instance)[index], props)
        return {"driver_name": vk.ffi.string(drv.driverName).decode(),
                "driver_info": vk.ffi.string(drv.driverInfo).decode()}
    finally:
        vk.vkDestroyInstance(instance, None)


def _ms(stats: dict) -> str:
    return f"{stats['median'] * 1e3:.3g} ({stats['min'] * 1e3:.3g}–{stats['max'] * 1e3:.3g})" if stats else "—"


def _cell(res: dict | None) -> str:
    if not res or res.get("status") != "ok":
        return "—"
    return _ms(res["wall"]) + ("" if res.get("ok", True) else " ✗")


def markdown(report: dict) -> str:
    s, env = report["settings"], report["environment"]
    dev = env.get("device", {})
    lines = [f"tosa_vk benchmark, {report['created']}, {dev.get('name', '?')} ("
             f"{dev.get('driver_info', '?')}), {env['machine']['processor']} x{env['machine']['cpus']} "
             f"(memcpy {env['machine'].get('memcpy_GBps', 0):.1f} GB/s); "
             f"median (min–max) of {s['repeats']} interleaved runs, ms. "
             f"Ratios: anchor median / tosa_vk Vulkan wall median (> 1: tosa_vk faster). ✗: outputs differ from the "
             f"reference backend beyond tolerance.", "",
             "| case | Vulkan wall | Vulkan device | tosa_vk reference | tosa_reference_model | numpy | Arm SDK | "
             "x refmodel | x numpy | x Arm SDK | ref x refmodel |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for row in report["cases"]:
        r = row["results"]
        if "error" in row:
            notes.append(f"{row['case']}: could not build: {row['error']}")
            continue
        vk = r.get("vulkan", {})
        base = vk.get("wall", {}).get("median") if vk.get("status") == "ok" else None

        def ratio(anchor, over=base):
            a = r.get(anchor, {})
            med = a.get("wall", {}).get("median") if a.get("status") == "ok" else None
            return f"{med / over:.2f}" if med and over else "—"
        ref = r.get("reference", {})
        ref_med = ref.get("wall", {}).get("median") if ref.get("status") == "ok" else None
        dev_cell = _ms(vk.get("device", {})) if vk.get("status") == "ok" else "—"
        lines.append(f"| {row['case']} | {_cell(vk)} | {dev_cell} | {_cell(ref)} | {_cell(r.get('refmodel'))} | "
                     f"{_cell(r.get('numpy'))} | {_cell(r.get('arm_sdk'))} | {ratio('refmodel')} | "
                     f"{ratio('numpy')} | {ratio('arm_sdk')} | {ratio('refmodel', ref_med)} |")
        for name, res in r.items():
            if res.get("status") != "ok" and not (name == "numpy" and "numpy equivalent" in res.get("note", "")):
                notes.append(f"{row['case']} / {name}: {res['status']}: {res.get('note', '')}")
            elif res.get("status") == "ok" and not res.get("ok", True):
                notes.append(f"{row['case']} / {name}: max |diff| {res.get('max_abs_diff')} vs reference "
                             f"{res.get('why', '')}")
    lines += ["", "| case | Vulkan first run cold / warm | reference first | refmodel first | Arm SDK first "
                  "(convert + load + run) | Vulkan peak RSS | Vulkan kernels / host ops | Vulkan GB/s | "
                  "max abs diff vs reference |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in report["cases"]:
        r = row["results"]
        if "error" in row:
            continue
        vk = r.get("vulkan", {})

        def first(name):
            res = r.get(name, {})
            return f"{res['first_run_s'] * 1e3:.0f} ms" if res.get("status") == "ok" else "—"
        cold = f"{vk['first_run_cold_s'] * 1e3:.0f} / " if "first_run_cold_s" in vk else ""
        mem = vk.get("peak_mem", {}).get("bytes")
        place = vk.get("placement")
        dev_med = vk.get("device", {}).get("median")
        gbps = f"{row['bytes_io'] / dev_med / 1e9:.2f}" if dev_med else "—"
        diffs = ", ".join(f"{n} {res['max_abs_diff']:.2g}{'' if res['ok'] else ' ✗'}" for n, res in r.items()
                          if res.get("status") == "ok" and n != "reference" and res.get("max_abs_diff") is not None)
        lines.append(f"| {row['case']} | {cold + first('vulkan') if vk.get('status') == 'ok' else '—'} | "
                     f"{first('reference')} | {first('refmodel')} | {first('arm_sdk')} | "
                     f"{f'{mem / 2**20:.1f} MiB' if mem is not None else '—'} | "
                     f"{'{vulkan} / {host}'.format(**place) if place else '—'} | {gbps} | {diffs or '—'} |")
    lines += ["", "Cold: empty temporary SPIR-V cache (glslc runs); Mesa's own shader / pipeline caches cannot be "
                  "cleared from here and may be warm. Peak RSS: growth of the process peak over load + first run "
                  "(memory the allocator kept from earlier cases is not counted). GB/s: graph input + output bytes "
                  "/ Vulkan device time."]
    if notes or report["notes"]:
        lines += ["", "Notes:"] + [f"- {n}" for n in report["notes"] + notes]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> str | None:
    """A PNG of median wall times per case and backend (log scale, min–max whiskers); None or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no plot (pip install matplotlib)"
    rows = [r for r in report["cases"] if "results" in r and "error" not in r]
    names = [b for b in BACKENDS if any(r["results"].get(b, {}).get("status") == "ok" for r in rows)]
    fig, ax = plt.subplots(figsize=(10, 0.1 * len(rows) * max(1, len(names)) + 1.5))
    height = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        ys, meds, errs = [], [], [[], []]
        for i, r in enumerate(rows):
            st = r["results"].get(name, {}).get("wall") if r["results"].get(name, {}).get("status") == "ok" else None
            if st:
                ys.append(i + j * height)
                meds.append(st["median"] * 1e3)
                errs[0].append((st["median"] - st["min"]) * 1e3)
                errs[1].append((st["max"] - st["median"]) * 1e3)
        ax.barh(ys, meds, height, xerr=errs, label=LABELS[name], capsize=2)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(rows))], [r["case"] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("wall time per run, ms (median, min–max)")
    ax.legend(fontsize=7)
    ax.set_title(f"tosa_vk bench — {report['environment'].get('device', {}).get('name', '?')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# ------------------------------------------------------------------------------------------------------------------
# Driver

def run(cases: list[Case], backends=BACKENDS, repeats: int = 7, warmup: int = 1, device=None, cold: bool = True,
        progress: Callable[[str], None] | None = None) -> dict:
    """Runs every case; the report dict (settings, environment, notes, cases with every sample)."""
    backends = [b for b in backends if b in BACKENDS]
    notes = []
    settings = {"repeats": repeats, "warmup": warmup, "device": device, "cold": cold, "backends": backends}
    if isinstance(device, str) and device.isdigit():
        device = int(device)
    arm_sdk, arm_note = (None, "not selected")
    if "arm_sdk" in backends:
        arm_sdk, arm_note = _arm_module()
        if arm_note:
            notes.append(f"Arm SDK anchor skipped: {arm_note}")
        elif device is not None:
            notes.append("Arm SDK anchor runs on the loader's first device (set VK_ICD_FILENAMES to pin it); "
                         "--device applies to tosa_vk only")
    env = environment(device)
    if device is not None and "error" in env["device"]:  # a device asked for by name / index must exist
        from .errors import TosaError
        raise TosaError(f"--device {device}: {env['device']['error']}")
    report = {"schema": "tosa_vk.bench/1", "created": time.strftime("%Y-%m-%d %H:%M:%S"), "settings": settings,
              "environment": env, "notes": notes, "cases": []}
    ctx = {**settings, "device": device, "arm_sdk": arm_sdk, "arm_sdk_note": arm_note}
    _warm_process(backends, ctx)
    start = time.perf_counter()
    for i, case in enumerate(cases):
        say = (lambda text, i=i: progress(f"[{i + 1}/{len(cases)}] {text}")) if progress else None
        row = bench_case(case, backends, ctx, say)
        report["cases"].append(row)
        if progress:
            vk = row["results"].get("vulkan", {})
            progress(f"[{i + 1}/{len(cases)}] {case.name}: Vulkan {_cell(vk)} ms, "
                     f"{time.perf_counter() - start:.0f} s elapsed", done=True)
    report["wall_seconds"] = time.perf_counter() - start
    return report


def _warm_process(backends: list[str], ctx: dict) -> None:
    """One untimed tiny graph per in-process backend, so the first case does not pay for imports and driver
    loading in its "first run"."""
    graph, feeds, _, _ = _build_op("ADD", "fp32", (2, 2), {})
    for name in ("reference", "vulkan", "refmodel"):
        if name in backends or name == "reference":
            try:
                RUNNERS[name](graph, feeds, None, {**ctx, "cold": False, "cleanup": []}).close()
            except Exception:  # noqa: BLE001 - the real cases report the problem
                pass


def write(report: dict, out: Path) -> list[str]:
    """results.json, results.md and results.png (when matplotlib is importable) into `out`; notes."""
    out.mkdir(parents=True, exist_ok=True)
    why = plot(report, out / "results.png")
    if why:
        report["notes"].append(why)
    (out / "results.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "results.md").write_text(markdown(report))
    return [why] if why else []


class Progress:
    """One line on stderr, rewritten in place on a terminal; only finished cases otherwise."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.tty = stream, stream.isatty()

    def __call__(self, text: str, done: bool = False) -> None:
        if self.tty:
            end = "\n" if done else ""
            self.stream.write("\r\033[K" + text[:150] + end)
        elif done:
            self.stream.write(text + "\n")
        self.stream.flush()


def add_arguments(p) -> None:
    p.add_argument("models", nargs="*", help=".tosa files for the model suite (default: resources/models/*)")
    p.add_argument("--suite", choices=("ops", "models", "all"), help="default: models if files are given, else all")
    p.add_argument("--quick", action="store_true", help="a small subset (a few minutes on 2 CPU cores)")
    p.add_argument("--filter", help="only cases whose name contains this (case-insensitive)")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per backend and case")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs after the first one")
    p.add_argument("--device", help="Vulkan device for tosa_vk: index or name substring (tosa-vk devices)")
    p.add_argument("--backends", default=",".join(BACKENDS), help=f"comma list from {','.join(BACKENDS)}")
    p.add_argument("--no-cold", action="store_true", help="skip the cold (empty SPIR-V cache) first run")
    p.add_argument("--out", default="bench_results", help="folder for results.json / .md / .png")


def select_cases(suite: str | None, models: list[str], quick: bool) -> list[Case]:
    """--suite ops | models | all; --quick: the marked op cases and the smallest shipped model."""
    suite = suite or ("models" if models else "all")
    cases = op_cases(quick) if suite in ("ops", "all") else []
    if suite in ("models", "all"):
        paths = [Path(m) for m in models] or default_models()
        if quick and not models:
            paths = sorted(paths, key=lambda p: p.stat().st_size)[:1]
        cases += model_cases(paths)
    return cases


def main_from_args(args, cases: list[Case] | None = None) -> int:
    if cases is None:
        cases = select_cases(args.suite, args.models, args.quick)
    if args.filter:
        cases = [c for c in cases if args.filter.lower() in c.name.lower()]
    if not cases:
        print("tosa-vk bench: no cases selected", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        print(f"tosa-vk bench: unknown backend(s) {unknown}; choose from {', '.join(BACKENDS)}", file=sys.stderr)
        return 2
    report = run(cases, backends, args.repeats, args.warmup, args.device, not args.no_cold, Progress())
    skipped = write(report, Path(args.out))
    print(markdown(report))
    plotted = "" if skipped else " and plot"
    print(f"{len(cases)} cases in {report['wall_seconds']:.0f} s; JSON, markdown{plotted} in {args.out}/",
          file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="benchmarks/run.py", description="tosa_vk benchmark suite (= tosa-vk bench)")
    add_arguments(p)
    return main_from_args(p.parse_args(argv))

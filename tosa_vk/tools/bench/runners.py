"""One runner per backend. Constructing a runner loads the graph and runs it once (timed: the first run, with its
peak memory); runner.run() -> (outputs by name, wall seconds, device seconds or None); close() frees it. A runner
raises Skip when its backend cannot run a case (not installed, no numpy equivalent, ...).

  vulkan    tosa_vk Vulkan: host wall time of Model.run (input write, submit, wait, output copy) and device time
            (sum of the kernels' timestamp queries, from a second model of the graph: on lavapipe the queries
            about double the wall time of graphs of small kernels, so the timed model is not the one with a wall
            clock). First runs (load + first run): cold, in a new process with tosa_vk's caches (SPIR-V, program)
            and Mesa's shader cache in empty folders; warm process, a second new process on those caches;
            warm in-process, this process loading the model again with them.
  reference tosa_vk's numpy reference backend (also the truth every backend's outputs are compared with).
  refmodel  Arm's C++ reference model in-process (tosa_reference_model.run; parses the flatbuffer on every call).
  numpy     a direct numpy expression, for ops that have one.
  arm_sdk   Arm's ML SDK pipeline (model-converter -> VGF -> scenario-runner + emulation layers) in a worker
            process (anchors/arm_sdk.py): the time of Scenario.run() there; its first run is convert +
            load_scenario + first run.
  iree_vulkan, iree_cpu  IREE (anchors/iree.py) in-process: the graph as TOSA MLIR, iree-compile (cached .vmfb)
            for Vulkan (the loader's first device) or llvm-cpu (local-task on this CPU); the time of the call plus
            the output copies; its first run is MLIR + compile (0 when cached) + load + first run (Vulkan: after
            a guard's first run in a child process with a timeout, which fills Mesa's shader cache: first_run_guard_s).
Peak memory: growth of the process's peak RSS (VmHWM, reset through /proc/self/clear_refs) over load + first run,
so device memory of lavapipe counts too; for arm_sdk the worker process's peak RSS.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .cases import build_op

if TYPE_CHECKING:
    from ...ir.graph import Graph

LABELS = {
    "vulkan": "tosa_vk Vulkan",
    "reference": "tosa_vk reference",
    "refmodel": "tosa_reference_model",
    "numpy": "numpy",
    "arm_sdk": "Arm ML SDK + emulation",
    "iree_vulkan": "IREE Vulkan",
    "iree_cpu": "IREE llvm-cpu",
}


class Skip(Exception):
    pass


class Runner(Protocol):
    """What each runner class below is, once constructed (loaded and run once)."""

    outputs: dict[str, np.ndarray]
    result: dict[str, Any]  # first-run time, peak memory, ... (merged into the case's results)

    def run(self) -> tuple[dict[str, np.ndarray], float, float | None]: ...  # outputs, wall s, device s or None

    def close(self) -> None: ...


def short(err: BaseException) -> str:
    """A one-line note: a Skip's whole reason, or an error's type and first line."""
    if isinstance(err, Skip):
        return " ".join(str(err).split())[:300]
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}"[:300]


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
        cache = Path(tempfile.mkdtemp(prefix="tosa_vk_bench_cache_")) if ctx["cold"] else None
        if cache and path:  # cold and warm-process first runs: new processes on caches of their own
            ctx["cleanup"].append(cache)
            for key in ("first_run_cold_s", "first_run_warm_process_s"):
                self.result[key] = _first_run_process(path, feeds, cache)
        elif cache:  # no file: cold in this process (tosa_vk's caches empty; Mesa's may be warm)
            ctx["cleanup"].append(cache)
            with _env("TOSA_VK_CACHE", str(cache)):
                t = time.perf_counter()
                with load() as model:
                    model.run(feeds)
                    self.result["first_run_cold_s"] = time.perf_counter() - t
        rss0 = _rss_reset()
        warm = (cache / "tosa_vk" if path else cache) if cache else None  # the caches the cold run filled
        with _env("TOSA_VK_CACHE", str(warm)) if warm else nullcontext():
            t = time.perf_counter()
            self.model = load()
            try:
                self.outputs = self.model.run(feeds)
            except BaseException:
                self.model.close()
                raise
            self.result["first_run_s"] = time.perf_counter() - t
        self.result["peak_mem"] = _peak_since(rss0)
        where = [p.where for p in self.model.placement]
        self.result["placement"] = {k: where.count(k) for k in ("vulkan", "host", "alias")}

    def run(self):
        t = time.perf_counter()
        out = self.model.run(self.feeds)
        wall = time.perf_counter() - t
        if self.timed is None:  # device time from a twin with timestamp queries, which would inflate the wall time
            self.timed = self.load(timestamps=True)
            self.timed.run(self.feeds)  # a warm-up: its first run compiles the pipelines, which it would time
        self.timed.run(self.feeds)
        device_us = sum(t.microseconds for t in self.timed.profile() if t.where == "device")
        return out, wall, device_us * 1e-6 or None

    def close(self):
        self.model.close()
        if self.timed is not None:
            self.timed.close()


def _first_run_process(path, feeds: dict, cache: Path) -> float:
    """Load + first run in a new process (tosa_vk/tools/bench/first_run.py) with tosa_vk's caches and Mesa's shader
    cache in `cache` (empty the first time); seconds. Python's own bytecode is cached (in a folder of the bench's,
    filled before the first measurement), as an installed package's is: PYTHONDONTWRITEBYTECODE would otherwise
    add ~50 ms of compiling tosa_vk's Vulkan modules to every load."""
    import json
    import subprocess

    np.savez(cache / "feeds.npz", **feeds)
    env = {**os.environ, "TOSA_VK_CACHE": str(cache / "tosa_vk"), "MESA_SHADER_CACHE_DIR": str(cache / "mesa")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = _bytecode_cache()
    done = subprocess.run(
        [sys.executable, "-m", "tosa_vk.tools.bench.first_run", str(path), str(cache / "feeds.npz")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"first run in a new process failed: {done.stderr.strip()[-500:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


@functools.cache
def _bytecode_cache() -> str:
    """A folder for the first-run processes' bytecode, filled once per bench run."""
    import subprocess

    folder = str(Path(tempfile.gettempdir()) / "tosa_vk_bench_pycache")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-c", "import tosa_vk.backends.vulkan, tosa_vk.tools.bench.first_run"]
    subprocess.run(command, env={**env, "PYTHONPYCACHEPREFIX": folder}, capture_output=True, timeout=300)
    return folder


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


def _graph_only(graph, who: str) -> None:
    """An ExecuTorch program (a .pte case: `graph` is its path) runs on tosa_vk's own backends only."""
    if isinstance(graph, (str, Path)):
        raise Skip(f"{who} runs TOSA graphs; this is an ExecuTorch program (delegates and host operators)")


class _RefModel:
    def __init__(self, graph, feeds, path, ctx):
        _graph_only(graph, "tosa_reference_model")
        try:
            import tosa_reference_model
        except ImportError as err:
            raise Skip(f"tosa_reference_model not importable ({err}; pip install tosa-tools)") from None
        from ...ir import write_graph

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


class _ArmSdk:
    def __init__(self, graph, feeds, path, ctx):
        _graph_only(graph, "Arm's ML SDK")
        from .anchors import arm_sdk

        if path is None:
            from ...ir import save_graph

            tmp = Path(tempfile.mkdtemp(prefix="tosa_vk_bench_arm_"))
            ctx["cleanup"].append(tmp)
            path = tmp / "graph.tosa"
            save_graph(graph, path)
        try:
            self.anchor = arm_sdk.ArmSdkAnchor(path)
            self.feeds = feeds
            self.outputs, times = self.anchor.run(feeds)
        except (arm_sdk.ArmSdkError, OSError, KeyError, ValueError) as err:
            if hasattr(self, "anchor"):
                self.anchor.close()
            raise Skip(str(err)) from None
        hwm = _status_kb(self.anchor._proc.pid, "VmHWM")
        self.result = {
            "first_run_s": self.anchor.convert_seconds + self.anchor.load_seconds + times[0],
            "convert_s": self.anchor.convert_seconds,
            "load_scenario_s": self.anchor.load_seconds,
            "peak_mem": {"bytes": hwm * 1024 if hwm else None, "method": "worker process peak RSS"},
        }

    def run(self):
        outs, times = self.anchor.run(self.feeds)
        return outs, times[0], None

    def close(self):
        self.anchor.close()


class _Iree:
    backend = "iree_vulkan"

    def __init__(self, graph, feeds, path, ctx):
        _graph_only(graph, "IREE")
        from .anchors import iree

        why = iree.available(self.backend)
        if why:
            raise Skip(why)
        if path is None:
            from ...ir import save_graph

            tmp = Path(tempfile.mkdtemp(prefix="tosa_vk_bench_iree_"))
            ctx["cleanup"].append(tmp)
            path = tmp / "graph.tosa"
            save_graph(graph, path)
        rss0 = _rss_reset()
        try:
            self.anchor = iree.IreeAnchor(
                path, self.backend, [t.name for t in graph.inputs], [t.name for t in graph.outputs]
            )
            self.feeds = feeds
            t = time.perf_counter()
            self.anchor.guard_first_run(feeds)  # Vulkan: in a child process with a timeout (a hang is a Skip)
            guard = time.perf_counter() - t
            self.outputs, first = self.anchor.run(feeds)
        except (iree.IreeError, OSError, KeyError, ValueError, RuntimeError) as err:
            if hasattr(self, "anchor"):
                self.anchor.close()
            raise Skip(str(err)) from None
        a = self.anchor
        self.result = {
            "first_run_s": a.mlir_seconds + a.compile_seconds + a.load_seconds + first,
            "first_run_guard_s": guard,  # not in first_run_s: a second process's first run, on Mesa's cache
            "compile_s": a.compile_seconds,
            "compile_cached": a.cached,
            "peak_mem": _peak_since(rss0),
        }

    def run(self):
        outs, wall = self.anchor.run(self.feeds)
        return outs, wall, None

    def close(self):
        self.anchor.close()


class _IreeCpu(_Iree):
    backend = "iree_cpu"


# runner(graph, feeds, path of the .tosa file or None, settings) -> Runner
RUNNERS: dict[str, Callable[[Graph, dict[str, np.ndarray], Path | None, dict[str, Any]], Runner]] = {
    "vulkan": _Vulkan,
    "reference": _Reference,
    "refmodel": _RefModel,
    "numpy": _Numpy,
    "arm_sdk": _ArmSdk,
    "iree_vulkan": _Iree,
    "iree_cpu": _IreeCpu,
}
BACKENDS = tuple(RUNNERS)


def arm_sdk_unavailable() -> str | None:
    """Why the Arm SDK anchor cannot run here (probed once per worker interpreter), or None."""
    from .anchors import arm_sdk

    return arm_sdk.available()


def warm_process(backends: list[str], ctx: dict) -> None:
    """One untimed tiny graph per in-process backend, so the first case does not pay for imports and driver
    loading in its "first run"."""
    graph, feeds, _, _ = build_op("ADD", "fp32", (2, 2), {})
    for name in ("reference", "vulkan", "refmodel"):
        if name in backends or name == "reference":
            try:
                RUNNERS[name](graph, feeds, None, {**ctx, "cold": False, "cleanup": []}).close()
            except Exception:  # noqa: BLE001 - the real cases report the problem
                pass

"""Anchor: IREE (iree-base-compiler / iree-base-runtime from PyPI, the `iree` extra) compiling the same .tosa graph,
run in-process on the same Vulkan device (`iree_vulkan`) or on the same CPU (`iree_cpu`, llvm-cpu + local-task).

    from tosa_vk.tools.bench.anchors.iree import IreeAnchor, available
    if (why := available("iree_vulkan")) is None:
        with IreeAnchor("model.tosa", "iree_vulkan") as anchor:    # MLIR, compile (cached), load, nothing run
            outputs, seconds = anchor.run({"x": x})                  # outputs by graph output name, wall seconds

The path, step by step:
  1. .tosa -> TOSA MLIR with tosa-tools' `tosa-opt --tosa-deserialize=tosa-flatbuffer-filename=F` on an empty
     module, printed in the generic form (--mlir-print-op-generic): tosa-tools' and IREE's MLIR are different LLVM
     revisions, and IREE 3.13 does not parse tosa-opt's custom syntax of some ops (`tosa.const_shape ... {values}`:
     "expected 'values'"), while the generic form (properties in `<{...}>`) reads the same in both;
  2. `iree-compile` for the target (TARGETS: flags) -> a .vmfb, cached under <tosa_vk cache>/iree/ by the sha256
     of the MLIR, the flags and IREE's version (mobilenetv2 takes ~10 s to compile here); a refusal is cached too
     (the int8 ResNet's failing compile takes ~30 s), as a text file holding the reason;
  3. iree.runtime in this process: one HAL device per driver for the whole process (iree.runtime.get_device caches
     it), a SystemContext per graph; the function `main` is called with the inputs in the graph's order.
Vulkan: IREE's default target (vp_android_baseline_2022: SPIR-V 1.3, 32-bit storage only) is kept; it is what a
user of IREE gets, and runs on lavapipe. IREE's Vulkan driver takes the loader's first device (set
VK_ICD_FILENAMES / VK_DRIVER_FILES to pin it; tosa_vk's --device does not apply).

A run's time is the wall time of the call (inputs copied to device buffers, dispatches, wait) plus the copy of the
outputs back to numpy arrays, as tosa_vk's Vulkan wall time counts its input writes and output copies. The outputs
come back through a staging buffer per output size (kept across runs): IREE 3.13's DeviceArray.to_host() on the
Vulkan driver imports the numpy array's memory, which lavapipe refuses unless it is 4096-byte aligned
(minImportedHostPointerAlignment). That copy is one more submit + wait per output (~2-3 ms of a transformer block's
~18 ms median at load 6 here): the call alone is what iree-benchmark-module would report.

Known (lavapipe, Mesa 22.3): the default target refuses the int8 ResNet and the Builder's int8 transformer
(`vector.bitcast` vector<4xi8> -> vector<1xi32> cannot be legalized with 32-bit storage only), and the Builder's
lstm_int8 compiles but its first Vulkan run did not end within 400 s (lavapipe's threads busy all along): a run in
this process cannot be interrupted, so IreeAnchor.guard_first_run (the bench calls it) makes the first Vulkan run in
a child process with a timeout (FIRST_RUN_TIMEOUT_S, $TOSA_VK_IREE_FIRST_RUN_TIMEOUT_S) and remembers the outcome.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import TosaError

PIP_PACKAGES = ("iree-base-compiler==3.13.0", "iree-base-runtime==3.13.0")
# backend -> (IREE runtime driver, iree-compile flags)
TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "iree_vulkan": ("vulkan", ("--iree-hal-target-device=vulkan",)),
    "iree_cpu": (
        "local-task",
        (
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=host",  # the CPU this runs on, as lavapipe's LLVM targets it
        ),
    ),
}
COMPILE_TIMEOUT_S = 900.0
# the longest a Vulkan first run may take in the guard's child process (lavapipe compiles every pipeline in it:
# mobilenetv2's took ~115 s at load 8 here)
FIRST_RUN_TIMEOUT_S = float(os.environ.get("TOSA_VK_IREE_FIRST_RUN_TIMEOUT_S", "300"))
# the guard's child: load the .vmfb, call main once on the saved inputs (run with -c in a temporary folder: run as a
# file from anchors/, this module would shadow the iree package)
_FIRST_RUN_CHILD = """
import sys, numpy as np, iree.runtime as rt
vmfb, npz, driver = sys.argv[1:4]
ctx = rt.SystemContext(config=rt.Config(device=rt.get_device(driver)))
ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, open(vmfb, "rb").read()))
data = np.load(npz)
ctx.modules.module["main"](*[data[f"arr_{i}"] for i in range(len(data.files))])
"""
EMPTY_MODULE = b"module {}\n"


# IREE (or tosa-opt on the way to it) refused the graph; the message says which step and why (a TosaError, as every
# error a user can catch)
IreeError = TosaError


def _version() -> str:
    from importlib import metadata

    return metadata.version("iree-base-compiler")


def _iree_compile() -> str:
    from iree.compiler.tools.binaries import find_tool

    return find_tool("iree-compile")


_AVAILABLE: dict[str, str | None] = {}


def available(backend: str) -> str | None:
    """None when `backend` (iree_vulkan / iree_cpu) can run here, else why not; probed once per process (imports,
    the iree-compile and tosa-opt tools, the runtime driver's device)."""
    if backend not in _AVAILABLE:
        _AVAILABLE[backend] = _probe(backend)
    return _AVAILABLE[backend]


def _probe(backend: str) -> str | None:
    from ....ir.mlir import find_tool

    install = f"pip install {' '.join(PIP_PACKAGES)} (tosa_vk's `iree` extra)"
    try:
        import iree.runtime as rt

        _iree_compile()
    except (ImportError, ValueError) as err:
        return f"IREE not installed ({err}): {install}"
    if find_tool() is None:
        return "tosa-opt (tosa-tools) not found: the TOSA MLIR that IREE reads is written by it"
    try:
        rt.get_device(TARGETS[backend][0])
    except Exception as err:  # noqa: BLE001 - any driver failure means the anchor cannot run
        return f"IREE's {TARGETS[backend][0]} driver has no device here: {_first_line(str(err))}"
    return None


def tosa_to_mlir(tosa_path: str | Path) -> bytes:
    """A .tosa file as TOSA MLIR text in the generic form (see the module doc), through tosa-opt --tosa-deserialize."""
    from ....ir.mlir import find_tool

    tool = find_tool()
    if tool is None:
        raise IreeError("tosa-opt (tosa-tools) not found")
    path = Path(tosa_path).resolve()
    # the pass option parser takes no quoting: run in the file's folder with a relative name (a path may hold spaces)
    with tempfile.TemporaryDirectory(prefix="tosa_vk-iree-") as folder:
        out = Path(folder) / "model.mlir"  # not stdout: the deserializer prints its version warnings there
        command = [tool, f"--tosa-deserialize=tosa-flatbuffer-filename={path.name}", "--mlir-print-op-generic"]
        done = subprocess.run(
            [*command, "-o", str(out)], input=EMPTY_MODULE, capture_output=True, cwd=path.parent, timeout=600
        )
        if done.returncode != 0 or not out.is_file():
            why = _first_error((done.stderr + done.stdout).decode(errors="replace"))
            raise IreeError(f"tosa-opt --tosa-deserialize refused {path.name}: {why}")
        return out.read_bytes()


def compile_vmfb(mlir: bytes, backend: str, cache: Path | None = None) -> tuple[Path, float, bool]:
    """TOSA MLIR -> a .vmfb for `backend`, from the cache when compiled before: (path, compile seconds (0 when
    cached), cached?). IreeError with iree-compile's first error line when it refuses the graph (refusals are
    cached too)."""
    if cache is None:
        from ....paths import cache_root

        cache = cache_root() / "iree"
    flags = TARGETS[backend][1]
    key = hashlib.sha256(b"\0".join([_version().encode(), *(f.encode() for f in flags), mlir])).hexdigest()[:32]
    vmfb, refused = cache / f"{backend}-{key}.vmfb", cache / f"{backend}-{key}.refused.txt"
    if vmfb.is_file():
        return vmfb, 0.0, True
    if refused.is_file():
        raise IreeError(refused.read_text())
    cache.mkdir(parents=True, exist_ok=True)
    partial = vmfb.with_suffix(f".{time.time_ns()}.part")  # renamed when whole: concurrent benches never see half
    t = time.perf_counter()
    try:
        command = [_iree_compile(), *flags, "-", "-o", str(partial)]
        done = subprocess.run(command, input=mlir, capture_output=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise IreeError(f"iree-compile ({backend}) did not finish within {COMPILE_TIMEOUT_S:g} s") from None
    seconds = time.perf_counter() - t
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        why = (
            f"IREE {_version()} iree-compile {' '.join(flags)} refused the graph: "
            f"{_first_error(done.stderr.decode(errors='replace'))}"
        )
        refused.write_text(why)
        raise IreeError(why)
    partial.replace(vmfb)
    return vmfb, seconds, False


class IreeAnchor:
    """One .tosa graph compiled by IREE for `backend` and loaded into an IREE runtime context in this process.

    `input_names` / `output_names` default to the .tosa main block's (tosa_vk's reader); run() takes the inputs by
    those names and returns the outputs by them."""

    def __init__(
        self,
        tosa_path: str | Path,
        backend: str = "iree_vulkan",
        input_names: list[str] | None = None,
        output_names: list[str] | None = None,
        cache: Path | None = None,
    ):
        import iree.runtime as rt

        if backend not in TARGETS:
            raise ValueError(f"unknown IREE backend {backend!r}; one of {', '.join(TARGETS)}")
        self.backend = backend
        if input_names is None or output_names is None:
            import tosa_vk

            graph = tosa_vk.load_graph(tosa_path)
            input_names = [t.name for t in graph.inputs] if input_names is None else input_names
            output_names = [t.name for t in graph.outputs] if output_names is None else output_names
        self.input_names, self.output_names = list(input_names), list(output_names)
        t = time.perf_counter()
        mlir = tosa_to_mlir(tosa_path)
        self.mlir_seconds = time.perf_counter() - t
        self.vmfb, self.compile_seconds, self.cached = compile_vmfb(mlir, backend, cache)
        t = time.perf_counter()
        self.device = rt.get_device(TARGETS[backend][0])
        self._context = rt.SystemContext(config=rt.Config(device=self.device))
        self._context.add_vm_module(rt.VmModule.copy_buffer(self._context.instance, self.vmfb.read_bytes()))
        self._main = self._context.modules.module["main"]
        self.load_seconds = time.perf_counter() - t
        self._staging: dict[int, Any] = {}

    def guard_first_run(self, inputs: dict[str, np.ndarray], timeout_s: float | None = None) -> None:
        """Vulkan only: the first run once in a child process first, killed after `timeout_s`, since a run in this
        process cannot be interrupted (lavapipe ran the Builder's lstm_int8 for minutes without end). The outcome
        is cached beside the .vmfb: `.ran` (no guard next time) or `.hung.txt` (an IreeError at once)."""
        if TARGETS[self.backend][0] != "vulkan":
            return
        ran, hung = self.vmfb.with_suffix(".ran"), self.vmfb.with_suffix(".hung.txt")
        if ran.is_file():
            return
        if hung.is_file():
            raise IreeError(hung.read_text())
        timeout = FIRST_RUN_TIMEOUT_S if timeout_s is None else timeout_s
        with tempfile.TemporaryDirectory(prefix="tosa_vk-iree-") as folder:
            npz = Path(folder) / "inputs.npz"
            np.savez(npz, *[np.ascontiguousarray(inputs[name]) for name in self.input_names])
            command = [sys.executable, "-c", _FIRST_RUN_CHILD, str(self.vmfb), str(npz), TARGETS[self.backend][0]]
            try:
                done = subprocess.run(command, capture_output=True, cwd=folder, timeout=timeout)
            except subprocess.TimeoutExpired:
                why = (
                    f"IREE's first Vulkan run of this graph did not end within {timeout:g} s (in a child process, "
                    f"killed; remove {hung} to try again)"
                )
                hung.write_text(why)
                raise IreeError(why) from None
        if done.returncode != 0:
            raise IreeError(f"IREE's first Vulkan run failed: {_first_line(done.stderr.decode(errors='replace'))}")
        ran.touch()

    def run(self, inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], float]:
        """Runs the graph once: (outputs by name, wall seconds of call + output copies)."""
        try:
            args = [np.ascontiguousarray(inputs[name]) for name in self.input_names]
        except KeyError as err:
            raise KeyError(f"missing input {err}; the graph's inputs are {self.input_names}") from None
        t = time.perf_counter()
        result = self._main(*args)
        results = result if isinstance(result, (tuple, list)) else (result,)
        arrays = [self._to_host(r) for r in results]
        seconds = time.perf_counter() - t
        if len(arrays) != len(self.output_names):
            raise IreeError(f"IREE returned {len(arrays)} outputs, the graph has {len(self.output_names)}")
        return dict(zip(self.output_names, arrays)), seconds

    def _to_host(self, array) -> np.ndarray:
        """A result as a numpy array of its own (see the module doc for why not DeviceArray.to_host on Vulkan)."""
        from iree.runtime import BufferUsage, HalElementType, HalFence, MemoryType

        if array._is_mappable():  # local-task: host memory
            return np.array(array.to_host())
        view = array._buffer_view
        source = view.get_buffer()
        size = source.byte_length()
        staging = self._staging.get(size)
        if staging is None:
            staging = self._staging[size] = self.device.allocator.allocate_buffer(
                memory_type=int(MemoryType.HOST_LOCAL | MemoryType.DEVICE_VISIBLE),
                allowed_usage=int(BufferUsage.TRANSFER_TARGET | BufferUsage.MAPPING_SCOPED),
                allocation_size=size,
            )
        semaphore = self.device.create_semaphore(0)
        self.device.queue_copy(
            source,
            staging,
            wait_semaphores=HalFence.create_at(semaphore, 0),
            signal_semaphores=HalFence.create_at(semaphore, 1),
        )
        HalFence.create_at(semaphore, 1).wait()
        dtype = HalElementType.map_to_dtype(view.element_type)
        return np.array(staging.map().asarray(tuple(view.shape), dtype))

    def close(self) -> None:
        self._main = None
        self._context = None
        self._staging.clear()

    def __enter__(self) -> IreeAnchor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else "no message"


def _first_error(stderr: str) -> str:
    """The first `error:` diagnostic, without its file / line prefix (`<stdin>:156:12: error: ...`)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    line = next((x for x in lines if "error:" in x), lines[0] if lines else "no message")
    return re.sub(r"^\S*:\d+:\d+: ", "", line)[:300]

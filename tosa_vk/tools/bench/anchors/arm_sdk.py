"""Anchor: run a .tosa graph through Arm's ML SDK for Vulkan (model-converter -> VGF -> scenario-runner, in-process).

    from tosa_vk.tools.bench.anchors.arm_sdk import ArmSdkAnchor, available
    if (why := available()) is None:
        with ArmSdkAnchor("add.tosa") as anchor:          # converts once, writes the scenario, loads it
            outputs, times = anchor.run({"x": x, "y": y}, repeats=5)   # outputs by graph output name, seconds

Arm's pipeline, PyPI 0.11.0 wheels (import name in brackets):
  ai-ml-sdk-model-converter (model_converter)  the `model-converter` binary, TOSA 1.0 flatbuffer (or TOSA MLIR) -> VGF;
  ai-ml-sdk-vgf-library (vgf_lib, vgfpy)        `vgf_dump --scenario-template` writes the scenario skeleton;
  ai-ml-sdk-scenario-runner (scenario_runner_py) `load_scenario(json)` -> Scenario: get_tensor_id(uid), upload,
                                                 run, download (numpy arrays, no files per run);
  ai-ml-emulation-layer-for-vulkan (emulation_layer)  VK_LAYER_ML_Graph_Emulation + VK_LAYER_ML_Tensor_Emulation,
                                                 which provide VK_ARM_data_graph / VK_ARM_tensors on any Vulkan device.
Scenario-runner creates its device with those extensions, so it needs the layers even for compute-only VGFs.

Everything Arm runs in a persistent worker subprocess (this file run as a script, `--worker`): the layers are
selected by environment variables that the Vulkan loader reads when the process creates its first instance, so
they cannot be switched on inside a process that already uses tosa_vk's own Vulkan device. The worker copies the
two layer manifests into two folders with absolute library paths (no LD_LIBRARY_PATH needed) and lists the Graph
folder first in VK_LAYER_PATH: with the Tensor manifest first the layers load, but device creation fails with
"ML Emulation Layer for Vulkan requires extension: VK_ARM_tensors" / ErrorFeatureNotPresent. Requests and replies
are JSON lines on the worker's stdin / a private duplicate of its stdout (native logging is moved to the log file
`worker.log` in the work folder); arrays travel as .npy files in the work folder.

The worker's interpreter is $TOSA_VK_ARM_SDK_PYTHON if set (e.g. a separate venv holding the Arm wheels), else
this interpreter. It runs this file by path, not as a module: that interpreter need not have tosa_vk installed
(the worker side uses the standard library, numpy and Arm's packages only). The file lives in anchors/, away from
the bench modules, because a script's own folder is searched first for imports (bench/stats.py could shadow
another module). Its environment is this process's, plus the layer variables: set VK_ICD_FILENAMES /
VK_DRIVER_FILES to pin the device (scenario-runner takes the first physical device the loader lists).

Timings are wall times of `Scenario.run()` in the worker (record + submit + fence wait of the VGF's dispatches);
input upload and output download happen outside the timed region, as do conversion and pipeline creation.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from vgf.vk_enums import FORMATS  # absolute: the worker runs this file as a script

PYTHON_ENV = "TOSA_VK_ARM_SDK_PYTHON"
ARM_MODULES = ("model_converter", "vgf_lib", "scenario_runner_py", "emulation_layer")
LAYERS = ("VK_LAYER_ML_Graph_Emulation", "VK_LAYER_ML_Tensor_Emulation")
PIP_PACKAGES = (
    "ai-ml-sdk-model-converter==0.11.0",
    "ai-ml-sdk-vgf-library==0.11.0",
    "ai-ml-sdk-scenario-runner==0.11.0",
    "ai-ml-emulation-layer-for-vulkan==0.11.0",
)


class ArmSdkError(RuntimeError):
    """Arm's tools refused the graph, or the worker failed."""


def worker_python() -> str:
    return os.environ.get(PYTHON_ENV) or sys.executable


_AVAILABLE: dict[str, str | None] = {}


def available() -> str | None:
    """None when the anchor can run here; otherwise why not (Arm packages missing, layers not loading, ...).

    Runs a probe in a worker interpreter once per interpreter path (about a second): imports the four Arm
    packages, then builds a scenario with one tensor, which creates a Vulkan device through the emulation layers.
    """
    python = worker_python()
    if python not in _AVAILABLE:
        _AVAILABLE[python] = _probe(python)
    return _AVAILABLE[python]


def _probe(python: str) -> str | None:
    with tempfile.TemporaryDirectory(prefix="tosa_vk_arm_probe_") as tmp:
        try:
            proc = subprocess.run(
                [python, str(Path(__file__).resolve()), "--probe", tmp], capture_output=True, text=True, timeout=120
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"cannot run the Arm SDK worker interpreter {python}: {err}"
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            reason = json.loads(line).get("reason")
            return None if reason is None else f"{reason} (worker interpreter {python})"
    return f"Arm SDK probe failed (exit {proc.returncode}, interpreter {python}): {_tail(proc.stderr)}"


class ArmSdkWorker:
    """A worker process holding Arm's scenario-runner with the emulation layers set up (see the module doc).

    `load_scenario(scenario.json, inputs=[uid...], outputs=[uid...])` loads any scenario (e.g. one written for a
    .vgf that tosa_vk exported); `run_scenario({uid: array})` uploads, runs and downloads by resource uid. One
    worker can load several scenarios one after the other (the last one loaded is the one that runs)."""

    def __init__(self, workdir: Path | None = None):
        self._own_dir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="tosa_vk_arm_")) if workdir is None else Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._proc: subprocess.Popen | None = None
        self._calls = 0
        self._log = open(self.workdir / "worker.log", "ab")
        try:
            self._proc = subprocess.Popen(
                [worker_python(), str(Path(__file__).resolve()), "--worker", str(self.workdir)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
                bufsize=1,
            )
            # Kills the worker and removes a temporary work folder if the worker is dropped without close().
            self._finalizer = weakref.finalize(
                self, _stop, self._proc, self._log, self.workdir if self._own_dir else None
            )
        except BaseException:
            self.close()
            raise

    def load_scenario(self, scenario: str | Path, inputs: list[str], outputs: list[str]) -> float:
        """Loads a scenario whose external resources `inputs` / `outputs` (uids) are uploaded / downloaded in
        memory; returns the load time in seconds."""
        return self._call(
            "load_scenario", scenario=str(Path(scenario).resolve()), inputs=list(inputs), outputs=list(outputs)
        )["load_seconds"]

    def run_scenario(
        self, inputs: dict[str, np.ndarray], repeats: int = 1
    ) -> tuple[dict[str, np.ndarray], list[float]]:
        """Uploads `inputs` by uid, runs the loaded scenario, returns the outputs by uid (raw arrays as
        scenario-runner downloads them) and the run times."""
        self._calls += 1
        io_dir = self.workdir / "io"
        io_dir.mkdir(exist_ok=True)
        files = {}
        for i, (uid, array) in enumerate(inputs.items()):
            path = io_dir / f"in{self._calls}_{i}.npy"
            np.save(path, np.ascontiguousarray(array))
            files[uid] = str(path)
        try:
            reply = self._call("run", inputs=files, repeats=int(repeats), outdir=str(io_dir), tag=str(self._calls))
        finally:
            for file in files.values():
                Path(file).unlink(missing_ok=True)
        outputs = {}
        for uid, file in reply["outputs"].items():
            outputs[uid] = np.load(file)
            Path(file).unlink()
        return outputs, reply["times"]

    def close(self) -> None:
        """Stops the worker (politely, then by kill) and removes the work folder if this object made it."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            assert proc.stdin is not None  # Popen(stdin=PIPE)
            try:
                proc.stdin.write(json.dumps({"cmd": "close"}) + "\n")
                proc.stdin.flush()
                proc.wait(timeout=30)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if hasattr(self, "_finalizer"):
            self._finalizer()
        else:
            _stop(proc, self._log, self.workdir if self._own_dir else None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, cmd: str, **args) -> dict:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise ArmSdkError(f"Arm SDK worker is not running; log: {self._log_tail()}")
        assert proc.stdin is not None and proc.stdout is not None  # Popen(stdin=PIPE, stdout=PIPE)
        try:
            proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except OSError as err:
            raise ArmSdkError(f"Arm SDK worker pipe failed ({err}); log: {self._log_tail()}") from None
        if not line:
            proc.wait(timeout=30)
            raise ArmSdkError(f"Arm SDK worker exited ({proc.returncode}) during {cmd!r}; log: {self._log_tail()}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ArmSdkError(f"{cmd}: {reply.get('error')}")
        return reply

    def _log_tail(self) -> str:
        self._log.flush()
        try:
            return _tail((self.workdir / "worker.log").read_text(errors="replace"))
        except OSError:
            return "(no log)"


class ArmSdkAnchor(ArmSdkWorker):
    """One .tosa graph converted to VGF and loaded into Arm's scenario-runner, in a worker process."""

    def __init__(self, tosa_path: str | Path, workdir: Path | None = None):
        self.tosa_path = Path(tosa_path).resolve()
        super().__init__(workdir)
        try:
            info = self._call("load", tosa=str(self.tosa_path))
        except BaseException:
            self.close()
            raise
        self.vgf_path = Path(info["vgf"])
        self.scenario_path = Path(info["scenario"])
        self.convert_seconds: float = info["convert_seconds"]  # model-converter wall time
        self.load_seconds: float = info["load_seconds"]  # load_scenario: device, pipelines, memory
        # The VGF names its I/O input_<i> / output_<i> in the graph's order; map them to the .tosa tensor names.
        self._in_uids = [r["uid"] for r in info["inputs"]]
        self._out_uids = [r["uid"] for r in info["outputs"]]
        self.input_specs = info["inputs"]  # [{uid, shape, format}] in VGF order
        self.output_specs = info["outputs"]
        graph_in, graph_out, self._out_dtypes = _graph_io(self.tosa_path)
        self.input_names = (
            graph_in if len(graph_in) == len(self._in_uids) else [f"input_{i}" for i in range(len(self._in_uids))]
        )
        self.output_names = (
            graph_out if len(graph_out) == len(self._out_uids) else [f"output_{i}" for i in range(len(self._out_uids))]
        )

    def run(self, inputs: dict[str, np.ndarray], repeats: int = 1) -> tuple[dict[str, np.ndarray], list[float]]:
        """Uploads `inputs` (by graph input name, or input_<i>), runs the graph `repeats` times, returns the
        outputs by graph output name and each run's wall time in seconds."""
        if repeats < 1:
            raise ValueError("repeats must be >= 1")
        self._calls += 1
        io_dir = self.workdir / "io"
        io_dir.mkdir(exist_ok=True)
        files = {}
        for i, (name, uid) in enumerate(zip(self.input_names, self._in_uids)):
            array = inputs.get(name, inputs.get(f"input_{i}"))
            if array is None:
                raise KeyError(f"missing input {name!r}; the graph's inputs are {self.input_names}")
            array = np.asarray(array)
            if array.dtype.kind == "V" or array.dtype.name.startswith(("bfloat16", "float8")):
                array = array.view(np.uint16 if array.dtype.itemsize == 2 else np.uint8)  # ml_dtypes: raw bits
            path = io_dir / f"in{self._calls}_{i}.npy"
            np.save(path, np.ascontiguousarray(array))
            files[uid] = str(path)
        reply = self._call("run", inputs=files, repeats=int(repeats), outdir=str(io_dir), tag=str(self._calls))
        outputs = {}
        for i, (name, uid) in enumerate(zip(self.output_names, self._out_uids)):
            path = Path(reply["outputs"][uid])
            array = np.load(path)
            path.unlink()
            if (
                array.dtype.kind == "V"
                and i < len(self._out_dtypes)
                and array.dtype.itemsize == self._out_dtypes[i].itemsize
            ):
                array = array.view(self._out_dtypes[i])  # bf16 / fp8 come back as raw bytes
            outputs[name] = array
        for file in files.values():
            Path(file).unlink()
        return outputs, reply["times"]

    def __enter__(self) -> ArmSdkAnchor:
        return self


def _stop(proc: subprocess.Popen | None, log, workdir: Path | None) -> None:
    if proc is not None:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is None:
                continue
            try:
                stream.close()
            except (OSError, ValueError):
                pass
    log.close()
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)


def _tail(text: str, lines: int = 15) -> str:
    kept = [line for line in text.splitlines() if "] INFO:" not in line and "VGF [debug]" not in line]
    return "\n".join(kept[-lines:]) or "(empty)"


def _graph_io(tosa_path: Path) -> tuple[list[str], list[str], list[np.dtype]]:
    """The .tosa main block's input names, output names and output numpy dtypes (tosa_vk's reader), or empty
    lists when tosa_vk cannot read it."""
    try:
        import tosa_vk  # absolute: this file also runs as a script (the worker), outside the package

        graph = tosa_vk.load_graph(tosa_path)
        return (
            [t.name for t in graph.inputs],
            [t.name for t in graph.outputs],
            [np.dtype(t.dtype.numpy) for t in graph.outputs],
        )
    except Exception:  # noqa: BLE001 - positional names still work
        return [], [], []


# ---------------------------------------------------------------------------------------------------------------
# Worker side: runs in the interpreter that holds the Arm wheels; stdlib + numpy + Arm packages only.

_TEMPLATE_IO = re.compile(r"TEMPLATE_PATH_\w*?(INPUT|OUTPUT)_(\d+)$")
# Tensor formats -> numpy: upload wants exactly the format's element size (one-component formats numpy itself
# knows: the worker needs no ml_dtypes).
_FORMAT_DTYPES = {
    name: np.dtype(f.numpy) for name, f in FORMATS.items() if f.components == 1 and f.numpy in np.sctypeDict
}


def _setup_layers(workdir: Path) -> None:
    """Points the Vulkan loader at the emulation layers; must run before the process's first vkCreateInstance."""
    import emulation_layer

    deploy = Path(emulation_layer.__file__).resolve().parent / "deploy"
    manifests = deploy / "share" / "vulkan" / "explicit_layer.d"
    libdirs = [d for d in (deploy / "lib64", deploy / "lib") if d.is_dir()]
    folders = []
    for kind in ("Graph", "Tensor"):  # Graph first: the other order fails at device creation (see module doc)
        manifest = json.loads((manifests / f"VkLayer_{kind}.json").read_text())
        lib = manifest["layer"]["library_path"]
        found = [d / lib for d in libdirs if (d / lib).is_file()]
        if not found:
            raise FileNotFoundError(f"{lib} not found under {deploy}")
        manifest["layer"]["library_path"] = str(found[0])
        folder = workdir / "layers" / kind.lower()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"VkLayer_{kind}.json").write_text(json.dumps(manifest, indent=1))
        folders.append(str(folder))
    old_path = [p for p in os.environ.get("VK_LAYER_PATH", "").split(os.pathsep) if p]
    os.environ["VK_LAYER_PATH"] = os.pathsep.join(folders + old_path)
    old_layers = [n for n in os.environ.get("VK_INSTANCE_LAYERS", "").split(os.pathsep) if n and n not in LAYERS]
    os.environ["VK_INSTANCE_LAYERS"] = os.pathsep.join(list(LAYERS) + old_layers)


def _tool(package: str, binary: str) -> str:
    module = __import__(package)
    assert module.__file__ is not None, f"{package} is a regular package (it ships its binaries)"
    path = Path(module.__file__).resolve().parent / "binaries" / "bin" / binary
    if path.is_file():
        return str(path)
    found = shutil.which(binary)
    if found is None:
        raise FileNotFoundError(f"{binary} not found (package {package})")
    return found


def _run_tool(args: list[str]) -> str:
    proc = subprocess.run(args, capture_output=True, text=True)
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise ArmSdkError(f"{Path(args[0]).name} failed (exit {proc.returncode}): {_tail(out, 25)}")
    return out


class _Worker:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.scenario: Any | None = None  # a scenario_runner_py Scenario (an untyped package) once loaded
        self.ids: dict[str, object] = {}
        self.formats: dict[str, str | None] = {}  # uid -> tensor format, when the scenario gives one

    def load(self, tosa: str) -> dict:
        import scenario_runner_py as sr

        tosa_path = Path(tosa)
        stem = tosa_path.stem
        vgf = self.workdir / f"{stem}.vgf"
        t0 = time.perf_counter()
        log = _run_tool([_tool("model_converter", "model-converter"), "-i", str(tosa_path), "-o", str(vgf)])
        convert_seconds = time.perf_counter() - t0
        if not vgf.is_file():
            raise ArmSdkError(f"model-converter wrote no VGF: {_tail(log, 25)}")
        template = self.workdir / f"{stem}.template.json"
        _run_tool([_tool("vgf_lib", "vgf_dump"), "-i", str(vgf), "-o", str(template), "--scenario-template"])
        scenario = json.loads(template.read_text())
        inputs: dict[int, dict[str, Any]] = {}  # input_<i> / output_<i> -> uid, kind, shape, format
        outputs: dict[int, dict[str, Any]] = {}
        for resource in scenario["resources"]:
            ((kind, body),) = resource.items()
            if kind == "graph":
                body["src"] = str(vgf)
            for key in ("src", "dst"):  # I/O is uploaded / downloaded in memory, not through files
                match = _TEMPLATE_IO.search(str(body.get(key, "")))
                if match:
                    del body[key]
                    (inputs if match[1] == "INPUT" else outputs)[int(match[2])] = {
                        "uid": body["uid"],
                        "kind": kind,
                        "shape": body.get("dims"),
                        "format": body.get("format"),
                    }
        for command in scenario["commands"]:  # 0.11.0 templates still write the deprecated name
            if "dispatch_graph" in command and "graph_ref" in command["dispatch_graph"]:
                command["dispatch_vgf"] = command.pop("dispatch_graph")
        scenario_path = self.workdir / f"{stem}.scenario.json"
        scenario_path.write_text(json.dumps(scenario, indent=1))
        t0 = time.perf_counter()
        self.scenario = loaded = sr.load_scenario(
            str(scenario_path), work_dir=str(self.workdir), output_dir=str(self.workdir)
        )
        load_seconds = time.perf_counter() - t0
        getters = {"tensor": loaded.get_tensor_id, "buffer": loaded.get_buffer_id, "image": loaded.get_image_id}
        ins = [inputs[i] for i in sorted(inputs)]
        outs = [outputs[i] for i in sorted(outputs)]
        for r in ins + outs:
            self.ids[r["uid"]] = getters[r["kind"]](r["uid"])
            self.formats[r["uid"]] = r["format"]
        return {
            "vgf": str(vgf),
            "scenario": str(scenario_path),
            "inputs": ins,
            "outputs": outs,
            "convert_seconds": convert_seconds,
            "load_seconds": load_seconds,
        }

    def load_scenario(self, scenario: str, inputs: list[str], outputs: list[str]) -> dict:
        import scenario_runner_py as sr

        t0 = time.perf_counter()
        self.scenario = loaded = sr.load_scenario(scenario, work_dir=str(self.workdir), output_dir=str(self.workdir))
        load_seconds = time.perf_counter() - t0
        self.ids, self.formats = {}, {}
        kinds = {}
        for resource in json.loads(Path(scenario).read_text())["resources"]:
            ((kind, body),) = resource.items()
            kinds[body.get("uid")] = (kind, body.get("format"))
        getters = {"tensor": loaded.get_tensor_id, "buffer": loaded.get_buffer_id, "image": loaded.get_image_id}
        for uid in list(inputs) + list(outputs):
            kind, fmt = kinds[uid]
            self.ids[uid] = getters[kind](uid)
            self.formats[uid] = fmt
        return {"load_seconds": load_seconds}

    def run(self, inputs: dict[str, str], repeats: int, outdir: str, tag: str) -> dict:
        scenario = self.scenario
        if scenario is None:
            raise ArmSdkError("run: no scenario loaded")
        for uid, file in inputs.items():
            array = np.load(file)
            fmt = self.formats.get(uid)
            dtype = None if fmt is None else _FORMAT_DTYPES.get(fmt)
            if dtype is not None and array.dtype != dtype and array.dtype.kind in "biuf":
                array = array.astype(dtype)
            scenario.upload(self.ids[uid], np.ascontiguousarray(array))
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            scenario.run()
            times.append(time.perf_counter() - t0)
        outputs = {}
        for uid, ident in self.ids.items():
            if uid not in inputs:
                path = Path(outdir) / f"out{tag}_{uid}.npy"
                np.save(path, scenario.download(ident))
                outputs[uid] = str(path)
        return {"times": times, "outputs": outputs}


def _worker_main(workdir: Path) -> int:
    # Replies go to a private copy of stdout; fd 1 becomes stderr so native logging cannot corrupt the protocol.
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    worker = _Worker(workdir)
    setup_error: str | None
    try:
        _setup_layers(workdir)
    except Exception as err:  # noqa: BLE001 - reported on the first request
        setup_error = f"emulation layer setup failed: {err!r}"
    else:
        setup_error = None
    for line in sys.stdin:
        request = json.loads(line)
        cmd = request.pop("cmd")
        if cmd == "close":
            break
        try:
            if setup_error:
                raise ArmSdkError(setup_error)
            reply = {"ok": True, **getattr(worker, cmd)(**request)}
        except Exception as err:  # noqa: BLE001 - every failure goes back to the caller
            traceback.print_exc()
            reply = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        replies.write(json.dumps(reply) + "\n")
    return 0


def _probe_main(workdir: Path) -> int:
    reason = None
    try:
        missing = []
        for name in ARM_MODULES:
            try:
                __import__(name)
            except ImportError:
                missing.append(name)
        if missing:
            reason = f"Arm ML SDK packages not importable: {', '.join(missing)} (pip install {' '.join(PIP_PACKAGES)})"
        else:
            _tool("model_converter", "model-converter")
            _tool("vgf_lib", "vgf_dump")
            _setup_layers(workdir)
            import scenario_runner_py as sr

            probe = workdir / "probe.json"
            probe.write_text(
                json.dumps(
                    {
                        "resources": [
                            {
                                "tensor": {
                                    "uid": "t",
                                    "dims": [1],
                                    "format": "VK_FORMAT_R32_SFLOAT",
                                    "shader_access": "readwrite",
                                }
                            }
                        ],
                        "commands": [],
                    }
                )
            )
            scenario = sr.load_scenario(str(probe))
            scenario.run()
    except Exception as err:  # noqa: BLE001
        reason = f"Arm ML SDK not usable: {type(err).__name__}: {err}"
    print(json.dumps({"reason": reason}), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(_worker_main(Path(sys.argv[2])))
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        sys.exit(_probe_main(Path(sys.argv[2])))
    sys.exit(f"usage: {sys.argv[0]} --worker DIR | --probe DIR (internal; import ArmSdkAnchor instead)")

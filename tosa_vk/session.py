"""The user-facing session API: `tosa_vk.load(source, backend=..., **options) -> Model`, `Model.run(feeds)`.

Every backend is a Model subclass (tosa_vk/backends/model.py) with the same methods; `load` picks it and refuses
options it does not take:
- "reference": the numpy reference backend (tosa_vk/backends/reference.py);
- "vulkan": a .tosa file or Graph compiled for a Vulkan device (tosa_vk/backends/vulkan.py);
- an ExecuTorch program (.pte, file identifier ET12) runs its plan: TOSA delegates on the backend, the host operators
  between them in numpy (tosa_vk/backends/pte.py);
- a .vgf file with GRAPH segments is decoded into a graph (tosa_vk/formats/vgf_graph.py) and runs on either
  backend; one of COMPUTE segments only runs on Vulkan as it is (tosa_vk/backends/vgf.py).
Without `backend=`, a graph runs on Vulkan wherever a Vulkan device exists, else on the reference backend with a
RuntimeWarning (`default_backend()`, which `tosa-vk run` uses too).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backends.model import Model
from .errors import TosaError, TosaFormatError, VulkanError
from .ir import Graph

if TYPE_CHECKING:
    from .reference.quantization import QParams
    from .vulkan import DeviceInfo


def _reference() -> type[Any]:
    from .backends.reference import ReferenceModel

    return ReferenceModel


def _vulkan() -> type[Any]:
    from .backends.vulkan import VulkanModel

    return VulkanModel


def _vgf() -> type[Any]:
    from .backends.vgf import VGFModel

    return VGFModel


# backend name -> its Model class, imported on first use: real imports, so tools that draw the import graph see
# them, but lazy (the Vulkan backend brings the compiler and the runtime, which a reference run never needs)
BACKENDS: dict[str, Callable[[], type[Any]]] = {"reference": _reference, "vulkan": _vulkan}
VGF_BACKEND = _vgf  # a .vgf file of COMPUTE segments: its own kind of source


# load()'s warning when it falls back to the reference backend for want of a device
NO_DEVICE_WARNING = (
    "no Vulkan device found (no Vulkan loader, driver or device; Debian: apt-get install mesa-vulkan-drivers for "
    "lavapipe): running on the numpy reference backend. Choose explicitly: tosa_vk.load(..., backend='reference') "
    "or backend='vulkan'"
)


def _enumerated() -> list[DeviceInfo]:
    """Every Vulkan device, in the loader's order; a VulkanError saying what is missing and its fix where there is
    no Vulkan loader or driver (tosa_vk/vulkan/loader.py), or where the driver fails the enumeration."""
    from . import vulkan

    try:
        return vulkan.enumerate_devices(all_devices=True)
    except VulkanError:
        raise
    except Exception as err:  # noqa: BLE001 - a driver failing after the instance (a device or property query)
        raise VulkanError(f"enumerating the Vulkan devices failed ({type(err).__name__}: {err})") from None


@functools.cache
def vulkan_devices() -> tuple[DeviceInfo, ...]:
    """The Vulkan physical devices this process may use (tosa_vk.vulkan.DeviceInfo records; TOSA_VK_VISIBLE_DEVICES
    restricts and renumbers them), queried once per process: an instance and the devices' properties, no logical
    device (~30 ms on lavapipe). () where there is no Vulkan loader, driver or device; a malformed
    TOSA_VK_VISIBLE_DEVICES is an error. `vulkan_devices.cache_clear()` queries again on the next call."""
    try:
        found = _enumerated()
    except VulkanError:  # no libvulkan, no ICD, an instance that fails: the reference backend still runs
        return ()
    from .vulkan import visible

    return tuple(visible(found))


def devices() -> list[DeviceInfo]:
    """The Vulkan devices this process may use, in the order `load(..., device=N)` numbers them: each with its
    index, uuid, name, driver, kind (discrete / integrated / virtual / cpu), features and limits. `device=` also
    takes a UUID (or a unique prefix of 8 hex digits or more) or a name substring; TOSA_VK_VISIBLE_DEVICES (indices
    or UUIDs, comma-separated) restricts and renumbers the list, e.g. one GPU per worker process.

    [] where Vulkan works and finds no device (or TOSA_VK_VISIBLE_DEVICES hides them all). Where Vulkan itself is
    missing it raises tosa_vk.VulkanError saying what and how to install it, as `load(..., backend="vulkan")` and
    `tosa-vk devices` do: no Vulkan loader (libvulkan), or a loader with no driver (`tosa-vk doctor` checks the
    whole setup). `load()` without `backend=` still falls back to the reference backend there."""
    found = vulkan_devices()
    if not found:
        _enumerated()  # none found: say why where Vulkan itself is missing (the cache keeps only the answer)
    return list(found)


def default_backend() -> str:
    """The backend a graph runs on when none is named (`load()`, `tosa-vk run`): "vulkan" wherever a Vulkan device
    exists (which one: TOSA_VK_DEVICE, else the first by type, tosa_vk.vulkan.select), else "reference". Cached:
    the devices are enumerated once per process (`vulkan_devices`)."""
    return "vulkan" if vulkan_devices() else "reference"


def load(
    source: str | Path | Graph,
    backend: str | None = None,
    *,
    input_qparams: Mapping[str, QParams | tuple[float, int]] | None = None,
    output_qparams: Mapping[str, QParams | tuple[float, int]] | None = None,
    **options: Any,
) -> Model:
    """A Model from a .tosa path (or TOSA MLIR text / bytecode: tosa_vk/ir/mlir.py), a Graph or a .vgf path.
    `backend`: "vulkan" or "reference" (the numpy reference backend). Without it a graph (a .tosa, a Graph, a .vgf
    of GRAPH segments) runs on Vulkan wherever a Vulkan device exists, else on the reference backend with a
    RuntimeWarning saying so (`default_backend()`); a .vgf of COMPUTE segments only runs on Vulkan.
    `input_qparams` / `output_qparams`: integer inputs that take float data (quantized before each run) and integer
    outputs returned as float (dequantized), by name -> QParams or (scale, zero_point) (Model.quantize_io).
    Options are the backend class's keyword arguments; any other is an error naming it. The Vulkan backend's:
    `device` (a Device, an index, a UUID or a name), `target` (a device class to compile for, e.g. "nvidia"),
    `strict` (no host steps), `host_ops` / `partition` (operators forced to the host), `fuse`, `layouts` (NCHW
    tensors around NHWC custom ops), `timestamps` (GPU times for profile()), `timeout_s` (the longest a run may
    take; default 300 s), `max_iterations` (WHILE_LOOP cap), `max_in_flight` (runs submit() keeps going at once),
    `validation` (the Khronos validation layer), `cache_dir` (the program cache folder, or False). The reference
    backend takes `max_iterations` and `timeout_s`.

    Example: `with tosa_vk.load("model.tosa", backend="vulkan") as model: outputs = model.run({"x": array})`."""
    model = _load(source, backend, **options)
    if input_qparams or output_qparams:
        try:
            model.quantize_io(input_qparams, output_qparams)
        except BaseException:
            model.close()
            raise
    return model


def _load(source: str | Path | Graph, backend: str | None = None, **options: Any) -> Model:
    if not isinstance(source, Graph) and is_pte(source):
        return load_pte(source, backend, options)
    is_vgf = not isinstance(source, Graph) and Path(source).suffix.lower() == ".vgf"
    file = None
    vgf = None
    if is_vgf and not isinstance(source, Graph):
        from vgf import VGFError, load_vgf

        from .formats.spirv_graph.constants import runs_as_is

        file = str(source)
        try:
            vgf = load_vgf(source)
        except VGFError as err:
            raise TosaFormatError(err.rule, file=err.file) from None
        if not runs_as_is(vgf):  # GRAPH segments of a TOSA graph (not only constant fills): compiled like a .tosa
            from .formats.vgf_graph import to_graph

            source, is_vgf = to_graph(vgf, file=file), False
    if is_vgf:
        if backend not in (None, "vulkan"):
            raise TosaError(
                f"a .vgf file of COMPUTE segments only runs on the vulkan backend, not {backend!r}", file=str(source)
            )
        backend, where = "vulkan", VGF_BACKEND
    else:
        backend, where = _graph_backend(backend)
    cls = where()
    _check_options(cls, backend, options, " (.vgf)" if is_vgf else "")
    if is_vgf:  # the file read once, above
        return cls(vgf, file=file, **options)
    if isinstance(source, Graph):
        model = cls(source, file=file, **options)
    elif cls.parses_lazily:  # it reads the file itself, when it needs the graph
        model = cls(None, file=str(source), **options)
    else:
        from .ir.flatbuffer import load_graph

        model = cls(load_graph(source), file=str(source), **options)
    model._options = options
    return model


def _graph_backend(backend: str | None) -> tuple[str, Callable[[], type[Any]]]:
    """(backend, its Model class's import) of a backend that runs graphs: the one named, else the default (with a
    warning when that is the reference backend for want of a device)."""
    if backend is None:
        backend = default_backend()
        if backend == "reference":
            warnings.warn(NO_DEVICE_WARNING, RuntimeWarning, stacklevel=4)  # load()'s caller
    if backend not in BACKENDS:
        raise TosaError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
    return backend, BACKENDS[backend]


def _check_options(cls: type, backend: str, options: dict[str, Any], kind: str = "") -> None:
    """load()'s options against the backend class's keyword arguments: an unknown one is an error naming it."""
    accepted = [
        p.name
        for p in inspect.signature(cls).parameters.values()
        if p.kind == p.KEYWORD_ONLY or (p.kind == p.POSITIONAL_OR_KEYWORD and p.name not in ("source",))
    ]
    accepted = [a for a in accepted if a != "file"]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TosaError(
            f"the {backend} backend{kind} takes no option "
            f"{', '.join(map(repr, unknown))}; its options: {', '.join(accepted) or 'none'}"
        )


def is_pte(source: str | Path) -> bool:
    """An ExecuTorch program: a .pte name, or a file whose flatbuffer identifier is ET12."""
    if Path(source).suffix.lower() == ".pte":
        return True
    try:
        with open(source, "rb") as f:
            return f.read(8)[4:8] == b"ET12"
    except OSError:
        return False


def load_pte(
    source: str | Path | bytes, backend: str | None, options: dict[str, Any], file: str | None = None, **names: Any
) -> Model:
    """A .pte's "forward" method (else its first) as a PteModel: each TOSA delegate a model of `backend`; `names`:
    PteModel's input_names / output_names (tosa_vk.from_torch gives the module's argument names). `source`: a file,
    or a program's bytes that errors call `file`."""
    from .backends.pte import PteModel
    from .formats.pte import load_program, read_program

    if isinstance(source, bytes):
        file = file or "<buffer>"
        plans = read_program(source, file=file)
    else:
        file = str(source)
        plans = load_program(file)
    if not plans:
        raise TosaFormatError("the ExecuTorch program has no methods", file=file)
    plan = next((p for p in plans if p.name == "forward"), plans[0])
    backend, where = _graph_backend(backend)
    cls = where()
    options = dict(options)
    host_lowering = options.pop("host_lowering", True)  # False: every host operator in numpy (to compare)
    _check_options(cls, backend, options, " (.pte)")
    return PteModel(plan, cls, backend=backend, file=file, options=options, host_lowering=host_lowering, **names)

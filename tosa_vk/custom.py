"""The custom-operator registry: declarations of tosa.CUSTOM operators keyed by (domain_name, operator_name).

It holds declarations only: the reference backend runs a declaration's numpy implementation, the Vulkan lowering
(tosa_vk/stages/lower/custom.py) turns its shader declaration into a Kernel; this module imports neither.

    @tosa_vk.custom_op("com.example", "scale2")                  # numpy only: runs on the host everywhere
    def scale2(inputs, implementation_attrs):                    # list of numpy arrays, the raw attribute bytes
        return [inputs[0] * 2]                                   # a list of outputs (one array: that output)

    @tosa_vk.custom_op("com.example", "grid_sample", shader="grid_sample.comp",   # GLSL file next to this module
                       inputs=[sampled_image(0), buffer(1)], outputs=[buffer(2)],
                       workgroup_size=(8, 8, 1), grid=lambda s: (s.outputs[0][2], s.outputs[0][1], 1),
                       infer=lambda s: [((1, *s.inputs[1][1:3], 4), "fp32")], layout="NHWC")
    def grid_sample(inputs, attrs): ...                          # the numpy twin (reference backend, --check)

Set TOSA_VK_CUSTOM_OPS to a list of .py files or module names (separated by the path separator) to have them
imported on the first lookup, e.g. so that `tosa-vk run model.tosa --backend vulkan --check` knows your ops.

Operators of domain `com.arm.VulkanCustomShader` need no registration: their implementation_attrs payload carries
the shader (tosa_vk/abi/custom_payload.py). A numpy twin registered under that domain serves the reference backend.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vgf.vk_enums import COMBINED_IMAGE_SAMPLER, STORAGE_BUFFER, STORAGE_IMAGE, TENSOR_ARM  # noqa: F401 (declarations use them)

from .errors import TosaError

Reference = Callable[[list[np.ndarray], bytes], list[np.ndarray]]
VULKAN_CUSTOM_SHADER = "com.arm.VulkanCustomShader"


@dataclass(frozen=True)
class Sampler:
    """A COMBINED_IMAGE_SAMPLER's sampler, in the payload's field names and Vulkan enum names."""

    min_filter: str = "VK_FILTER_LINEAR"
    mag_filter: str = "VK_FILTER_LINEAR"
    address_mode_u: str = "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE"
    address_mode_v: str = "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE"
    border_color: str = "VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK"

    def items(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.__dict__.items()))


@dataclass(frozen=True)
class Binding:
    """How one input or output tensor is bound: descriptor type, (set, binding), VkFormat (None: the contract's
    format for the tensor, tosa_vk/stages/plan/resources.py) and, for a sampled image, its sampler."""

    descriptor: str
    binding: int
    set: int = 0
    format: str | None = None
    sampler: Sampler | None = None


def buffer(binding: int, set: int = 0, format: str | None = None) -> Binding:
    """A storage buffer: scalar elements, channels in the shape (any C)."""
    return Binding(STORAGE_BUFFER, binding, set, format)


def tensor(binding: int, set: int = 0, format: str | None = None) -> Binding:
    """A VK_ARM_tensors tensor (recorded as such for VGF; bound as a storage buffer where the device lacks it)."""
    return Binding(TENSOR_ARM, binding, set, format)


def sampled_image(binding: int, set: int = 0, sampler: Sampler | None = None, format: str | None = None) -> Binding:
    """A combined image sampler (inputs only): [H,W,C] or [1,H,W,C] fp32 with C in {1, 2, 4}."""
    return Binding(COMBINED_IMAGE_SAMPLER, binding, set, format, sampler or Sampler())


def storage_image(binding: int, set: int = 0, format: str | None = None) -> Binding:
    """A storage image (read or written with imageLoad / imageStore); same packing rules as sampled images."""
    return Binding(STORAGE_IMAGE, binding, set, format)


@dataclass(frozen=True)
class Shapes:
    """What dispatch / push-constant / inference rules see: shapes and dtype names of the operator's tensors."""

    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    attrs: bytes = b""


@dataclass(frozen=True)
class Shader:
    """The Vulkan implementation of a registered custom operator."""

    source: str  # GLSL text
    origin: str  # where it came from (a file path or "<inline>")
    inputs: tuple[Binding, ...]
    outputs: tuple[Binding, ...]
    workgroup_size: tuple[int, int, int] = (64, 1, 1)  # the shader's local size (also #define LOCAL_SIZE_X/Y/Z)
    grid: Callable[[Shapes], Sequence[int]] | Sequence[int] | None = None  # invocations: groups = ceil(grid / wg)
    dispatch: Callable[[Shapes], Sequence[int]] | Sequence[int] | None = None  # or group counts directly
    push_constants: Callable[[Shapes], bytes] | bytes = b""
    defines: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CustomOp:
    domain: str
    name: str
    reference: Reference | None = None
    shader: Shader | None = None
    infer: Callable[[Shapes], list[tuple[tuple[int, ...], str]]] | None = None  # output (shape, dtype) per output
    layout: str | None = None  # "NHWC": the shader-local layout of 4-D tensors (permutes around it)

    @property
    def label(self) -> str:
        return f"{self.domain}::{self.name}"

    def inferred(self, shapes: Shapes, where: str) -> list[tuple[tuple[int, ...], str]]:
        """`infer`'s (shape, dtype name) per output, checked: a user's rule that fails or returns something else
        is a TosaError naming the operator (`where`), never a crash further on."""
        assert self.infer is not None
        try:
            return [(tuple(int(d) for d in shape), str(dtype).lower()) for shape, dtype in self.infer(shapes)]
        except Exception as err:
            raise TosaError(
                f"{where}: the declaration's infer rule failed or did not return [(shape, dtype name)] per "
                f"output: {type(err).__name__}: {err}"
            ) from None


REGISTRY: dict[tuple[str, str], CustomOp] = {}


def register(op: CustomOp) -> CustomOp:
    REGISTRY[(op.domain, op.name)] = op
    return op


def custom_op(
    domain: str,
    name: str,
    *,
    shader: str | Path | None = None,
    source: str | None = None,
    inputs: Sequence[Binding] = (),
    outputs: Sequence[Binding] = (),
    workgroup_size: Sequence[int] = (64, 1, 1),
    grid=None,
    dispatch=None,
    push_constants=b"",
    defines: dict[str, str] | None = None,
    infer=None,
    layout: str | None = None,
):
    """Decorator registering CUSTOM operator `domain`::`name`; the decorated function is its numpy implementation
    (`fn(inputs, implementation_attrs) -> list of arrays`, or None for a Vulkan-only operator).

    shader / source: the GLSL compute shader (a file, relative to the decorated function's module, or the text);
    inputs / outputs: one Binding per tensor (buffer(), tensor(), sampled_image(), storage_image());
    grid (invocations, divided by workgroup_size) or dispatch (group counts): a tuple or fn(Shapes);
    push_constants: bytes or fn(Shapes) -> bytes; infer: fn(Shapes) -> [(shape, dtype name)] per output;
    layout="NHWC": the shader sees 4-D tensors channels-last (tosa_vk.stages.passes.permute inserts the transposes)."""
    if layout not in (None, "NHWC"):
        raise TosaError(f"custom op {domain}::{name}: layout must be None or 'NHWC', got {layout!r}")

    def wrap(fn: Reference | None):
        decl = None
        if shader is not None or source is not None:
            decl = _shader(
                domain,
                name,
                fn,
                shader,
                source,
                inputs,
                outputs,
                workgroup_size,
                grid,
                dispatch,
                push_constants,
                defines,
            )
        register(CustomOp(domain, name, fn, decl, infer, layout))
        return fn

    return wrap


def _shader(domain, name, fn, shader, source, inputs, outputs, workgroup_size, grid, dispatch, push, defines):
    label = f"custom op {domain}::{name}"
    if shader is not None and source is not None:
        raise TosaError(f"{label}: give shader= (a file) or source= (GLSL text), not both")
    if source is None:
        path = Path(shader)
        if not path.is_absolute():
            base = Path(inspect.getfile(fn)).parent if fn is not None else Path.cwd()
            path = base / path
        try:
            source, origin = path.read_text(), str(path)
        except OSError as err:
            raise TosaError(f"{label}: cannot read shader {path}: {err.strerror}") from None
    else:
        origin = "<inline>"
    if not inputs and not outputs:
        raise TosaError(f"{label}: a shader declaration needs inputs= / outputs= bindings")
    for b in (*inputs, *outputs):
        if not isinstance(b, Binding):
            raise TosaError(
                f"{label}: bindings are tosa_vk.custom.buffer() / tensor() / sampled_image() / "
                f"storage_image(), got {b!r}"
            )
    wg = tuple(int(v) for v in workgroup_size)
    if len(wg) != 3 or min(wg) < 1:
        raise TosaError(f"{label}: workgroup_size must be 3 positive ints, got {list(workgroup_size)}")
    if (grid is None) == (dispatch is None):
        raise TosaError(f"{label}: give exactly one dispatch rule: grid= (invocations) or dispatch= (group counts)")
    return Shader(
        source, origin, tuple(inputs), tuple(outputs), wg, grid, dispatch, push, tuple(sorted((defines or {}).items()))
    )


_PLUGINS_LOADED = False


def load_plugins() -> None:
    """Imports the modules named by TOSA_VK_CUSTOM_OPS once (a .py path or a module name per entry)."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    for entry in filter(None, os.environ.get("TOSA_VK_CUSTOM_OPS", "").split(os.pathsep)):
        try:
            if entry.endswith(".py"):
                spec = importlib.util.spec_from_file_location(f"tosa_vk_custom_ops_{Path(entry).stem}", entry)
                if spec is None or spec.loader is None:
                    raise ImportError(f"not a Python file: {entry}")
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            else:
                importlib.import_module(entry)
        except TosaError:
            raise
        except Exception as err:
            raise TosaError(f"TOSA_VK_CUSTOM_OPS: cannot import {entry}: {type(err).__name__}: {err}") from None


def lookup(domain: str, name: str) -> CustomOp | None:
    load_plugins()
    return REGISTRY.get((domain, name))


def registered() -> bool:
    """Whether any custom op is registered (a graph can use one only then)."""
    load_plugins()
    return bool(REGISTRY)


def attrs_bytes(value) -> bytes:
    """implementation_attrs as bytes, however the graph holds it (bytes, a list of ints, a string)."""
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, np.ndarray):
        return value.astype(np.uint8).tobytes()
    return bytes(value)


def call(
    builder, domain: str, name: str, inputs: list, implementation_attrs: bytes | str = b"", name_hint: str | None = None
):
    """Adds a registered custom op to a tosa_vk.Builder, its output shapes / dtypes from the declaration's `infer`
    (or the first input's shape and dtype when it has none). Returns the output Value (a tuple for several)."""
    op = lookup(domain, name)
    if op is None:
        raise TosaError(f"unknown custom operator {domain}::{name} ({REGISTER_HINT}; registered: {known()})")
    attrs = attrs_bytes(implementation_attrs)
    shapes = Shapes(tuple(v.shape for v in inputs), (), tuple(v.dtype.name.lower() for v in inputs), (), attrs)
    outs = (
        op.inferred(shapes, f"custom op {op.label}")
        if op.infer is not None
        else [(inputs[0].shape, inputs[0].dtype.name.lower())]
    )
    return builder.custom(
        list(inputs),
        domain_name=domain,
        operator_name=name,
        implementation_attrs=attrs,
        out_shape=[tuple(s) for s, _ in outs],
        out_dtype=[d for _, d in outs],
        name=name_hint,
    )


def known() -> str:
    return ", ".join(f"{d}::{n}" for d, n in sorted(REGISTRY)) or "none"


# how an unknown operator gets its declaration, in every error that names one
REGISTER_HINT = "register one with tosa_vk.custom_op; the CLI: TOSA_VK_CUSTOM_OPS=my_ops.py imports the file that does"


def user_source(text: str) -> bool:
    """Whether GLSL `text` is the shader of a registered declaration: the user's own code, which may #include the
    user's files (a model's GLSL may not: tosa_vk/abi/glsl_preprocessor.py)."""
    return any(op.shader is not None and op.shader.source == text for op in REGISTRY.values())

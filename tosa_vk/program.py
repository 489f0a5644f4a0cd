"""The compiled artifact both sides share: the compiler writes a Program, the Vulkan layer runs it.

Nothing here imports the compiler (ir / lower / plan) or the Vulkan layer. It is plain data — no callables — so
`Program.to_bytes()` / `from_bytes()` round-trip it exactly (the program cache and VGF export read it).

A Program is a list of Steps in execution order. A Kernel step is one compute dispatch of a GLSL shader variant
over storage buffers; a Host step names an operator the runtime runs on numpy views of the same memory with a host
kernel looked up by the operator's name (a CPU fallback for an operator without a Vulkan kernel). Branch / Loop
steps hold nested step lists (COND_IF / WHILE_LOOP regions) and StateCheck steps name a variable rule
(tosa_vk/ir/variables.py). Every tensor lives at a byte offset in one arena.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from vgf.vk_enums import IMAGE_DESCRIPTORS

from .store import serial


@dataclass(frozen=True)
class Buffer:
    """Where one tensor lives: a byte range of the arena, and how to view it from numpy."""

    name: str
    offset: int
    nbytes: int
    shape: tuple[int, ...]
    dtype: np.dtype  # numpy view dtype of the device layout (DType.numpy: int48 as int64, ...)
    kind: str = "intermediate"  # "input" | "output" | "intermediate" | "constant" | "variable"
    storage: str = ""  # the tensor whose memory this one shares (RESHAPE / IDENTITY alias), else itself
    live: tuple[int, int] = (-1, -1)  # first and last step using the memory (-1: before the run)


@dataclass(frozen=True)
class Kernel:
    """One dispatch: shader `shader` (a path under shaders/, without .comp) compiled with `defines`."""

    op: str  # "ADD #3 'out'" — for errors and profiles
    shader: str
    defines: tuple[tuple[str, str], ...]
    bindings: tuple[str, ...]  # buffer names, bound in order at set 0, binding 0..n-1
    push_constants: bytes
    groups: tuple[int, int, int]  # workgroup counts
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    # Custom shaders (tosa.CUSTOM); the defaults describe every built-in kernel.
    source: str = ""  # inline GLSL: `shader` is then only a name for errors
    spirv: bytes = b""  # ready SPIR-V (a VulkanCustomShader payload): no glslc
    entry: str = "main"  # SPIR-V entry point
    slots: tuple[tuple[int, int], ...] = ()  # (set, binding) per binding; () = set 0, bindings 0..n-1
    descriptors: tuple[str, ...] = ()  # VK_DESCRIPTOR_TYPE_* per binding; () = storage buffers
    images: tuple[Image | None, ...] = ()  # per binding: texel format / extent / sampler of image bindings
    # per binding: the VK_FORMAT_* of a uniform texel buffer viewing the tensor's bytes ("" for other descriptors)
    texels: tuple[str, ...] = ()
    # The push-constant block as the shader declares it: (member, GLSL type, array length or 0) in order; VGF
    # export bakes `push_constants` into the module with it. () for custom kernels (their payload says).
    push_layout: tuple[tuple[str, str, int], ...] = ()
    # Layer geometry as int specialization constants (name, value): the shader variant declares the names in this
    # order (tosa_vk/vulkan/shaders.py), this kernel's module sets the values (shaders.specialize)
    specs: tuple[tuple[str, int], ...] = ()

    @property
    def spec_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.specs)

    @property
    def spec_values(self) -> tuple[int, ...]:
        return tuple(value for _, value in self.specs)


@dataclass(frozen=True)
class Image:
    """An image binding of a custom kernel: the tensor's arena bytes are copied into a width x height image of
    `format` before the dispatch (and back after it for a storage image the kernel writes)."""

    format: str  # VK_FORMAT_R32_SFLOAT | R32G32_SFLOAT | R32G32B32A32_SFLOAT
    width: int
    height: int
    sampler: tuple[tuple[str, str], ...] = ()  # COMBINED_IMAGE_SAMPLER: (field, VK enum name) pairs


@dataclass(frozen=True)
class Resource:
    """One tensor's binding, as the plan stage decided it: what a kernel, the runtime and VGF export need to know."""

    tensor: str
    descriptor: str  # VK_DESCRIPTOR_TYPE_*
    format: str  # VK_FORMAT_*
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements, row-major (dense scalar linearisation)
    dtype: str  # DType name
    alias_group: int | None = None

    @property
    def image_extent(self) -> tuple[int, int] | None:
        """(width, height) of an image resource ([..., H, W, C])."""
        if self.descriptor not in IMAGE_DESCRIPTORS:
            return None
        h, w = self.shape[-3], self.shape[-2]
        return w, h


@dataclass(frozen=True)
class Host:
    """An operator run on the host (`operator`, e.g. "CUSTOM", by a host kernel registered under that name) over
    numpy views: `inputs` per operator input is a buffer name, or "" for a compile-time constant held in
    `constants` at the same position. Outputs are written to `writes`."""

    op: str  # "CUSTOM #3 'y'" — for errors and profiles
    operator: str
    attrs: dict[str, Any]
    inputs: tuple[str, ...]
    constants: tuple[np.ndarray | None, ...]
    in_types: tuple[str, ...]  # DType names
    out_types: tuple[str, ...]
    out_shapes: tuple[tuple[int, ...], ...]
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


@dataclass(frozen=True)
class StateCheck:
    """A host-side rule of the variable extension (tosa_vk/ir/variables.py: "declare" / "write" / "read") for
    variable `uid`, checked in execution order.

    It touches no tensor memory (the values stay on the device), so it never splits a command buffer: the runtime
    runs the checks of a segment just before submitting it."""

    op: str
    rule: str
    uid: str
    shape: tuple[int, ...]
    dtype: str  # DType name
    initial_shape: tuple[int, ...] | None = None  # "declare": the initial value's shape, None without one
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Branch:
    """COND_IF: runs `then` or `orelse` (step lists) by the bool scalar in buffer `condition`."""

    op: str
    condition: str
    then: list
    orelse: list
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Loop:
    """WHILE_LOOP: runs `cond` then reads the bool scalar `condition`; while true runs `body` and repeats.

    The loop-carried tensors stay on the device: the cond and body blocks read them in place, and the body's last
    steps copy its results into them."""

    op: str
    cond: list
    condition: str
    body: list
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    predicate: str = ""  # the condition as a uint32 (cond's last kernel writes it) for conditional rendering


class Placement(NamedTuple):
    """Where one operator runs: "vulkan" (kernels), "fused" (in another operator's kernel: tosa_vk/stages/fuse.py),
    "host" (a Host step), "alias" (no work: it shares its input's memory) or "constant" (CONST / CONST_SHAPE: data,
    uploaded once or known at compile time), and why."""

    op: str
    where: str
    reason: str


@dataclass(frozen=True)
class VariableSpec:
    """A variable (EXT-VARIABLE) of the program: its buffer and initial value (None: zeros, not yet written)."""

    uid: str
    tensor: str
    initial: np.ndarray | None


Step = Kernel | Host | StateCheck | Branch | Loop


def walk(steps: list) -> Iterator[Step]:
    """Every step, depth first, in recorded order (a branch's then before its else, a loop's cond before its body)."""
    for step in steps:
        yield step
        if isinstance(step, Branch):
            yield from walk(step.then)
            yield from walk(step.orelse)
        elif isinstance(step, Loop):
            yield from walk(step.cond)
            yield from walk(step.body)


@dataclass
class Program:
    steps: list[Step]
    buffers: dict[str, Buffer]
    arena_bytes: int
    inputs: list[str]
    outputs: list[str]
    constants: dict[str, np.ndarray] = field(default_factory=dict)  # uploaded once, by tensor name
    placement: list[Placement] = field(default_factory=list)
    memory: dict[str, int] = field(default_factory=dict)  # arena / lower-bound / naive bytes
    variables: dict[str, VariableSpec] = field(default_factory=dict)  # by uid
    resources: dict[str, Resource] = field(default_factory=dict)  # by tensor: descriptor, format, alias group
    # the graph's own inputs and outputs as the user feeds and gets them: name -> (shape, DType name); a program
    # from the cache runs without its graph
    input_types: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    output_types: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)

    def buffer(self, tensor: str) -> Buffer:
        """The Buffer (arena placement, resource kind) of `tensor`."""
        return self.buffers[tensor]

    def storage(self, tensor: str) -> str:
        """The tensor whose memory `tensor` lives in: itself, or the one it is a view of."""
        return self.buffers[tensor].storage or tensor

    def views(self) -> list[str]:
        """Tensors that are a part of another tensor's memory, not all of it (SLICE / CONCAT views, fuse.py), or
        that a kernel reads through a texel-buffer view (lower/texels.py)."""
        whole = lambda b: (b.offset, b.nbytes)  # noqa: E731
        parts = [n for n, b in self.buffers.items() if whole(b) != whole(self.buffers[self.storage(n)])]
        texels = {n for k in walk(self.steps) if isinstance(k, Kernel) for n, t in zip(k.bindings, k.texels) if t}
        return parts + sorted(texels - set(parts))

    def to_bytes(self) -> bytes:
        """The Program as plain data (no pickle): `Program.from_bytes` reads it back equal."""
        return serial.dumps(self, TYPES)

    @staticmethod
    def from_bytes(data: bytes) -> Program:
        """The Program in `data`; a SerialError for anything else, however it is built (the program cache's
        entries are untrusted: a structure nested 200,000 deep or sized past memory is refused, not a crash)."""
        try:
            program = serial.loads(data, TYPES)
        except (RecursionError, MemoryError, OverflowError) as err:
            raise serial.SerialError(f"corrupt structure: {type(err).__name__}") from None
        if not isinstance(program, Program):
            raise serial.SerialError("the data holds no Program")
        return program


# Every type a Program may hold, by the name its serialised form uses (tosa_vk/store/serial.py refuses any other).
TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (Program, Buffer, Kernel, Image, Resource, Host, StateCheck, Branch, Loop, Placement, VariableSpec)
}

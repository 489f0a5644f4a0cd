"""What a lowering sees (LowerCtx) and the registry the spec chapters' lowerings join (`@lowering("ADD")`),
with the grid helpers every kernel family shares. The lower stage's driver (lower/__init__.py) imports this; the
chapters, families and fused kernels import it too, never the driver."""

from __future__ import annotations

import dataclasses
import importlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from vgf.vk_enums import STORAGE_BUFFER, UNIFORM_TEXEL_BUFFER

from ...abi.shader_abi import TEXEL_SAMPLERS, WORKGROUP
from ...errors import TosaError
from ...ir.dtype import DType
from ...ir.graph import Block, Operator, Tensor
from ...program import Kernel, Step, VariableSpec
from ...target import Target
from .push import Push
from .texels import readable
from .types import binding_defines

Made = TypeVar("Made")  # what a lowering attempt makes (LowerCtx.attempt)

# push-constant scalars one kernel may read (LowerCtx.word): 64 bytes, with the largest built-in block (48 bytes)
# within the 128 bytes every Vulkan device offers
MAX_WORDS = 16

LOWERINGS: dict[str, Callable[[LowerCtx], list[Step] | None]] = {}
CHAPTERS = (
    "elementwise_binary",
    "elementwise_unary",
    "elementwise_ternary",
    "comparison",
    "activation",
    "type_conversion",
    "reduction",
    "data_layout",
    "scatter_gather",
    "image",
    "tensor_ops",
    "convolution",
    "control_flow",
    "variable",
    "custom",
)
ALIASING = ("RESHAPE", "IDENTITY")  # outputs share the input's memory: no kernel at all
MAX_GROUPS = 65535  # maxComputeWorkGroupCount[0] every Vulkan device offers (the spec's minimum)


def lowering(*names: str):
    def register(fn):
        for name in names:
            LOWERINGS[name] = fn
        return fn

    return register


def load_all() -> None:
    """Imports every chapter module so its lowerings register (idempotent)."""
    for chapter in CHAPTERS:
        importlib.import_module(f"{__package__}.{chapter}")


@dataclass
class LowerCtx:
    """What a lowering sees of one operator. Tensor names are the block's; `kernel()` turns them into the
    program-wide names (a region's tensors are qualified by `prefix`, e.g. "BODY_BLOCK::x")."""

    op: Operator
    index: int
    block: Block
    target: Target
    temps: dict[str, Tensor]  # the constants and scratch tensors this operator's kernels add
    prefix: str = ""  # "" in the main block
    compiler: Lowering | None = None  # for operators with regions or program-wide state
    # the fuse stage's chain after this operator, (index, operator) in order: the kernel applies them to its
    # result and stores the last one's output (tosa_vk/stages/fuse.py); a lowering that cannot returns None
    epilogue: list[tuple[int, Operator]] = dataclasses.field(default_factory=list)
    # the prologue (Fusion.prologues): the operator before this one, (index, operator), whose result only this one
    # reads — the same reduction along another axis, or a TRANSPOSE before a CONV2D; the kernel does both, reading
    # that operator's input. A lowering that cannot returns None.
    prologue: tuple[int, Operator] | None = None
    # 32-bit scalars the kernel reads from its push constants (word()), in order
    words: list[int] = dataclasses.field(default_factory=list)
    # binding name -> (tensor, VK_FORMAT_*) of the inputs a kernel of this operator reads through a uniform texel
    # buffer (texel(); lower/texels.py)
    texels: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)

    def word(self, value: int | float, glsl: str = "int") -> str:
        """GLSL for a scalar of the kernel (a zero point, a clamp bound: "int" or "float", exact) read from its push
        constants, p.ep[i], rather than written into its code: layers that differ only in such values then share
        one shader and one pipeline (resnet_int8: one per layer before). A literal past MAX_WORDS."""
        if len(self.words) >= MAX_WORDS:
            from .push import literal

            return literal(glsl, value)
        # one slot per call, equal values too: the code must not depend on which values happen to coincide
        self.words.append(int(np.float32(value).view(np.int32)) if glsl == "float" else int(value))
        read = f"p.ep[{len(self.words) - 1}]"
        return f"intBitsToFloat({read})" if glsl == "float" else read

    def attempt(self, lower: Callable[[], Made | None]) -> Made | None:
        """lower()'s kernels; when it declines (None), the constants, temporaries and push words it added are
        dropped, so that the kernel the caller tries next carries only its own."""
        temps, words, texels = dict(self.temps), list(self.words), dict(self.texels)
        made = lower()
        if made is None:
            self.temps.clear()
            self.temps.update(temps)
            self.words[:] = words
            self.texels.clear()
            self.texels.update(texels)
        return made

    def texel(self, binding: str, tensor: str, fmt: str | None) -> bool:
        """Whether the kernel reads `tensor` (bound as `binding`) through a uniform texel buffer of format `fmt`
        (lower/texels.py; None: not a texel format): yes where the target's texel buffers hold it. The shader then
        declares the binding as one: TEXEL_<binding> is defined as its GLSL sampler type."""
        if fmt is None or not readable(self.target, self.tensor(tensor), fmt):
            return False
        self.texels[binding] = (tensor, fmt)
        return True

    def add_constant(self, values: np.ndarray, dtype: DType) -> str:
        """A constant made at load time (e.g. weights packed into the layout a kernel wants); uploaded once.
        Returns its tensor name, usable in `kernel(bindings=...)`."""
        name = f"{self.label}/const{len(self.temps)}"
        self.temps[name] = Tensor(name, np.shape(values), dtype, np.asarray(values, dtype=dtype.numpy))
        return name

    def temporary(self, shape: tuple[int, ...], dtype: DType) -> str:
        """A scratch tensor for multi-pass kernels (e.g. a reduction's partial results); returns its name."""
        name = f"{self.label}/tmp{len(self.temps)}"
        self.temps[name] = Tensor(name, tuple(shape), dtype)
        return name

    def q(self, name: str) -> str:
        """The program-wide name of a tensor of this block (temporaries and qualified names pass through)."""
        return self.prefix + name if name in self.block.tensors and name not in self.temps else name

    def tensor(self, name: str) -> Tensor:
        """A tensor by block-local or program-wide name."""
        found = self.temps.get(name) or self.block.tensors.get(name)
        return found if found is not None else self.compilation.tensors[name]

    @property
    def compilation(self) -> Lowering:
        """The lower() call this operator is part of: program-wide state (regions, aliases, variables)."""
        if self.compiler is None:
            raise TosaError("internal: lowered outside a compilation", op=self.op.op, index=self.index)
        return self.compiler

    @property
    def inputs(self) -> list[Tensor]:
        return [self.block.tensors[n] for n in self.op.inputs]

    @property
    def outputs(self) -> list[Tensor]:
        return [self.block.tensors[n] for n in self.op.outputs]

    @property
    def label(self) -> str:
        """The operator, and the operators its kernels also do: "CONV2D #3 'c' + RESCALE #4 'r'"."""
        own = self.op.label(self.index, self.prefix)
        first = [self.prologue[1].label(self.prologue[0], self.prefix)] if self.prologue else []
        return " + ".join(first + [own] + [op.label(i) for i, op in self.epilogue])

    @property
    def result(self) -> Tensor:
        """The tensor the kernel stores: the operator's output, or the last epilogue operator's."""
        return self.block.tensors[(self.epilogue[-1][1] if self.epilogue else self.op).outputs[0]]

    def groups(self, count: int) -> tuple[int, int, int]:
        """A grid of `count` workgroups on this target (x, spilling into y)."""
        return spill(count, self.target.max_workgroup_count[0])

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.op.attrs.get(name, default)
        return default if value is None else value

    def constant(self, i: int) -> np.ndarray | None:
        """The value of input i when it is a compile-time constant (CONST / CONST_SHAPE), else None."""
        return self.inputs[i].data

    def kernel(
        self,
        shader: str,
        bindings: dict[str, str],
        defines: dict[str, str] | None = None,
        push: Push | None = None,
        groups: tuple[int, int, int] | None = None,
        invocations: int | None = None,
        writes: tuple[str, ...] | None = None,
        specs: dict[str, int] | None = None,
    ) -> Kernel:
        """A dispatch of shaders/<shader>.comp. `bindings` maps binding names (A, B, O, ...) -> tensor names,
        in binding order; each gets the type defines of its tensor. `push`: the values packed by the shader's
        layout (tosa_vk/stages/lower/push.py). The kernel writes the bindings whose tensor is an output of the operator,
        or the tensors named in `writes` (e.g. a temporary). Give `groups`, or `invocations` for a 1-D grid of
        WORKGROUP-wide groups. `specs`: int specialization constants the shader reads by name (layer geometry:
        kernels that differ only there share one compiled module). Bindings texel() chose are read through uniform
        texel buffers."""
        all_defines: dict[str, str] = {}
        for bname, tensor in bindings.items():
            all_defines.update(binding_defines(bname, self.tensor(tensor).dtype))
        all_defines.update(defines or {})
        texels = {b: fmt for b, (t, fmt) in self.texels.items() if bindings.get(b) == t}
        all_defines.update({f"TEXEL_{b}": TEXEL_SAMPLERS[fmt] for b, fmt in texels.items()})
        if groups is None:
            assert invocations is not None, "give groups or invocations"
            groups = grid_1d(invocations, self.target.max_workgroup_count[0])
        outs = {self.q(n) for n in ((self.result.name,) if writes is None else writes)}
        names = tuple(self.q(n) for n in bindings.values())
        data, layout = push if push is not None else (b"", ())
        if self.words:  # the scalars of word(): the last member of the shader's block (EP_PUSH in types.glsl)
            data += struct.pack(f"<{len(self.words)}i", *self.words)
            layout = (*layout, ("ep", "int", len(self.words)))
            all_defines["EP_WORDS"] = str(len(self.words))
        return Kernel(
            self.label,
            shader,
            tuple(sorted(all_defines.items())),
            names,
            data,
            groups,
            reads=tuple(n for n in names if n not in outs),
            writes=tuple(n for n in names if n in outs),
            push_layout=layout,
            specs=tuple((specs or {}).items()),
            descriptors=tuple(UNIFORM_TEXEL_BUFFER if b in texels else STORAGE_BUFFER for b in bindings)
            if texels
            else (),
            texels=tuple(texels.get(b, "") for b in bindings) if texels else (),
        )


def axis_view(shape, axis: int) -> tuple[int, int, int]:
    """(outer, axis length, inner) of `shape` around `axis`: a reduction's view of its input."""
    outer = inner = 1
    for d in shape[:axis]:
        outer *= d
    for d in shape[axis + 1 :]:
        inner *= d
    return outer, shape[axis], inner


def spill(groups: int, max_x: int = MAX_GROUPS) -> tuple[int, int, int]:
    """`groups` workgroups along x, spilling into y past `max_x` (the device's maxComputeWorkGroupCount[0]); the
    shader skips the excess of the last row."""
    groups = max(1, groups)
    if groups <= max_x:
        return (groups, 1, 1)
    return (max_x, -(-groups // max_x), 1)


def grid_1d(invocations: int, max_x: int = MAX_GROUPS) -> tuple[int, int, int]:
    """Workgroup counts covering `invocations` in WORKGROUP-wide groups; shaders flatten with
    `gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WORKGROUP`."""
    return spill(-(-invocations // WORKGROUP), max_x)


class Lowering(Protocol):
    """What a lowering reads of the lower() call it is part of (lower/__init__.py's Compilation): regions,
    program-wide tensors and aliases, variables."""

    regions: dict[str, Block]
    tensors: dict[str, Tensor]
    root: dict[str, str]
    variables: dict[str, VariableSpec]

    def prefix_for(self, region: str) -> str: ...

    def alias(self, name: str, t: Tensor, target: str) -> None: ...

    def block(self, block: Block, region: str, prefix: str = "") -> list[Step]: ...

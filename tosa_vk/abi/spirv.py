"""What a SPIR-V compute module declares — entry points, descriptor bindings with their types, push-constant block
size, local size — read from the module's words (SPIR-V 1.6 spec, 2.3 "Physical Layout" and 3.x enumerants).

A model's shader is untrusted: a binding, set or descriptor type the pipeline layout does not match, or a push
block larger than what is pushed, reaches vkCreateComputePipelines / the dispatch unchecked and crashes the driver
or reads zeros (issue 15). `check` compares a module with the layout a kernel will bind, before any Vulkan call
(tosa_vk/vulkan/runtime.py); `entry_points` is what payload parsing checks (tosa_vk/abi/custom_payload.py). Plain
Python: no Vulkan needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from vgf import vk_enums

from ..errors import ReflectError

# opcodes (SPIR-V spec 3.52; OpTypeTensorARM from SPV_ARM_tensors)
OP_ENTRY_POINT, OP_EXECUTION_MODE, OP_DECORATE, OP_MEMBER_DECORATE, OP_VARIABLE = 15, 16, 71, 72, 59
OP_TYPE_BOOL, OP_TYPE_INT, OP_TYPE_FLOAT, OP_TYPE_VECTOR, OP_TYPE_MATRIX = 20, 21, 22, 23, 24
OP_TYPE_IMAGE, OP_TYPE_SAMPLER, OP_TYPE_SAMPLED_IMAGE, OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY = 25, 26, 27, 28, 29
OP_TYPE_STRUCT, OP_TYPE_POINTER, OP_CONSTANT, OP_TYPE_TENSOR_ARM = 30, 32, 43, 4163
OP_CONSTANT_COMPOSITE, OP_SPEC_CONSTANT, OP_SPEC_CONSTANT_COMPOSITE = 44, 50, 51
# storage classes, decorations, execution model / mode
UNIFORM_CONSTANT, UNIFORM, PUSH_CONSTANT, STORAGE_BUFFER_CLASS = 0, 2, 9, 12
BLOCK, BUFFER_BLOCK, ARRAY_STRIDE, MATRIX_STRIDE, BINDING, DESCRIPTOR_SET, OFFSET = 2, 3, 6, 7, 33, 34, 35
BUILT_IN, WORKGROUP_SIZE, SPEC_ID = 11, 25, 1
GL_COMPUTE, LOCAL_SIZE, LOCAL_SIZE_ID = 5, 17, 38
DIM_BUFFER = 5
NON_WRITABLE, NON_READABLE = 24, 25
OP_FUNCTION, OP_FUNCTION_PARAMETER, OP_FUNCTION_CALL, OP_LOAD = 54, 55, 57, 61
# what an instruction does to the memory its pointer / image / tensor operand reaches (SPIR-V spec 3.52):
# opcode -> (name, index of that operand, writes); atomics other than OpAtomicLoad read and write
_IMAGE_READS = (
    "SampleImplicitLod",
    "SampleExplicitLod",
    "SampleDrefImplicitLod",
    "SampleDrefExplicitLod",
    "SampleProjImplicitLod",
    "SampleProjExplicitLod",
    "SampleProjDrefImplicitLod",
    "SampleProjDrefExplicitLod",
    "Fetch",
    "Gather",
    "DrefGather",
    "Read",
)  # opcodes 87..98
_ATOMICS = (
    "Exchange",
    "CompareExchange",
    "CompareExchangeWeak",
    "IIncrement",
    "IDecrement",
    "IAdd",
    "ISub",
    "SMin",
    "UMin",
    "SMax",
    "UMax",
    "And",
    "Or",
    "Xor",
)  # opcodes 229..242
ACCESSES = {
    61: ("OpLoad", 2, False),
    62: ("OpStore", 0, True),
    63: ("OpCopyMemory", 0, True),
    64: ("OpCopyMemorySized", 0, True),
    99: ("OpImageWrite", 0, True),
    227: ("OpAtomicLoad", 2, False),
    228: ("OpAtomicStore", 0, True),
    318: ("OpAtomicFlagTestAndSet", 2, True),
    319: ("OpAtomicFlagClear", 0, True),
    4164: ("OpTensorReadARM", 2, False),
    4165: ("OpTensorWriteARM", 0, True),
    5614: ("OpAtomicFMinEXT", 2, True),
    5615: ("OpAtomicFMaxEXT", 2, True),
    6035: ("OpAtomicFAddEXT", 2, True),
    **{87 + i: (f"OpImage{name}", 2, False) for i, name in enumerate(_IMAGE_READS)},
    **{229 + i: (f"OpAtomic{name}", 2, True) for i, name in enumerate(_ATOMICS)},
}
# instructions whose result reaches what an operand reaches: (opcode, first operand index, last + 1 or None for all)
# — access chains and copies of a pointer, and an image / sampled image / tensor handle loaded and passed on
DERIVES = {
    60: (2, 3),  # OpImageTexelPointer: a pointer into the image
    61: (2, 3),  # OpLoad of an image / tensor handle (or of a pointer, with variable pointers)
    65: (2, 3),  # OpAccessChain
    66: (2, 3),  # OpInBoundsAccessChain
    67: (2, 3),  # OpPtrAccessChain
    70: (2, 3),  # OpInBoundsPtrAccessChain
    83: (2, 3),  # OpCopyObject
    86: (2, 3),  # OpSampledImage
    100: (2, 3),  # OpImage
    124: (2, 3),  # OpBitcast
    169: (3, 5),  # OpSelect
    245: (2, None),  # OpPhi: (value, parent block) pairs
    400: (2, 3),  # OpCopyLogical
}

# descriptor kinds SPIR-V can declare that tosa_vk never binds: named for the error
OTHER_DESCRIPTORS = {
    "sampler": "VK_DESCRIPTOR_TYPE_SAMPLER",
    "sampled image": "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE",
    "texel buffer": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER",
}


@dataclass
class Interface:
    entry_points: list[str] = field(default_factory=list)  # GLCompute ones
    bindings: dict[tuple[int, int], str] = field(default_factory=dict)  # (set, binding) -> VK_DESCRIPTOR_TYPE_*
    push_size: int = 0  # bytes the push-constant block spans (0: none)
    local_size: tuple[int, ...] | None = None  # the WorkgroupSize built-in's value where declared, else LocalSize
    # how the module uses each (set, binding): the first instruction that writes it, whether any reads it, and its
    # NonWritable (GLSL readonly) / NonReadable (writeonly) decorations, on the variable or on every block member
    writes: dict[tuple[int, int], str] = field(default_factory=dict)
    reads: set[tuple[int, int]] = field(default_factory=set)
    non_writable: set[tuple[int, int]] = field(default_factory=set)
    non_readable: set[tuple[int, int]] = field(default_factory=set)


def instructions(spirv: bytes | bytearray) -> Iterator[tuple[int, memoryview]]:
    """(opcode, operand words) of each instruction after the 5-word header (writable views of a bytearray's words);
    ReflectError at a bad word count."""
    if len(spirv) < 20 or len(spirv) % 4:
        raise ReflectError(f"{len(spirv)} bytes is not a SPIR-V module")
    words = memoryview(spirv).cast("I")
    at = 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if count == 0 or at + count > len(words):
            raise ReflectError(f"instruction at word {at} has a bad word count {count}")
        yield opcode, words[at + 1 : at + count]
        at += count


def entry_points(spirv: bytes) -> list[str]:
    """Names of the GLCompute entry points, as far as the module's instructions read."""
    names = []
    try:
        for opcode, ops in instructions(spirv):
            if opcode == OP_ENTRY_POINT and len(ops) > 2 and ops[0] == GL_COMPUTE:
                names.append(_name(ops[2:]))
    except ReflectError:
        pass
    return names


def _name(words: memoryview) -> str:
    """A literal string operand (nul-terminated UTF-8 in words)."""
    return bytes(words).split(b"\0", 1)[0].decode("utf-8", "replace")


def reflect(spirv: bytes) -> Interface:
    types: dict[int, tuple[int, memoryview]] = {}
    constants: dict[int, int] = {}
    composites: dict[int, list[int]] = {}
    local_size_ids: list[int] = []
    decorations: dict[int, dict[int, int]] = {}
    members: dict[tuple[int, int], dict[int, int]] = {}
    variables: list[tuple[int, int, int]] = []  # (result type, id, storage class)
    uses = _Uses()
    out = Interface()
    for opcode, ops in instructions(spirv):
        uses.add(opcode, ops)
        if opcode == OP_ENTRY_POINT and len(ops) > 2 and ops[0] == GL_COMPUTE:
            out.entry_points.append(_name(ops[2:]))
        elif opcode == OP_EXECUTION_MODE and len(ops) >= 5 and ops[1] == LOCAL_SIZE:
            out.local_size = (ops[2], ops[3], ops[4])
        elif opcode == OP_EXECUTION_MODE and len(ops) >= 5 and ops[1] == LOCAL_SIZE_ID:
            local_size_ids = list(ops[2:5])
        elif opcode in (OP_CONSTANT_COMPOSITE, OP_SPEC_CONSTANT_COMPOSITE) and len(ops) >= 2:
            composites[ops[1]] = list(ops[2:])
        elif opcode == OP_DECORATE and len(ops) >= 2:
            decorations.setdefault(ops[0], {})[ops[1]] = ops[2] if len(ops) > 2 else 1
        elif opcode == OP_MEMBER_DECORATE and len(ops) >= 3:
            members.setdefault((ops[0], ops[1]), {})[ops[2]] = ops[3] if len(ops) > 3 else 1
        elif opcode in (OP_CONSTANT, OP_SPEC_CONSTANT) and len(ops) >= 3:
            constants[ops[1]] = ops[2]
        elif opcode == OP_VARIABLE and len(ops) >= 3:
            variables.append((ops[0], ops[1], ops[2]))
        elif OP_TYPE_BOOL <= opcode <= OP_TYPE_POINTER or opcode == OP_TYPE_TENSOR_ARM:
            if ops:
                types[ops[0]] = (opcode, ops)

    # the WorkgroupSize built-in overrides LocalSize / LocalSizeId (SPIR-V spec 3.21, BuiltIn WorkgroupSize)
    sized = [t for t, d in decorations.items() if d.get(BUILT_IN) == WORKGROUP_SIZE and t in composites]
    if sized:
        local_size_ids = composites[sized[0]]
    if local_size_ids:
        out.local_size = tuple(constants.get(i, 0) for i in local_size_ids)

    def pointee(type_id: int) -> int:
        opcode, ops = types.get(type_id, (0, memoryview(b"")))
        if opcode != OP_TYPE_POINTER or len(ops) < 3:
            raise ReflectError(f"variable type %{type_id} is not a pointer")
        return ops[2]

    def element(type_id: int) -> int:
        """Through arrays of descriptors to what one descriptor holds."""
        while types.get(type_id, (0,))[0] in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY):
            type_id = types[type_id][1][1]
        return type_id

    def size(type_id: int, depth: int = 0) -> int:
        """Bytes a push-constant member of this type spans (explicit layout: Offset / ArrayStride decorations)."""
        if depth > 32 or type_id not in types:
            raise ReflectError(f"type %{type_id} is undefined or nested too deep")
        opcode, ops = types[type_id]
        if opcode in (OP_TYPE_INT, OP_TYPE_FLOAT):
            return ops[1] // 8
        if opcode == OP_TYPE_VECTOR:
            return ops[2] * size(ops[1], depth + 1)
        if opcode == OP_TYPE_MATRIX:
            return ops[2] * size(ops[1], depth + 1)
        if opcode == OP_TYPE_ARRAY:
            length = constants.get(ops[2], 0)
            stride = decorations.get(type_id, {}).get(ARRAY_STRIDE) or size(ops[1], depth + 1)
            return length * stride
        if opcode == OP_TYPE_STRUCT:
            ends = [members.get((type_id, i), {}).get(OFFSET, 0) + size(m, depth + 1) for i, m in enumerate(ops[1:])]
            return max(ends, default=0)
        raise ReflectError(f"type %{type_id} (opcode {opcode}) cannot be in a push-constant block")

    handles = {t for t, (o, _) in types.items() if o in (OP_TYPE_IMAGE, OP_TYPE_SAMPLED_IMAGE, OP_TYPE_TENSOR_ARM)}
    for type_id, var, storage in variables:
        if storage == PUSH_CONSTANT:
            out.push_size = max(out.push_size, size(pointee(type_id)))
            continue
        if storage not in (UNIFORM_CONSTANT, UNIFORM, STORAGE_BUFFER_CLASS):
            continue
        deco = decorations.get(var, {})
        slot = (deco.get(DESCRIPTOR_SET, 0), deco.get(BINDING, 0))
        held = element(pointee(type_id))
        opcode, ops = types.get(held, (0, memoryview(b"")))
        if storage == STORAGE_BUFFER_CLASS:
            kind = vk_enums.STORAGE_BUFFER
        elif storage == UNIFORM:
            kind = vk_enums.STORAGE_BUFFER if BUFFER_BLOCK in decorations.get(held, {}) else vk_enums.UNIFORM_BUFFER
        elif opcode == OP_TYPE_TENSOR_ARM:
            kind = vk_enums.TENSOR_ARM
        elif opcode == OP_TYPE_SAMPLED_IMAGE:  # a samplerBuffer is a uniform texel buffer
            image = types.get(ops[1], (0, memoryview(b"")))[1]
            buffer = len(image) >= 3 and image[2] == DIM_BUFFER
            kind = vk_enums.UNIFORM_TEXEL_BUFFER if buffer else vk_enums.COMBINED_IMAGE_SAMPLER
        elif opcode == OP_TYPE_IMAGE and len(ops) >= 7:
            if ops[2] == DIM_BUFFER:
                kind = OTHER_DESCRIPTORS["texel buffer"]
            else:
                kind = vk_enums.STORAGE_IMAGE if ops[6] == 2 else OTHER_DESCRIPTORS["sampled image"]
        elif opcode == OP_TYPE_SAMPLER:
            kind = OTHER_DESCRIPTORS["sampler"]
        else:
            continue  # not a descriptor (e.g. a UniformConstant of another kind)
        out.bindings[slot] = kind
        count = len(ops) - 1 if opcode == OP_TYPE_STRUCT else 0  # a buffer block's members
        for decoration, marked in ((NON_WRITABLE, out.non_writable), (NON_READABLE, out.non_readable)):
            if decoration in deco or (count and all(decoration in members.get((held, i), {}) for i in range(count))):
                marked.add(slot)
        for name, writes in uses.accesses(var, handles):
            if writes:
                out.writes.setdefault(slot, name)
            else:
                out.reads.add(slot)
    return out


class _Uses:
    """Which instructions read or write memory through a pointer, image or tensor that roots at a variable: the
    access chains, copies, loaded handles and function parameters between them followed back to the variable."""

    def __init__(self) -> None:
        self.derived: dict[int, list[int]] = {}  # id -> ids whose value reaches what it reaches
        self.access: dict[int, list[tuple[int, int]]] = {}  # pointer / handle id -> (opcode, result type or 0)
        self.params: dict[int, list[int]] = {}  # function -> its parameters in order
        self.calls: list[tuple[int, list[int]]] = []  # (function, arguments)
        self.function = 0

    def add(self, opcode: int, ops: memoryview) -> None:
        if opcode == OP_FUNCTION and len(ops) >= 2:
            self.function = ops[1]
        elif opcode == OP_FUNCTION_PARAMETER and len(ops) >= 2:
            self.params.setdefault(self.function, []).append(ops[1])
        elif opcode == OP_FUNCTION_CALL and len(ops) >= 3:
            self.calls.append((ops[2], list(ops[3:])))
        if opcode in DERIVES and len(ops) >= 3:
            first, end = DERIVES[opcode]
            sources = ops[first:end:2] if end is None else ops[first:end]
            for source in sources:
                self.derived.setdefault(source, []).append(ops[1])
        if opcode in ACCESSES:
            at = ACCESSES[opcode][1]
            if at < len(ops):
                self.access.setdefault(ops[at], []).append((opcode, ops[0] if at == 2 else 0))
            if opcode in (63, 64) and len(ops) > 1:  # OpCopyMemory(Sized) also reads its source
                self.access.setdefault(ops[1], []).append((OP_LOAD, 0))

    def accesses(self, var: int, handles: set[int]) -> Iterator[tuple[str, bool]]:
        """(instruction name, writes) of each access to memory `var` reaches; an OpLoad of a handle (`handles`: the
        image / tensor types) is not a read of its memory."""
        for k, args in self.calls:
            for param, arg in zip(self.params.get(k, ()), args):
                self.derived.setdefault(arg, []).append(param)
        self.calls = []
        seen, todo = {var}, [var]
        while todo:
            at = todo.pop()
            for opcode, result_type in self.access.get(at, ()):
                name, _, writes = ACCESSES[opcode]
                if not (opcode == OP_LOAD and result_type in handles):
                    yield name, writes
            for nxt in self.derived.get(at, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)


def check(
    spirv: bytes,
    op: str,
    entry: str,
    layout: dict[tuple[int, int], str],
    push_size: int,
    limits: dict,
    local_size: tuple[int, int, int] | None = None,
    push_source: str = "the payload's push_constants",
) -> list[str]:
    """What is wrong with running `spirv`'s `entry` with descriptors `layout` ((set, binding) -> VK_DESCRIPTOR_TYPE_*
    as the kernel binds them) and `push_size` bytes of push constants on a device with `limits` (DeviceInfo.limits):
    one message per mismatch, [] when it fits. `local_size`: the workgroup size the kernel's group counts were
    computed for (a registered declaration's workgroup_size), which the shader must declare; `push_source` names
    what supplies the push constants in the message."""
    try:
        found = reflect(spirv)
    except ReflectError as err:
        return [f"{op}: cannot read the shader's interface: {err}"]
    problems = []
    if entry not in found.entry_points:
        problems.append(
            f"{op}: entry point {entry!r} is not a GLCompute entry point of the shader "
            f"(it has {', '.join(found.entry_points) or 'none'})"
        )
    size = found.local_size
    if size is None or len(size) != 3:
        problems.append(f"{op}: the shader declares no workgroup size (LocalSize or the WorkgroupSize built-in)")
    elif (
        not all(1 <= n <= m for n, m in zip(size, limits["maxComputeWorkGroupSize"]))
        or size[0] * size[1] * size[2] > limits["maxComputeWorkGroupInvocations"]
    ):
        problems.append(
            f"{op}: workgroup size {list(size)}; this device allows 1 to {limits['maxComputeWorkGroupSize']} per "
            f"dimension and {limits['maxComputeWorkGroupInvocations']} invocations in all"
        )
    elif local_size is not None and tuple(size) != tuple(local_size):
        problems.append(
            f"{op}: the shader's workgroup size is {list(size)} but the declaration says workgroup_size="
            f"{tuple(local_size)} (its group counts are computed for that: use layout(local_size_x = LOCAL_SIZE_X, "
            "...) in the shader, or declare the size it has)"
        )
    for slot, kind in sorted(found.bindings.items()):
        bound = layout.get(slot)
        if bound is None:
            problems.append(
                f"{op}: the shader declares {_short(kind)} at set {slot[0]} binding {slot[1]}, "
                f"which the kernel does not bind (it binds {_slots(layout)})"
            )
        elif bound != kind:
            problems.append(
                f"{op}: set {slot[0]} binding {slot[1]} is {_short(kind)} in the shader but bound as {_short(bound)}"
            )
    if found.push_size > push_size:
        problems.append(
            f"{op}: the shader's push-constant block spans {found.push_size} bytes but the kernel pushes "
            f"{push_size} ({push_source} must cover the whole block)"
        )
    return problems


def check_roles(spirv: bytes, op: str, roles: dict[tuple[int, int], tuple[str, str]]) -> list[str]:
    """What is wrong with `spirv`'s use of its bindings against their declared `roles` ((set, binding) -> ("input" |
    "output", what is bound there), for the bindings a kernel only reads or only writes): one message per binding.
    An input the shader writes changes the kernel's input tensor (and whatever else reads it) instead of its output;
    an output the shader declares NonWritable (readonly) and never writes is never computed. Both are what bindings
    swapped between the declaration and the shader look like. An output the shader also reads, or declares
    writeonly and never reads, is fine. A module reflection cannot read is `check`'s to report."""
    try:
        found = reflect(spirv)
    except ReflectError:
        return []
    problems = []
    for slot, (role, what) in sorted(roles.items()):
        where = f"{what} (set {slot[0]} binding {slot[1]})"
        if role == "input" and slot in found.writes:
            problems.append(
                f"{op}: {where} is declared an input, but the shader writes it ({found.writes[slot]}); are the "
                "input and output bindings swapped?"
            )
        elif role == "output" and slot not in found.writes and slot in found.non_writable:
            problems.append(
                f"{op}: {where} is declared an output, but the shader declares it NonWritable (readonly) and "
                "never writes it; are the input and output bindings swapped?"
            )
    return problems


def _short(kind: str) -> str:
    return kind.removeprefix("VK_DESCRIPTOR_TYPE_").lower().replace("_", " ")


def _slots(layout: dict[tuple[int, int], str]) -> str:
    return ", ".join(f"set {s} binding {b}" for s, b in sorted(layout)) or "nothing"

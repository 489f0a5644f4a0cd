"""What a SPIR-V compute module declares — entry points, descriptor bindings with their types, push-constant block
size, local size — read from the module's words (SPIR-V 1.6 spec, 2.3 "Physical Layout" and 3.x enumerants).

A model's shader is untrusted: a binding, set or descriptor type the pipeline layout does not match, or a push
block larger than what is pushed, reaches vkCreateComputePipelines / the dispatch unchecked and crashes the driver
or reads zeros (issue 15). `check` compares a module with the layout a kernel will bind, before any Vulkan call
(tosa_vk/vulkan/runtime.py); `entry_points` is what payload parsing checks (tosa_vk/custom_payload.py). Plain
Python: no Vulkan needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from vgf import vk_enums

from .errors import ReflectError

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
    out = Interface()
    for opcode, ops in instructions(spirv):
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
    return out


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


def _short(kind: str) -> str:
    return kind.removeprefix("VK_DESCRIPTOR_TYPE_").lower().replace("_", " ")


def _slots(layout: dict[tuple[int, int], str]) -> str:
    return ", ".join(f"set {s} binding {b}" for s, b in sorted(layout)) or "nothing"

"""The `com.arm.VulkanCustomShader` payload: the JSON that ExecuTorch's Arm backend writes into a tosa.CUSTOM node's
implementation_attrs (UTF-8 bytes of `json.dumps(payload, sort_keys=True)`; the VGF format notes, formats/VGF.md of
the project's shared documents).

Keys: entry_point, workgroup_sizes [x, y, z] (the vkCmdDispatch group counts, not the local size),
shader_language "SPIR-V" (shader_code = base64 SPIR-V) | "GLSL" (shader_code = source) | "HLSL" (unsupported),
push_constants "name: size, ..." (bytes), optional is_vkshader; per input / output i: `input_<i>_type` /
`output_<i>_type` (Tensor | Image | Buffer, any case), `_vkformat`, `_vkdescriptortype`, `_binding`,
`_descriptorset`, and `_sampler` {min_filter, mag_filter, address_mode_u, address_mode_v, border_color} for a
sampled image. `parse` checks all of it and says what is wrong; `make` writes one the way ExecuTorch does.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

from ..custom import COMBINED_IMAGE_SAMPLER, STORAGE_BUFFER, STORAGE_IMAGE, TENSOR_ARM, Sampler
from ..errors import TosaError
from .glsl_preprocessor import refusal
from .spirv import entry_points

DOMAIN = "com.arm.VulkanCustomShader"
LANGUAGES = ("SPIR-V", "GLSL", "HLSL")
TYPES = {
    "TENSOR": (TENSOR_ARM, STORAGE_BUFFER),
    "BUFFER": (STORAGE_BUFFER, TENSOR_ARM),
    "IMAGE": (COMBINED_IMAGE_SAMPLER, STORAGE_IMAGE),
}
SAMPLER_FIELDS = ("min_filter", "mag_filter", "address_mode_u", "address_mode_v", "border_color")
RESOURCE_FIELDS = ("type", "vkformat", "vkdescriptortype", "binding", "descriptorset")
SPIRV_MAGIC = 0x07230203
MAX_CODE_CHARS = 16 << 20  # GLSL source or base64 SPIR-V: far above any real kernel


@dataclass(frozen=True)
class Resource:
    """One input / output of the payload."""

    type: str  # Tensor | Image | Buffer (as written)
    descriptor: str  # VK_DESCRIPTOR_TYPE_*
    format: str  # VK_FORMAT_*
    set: int
    binding: int
    sampler: Sampler | None = None


@dataclass(frozen=True)
class Payload:
    entry_point: str
    workgroup_sizes: tuple[int, int, int]
    language: str
    spirv: bytes  # SPIR-V payloads
    glsl: str  # GLSL payloads
    push_constants: tuple[tuple[str, int], ...]
    inputs: tuple[Resource, ...]
    outputs: tuple[Resource, ...]

    @property
    def push_size(self) -> int:
        return sum(size for _, size in self.push_constants)


def parse(attrs: bytes, n_inputs: int, n_outputs: int, where: str) -> Payload:
    """The payload of a VulkanCustomShader node with n_inputs / n_outputs tensors; `where` names the node in
    errors ("CUSTOM #3 'out' (com.arm.VulkanCustomShader::my_op)")."""

    def fail(msg: str) -> TosaError:
        return TosaError(f"{where}: VulkanCustomShader payload: {msg}")

    try:
        data = json.loads(bytes(attrs).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise fail(f"implementation_attrs is not JSON ({err})") from None
    if not isinstance(data, dict):
        raise fail(f"implementation_attrs must be a JSON object, got {type(data).__name__}")
    required = ["entry_point", "workgroup_sizes", "shader_language", "shader_code"]
    for kind, n in (("input", n_inputs), ("output", n_outputs)):
        required += [f"{kind}_{i}_{f}" for i in range(n) for f in RESOURCE_FIELDS]
    missing = [k for k in required if k not in data]
    if missing:
        raise fail(f"missing key(s) {', '.join(missing)}")
    extra = sorted(
        k
        for k in data
        if (m := re.match(r"(input|output)_(\d+)_", k))
        and int(m.group(2)) >= (n_inputs if m.group(1) == "input" else n_outputs)
    )
    if extra:
        raise fail(
            f"key(s) {', '.join(extra)} describe tensors the node does not have "
            f"({n_inputs} input(s), {n_outputs} output(s))"
        )

    language = data["shader_language"]
    if language not in LANGUAGES:
        raise fail(f"shader_language {language!r} is not one of {', '.join(LANGUAGES)}")
    if language == "HLSL":
        raise fail("shader_language HLSL is unsupported (give SPIR-V, or GLSL)")
    code = data["shader_code"]
    if not isinstance(code, str) or not code:
        raise fail("shader_code must be a non-empty string")
    if len(code) > MAX_CODE_CHARS:  # glslc / spirv-val get bounded input as well as bounded time
        raise fail(f"shader_code has {len(code)} characters; a payload shader may have at most {MAX_CODE_CHARS}")
    spirv, glsl = b"", ""
    if language == "SPIR-V":
        try:
            spirv = base64.b64decode(code, validate=True)
        except (binascii.Error, ValueError):
            raise fail("shader_code is not base64 (SPIR-V payloads carry base64 of the module)") from None
        if len(spirv) < 20 or len(spirv) % 4 or int.from_bytes(spirv[:4], "little") != SPIRV_MAGIC:
            raise fail(f"shader_code is not a SPIR-V module ({len(spirv)} bytes, no SPIR-V magic number)")
    else:
        if why := refusal(code):  # model GLSL must not read files of the machine it runs on (also gated at compile)
            raise fail(f"shader_code: {why}")
        glsl = code
    entry = data["entry_point"]
    if not isinstance(entry, str) or not entry:
        raise fail("entry_point must be a non-empty string")
    if spirv and entry not in (found := entry_points(spirv)):
        raise fail(
            f"entry_point {entry!r} is not a GLCompute entry point of the SPIR-V module "
            f"(it has {', '.join(found) or 'none'})"
        )
    if language == "GLSL" and entry != "main":
        raise fail(f"entry_point {entry!r}: a GLSL compute shader's entry point is main")
    groups = data["workgroup_sizes"]
    if (
        not isinstance(groups, list)
        or len(groups) != 3
        or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in groups)
    ):
        raise fail(f"workgroup_sizes must be 3 positive ints (the dispatch group counts), got {groups!r}")

    inputs = tuple(_resource(data, "input", i, fail) for i in range(n_inputs))
    outputs = tuple(_resource(data, "output", i, fail) for i in range(n_outputs))
    seen: dict[tuple[int, int], str] = {}
    for kind, group in (("input", inputs), ("output", outputs)):
        for i, r in enumerate(group):
            slot = (r.set, r.binding)
            if slot in seen:
                raise fail(f"{kind}_{i} and {seen[slot]} both use set {r.set} binding {r.binding}")
            seen[slot] = f"{kind}_{i}"
    return Payload(
        entry,
        tuple(groups),
        language,
        spirv,
        glsl,
        push_constants(data.get("push_constants", ""), fail),
        inputs,
        outputs,
    )


def _resource(data: dict, kind: str, i: int, fail) -> Resource:
    key = f"{kind}_{i}"
    typ, fmt, desc = data[f"{key}_type"], data[f"{key}_vkformat"], data[f"{key}_vkdescriptortype"]
    for field, value in (("type", typ), ("vkformat", fmt), ("vkdescriptortype", desc)):
        if not isinstance(value, str):
            raise fail(f"{key}_{field} must be a string, got {value!r}")
    if typ.upper() not in TYPES:
        raise fail(f"{key}_type {typ!r} is not Tensor, Image or Buffer")
    if desc not in (STORAGE_BUFFER, TENSOR_ARM, COMBINED_IMAGE_SAMPLER, STORAGE_IMAGE):
        raise fail(
            f"{key}_vkdescriptortype {desc!r} is not supported (STORAGE_BUFFER, TENSOR_ARM, "
            f"COMBINED_IMAGE_SAMPLER or STORAGE_IMAGE)"
        )
    if desc not in TYPES[typ.upper()]:
        raise fail(
            f"{key}_type {typ} does not go with {key}_vkdescriptortype {desc} "
            f"(expected one of {', '.join(TYPES[typ.upper()])})"
        )
    if desc == COMBINED_IMAGE_SAMPLER and kind == "output":
        raise fail(f"{key}: a COMBINED_IMAGE_SAMPLER is read-only; an output is a STORAGE_IMAGE or a buffer")
    if not fmt.startswith("VK_FORMAT_"):
        raise fail(f"{key}_vkformat {fmt!r} is not a VkFormat name")
    numbers = []
    for field in ("descriptorset", "binding"):
        v = data[f"{key}_{field}"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise fail(f"{key}_{field} must be a non-negative int, got {v!r}")
        numbers.append(v)
    sampler = None
    if desc == COMBINED_IMAGE_SAMPLER:
        raw = data.get(f"{key}_sampler")
        if raw is None:
            raise fail(f"missing key {key}_sampler (a COMBINED_IMAGE_SAMPLER needs its sampler)")
        if not isinstance(raw, dict):
            raise fail(f"{key}_sampler must be an object with {', '.join(SAMPLER_FIELDS)}")
        missing = [f for f in SAMPLER_FIELDS if f not in raw]
        if missing:
            raise fail(f"{key}_sampler lacks {', '.join(missing)}")
        sampler = Sampler(**{f: str(raw[f]) for f in SAMPLER_FIELDS})
    return Resource(typ, desc, fmt, numbers[0], numbers[1], sampler)


def push_constants(text, fail) -> tuple[tuple[str, int], ...]:
    """ "name: size, name: size" -> ((name, bytes), ...); "" -> ()."""
    if not isinstance(text, str):
        raise fail(f"push_constants must be a string 'name: size, ...', got {text!r}")
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"([A-Za-z_][\w.]*)\s*:\s*(\d+)", part)
        if m is None or int(m.group(2)) == 0:
            raise fail(f"push_constants entry {part!r} is not 'name: size' with a size in bytes > 0")
        out.append((m.group(1), int(m.group(2))))
    if sum(s for _, s in out) % 4:
        raise fail(f"push_constants total {sum(s for _, s in out)} bytes is not a multiple of 4")
    return tuple(out)


def make(
    *,
    entry_point: str = "main",
    workgroup_sizes=(1, 1, 1),
    spirv: bytes | None = None,
    glsl: str | None = None,
    push_constants: str = "",
    inputs=(),
    outputs=(),
    is_vkshader: bool = True,
) -> bytes:
    """implementation_attrs bytes for a VulkanCustomShader node, keyed exactly as ExecuTorch writes them.
    inputs / outputs: dicts with type, vkformat, vkdescriptortype, binding, descriptorset[, sampler]."""
    payload = {
        "entry_point": entry_point,
        "workgroup_sizes": [int(g) for g in workgroup_sizes],
        "is_vkshader": is_vkshader,
        "push_constants": push_constants,
    }
    if spirv is not None:
        payload.update(shader_language="SPIR-V", shader_code=base64.b64encode(spirv).decode("ascii"))
    else:
        payload.update(shader_language="GLSL", shader_code=glsl or "")
    for kind, group in (("input", inputs), ("output", outputs)):
        for i, res in enumerate(group):
            for k, v in res.items():
                payload[f"{kind}_{i}_{k}"] = v
    return json.dumps(payload, sort_keys=True).encode("utf-8")

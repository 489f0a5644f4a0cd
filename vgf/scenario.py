"""A scenario-runner scenario (JSON) for a VGF: one `dispatch_vgf` command binding each model-sequence input /
output to a scenario resource of the kind its MRT entry's descriptor type asks for (scenario-runner checks them):
STORAGE_BUFFER -> `buffer` (size in bytes), TENSOR_ARM -> `tensor` (dims, format), STORAGE_IMAGE /
COMBINED_IMAGE_SAMPLER -> `image` (dims [1, W, H, 1] for a [H, W, C] / [1, H, W, C] resource, the format packing
C; a sampled image carries its sampler settings). Inputs and outputs carry no files (the caller uploads and
downloads them in memory, e.g. tosa_vk/tools/bench/anchors/arm_sdk.py's ArmSdkWorker). Constants need no binding: a
GRAPH segment fills them from the file's constant section (the constant graphs of tosa_vk/formats/vgf_export.py), and
scenario-runner allocates the INTERMEDIATE entries the file's segments pass data through."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import vk_enums
from .container import VGF, Resource

# VkFormat value -> bytes per element
FORMAT_SIZES = {f.value: f.size for f in vk_enums.FORMATS.values()}
COMBINED_IMAGE_SAMPLER, STORAGE_IMAGE, STORAGE_BUFFER, TENSOR_ARM = (
    vk_enums.DESCRIPTOR_TYPES[d]
    for d in (vk_enums.COMBINED_IMAGE_SAMPLER, vk_enums.STORAGE_IMAGE, vk_enums.STORAGE_BUFFER, vk_enums.TENSOR_ARM)
)
IMAGE_DESCRIPTORS = tuple(vk_enums.DESCRIPTOR_TYPES[d] for d in vk_enums.IMAGE_DESCRIPTORS)
# VkFilter / VkSamplerAddressMode / VkBorderColor values -> scenario-runner's own sampler enum names
_FILTERS = {v: name.removeprefix("VK_FILTER_") for name, v in vk_enums.FILTERS.items()}
_ADDRESS = {
    v: name.removeprefix("VK_SAMPLER_ADDRESS_MODE_").replace("CLAMP_TO_", "CLAMP_")  # CLAMP_EDGE
    for name, v in vk_enums.ADDRESS_MODES.items()
}
_BORDERS = {v: name.removeprefix("VK_BORDER_COLOR_") for name, v in vk_enums.BORDER_COLORS.items()}


def resource_bytes(vgf: VGF, mrt_index: int) -> int:
    r = vgf.resources[mrt_index]
    n = 1
    for d in r.shape:
        n *= abs(d)
    return n * FORMAT_SIZES[r.format]


def image_extent(r: Resource) -> tuple[int, int]:
    """(width, height) of an image resource of shape [H, W, C] or [1, H, W, C]."""
    if len(r.shape) not in (3, 4) or (len(r.shape) == 4 and r.shape[0] != 1):
        raise ValueError(f"image resource shape {list(r.shape)} is not [H, W, C] or [1, H, W, C]")
    return int(r.shape[-2]), int(r.shape[-3])


def _resource(vgf: VGF, index: int, uid: str, access: str) -> dict:
    r = vgf.resources[index]
    fmt = vk_enums.FORMAT_NAMES.get(r.format, f"VK_FORMAT_{r.format}")
    if r.descriptor_type == STORAGE_BUFFER:
        return {"buffer": {"uid": uid, "size": resource_bytes(vgf, index), "shader_access": access}}
    if r.descriptor_type == TENSOR_ARM:
        return {
            "tensor": {"uid": uid, "dims": [int(d) for d in r.shape] or [1], "format": fmt, "shader_access": access}
        }
    if r.descriptor_type in IMAGE_DESCRIPTORS:
        w, h = image_extent(r)
        body = {"uid": uid, "format": fmt, "dims": [1, w, h, 1], "shader_access": access}
        if r.descriptor_type == COMBINED_IMAGE_SAMPLER and r.sampler:
            s = r.sampler
            if s["address_mode_u"] != s["address_mode_v"]:
                raise ValueError(f"resource {index}: a scenario image has one border_address_mode; U and V differ")
            body.update(
                min_filter=_FILTERS[s["min_filter"]],
                mag_filter=_FILTERS[s["mag_filter"]],
                border_address_mode=_ADDRESS[s["address_mode_u"]],
                border_color=_BORDERS[s["border_color"]],
            )
        return {"image": body}
    raise ValueError(f"resource {index}: descriptor type {r.descriptor_type} has no scenario resource kind")


def write_scenario(vgf: VGF, vgf_path: str | Path, scenario_path: str | Path) -> tuple[list[str], list[str]]:
    """Writes the scenario; returns the resource uids of the model-sequence inputs and outputs, in order."""
    resources: list[dict] = [{"graph": {"uid": "vgf", "src": str(Path(vgf_path).resolve())}}]
    bindings: list[dict] = []
    ins: list[str] = []
    outs: list[str] = []
    for kind, slots, uids in (("input", vgf.inputs, ins), ("output", vgf.outputs, outs)):
        for i, slot in enumerate(slots):
            uid = f"{kind}_{i}"
            try:
                resources.append(_resource(vgf, slot.mrt_index, uid, "readonly" if kind == "input" else "writeonly"))
            except ValueError as err:
                raise ValueError(f"model {kind} {i}: {err}") from None
            bindings.append({"set": 0, "id": slot.binding, "resource_ref": uid})
            uids.append(uid)
    scenario = {"resources": resources, "commands": [{"dispatch_vgf": {"graph_ref": "vgf", "bindings": bindings}}]}
    Path(scenario_path).write_text(json.dumps(scenario, indent=1))
    return ins, outs


def upload_array(vgf: VGF, mrt_index: int, data) -> np.ndarray:
    """`data` (a tensor's values) as scenario-runner uploads it into the resource bound to `mrt_index`: raw bytes for
    a buffer, the array itself for a tensor, texels (one packed void element each) of shape [1, W, H, 1] holding the
    row-major H x W texels for an image."""
    r = vgf.resources[mrt_index]
    a = np.ascontiguousarray(data)
    if r.descriptor_type in IMAGE_DESCRIPTORS:
        w, h = image_extent(r)
        return (
            a.view(np.uint8)
            .view(np.dtype((np.void, FORMAT_SIZES.get(r.format, 0) or a.nbytes // (w * h))))
            .reshape(1, w, h, 1)
        )
    if r.descriptor_type == TENSOR_ARM:
        return a.reshape(tuple(r.shape) or (1,))
    return a.view(np.uint8).reshape(-1)


def downloaded_array(data, dtype, shape) -> np.ndarray:
    """A scenario-runner download (bytes of a buffer, a tensor, or packed texels) as `dtype` values of `shape`."""
    return np.ascontiguousarray(data).view(np.uint8).reshape(-1).view(dtype).reshape(shape)

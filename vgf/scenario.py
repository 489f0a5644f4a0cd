"""A scenario-runner scenario (JSON) for a VGF whose segments bind buffers: one `dispatch_vgf` command binding
each model-sequence input / output to a buffer resource. Inputs and outputs carry no files (the caller uploads
and downloads them in memory, e.g. benchmarks/anchors/arm_sdk.py's ArmSdkWorker)."""
from __future__ import annotations

import json
from pathlib import Path

from .container import VGF

# VkFormat value -> bytes per element (the formats tosa_vk writes, plus the common unsigned / packed ones)
FORMAT_SIZES = {13: 1, 14: 1, 74: 2, 75: 2, 76: 2, 98: 4, 99: 4, 100: 4, 103: 8, 109: 16, 110: 8, 111: 8, 112: 8,
                1000460000: 1, 1000460001: 2, 1000460002: 1, 1000460003: 1}
STORAGE_BUFFER = 7


def resource_bytes(vgf: VGF, mrt_index: int) -> int:
    r = vgf.resources[mrt_index]
    n = 1
    for d in r.shape:
        n *= abs(d)
    return n * FORMAT_SIZES[r.format]


def write_scenario(vgf: VGF, vgf_path: str | Path, scenario_path: str | Path) -> tuple[list[str], list[str]]:
    """Writes the scenario; returns the resource uids of the model-sequence inputs and outputs, in order."""
    resources: list[dict] = [{"graph": {"uid": "vgf", "src": str(Path(vgf_path).resolve())}}]
    bindings, ins, outs = [], [], []
    for kind, slots, uids in (("input", vgf.inputs, ins), ("output", vgf.outputs, outs)):
        for i, slot in enumerate(slots):
            r = vgf.resources[slot.mrt_index]
            if r.descriptor_type != STORAGE_BUFFER:
                raise ValueError(f"model {kind} {i}: descriptor type {r.descriptor_type} (only storage buffers "
                                 f"are written into scenarios here)")
            uid = f"{kind}_{i}"
            resources.append({"buffer": {"uid": uid, "size": resource_bytes(vgf, slot.mrt_index),
                                         "shader_access": "readonly" if kind == "input" else "writeonly"}})
            bindings.append({"set": 0, "id": slot.binding, "resource_ref": uid})
            uids.append(uid)
    scenario = {"resources": resources, "commands": [{"dispatch_vgf": {"graph_ref": "vgf", "bindings": bindings}}]}
    Path(scenario_path).write_text(json.dumps(scenario, indent=1))
    return ins, outs

"""A readable view of a VGF container (`tosa-vk inspect model.vgf`)."""

from __future__ import annotations

from .container import VGF
from .vk_enums import DESCRIPTOR_NAMES, FORMAT_NAMES, short

# value -> the short names tools print ("STORAGE_BUFFER", "R32_SFLOAT")
DESCRIPTORS = {v: short(name) for v, name in DESCRIPTOR_NAMES.items()}
FORMATS = {v: short(name) for v, name in FORMAT_NAMES.items()}


def _descriptor(value: int | None) -> str | int | None:
    """A descriptor type's short name (the value itself when unknown; None for a plain constant)."""
    return None if value is None else DESCRIPTORS.get(value, value)


def _slots(slots) -> str:
    return ", ".join(f"{b.binding}->mrt{b.mrt_index}" for b in slots) or "-"


def summary(vgf: VGF) -> dict:
    """The container as plain JSON-able data (module code by size, constants by size)."""
    return {
        "version": ".".join(map(str, vgf.version)),
        "modules": [
            {
                "name": m.name,
                "type": m.type,
                "entry_point": m.entry_point,
                "language": m.language,
                "code_bytes": len(m.code or b""),
            }
            for m in vgf.modules
        ],
        "segments": [
            {
                "name": s.name,
                "type": s.type,
                "module": s.module_index,
                "sets": [
                    {"set": s.set_index(i), "bindings": [[b.binding, b.mrt_index] for b in d.bindings]}
                    for i, d in enumerate(s.set_infos)
                ],
                "inputs": [[b.binding, b.mrt_index] for b in s.inputs],
                "outputs": [[b.binding, b.mrt_index] for b in s.outputs],
                "dispatch_shape": list(s.dispatch_shape),
                "push_constant_ranges": [[p.stage_flags, p.offset, p.size] for p in s.push_constant_ranges],
                "constants": s.constants,
            }
            for s in vgf.segments
        ],
        "resources": [
            {
                "category": r.category,
                "descriptor": _descriptor(r.descriptor_type),
                "format": FORMATS.get(r.format, r.format),
                "shape": list(r.shape),
                "strides": list(r.strides),
                "alias_group": r.alias_group,
            }
            for r in vgf.resources
        ],
        "constants": [
            {"mrt_index": c.mrt_index, "bytes": len(c.data), "sparsity_dim": c.sparsity_dim} for c in vgf.constants
        ],
        "inputs": [
            {"name": n, "binding": b.binding, "mrt_index": b.mrt_index}
            for b, n in zip(vgf.inputs, vgf.input_names or [""] * len(vgf.inputs))
        ],
        "outputs": [
            {"name": n, "binding": b.binding, "mrt_index": b.mrt_index}
            for b, n in zip(vgf.outputs, vgf.output_names or [""] * len(vgf.outputs))
        ],
    }


def describe(vgf: VGF, file: str = "") -> str:
    lines = [
        f"{file}: VGF {'.'.join(map(str, vgf.version))}, {len(vgf.modules)} modules, {len(vgf.segments)} "
        f"segments, {len(vgf.resources)} resources, {len(vgf.constants)} constants"
    ]
    for kind, slots, names in (("input", vgf.inputs, vgf.input_names), ("output", vgf.outputs, vgf.output_names)):
        for i, b in enumerate(slots):
            name = names[i] if i < len(names) else ""
            lines.append(f"  {kind:<6} {name!r} binding {b.binding} -> mrt{b.mrt_index}")
    lines.append("  modules:")
    for i, m in enumerate(vgf.modules):
        lines.append(
            f"    #{i} {m.name} {m.type} entry '{m.entry_point}' {m.language or 'no code'} {len(m.code or b'')} bytes"
        )
    lines.append("  segments:")
    for i, s in enumerate(vgf.segments):
        sets = "; ".join(f"set {s.set_index(j)}: {_slots(d.bindings)}" for j, d in enumerate(s.set_infos))
        push = ", ".join(f"{p.offset}+{p.size}" for p in s.push_constant_ranges)
        lines.append(
            f"    #{i} {s.name} {s.type} module {s.module_index} dispatch {list(s.dispatch_shape)} [{sets}] "
            f"in [{_slots(s.inputs)}] out [{_slots(s.outputs)}]" + (f" push {push}" if push else "")
        )
    lines.append("  resources:")
    for i, r in enumerate(vgf.resources):
        desc = str(_descriptor(r.descriptor_type) or "none")
        alias = f" alias {r.alias_group}" if r.alias_group is not None else ""
        lines.append(f"    mrt{i} {r.category:<12} {desc:<16} {FORMATS.get(r.format, r.format)} {list(r.shape)}{alias}")
    for i, c in enumerate(vgf.constants):
        lines.append(f"  constant #{i} -> mrt{c.mrt_index}: {len(c.data)} bytes")
    return "\n".join(lines)

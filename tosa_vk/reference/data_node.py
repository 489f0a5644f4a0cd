"""Data nodes (spec 2.13): IDENTITY. CONST and CONST_SHAPE are read from the graph by the executor."""

from __future__ import annotations

from .registry import Call, ScaledArray, reference


@reference("IDENTITY")
def IDENTITY(call: Call):
    scale = call.scales[0] if call.scales else None
    return call.inputs[0].copy() if scale is None else ScaledArray(call.inputs[0].copy(), scale.copy())

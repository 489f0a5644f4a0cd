"""Data nodes (spec 2.13): IDENTITY. CONST and CONST_SHAPE are read from the graph by the executor."""

from __future__ import annotations

from .registry import Call, reference


@reference("IDENTITY")
def IDENTITY(call: Call):
    return call.inputs[0].copy()

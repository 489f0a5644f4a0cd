"""The custom-operator registry: declarations of tosa.CUSTOM operators keyed by (domain_name, operator_name).

It holds declarations only (the backends read it, it imports none of them). For now a declaration carries the numpy
implementation the reference backend runs; shader declarations for the Vulkan backend extend it.

    @tosa_vk.custom_op("com.example", "scale2")
    def scale2(inputs, implementation_attrs):   # list of numpy arrays, the raw attribute bytes
        return [inputs[0] * 2]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

Reference = Callable[[list[np.ndarray], bytes], list[np.ndarray]]


@dataclass(frozen=True)
class CustomOp:
    domain: str
    name: str
    reference: Reference | None = None


REGISTRY: dict[tuple[str, str], CustomOp] = {}


def register(op: CustomOp) -> CustomOp:
    REGISTRY[(op.domain, op.name)] = op
    return op


def custom_op(domain: str, name: str):
    """Decorator: registers a numpy implementation of CUSTOM operator `domain`::`name`."""
    def wrap(fn: Reference) -> Reference:
        register(CustomOp(domain, name, fn))
        return fn
    return wrap


def lookup(domain: str, name: str) -> CustomOp | None:
    return REGISTRY.get((domain, name))

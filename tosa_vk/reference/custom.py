"""CUSTOM (spec 2.14): runs the numpy implementation registered for (domain_name, operator_name).

A `com.arm.VulkanCustomShader` node carries its shader, not a numpy implementation: the reference backend runs it
only when a numpy twin is registered under that domain and operator name (its payload is still checked).
"""

from __future__ import annotations

import numpy as np

from .. import custom
from ..abi import custom_payload
from ..errors import TosaError
from .registry import Call, reference


@reference("CUSTOM")
def CUSTOM(call: Call):
    domain, name = call.attr("domain_name", ""), call.attr("operator_name", "")
    attrs = custom.attrs_bytes(call.attr("implementation_attrs", b""))
    op = custom.lookup(domain, name)
    if domain == custom_payload.DOMAIN:
        custom_payload.parse(attrs, len(call.inputs), len(call.out_types), f"CUSTOM ({domain}::{name})")
        if op is None or op.reference is None:
            raise TosaError(
                f"custom operator {domain}::{name} has no numpy implementation: a VulkanCustomShader "
                f"payload runs on the Vulkan backend only (register a numpy twin with "
                f"tosa_vk.custom_op({domain!r}, {name!r}) to run it on the reference backend)"
            )
    elif op is None or op.reference is None:
        what = "has no numpy implementation" if op is not None else "is not registered"
        raise TosaError(
            f"custom operator {domain}::{name} {what} ({custom.REGISTER_HINT}; registered: {custom.known()})"
        )
    returned = op.reference(list(call.inputs), attrs)
    # one array is the one output (a list of them for several): not a sequence of its rows
    outputs = [returned] if isinstance(returned, (np.ndarray, np.generic)) else list(returned)
    if len(outputs) != len(call.out_types):
        raise TosaError(
            f"custom operator {domain}::{name}: the numpy implementation returned {len(outputs)} "
            f"output(s), the node has {len(call.out_types)}"
        )
    result = []
    for i, (value, dtype, shape) in enumerate(zip(outputs, call.out_types, call.out_shapes)):
        value = np.asarray(value)
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise TosaError(
                f"custom operator {domain}::{name}: the numpy implementation's output {i} has shape "
                f"{list(value.shape)}, the node declares {list(shape)}"
            )
        result.append(value.astype(dtype.numpy, copy=False))
    return result

"""CUSTOM (spec 2.14.x): runs the numpy implementation registered for (domain_name, operator_name)."""
from __future__ import annotations

from .. import custom
from ..errors import TosaError
from .registry import Call, reference


@reference("CUSTOM")
def CUSTOM(call: Call):
    domain, name = call.attr("domain_name", ""), call.attr("operator_name", "")
    op = custom.lookup(domain, name)
    if op is None or op.reference is None:
        known = ", ".join(f"{d}::{n}" for d, n in sorted(custom.REGISTRY)) or "none"
        raise TosaError(f"no implementation registered for custom operator {domain}::{name} "
                        f"(register one with tosa_vk.custom_op; registered: {known})")
    outputs = op.reference(list(call.inputs), call.attr("implementation_attrs", b""))
    return list(outputs)

"""Control flow (spec 2.15, EXT-CONTROLFLOW): COND_IF and WHILE_LOOP run their regions through Call.run_region."""

from __future__ import annotations

import numpy as np

from ..errors import TosaError
from .registry import Call, reference


@reference("COND_IF")
def COND_IF(call: Call):
    run_region = call.run_region
    assert run_region is not None, "the executor gives control-flow operators a run_region"
    condition, *inputs = call.inputs
    call.error_if(np.size(condition) != 1, "tensor_size(shape) != 1")
    region = call.attr("then_graph") if bool(np.reshape(condition, -1)[0]) else call.attr("else_graph")
    return run_region(region, inputs)


@reference("WHILE_LOOP")
def WHILE_LOOP(call: Call):
    run_region = call.run_region
    assert run_region is not None, "the executor gives control-flow operators a run_region"
    values = list(call.inputs)
    cap = call.extra.get("max_iterations", 1_000_000)
    for done in range(cap + 1):  # a loop of exactly `cap` iterations finishes (as on Vulkan); one more raises
        (condition,) = run_region(call.attr("cond_graph"), values)
        if not bool(np.reshape(condition, -1)[0]):
            return values
        if done == cap:
            break
        values = run_region(call.attr("body_graph"), values)
    raise TosaError(f"WHILE_LOOP did not finish within {cap} iterations (the session's max_iterations)")

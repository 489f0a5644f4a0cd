"""Epilogues (tosa_vk/fuse.py): the per-element operators a kernel applies to each result before its store, as
the EPILOGUE(v, c) define of shaders/include/epilogue.glsl (v: the result's compute value, c: its output channel).

RESCALE reuses the standalone kernel's defines (tosa_vk/lower/type_conversion.py) with an EP_ prefix and binds its
multiplier and shift; CLAMP becomes an expression with its bounds as literals."""

from __future__ import annotations

import numpy as np

from ..ir.dtype import DType
from ..ir.graph import NanPropagationMode
from . import LowerCtx
from .type_conversion import rescale_defines

FLOATS = (DType.FP32, DType.FP16, DType.BF16)


def epilogue_defines(ctx: LowerCtx, bindings: dict[str, str]) -> dict[str, str] | None:
    """The defines of ctx.epilogue, adding the bindings it reads to `bindings` (in binding order: call it when
    `bindings` holds everything bound before them); {} without an epilogue, None when a step is not supported."""
    if not ctx.epilogue:
        return {}
    defines: dict[str, str] = {}
    expr = "(v)"
    for k, (_, op) in enumerate(ctx.epilogue):
        value = ctx.block.tensors[op.inputs[0]]
        out = ctx.block.tensors[op.outputs[0]]
        if op.op == "RESCALE":
            if k or value.dtype != DType.INT32 or not ctx.target.has("shaderInt64"):
                return None
            izp, ozp = (ctx.block.tensors[n].data for n in op.inputs[3:5])
            if izp is None or ozp is None:
                return None
            ozp_value = int(np.asarray(ozp).reshape(-1)[0])
            if op.attrs.get("output_unsigned"):
                ozp_value &= (1 << out.dtype.bits) - 1  # zero_extend of an unsigned output's zero point
            defines.update({f"EP_{name}": v for name, v in rescale_defines(op, value.dtype, out.dtype).items()})
            defines.pop("EP_IN_MASK", None)  # (an int32 input is never unsigned)
            defines.update(EP_RESCALE="1", EP_IZP=str(int(np.asarray(izp).reshape(-1)[0])), EP_OZP=str(ozp_value))
            if op.attrs.get("per_channel"):
                defines["EP_PER_CHANNEL"] = "1"
            for name, tensor in (("EM", op.inputs[1]), ("ES", op.inputs[2])):
                defines[f"EP_{name[1]}_AT"] = str(len(bindings))
                bindings[name] = tensor
            expr = f"(ep_rescale(int64_t{expr}, c))"
        elif op.op == "CLAMP":
            lo, hi = op.attrs.get("min_val"), op.attrs.get("max_val")
            if value.dtype in FLOATS:
                mode = op.attrs.get("nan_mode") or NanPropagationMode.PROPAGATE
                rule = "ignore" if mode == NanPropagationMode.IGNORE else "propagate"
                lo_s, hi_s = (_float_literal(v) for v in (lo, hi))
                expr = f"(min_{rule}(max_{rule}(float{expr}, {lo_s}), {hi_s}))"
            elif value.dtype in (DType.INT8, DType.INT16):
                lo_i, hi_i = (int(np.asarray(v).reshape(-1)[0]) for v in (lo, hi))
                expr = f"(clamp(int{expr}, {lo_i}, {hi_i}))"
            else:
                return None
        else:
            return None
    defines["EPILOGUE(v, c)"] = expr
    return defines


def _float_literal(v) -> str:
    """An fp32 value exactly (CLAMP's bounds are values of its fp16 / bf16 / fp32 type: exact in fp32)."""
    bits = int(np.asarray(np.asarray(v).astype(np.float32)).reshape(-1)[0].view(np.uint32))
    return f"uintBitsToFloat({bits:#010x}u)"

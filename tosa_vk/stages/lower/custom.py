"""CUSTOM (spec 2.14): a Kernel from a registered shader declaration (tosa_vk/custom.py) or from a
`com.arm.VulkanCustomShader` payload (tosa_vk/abi/custom_payload.py).

Every binding is checked against the custom-operator contract (tosa_vk/stages/plan/resources.py): buffers and tensors
are scalar with channels in the shape, images pack C in {1, 2, 4} fp32 channels into the format. A registered operator
without a shader returns None (its numpy implementation runs on the host).
"""

from __future__ import annotations

import math

import numpy as np

from ... import custom
from ...abi import custom_payload
from ...errors import TosaError
from ...program import Image, Kernel
from ..plan import resources
from .context import LowerCtx, lowering


@lowering("CUSTOM")
def CUSTOM(ctx: LowerCtx) -> list[Kernel] | None:
    domain, name = ctx.attr("domain_name", ""), ctx.attr("operator_name", "")
    attrs = custom.attrs_bytes(ctx.attr("implementation_attrs", b""))
    where = f"{ctx.label} ({domain}::{name})"
    if domain == custom_payload.DOMAIN:
        return [_from_payload(ctx, where, attrs)]
    op = custom.lookup(domain, name)
    if op is None:
        raise TosaError(
            f"{where}: unknown custom operator {domain}::{name}: no declaration is registered for domain "
            f"{domain!r} ({custom.REGISTER_HINT}; or use domain {custom_payload.DOMAIN} with a shader payload; "
            f"registered: {custom.known()})"
        )
    if op.shader is None:
        return None
    return [_from_declaration(ctx, where, op, op.shader, attrs)]


def _from_payload(ctx: LowerCtx, where: str, attrs: bytes) -> Kernel:
    p = custom_payload.parse(attrs, len(ctx.inputs), len(ctx.outputs), where)
    decls = [custom.Binding(r.descriptor, r.binding, r.set, r.format, r.sampler) for r in (*p.inputs, *p.outputs)]
    return _kernel(
        ctx,
        where,
        decls,
        groups=p.workgroup_sizes,
        push=bytes(p.push_size),
        source=p.glsl,
        spirv=p.spirv,
        entry=p.entry_point,
        defines=(),
    )


def _from_declaration(ctx: LowerCtx, where: str, op: custom.CustomOp, s: custom.Shader, attrs: bytes) -> Kernel:
    n_in, n_out = len(ctx.inputs), len(ctx.outputs)
    if (len(s.inputs), len(s.outputs)) != (n_in, n_out):
        raise TosaError(
            f"{where}: binding mismatch: the declaration binds {len(s.inputs)} input(s) and "
            f"{len(s.outputs)} output(s), the node has {n_in} and {n_out}"
        )
    shapes = custom.Shapes(
        tuple(t.shape for t in ctx.inputs),
        tuple(t.shape for t in ctx.outputs),
        tuple(t.dtype.name.lower() for t in ctx.inputs),
        tuple(t.dtype.name.lower() for t in ctx.outputs),
        attrs,
    )
    if op.infer is not None:
        want = op.inferred(shapes, where)
        have = list(zip(shapes.outputs, shapes.output_dtypes))
        if want != have:
            raise TosaError(f"{where}: the node's outputs {have} differ from what the declaration infers {want}")
    try:
        if s.dispatch is not None:
            groups = s.dispatch(shapes) if callable(s.dispatch) else s.dispatch
        else:
            assert s.grid is not None, "custom_op takes exactly one of grid= and dispatch="
            grid = s.grid(shapes) if callable(s.grid) else s.grid
            groups = [max(1, math.ceil(int(g) / w)) for g, w in zip(grid, s.workgroup_size)]
        push = s.push_constants(shapes) if callable(s.push_constants) else s.push_constants
        if not isinstance(push, (bytes, bytearray, memoryview, np.ndarray)):
            raise TypeError(f"push_constants must give bytes (or a numpy array), got {type(push).__name__}")
        push = bytes(np.ascontiguousarray(push).view(np.uint8)) if isinstance(push, np.ndarray) else bytes(push)
    except TosaError:
        raise
    except Exception as err:  # a user's rule failed: say whose
        raise TosaError(
            f"{where}: the declaration's dispatch / push-constant rule failed: {type(err).__name__}: {err}"
        ) from None
    groups = tuple(int(g) for g in groups)
    if len(groups) != 3 or min(groups) < 1:
        raise TosaError(f"{where}: the dispatch rule gave {list(groups)}; want 3 positive group counts")
    if len(push) % 4:
        raise TosaError(f"{where}: push constants must be a multiple of 4 bytes, got {len(push)}")
    wg = s.workgroup_size
    defines = (("LOCAL_SIZE_X", str(wg[0])), ("LOCAL_SIZE_Y", str(wg[1])), ("LOCAL_SIZE_Z", str(wg[2])), *s.defines)
    return _kernel(
        ctx,
        where,
        [*s.inputs, *s.outputs],
        groups=groups,
        push=push,
        source=s.source,
        spirv=b"",
        entry="main",
        defines=defines,
        origin=s.origin,
    )


def _kernel(
    ctx: LowerCtx,
    where: str,
    decls: list[custom.Binding],
    groups,
    push: bytes,
    source: str,
    spirv: bytes,
    entry: str,
    defines,
    origin: str = "",
) -> Kernel:
    tensors = [*ctx.inputs, *ctx.outputs]
    n_in = len(ctx.inputs)
    slots: list[tuple[int, int]] = []
    descriptors: list[str] = []
    images: list[Image | None] = []
    seen: dict[tuple[int, int], str] = {}
    for i, (t, b) in enumerate(zip(tensors, decls)):
        role = f"input {i}" if i < n_in else f"output {i - n_in}"
        if b.descriptor == custom.COMBINED_IMAGE_SAMPLER and i >= n_in:
            raise TosaError(
                f"{where}: {role} '{t.name}': a COMBINED_IMAGE_SAMPLER is read-only; outputs use a "
                f"STORAGE_IMAGE or a buffer"
            )
        if (b.set, b.binding) in seen:
            raise TosaError(
                f"{where}: binding mismatch: {role} and {seen[(b.set, b.binding)]} both use set "
                f"{b.set} binding {b.binding}"
            )
        seen[(b.set, b.binding)] = role
        try:
            r = resources.resource(t.name, t.shape, t.dtype, b.descriptor, b.format)
        except TosaError as err:
            raise TosaError(f"{where}: {role}: {err.rule}") from None
        slots.append((b.set, b.binding))
        descriptors.append(b.descriptor)
        extent = r.image_extent
        if extent is not None:
            w, h = extent
            images.append(Image(r.format, w, h, b.sampler.items() if b.sampler else ()))
        else:
            images.append(None)
    names = tuple(ctx.q(t.name) for t in tensors)
    label = origin or f"{ctx.attr('domain_name', '')}::{ctx.attr('operator_name', '')}"
    return Kernel(
        where,
        f"custom:{label}",
        tuple(defines),
        names,
        push,
        tuple(groups),
        reads=names[:n_in],
        writes=names[n_in:],
        source=source,
        spirv=spirv,
        entry=entry,
        slots=tuple(slots),
        descriptors=tuple(descriptors),
        images=tuple(images),
    )

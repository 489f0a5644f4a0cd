"""tosa_vk.compile(graph, target) -> Program: the compile pipeline, one stage after another.

    validate   the spec's structural, type, shape and level rules (tosa_vk/ir/validate.py)
    passes     graph rewrites that keep every result: block-scaled tensors as elements + scales, permutes around
               NHWC custom ops, back-to-back TRANSPOSEs merged, constants over the target's maxStorageBufferRange
               split (tosa_vk/stages/passes/)
    partition  every operator placed on Vulkan or the host, with the reason (tosa_vk/stages/partition.py)
    fuse       which operators one kernel does together: epilogues after convolutions, element-wise groups
               (tosa_vk/stages/fuse.py), each kept only where the lowering's can_fuse / can_group accepts it
    lower      operators -> kernels and host steps over program-wide tensor names (tosa_vk/stages/lower/)
    plan       live ranges, arena offsets, descriptors and formats -> the Program (tosa_vk/stages/plan/)

The Program is plain data (tosa_vk/program.py): the Vulkan runtime runs it, VGF export writes it, and
Program.to_bytes() stores it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from .. import device_class
from ..ir.graph import Graph
from ..ir.validate import validate
from ..program import Kernel, Program
from ..target import Target, named
from . import fuse as fuse_stage
from . import fuse_enabled, host_rules, passes
from .lower import Answers, lower, texels
from .partition import partition as place
from .plan import plan
from .records import Fusion


def compile(
    graph: Graph,
    target: Target | str = "lavapipe",
    *,
    strict: bool = False,
    host_ops: str | Iterable[str] = (),
    partition: str | Path | None = None,
    layouts: dict[str, str] | str | None = None,
    alignment: int | None = None,
    fuse: bool | None = None,
    views: bool = True,
    file: str | None = None,
    kernels: Callable[[Kernel], bool] | None = None,
) -> Program:
    """Compiles `graph` for `target` (a Target, e.g. Device.target, or a named one: tosa_vk.target.NAMED).

        strict: an operator without a Vulkan kernel is an error instead of a host step. host_ops: rules for the
        operators to run on the host, each an operator name (any case), an output tensor name or an NNAdapter rule
        "OP:in,...:out,..." (tosa_vk/stages/host_rules.py); partition: a file of such rules, one per line. A rule that
        matches no operator is an error. layouts: the tensors the graph holds as NCHW ({name: "NCHW"}, or
        "NCHW" for every 4-D tensor) — permutes are inserted around custom ops whose shader wants NHWC. alignment:
        overrides the target's tensor alignment in the arena. fuse: False keeps one kernel per operator (default: on,
    unless TOSA_VK_FUSE=0); views: False copies contiguous SLICE / CONCAT data with kernels instead of sharing
    memory and reads every input from its storage buffer, not through texel-buffer views (VGF export: its resources
    are whole storage buffers). kernels: whether a fused kernel may be used — without glslc, only shipped ones
    (tosa_vk/vulkan/builtin.py): a fusion it refuses runs as separate kernels, and every operator takes the register
    kernels (tosa_vk/device_class.py), the family every class ships. The caller's graph is never changed."""
    target = named(target) if isinstance(target, str) else target
    if not views:
        target = texels.without(target)
    if kernels is not None:
        # no GLSL compiler: only shipped kernels exist, and the GPU classes' families are not shipped
        target = target.with_class(disabled=target.disabled | frozenset(device_class.FEATURES))
    validate(graph, file=file)
    rules = host_rules.collect(host_ops, partition)  # the file read (and every rule parsed) before the passes run
    alignment = alignment or target.alignment
    limit = target.max_storage_buffer_range
    graph = passes.run(graph, layouts, batch=fuse_enabled(fuse), file=file, limit=limit, alignment=alignment)
    placed = place(graph, target, strict=strict, host_ops=rules)
    fusion, answers = Fusion(), Answers(target, kernels)
    if fuse_enabled(fuse):  # each fusion decided by the lowering's answer, kept for the lower stage to take
        fusion = fuse_stage.fuse(graph, placed, alignment if views else None, answers.can_fuse, answers.can_group)
    elif views:  # (pieces of a tensor past the buffer range are views even so)
        fusion = fuse_stage.pinned_views(graph, placed, alignment)
    lowered = lower(graph, target, placed, fusion, answers)
    return plan(lowered, target, alignment)

"""What the compiler may assume about a Vulkan device: its limits, optional features and driver quirks.

A Target is plain data. `tosa_vk.vulkan.Device.target` queries one from a real device; `named()` gives the ones
kept for offline use (`tosa-vk plan --target lavapipe`). The lowering reads every device number from here, never
from a constant of its own, so a program compiled for a target runs on any device that offers at least as much.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import device_class as classes
from .errors import TosaError

# Optional device features the kernels use (tosa_vk/vulkan/device.py enables the ones a device has).
FEATURES = (
    "shaderInt64",
    "shaderInt16",
    "shaderInt8",
    "shaderFloat16",
    "shaderFloat64",
    "storageBuffer8BitAccess",
    "storageBuffer16BitAccess",
    "conditionalRendering",
    "shaderIntegerDotProduct",
    "cooperativeMatrix",
)
# device facts that are properties, not features to enable: compute-stage subgroup arithmetic
PROPERTIES = ("subgroupArithmetic",)

# Mesa's lavapipe silently ends an invocation's loops after 65,535 iterations in total: kernels keep every loop
# under this budget (with a margin for the loops around the inner one).
LAVAPIPE_LOOP_BUDGET = 60_000
# Drivers not measured yet (no GPU in this project's CI) keep the same budget: a larger one changes how kernels split
# their loops, which wants a measurement on that driver first. for_driver() is where a measured driver gets its own.
DEFAULT_LOOP_BUDGET = LAVAPIPE_LOOP_BUDGET
# Mesa's llvmpipe (lavapipe) keys each compiled shader on bits 8..15 of every texel-buffer view's byte size (the
# size shares a union with the mip-level range it reads as "level zero only"), so a pipeline compiles again for
# every new pattern of them, ~250 ms of LLVM each: the runtime rounds such views up to this many bytes (bits clear).
TEXEL_VIEW_QUANTUM = 1 << 16
# Mesa's llvmpipe (lavapipe) hands every dispatch's workgroups to its compute thread pool (LP_NUM_THREADS, one per
# core) and waits for them: a wake-up of each worker and of the queue thread per dispatch, 20-300 us on 2 loaded
# cores, more than a small kernel's work. A program whose kernels write at most this many elements per run in all
# runs on a device opened with the pool off (the queue thread runs every workgroup). Alternated in one process, load
# 7 (inline / pool): lstm_unrolled_fp32 (1.2 k elements) 0.29, gru_fp32 (1.6 k) 0.19, lstm_int8 (2 k) 0.11,
# transformer_fp32 (45 k) 0.52-0.71, transformer_int8 (41 k) 1.0; kept on the pool, whose cores pay off on heavy
# kernels of a quiet machine (under load rounds disagreed): resnet_int8 (69 k) 0.88-3.4, resnet_fp32 (166 k)
# 0.52-0.89, mobilenetv2_fp32 (367 k) 0.94-3.5. The count, not workgroups: resnets average fewer a dispatch.
INLINE_ELEMENTS = 56 * 1024


@dataclass(frozen=True)
class Target:
    name: str
    features: frozenset[str] = frozenset()
    max_workgroup_count: tuple[int, int, int] = (65535, 65535, 65535)
    max_workgroup_invocations: int = 128
    max_storage_buffer_range: int = 1 << 27
    min_storage_buffer_offset_alignment: int = 256
    max_push_constants_size: int = 128
    subgroup_size: int = 1
    # uniform texel buffers (kernels read their larger inputs through them, see lower/texels.py); 0 elements: none
    max_texel_buffer_elements: int = 65536
    min_texel_buffer_offset_alignment: int = 256
    loop_budget: int = DEFAULT_LOOP_BUDGET  # loop iterations one invocation may run in total
    driver: str = ""  # driver name and version, for caches and reports
    device_uuid: str = ""  # "" for a named (offline) target
    quirks: tuple[str, ...] = field(default=())
    max_shared_memory: int = 16384  # bytes of shared memory a workgroup may use
    device_class: str = "generic"  # tosa_vk/device_class.py: which kernel family each operator takes
    disabled: frozenset[str] = frozenset()  # kernel features switched off (TOSA_VK_DISABLE)
    # (M, N, K) shapes of VK_KHR_cooperative_matrix products the device offers, per (A/B type, accumulator type)
    coopmat_shapes: tuple[tuple[str, str, int, int, int], ...] = ()

    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def klass(self) -> classes.DeviceClass:
        return classes.get(self.device_class)

    def uses(self, feature: str) -> bool:
        """Whether kernels may use the kernel feature (device_class.FEATURES): the class allows it, the device
        has what it needs and TOSA_VK_DISABLE leaves it on."""
        return (
            feature in self.klass.uses
            and feature not in self.disabled
            and all(self.has(f) for f in classes.FEATURE_NEEDS[feature])
        )

    def family(self, operator: str) -> str:
        """The kernel family `operator` (device_class.OPERATORS) takes here: the class's first preference whose
        features this target has, else "register"."""
        for fam in self.klass.families.get(operator, ()):
            if all(self.uses(f) for f in classes.FAMILY_NEEDS[fam]):
                return fam
        return "register"

    def with_class(self, name: str | None = None, disabled: frozenset[str] | None = None) -> Target:
        """This device's facts with another class (a name of device_class.CLASSES; None: keep) and the features
        switched off."""
        changes: dict = {}
        if name is not None:
            changes["device_class"] = classes.get(name).name
        if disabled is not None:
            changes["disabled"] = frozenset(disabled)
        return replace(self, **changes) if changes else self

    @property
    def texel_view_quantum(self) -> int:
        """Byte multiple texel-buffer views of 256 bytes and more are rounded up to (1: exact sizes)."""
        return TEXEL_VIEW_QUANTUM if "texel_view_quantum" in self.quirks else 1

    @property
    def inline_elements(self) -> int:
        """Elements a program's kernels may write per run for it to run with the driver's compute threads off (0: it
        never does; tosa_vk/vulkan/threads.py)."""
        return INLINE_ELEMENTS if "compute_threads" in self.quirks else 0

    @property
    def alignment(self) -> int:
        """Byte alignment of every tensor in the arena: the device's storage-buffer and texel-buffer offset
        alignments, at least 16 (a vec4 load)."""
        a = max(16, self.min_storage_buffer_offset_alignment)
        if self.max_texel_buffer_elements:
            a = max(a, self.min_texel_buffer_offset_alignment)
        return -(-a // 16) * 16

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "features": sorted(self.features),
            "max_workgroup_count": list(self.max_workgroup_count),
            "max_workgroup_invocations": self.max_workgroup_invocations,
            "max_storage_buffer_range": self.max_storage_buffer_range,
            "min_storage_buffer_offset_alignment": self.min_storage_buffer_offset_alignment,
            "max_push_constants_size": self.max_push_constants_size,
            "subgroup_size": self.subgroup_size,
            "max_texel_buffer_elements": self.max_texel_buffer_elements,
            "min_texel_buffer_offset_alignment": self.min_texel_buffer_offset_alignment,
            "loop_budget": self.loop_budget,
            "driver": self.driver,
            "device_uuid": self.device_uuid,
            "quirks": list(self.quirks),
            "max_shared_memory": self.max_shared_memory,
            "device_class": self.device_class,
            "disabled": sorted(self.disabled),
            "coopmat_shapes": [list(s) for s in self.coopmat_shapes],
        }


def for_driver(base: Target, driver_name: str) -> Target:
    """`base` with the quirks of the named driver applied (the only one known: lavapipe's loop budget, its
    texel-view sizes, TEXEL_VIEW_QUANTUM, and its compute thread pool, INLINE_ELEMENTS)."""
    if "llvmpipe" in driver_name.lower() or "lavapipe" in driver_name.lower():
        quirks = (*base.quirks, "loop_budget", "texel_view_quantum", "compute_threads")
        return replace(base, loop_budget=LAVAPIPE_LOOP_BUDGET, quirks=quirks)
    return base


# Measured on Mesa 22.3.6 lavapipe (LLVM 15, 256-bit), the device CI has.
LAVAPIPE = for_driver(
    Target(
        "lavapipe",
        frozenset(FEATURES + PROPERTIES) - {"cooperativeMatrix"},  # all but cooperative matrices
        (65535, 65535, 65535),
        1024,
        1 << 27,
        16,
        128,
        8,
        max_texel_buffer_elements=1 << 27,
        min_texel_buffer_offset_alignment=16,
        driver="llvmpipe",
        max_shared_memory=32768,
        device_class="lavapipe",
    ),
    "llvmpipe",
)
# What every Vulkan 1.3 device offers: the spec's required limits and no optional feature — no kernel feature either
# (tosa_vk/device_class.py), so its programs are the register kernels the shipped library holds.
MINIMUM = Target("minimum", disabled=frozenset(classes.FEATURES))
# A typical device of each GPU class, for compiling offline (`tosa-vk plan --target nvidia`): a recent desktop or
# mobile GPU's limits and features; a real device's own (Device.target) are what a load uses.
_GPU = frozenset(FEATURES + PROPERTIES) - {"cooperativeMatrix"}
_COOPMAT = (("float16_t", "float", 16, 16, 16), ("int8_t", "int", 16, 16, 32))


def _desktop(name: str, features: frozenset[str], subgroup: int, **more) -> Target:
    return Target(
        name,
        features,
        max_workgroup_invocations=1024,
        max_storage_buffer_range=(1 << 32) - 1,
        subgroup_size=subgroup,
        max_shared_memory=49152,
        device_class=name,
        **more,
    )


GPUS = (
    _desktop("nvidia", _GPU | {"cooperativeMatrix"}, 32, coopmat_shapes=_COOPMAT),
    _desktop("amd", _GPU | {"cooperativeMatrix"}, 64, coopmat_shapes=_COOPMAT),
    _desktop("intel", _GPU, 16),
    Target("mali", _GPU, max_workgroup_invocations=512, subgroup_size=16, max_shared_memory=32768, device_class="mali"),
    Target(
        "adreno", _GPU, max_workgroup_invocations=1024, subgroup_size=64, max_shared_memory=32768, device_class="adreno"
    ),
    Target("generic", _GPU - {"shaderIntegerDotProduct"}, subgroup_size=32, device_class="generic"),
)

NAMED = {t.name: t for t in (LAVAPIPE, MINIMUM, *GPUS)}


def named(name: str) -> Target:
    try:
        return NAMED[name]
    except KeyError:
        raise TosaError(f"unknown target {name!r}; named targets: {', '.join(NAMED)} (or query a device)") from None

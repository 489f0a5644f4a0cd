"""Device classes: which kernel family each operator takes on a kind of GPU, with the class's tile sizes.

A class is data (CLASSES): the vendors it covers, per operator the kernel families it prefers in order, the optional
kernel features it may use (an allow-list: some drivers over-report features), and the tile and workgroup sizes of
its families. `classify()` picks one from a device's properties; `load(..., target=NAME)` or TOSA_VK_TARGET=NAME
force one on any device; TOSA_VK_DISABLE=coopmat,fp16,.. switches kernel features off. A family is chosen only where
the device has every feature it needs (`tosa_vk.target.Target.family`), so a forced class never runs a kernel its
device cannot: it falls back to the next family, last to "register" (the register-tiled kernels every device runs,
tuned on lavapipe). The class is part of the Target, so of the program-cache key.

Families:
  register  the kernels of shaders/ tuned on lavapipe: register tiles, texel-buffer loads (every device)
  tiled     shared-memory tiles: a workgroup stages blocks of both operands in shared memory (MATMUL, convolutions)
  subgroup  subgroup arithmetic for reductions and ARGMAX (any subgroup size)
  coopmat   VK_KHR_cooperative_matrix products (fp16 / bf16 / int8 MATMUL and convolutions)
Features (kill-switch names) and the device facts each needs (Target.features, tosa_vk/vulkan/device.py):
  shared    -- (every Vulkan device has 16 KiB of shared memory)
  subgroup  subgroupArithmetic (compute-stage subgroup arithmetic)
  fp16      shaderFloat16 and storageBuffer16BitAccess: fp16 arithmetic in fp16 graphs
  int8dot   shaderIntegerDotProduct: int8 products four at a time
  coopmat   cooperativeMatrix
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .errors import TosaError

# kernel feature -> the device facts (Target.features) it needs
FEATURE_NEEDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "shared": (),
        "subgroup": ("subgroupArithmetic",),
        "fp16": ("shaderFloat16", "storageBuffer16BitAccess"),
        "int8dot": ("shaderIntegerDotProduct",),
        "coopmat": ("cooperativeMatrix",),
    }
)
FEATURES = tuple(FEATURE_NEEDS)
# kernel family -> the kernel features it cannot run without (fp16 / int8dot are used inside a family where allowed)
FAMILY_NEEDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"register": (), "tiled": ("shared",), "subgroup": ("subgroup",), "coopmat": ("coopmat", "shared")}
)
FAMILIES = tuple(FAMILY_NEEDS)
# operators with more than one family; the key every lowering asks with (Target.family)
OPERATORS = ("MATMUL", "CONV2D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D", "REDUCE", "ARGMAX")

ENV_TARGET = "TOSA_VK_TARGET"
ENV_DISABLE = "TOSA_VK_DISABLE"

VENDOR_NVIDIA, VENDOR_AMD, VENDOR_INTEL, VENDOR_ARM, VENDOR_QUALCOMM = 0x10DE, 0x1002, 0x8086, 0x13B5, 0x5143


@dataclass(frozen=True)
class Tile:
    """A shared-memory tile: a workgroup computes rows x cols results, staging depth-long slices of both operands
    in shared memory; each invocation a thread_rows x thread_cols block of them."""

    rows: int
    cols: int
    depth: int
    thread_rows: int
    thread_cols: int

    @property
    def invocations(self) -> int:
        return (self.rows // self.thread_rows) * (self.cols // self.thread_cols)

    def shared_bytes(self, element_bytes: int = 4) -> int:
        """Shared memory for one slice of both operands."""
        return (self.rows + self.cols) * self.depth * element_bytes


@dataclass(frozen=True)
class DeviceClass:
    name: str
    summary: str
    vendor_ids: tuple[int, ...] = ()
    # operator (OPERATORS) -> kernel families in preference order; "register" is always the last resort
    families: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uses: frozenset[str] = frozenset()  # kernel features (FEATURES) the class may use where the device has them
    matmul_tile: Tile = Tile(64, 32, 16, 4, 4)
    conv_tile: Tile = Tile(64, 32, 16, 4, 4)
    reduce_workgroup: int = 128  # invocations reducing one row (subgroup family)
    coopmat_shape: tuple[int, int, int] = (16, 16, 16)  # M, N, K of one cooperative-matrix product

    def describe(self) -> str:
        fams = ", ".join(f"{op} {'/'.join(f)}" for op, f in self.families.items()) or "register kernels only"
        uses = ",".join(sorted(self.uses)) or "-"
        return f"{self.name:9} {self.summary}; features {uses}; {fams}"


_GPU_FAMILIES = MappingProxyType(
    {
        "MATMUL": ("coopmat", "tiled"),
        "CONV2D": ("coopmat", "tiled"),
        "DEPTHWISE_CONV2D": ("tiled",),
        "TRANSPOSE_CONV2D": ("tiled",),
        "REDUCE": ("subgroup",),
        "ARGMAX": ("subgroup",),
    }
)
_NO_COOPMAT = MappingProxyType({op: tuple(f for f in fams if f != "coopmat") for op, fams in _GPU_FAMILIES.items()})
_ALL = frozenset(FEATURES)

# Tile sizes follow the public tuning of Vulkan ML runtimes per vendor (wide workgroups and 64 KiB-class shared
# memory on desktop GPUs, 64-invocation workgroups and small tiles on mobile ones); none is measured on its GPU yet.
CLASSES: Mapping[str, DeviceClass] = MappingProxyType(
    {
        c.name: c
        for c in (
            DeviceClass("lavapipe", "Mesa lavapipe (a CPU): register tiles and texel loads, measured here"),
            DeviceClass(
                "nvidia",
                "NVIDIA GPUs (warp 32; tensor cores through cooperative matrices)",
                (VENDOR_NVIDIA,),
                _GPU_FAMILIES,
                _ALL,
                Tile(128, 128, 16, 8, 8),
                Tile(128, 64, 16, 8, 4),
                256,
            ),
            DeviceClass(
                "amd",
                "AMD GPUs (wave 32 / 64)",
                (VENDOR_AMD, 0x1022),
                _GPU_FAMILIES,
                _ALL,
                Tile(128, 64, 16, 8, 4),
                Tile(64, 64, 16, 4, 4),
                256,
            ),
            DeviceClass(
                "intel",
                "Intel GPUs (SIMD 8 / 16 / 32)",
                (VENDOR_INTEL,),
                _GPU_FAMILIES,
                _ALL,
                Tile(64, 64, 16, 4, 4),
                Tile(64, 32, 16, 4, 4),
                128,
                (8, 16, 16),
            ),
            DeviceClass(
                "mali",
                "Arm Mali GPUs (small shared memory: small tiles, 64-invocation workgroups)",
                (VENDOR_ARM,),
                _NO_COOPMAT,
                _ALL - {"coopmat"},
                Tile(32, 32, 8, 4, 4),
                Tile(32, 32, 8, 4, 4),
                64,
            ),
            DeviceClass(
                "adreno",
                "Qualcomm Adreno GPUs (wave 64 / 128)",
                (VENDOR_QUALCOMM,),
                _NO_COOPMAT,
                _ALL - {"coopmat"},
                Tile(64, 32, 8, 4, 4),
                Tile(32, 32, 8, 4, 4),
                128,
            ),
            DeviceClass(
                "generic",
                "any other GPU: Vulkan's required limits (128 invocations, 16 KiB shared memory)",
                (),
                _NO_COOPMAT,
                _ALL - {"coopmat"},
            ),
        )
    }
)


def get(name: str) -> DeviceClass:
    try:
        return CLASSES[name]
    except KeyError:
        raise TosaError(f"unknown device class {name!r}; classes: {', '.join(CLASSES)} (tosa-vk targets)") from None


def classify(vendor_id: int, driver_name: str, device_type: str) -> str:
    """The class of a device from its properties: lavapipe by its driver (a CPU), a GPU by its vendor, else
    generic (also a CPU implementation other than lavapipe: the register kernels are tuned for one)."""
    driver = driver_name.lower()
    if "llvmpipe" in driver or "lavapipe" in driver:
        return "lavapipe"
    if device_type == "cpu":
        return "lavapipe"
    for c in CLASSES.values():
        if vendor_id in c.vendor_ids:
            return c.name
    return "generic"


def forced(name: str | None = None) -> str | None:
    """The class `name` (load's target=) or TOSA_VK_TARGET asks for, checked; None: the device's own."""
    name = name or os.environ.get(ENV_TARGET) or None
    if name is not None:
        get(name)
    return name


def disabled(spec: str | None = None) -> frozenset[str]:
    """The kernel features TOSA_VK_DISABLE (or `spec`) switches off: names of FEATURES, comma-separated."""
    spec = os.environ.get(ENV_DISABLE, "") if spec is None else spec
    names = frozenset(n.strip().lower() for n in spec.split(",") if n.strip())
    unknown = sorted(names - set(FEATURES))
    if unknown:
        raise TosaError(f"{ENV_DISABLE}: unknown kernel feature(s) {', '.join(unknown)}; known: {', '.join(FEATURES)}")
    return names

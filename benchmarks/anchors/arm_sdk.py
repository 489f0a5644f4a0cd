"""Moved into the package: tosa_vk/bench/anchors/arm_sdk.py. This alias keeps `from benchmarks.anchors import
arm_sdk` (tests/test_vgf_export.py, tests/test_vgf_custom.py) working, as the very same module object, until those
import tosa_vk.bench.anchors.arm_sdk; then delete benchmarks/anchors/."""
import sys

from tosa_vk.bench.anchors import arm_sdk

sys.modules[__name__] = arm_sdk

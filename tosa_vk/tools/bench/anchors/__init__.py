"""Third-party runtimes that the benchmarks compare tosa_vk against ("anchors").

from tosa_vk.tools.bench.anchors.arm_sdk import ArmSdkAnchor, available   # Arm's ML SDK for Vulkan (VGF)
from tosa_vk.tools.bench.anchors.iree import IreeAnchor, available        # IREE (iree-compile + iree.runtime)
"""

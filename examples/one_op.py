"""Build a one-operator TOSA graph in Python, save it, load it back, validate it and show the Vulkan device."""

import tempfile
from pathlib import Path

import numpy as np

import tosa_vk
from tosa_vk.vulkan import Device

b = tosa_vk.Builder()
x = b.input("x", (1, 4, 4, 8), "fp32")
b.output(b.add(x, b.const(np.full((1, 1, 1, 8), 0.5, np.float32)), name="y"))
graph = b.build()

path = Path(tempfile.mkdtemp()) / "one_op.tosa"
tosa_vk.save_graph(graph, path)
loaded = tosa_vk.load_graph(path)
tosa_vk.validate(loaded)
print(f"built, saved and reloaded {path.name}: {loaded.op_counts()}, equal to the original: {loaded == graph}")

with Device() as device:
    print(f"Vulkan device for it: {device.info.name} ({device.info.type}, Vulkan {device.info.api_version})")

"""A custom op with its own GLSL, run from the installed wheel (scripts/wheel_check.sh): the package's own glslang
compiles it; --check-style, the Vulkan result matches the op's numpy twin."""

import sys
from pathlib import Path

import numpy as np

import tosa_vk
from tosa_vk.custom import buffer

assert Path(tosa_vk.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), tosa_vk.__file__

SCALE_ADD = """#version 450
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
layout(set = 0, binding = 0) buffer In { float x[]; };
layout(set = 0, binding = 1) buffer Out { float y[]; };
void main() {
  uint idx = gl_GlobalInvocationID.x;
  if (idx >= y.length()) { return; }
  y[idx] = x[idx] * 2.0 + 5.0;
}
"""


@tosa_vk.custom_op(
    "com.example.wheel",
    "scale_add",
    source=SCALE_ADD,
    inputs=[buffer(0)],
    outputs=[buffer(1)],
    grid=lambda s: (100, 1, 1),
)
def scale_add(inputs, attrs):
    return [inputs[0] * 2 + 5]


b = tosa_vk.Builder()
x = b.input("x", (100,), "fp32")
b.output(
    b.custom(
        [x], domain_name="com.example.wheel", operator_name="scale_add", implementation_attrs=b"", out_shape=(100,),
        out_dtype="fp32", name="y",
    )
)  # fmt: skip
feed = np.linspace(-3, 3, 100, dtype=np.float32)
with tosa_vk.load(b.build(), backend="vulkan", strict=True) as model:
    got = model.run(x=feed)["y"]
with tosa_vk.load(b.build(), backend="reference") as model:
    want = model.run(x=feed)["y"]
np.testing.assert_array_equal(got, want)
print("custom op: vulkan == reference")

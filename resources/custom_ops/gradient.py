"""Example custom op writing a storage image: image gradient of a one-channel image.

Input [1, H, W, 1] fp32 (a STORAGE_IMAGE read with imageLoad: R32_SFLOAT), output [1, H, W, 4] fp32 (a
STORAGE_IMAGE written with imageStore: R32G32B32A32_SFLOAT, copied back into the tensor after the dispatch).
"""

import numpy as np

import tosa_vk
from tosa_vk.custom import storage_image

DOMAIN, NAME = "com.example", "gradient"


def central_differences(x: np.ndarray) -> np.ndarray:
    img = np.pad(x[0, ..., 0], 1, mode="edge")
    dx = 0.5 * (img[1:-1, 2:] - img[1:-1, :-2])
    dy = 0.5 * (img[2:, 1:-1] - img[:-2, 1:-1])
    return np.stack([dx, dy, np.sqrt(dx * dx + dy * dy), np.ones_like(dx)], -1)[None].astype(np.float32)


@tosa_vk.custom_op(
    DOMAIN,
    NAME,
    shader="gradient.comp",
    inputs=[storage_image(0)],
    outputs=[storage_image(1)],
    workgroup_size=(8, 8, 1),
    grid=lambda s: (s.inputs[0][2], s.inputs[0][1], 1),
    infer=lambda s: [((*s.inputs[0][:3], 4), "fp32")],
    layout="NHWC",
)
def gradient(inputs, implementation_attrs):
    return [central_differences(inputs[0])]

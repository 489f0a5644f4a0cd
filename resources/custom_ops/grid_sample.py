"""Example custom op reading an image through a sampler: bilinear grid sample of an RGBA image.

Inputs: image [1, H, W, 4] fp32 (a COMBINED_IMAGE_SAMPLER: C = 4 packs into R32G32B32A32_SFLOAT), grid
[1, Ho, Wo, 2] fp32 in [-1, 1] (x then y, align_corners = false, border padding). Output [1, Ho, Wo, 4].
"""

import struct

import numpy as np

import tosa_vk
from tosa_vk.custom import Sampler, buffer, sampled_image

DOMAIN, NAME = "com.example", "grid_sample"


def bilinear(image: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """numpy twin: image [1,H,W,C], grid [1,Ho,Wo,2] -> [1,Ho,Wo,C], clamped to the edge texels."""
    _, h, w, _ = image.shape
    x = ((grid[0, ..., 0].astype(np.float64) + 1) * w - 1) / 2  # texel coordinates (centres at integers)
    y = ((grid[0, ..., 1].astype(np.float64) + 1) * h - 1) / 2
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = (x - x0)[..., None], (y - y0)[..., None]
    img = image[0].astype(np.float64)

    def at(yy, xx):
        return img[np.clip(yy, 0, h - 1).astype(int), np.clip(xx, 0, w - 1).astype(int)]

    top = at(y0, x0) * (1 - fx) + at(y0, x0 + 1) * fx
    bottom = at(y0 + 1, x0) * (1 - fx) + at(y0 + 1, x0 + 1) * fx
    return (top * (1 - fy) + bottom * fy)[None].astype(np.float32)


@tosa_vk.custom_op(
    DOMAIN,
    NAME,
    shader="grid_sample.comp",
    inputs=[
        sampled_image(
            0,
            sampler=Sampler(
                "VK_FILTER_LINEAR",
                "VK_FILTER_LINEAR",
                "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE",
                "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE",
            ),
        ),
        buffer(1),
    ],
    outputs=[buffer(2)],
    workgroup_size=(8, 8, 1),
    grid=lambda s: (s.outputs[0][2], s.outputs[0][1], 1),
    push_constants=lambda s: struct.pack("<2I", s.outputs[0][2], s.outputs[0][1]),
    infer=lambda s: [((1, s.inputs[1][1], s.inputs[1][2], s.inputs[0][3]), "fp32")],
    layout="NHWC",
)
def grid_sample(inputs, implementation_attrs):
    return [bilinear(inputs[0], inputs[1])]

"""Example custom op on a buffer path with C = 3 channels: a per-pixel 3x3 colour matrix plus bias.

implementation_attrs is JSON {"matrix": [9 floats, row-major], "bias": [3 floats]}; the push constants carry them to
the shader. layout="NHWC": in a graph holding NCHW tensors, tosa_vk.stages.passes.permute inserts the transposes.
"""

import json
import struct

import numpy as np

import tosa_vk
from tosa_vk.custom import buffer

DOMAIN, NAME = "com.example", "color_matrix"


def attrs(matrix, bias) -> bytes:
    return json.dumps({"matrix": [float(v) for v in np.ravel(matrix)], "bias": [float(v) for v in bias]}).encode()


def _params(implementation_attrs: bytes):
    p = json.loads(implementation_attrs)
    return np.array(p["matrix"], np.float32).reshape(3, 3), np.array(p["bias"], np.float32)


def _push(s) -> bytes:
    m, b = _params(s.attrs)
    n, h, w, c = s.inputs[0]
    return struct.pack("<9f3fI", *m.ravel(), *b, n * h * w)


@tosa_vk.custom_op(
    DOMAIN,
    NAME,
    shader="color_matrix.comp",
    inputs=[buffer(1)],
    outputs=[buffer(0, set=1)],
    workgroup_size=(64, 1, 1),
    grid=lambda s: (int(np.prod(s.inputs[0][:3])), 1, 1),
    push_constants=_push,
    infer=lambda s: [(s.inputs[0], "fp32")],
    layout="NHWC",
)
def color_matrix(inputs, implementation_attrs):
    m, b = _params(implementation_attrs)
    x = inputs[0]
    if x.ndim != 4 or x.shape[-1] != 3:
        raise ValueError(f"color_matrix wants [N,H,W,3], got {list(x.shape)}")
    return [(x @ m.T + b).astype(np.float32)]

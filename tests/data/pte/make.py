"""Makes the ExecuTorch programs (.pte) the .pte reader's tests run (tests/test_pte.py), with their inputs and
PyTorch eager's outputs. Run by hand, in an environment with the `torch` extra (not the test environment):

    python -m venv /tmp/et && /tmp/et/bin/pip install torch==2.13.0 && /tmp/et/bin/pip install -c constraints.txt \
        -e '.[torch]' ai-ml-sdk-model-converter   # the VGF fixtures need model-converter
    /tmp/et/bin/python tests/data/pte/make.py          # writes tests/data/pte/<name>/

Each <name>/ holds model.pte, input_<i>.npy, eager_<i>.npy (PyTorch's own outputs, in the method's order: for int8
the quantized module's, convert_pt2e's, which simulates the int8 arithmetic in float) and
desc.json (the inputs and the eager outputs in the conformance layout, so `tosa-vk run --test-desc ... --compare`
checks). Every model is exported through ExecuTorch's Arm TOSA partitioner (TOSA-1.0+FP for float, TOSA-1.0+INT with
the Arm quantizer for int8), the *_vgf ones through its VGF partitioner; the weights are tiny and seeded, so the files
are tens of KB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # tosa_vk's own export helper (tosa_vk/tools/torch_export.py)

from tosa_vk.tools.torch_export import export_pte, write_case  # noqa: E402


class CNN(nn.Module):
    def __init__(self, hardtanh: bool = False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.Hardtanh(-1.0, 1.0) if hardtanh else nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = self.act(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class Block(nn.Module):
    """A pre-norm transformer block: single-head attention and a GELU MLP."""

    def __init__(self, dim: int = 16):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.scale = dim**-0.5

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        attn = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
        x = x + self.proj(attn @ v)
        return x + self.mlp(self.ln2(x))


class TwoInTwoOut(nn.Module):
    def forward(self, x, y):
        return x * y + x, torch.cat([torch.relu(x - y), y], dim=1)


def models():
    torch.manual_seed(0)
    image = (torch.randn(1, 3, 8, 8),)
    calibration = [(torch.randn(1, 3, 8, 8),) for _ in range(8)]
    yield "cnn_fp32", CNN(), image, {}
    yield "cnn_int8", CNN(), image, {"quantize": calibration}
    yield "transformer_fp32", Block(), (torch.randn(1, 6, 16),), {}
    yield "two_in_two_out_fp32", TwoInTwoOut(), (torch.randn(2, 3, 4), torch.randn(2, 3, 4)), {}
    # hardtanh kept off the delegate: two TOSA delegates, dequantize -> hardtanh -> quantize on the host between
    yield "two_delegates_int8", CNN(hardtanh=True), image, {"quantize": calibration, "host_ops": ["hardtanh"]}
    # ExecuTorch's VGF backend: the delegates are VGF containers (model-converter's GRAPH segments)
    yield "cnn_fp32_vgf", CNN(), image, {"delegate": "vgf"}
    yield "cnn_int8_vgf", CNN(), image, {"quantize": calibration, "delegate": "vgf"}
    # channels-last tensors (dim order 0, 2, 3, 1): the delegates take and give the memory layout (NHWC shapes)
    yield (
        "two_delegates_int8_channels_last",
        CNN(hardtanh=True),
        image,
        {"quantize": calibration, "host_ops": ["hardtanh"], "channels_last": True},
    )


def main() -> None:
    for name, module, inputs, options in models():
        module.eval()
        if options.pop("channels_last", False):
            module = module.to(memory_format=torch.channels_last)
            inputs = tuple(x.to(memory_format=torch.channels_last) for x in inputs)
            options["quantize"] = [
                tuple(x.to(memory_format=torch.channels_last) for x in b) for b in options["quantize"]
            ]
        pte, quantized = export_pte(module, inputs, **options)
        with torch.no_grad():
            eager = quantized(*inputs)  # for int8: the quantized module (PyTorch's int8 arithmetic in float)
        write_case(HERE / name, inputs, eager if isinstance(eager, tuple) else (eager,), pte, fresh=True)
        print(f"{name}: {len(pte)} bytes")


if __name__ == "__main__":
    main()

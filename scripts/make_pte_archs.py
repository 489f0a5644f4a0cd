"""Makes the ExecuTorch programs (.pte) of the architectures users export most (issue 50): small, randomly weighted
versions of torchvision-style CNNs (ResNet, MobileNetV2, VGG, ConvNeXt), ViT / DeiT, a BERT-style encoder with
token / position embeddings and an attention mask, a UNet-style encoder-decoder, GRU / LSTM audio models and a
depthwise-separable keyword-spotting CNN, each fp32 and int8, exported through ExecuTorch's Arm TOSA partitioner
(tosa_vk/tools/torch_export.py: TOSA-1.0+FP, and TOSA-1.0+INT with the Arm quantizer). tests/test_pte_archs.py runs
them without torch. Run by hand in an environment with the `torch` extra (scripts/test_torch.sh makes .venv-torch):

    .venv-torch/bin/python scripts/make_pte_archs.py [NAME ...]    # writes tests/data/pte_archs/<name>_<fp32|int8>/

Each folder holds model.pte, input_<i>.npy, eager_<i>.npy (PyTorch's outputs; for int8 the quantized module's,
convert_pt2e's, which simulates the int8 arithmetic in float: what from_torch compares to) and desc.json
(torch_export.write_case's layout: `tosa-vk run --test-desc ... --compare` checks).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "pte_archs"
sys.path.insert(0, str(ROOT))

from tosa_vk.tools.torch_export import export_pte, write_case  # noqa: E402


def conv_bn(cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout))


class BasicBlock(nn.Module):  # torchvision's ResNet-18 block, with its 1x1 downsample shortcut
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.a, self.b = conv_bn(cin, cout, 3, stride), conv_bn(cout, cout)
        self.down = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x))) + self.down(x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 8, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):  # MobileNetV2's expand -> depthwise -> project, ReLU6, residual when it fits
    def __init__(self, cin: int, cout: int, stride: int, expand: int = 4):
        super().__init__()
        mid = cin * expand
        self.body = nn.Sequential(conv_bn(cin, mid, 1), nn.ReLU6(), conv_bn(mid, mid, 3, stride, groups=mid),
                                  nn.ReLU6(), conv_bn(mid, cout, 1))  # fmt: skip
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(conv_bn(3, 8, 3, 2), nn.ReLU6(), InvertedResidual(8, 8, 1),
                                      InvertedResidual(8, 12, 2), InvertedResidual(12, 12, 1))  # fmt: skip
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(12, 10))

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


class VGG(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                                      nn.ReLU(), nn.MaxPool2d(2))  # fmt: skip
        self.classifier = nn.Sequential(nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Dropout(), nn.Linear(32, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class Attention(nn.Module):  # multi-head self-attention as timm / HF write it, with an optional additive mask
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            scores = scores + mask
        return self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))


class EncoderBlock(nn.Module):  # pre-norm (ViT) or post-norm (BERT)
    def __init__(self, dim: int, heads: int, pre_norm: bool):
        super().__init__()
        self.attn, self.pre_norm = Attention(dim, heads), pre_norm
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x, mask=None):
        if self.pre_norm:
            x = x + self.attn(self.ln1(x), mask)
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.mlp(x))


class ViT(nn.Module):  # patch embedding, a class token (DeiT: and a distillation token), learned positions
    def __init__(self, dim: int = 16, distilled: bool = False):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        tokens = 2 if distilled else 1
        self.tokens = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 16 + tokens, dim) * 0.02)
        self.blocks = nn.ModuleList(EncoderBlock(dim, 2, True) for _ in range(2))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)
        self.head_dist = nn.Linear(dim, 10) if distilled else None

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.tokens.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        if self.head_dist is None:
            return self.head(x[:, 0])
        return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2  # DeiT's inference: the two heads averaged


class Bert(nn.Module):  # token + position + segment embeddings, an attention mask (1 keep, 0 pad), pooler
    def __init__(self, vocab: int = 50, dim: int = 16, length: int = 8):
        super().__init__()
        self.words, self.positions = nn.Embedding(vocab, dim), nn.Embedding(length, dim)
        self.segments = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim)
        self.layers = nn.ModuleList(EncoderBlock(dim, 2, False) for _ in range(2))
        self.pooler = nn.Linear(dim, dim)
        self.register_buffer("position_ids", torch.arange(length)[None])

    def forward(self, input_ids, attention_mask):
        x = self.words(input_ids) + self.positions(self.position_ids) + self.segments(torch.zeros_like(input_ids))
        x = self.ln(x)
        mask = (1.0 - attention_mask[:, None, None, :]) * -10000.0  # HF's extended additive mask
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


class UNet(nn.Module):  # two levels: conv blocks, max-pool down, upsample (nearest and bilinear), skip concat
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1),
                                 nn.ReLU())  # fmt: skip

        self.enc1, self.enc2, self.mid = block(3, 8), block(8, 16), block(16, 16)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2 = block(32, 8)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = block(16, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(nn.functional.max_pool2d(e1, 2))
        m = self.mid(nn.functional.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        return self.out(self.dec1(torch.cat([self.up1(d2), e1], 1)))


class GRUAudio(nn.Module):  # features (batch, frames, mels) -> 2-layer GRU -> per-frame classes
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(10, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y)


class LSTMAudio(nn.Module):  # features -> LSTM -> last frame's classes (and the final hidden state)
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(10, 16, batch_first=True)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y, (h, _) = self.rnn(x)
        return self.fc(y[:, -1]), h


class ConvNeXtBlock(nn.Module):  # depthwise 7x7, channels-last LayerNorm, inverted MLP with GELU, layer scale
    def __init__(self, dim: int = 16):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.5))

    def forward(self, x):
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.gamma * self.pw2(nn.functional.gelu(self.pw1(y)))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 4, 4)
        self.blocks = nn.Sequential(ConvNeXtBlock(), ConvNeXtBlock())
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class DSCNN(nn.Module):  # ARM's keyword-spotting DS-CNN on MFCCs (1, 1, frames, coefficients)
    def __init__(self):
        super().__init__()
        layers: list[nn.Module] = [conv_bn(1, 16, 3, 2), nn.ReLU()]
        for _ in range(2):
            layers += [conv_bn(16, 16, 3, groups=16), nn.ReLU(), conv_bn(16, 16, 1), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(16, 12)

    def forward(self, x):
        return self.fc(nn.functional.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class SqueezeExcite(nn.Module):  # EfficientNet / MobileNetV3: hardswish, SE gate with hardsigmoid
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 16, 3, 2), nn.Hardswish())
        self.dw = nn.Sequential(conv_bn(16, 16, 3, groups=16), nn.Hardswish())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 4, 1), nn.ReLU(), nn.Conv2d(4, 16, 1),
                                nn.Hardsigmoid())  # fmt: skip
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.dw(self.stem(x))
        return self.head((x * self.se(x)).mean((2, 3)))


def architectures():
    """(name, module, example inputs, calibration batches) per architecture; seeded, so rerunning gives the same."""
    torch.manual_seed(0)
    image = lambda: (torch.randn(1, 3, 16, 16),)  # noqa: E731
    audio = lambda: (torch.randn(1, 6, 10),)  # noqa: E731 (frames, mel bins: the RNNs unroll per frame)

    def bert_inputs():
        ids = torch.randint(1, 50, (1, 8))
        mask = torch.ones(1, 8)
        mask[0, 6:] = 0  # two padding tokens
        ids[0, 6:] = 0
        return ids, mask

    yield "resnet", ResNet(), image
    yield "mobilenet_v2", MobileNetV2(), image
    yield "vgg", VGG(), image
    yield "vit", ViT(), image
    yield "deit", ViT(distilled=True), image
    yield "bert", Bert(), bert_inputs
    yield "unet", UNet(), image
    yield "gru", GRUAudio(), audio
    yield "lstm", LSTMAudio(), audio
    yield "convnext", ConvNeXt(), image
    yield "ds_cnn", DSCNN(), lambda: (torch.randn(1, 1, 20, 10),)
    yield "squeeze_excite", SqueezeExcite(), image


def main(names: list[str]) -> None:
    for name, module, make_inputs in architectures():
        inputs = make_inputs()
        calibration = [make_inputs() for _ in range(8)]
        for kind, quantize in (("fp32", None), ("int8", calibration)):
            if names and name not in names and f"{name}_{kind}" not in names:
                continue
            module.eval()
            try:
                pte, eager_module = export_pte(module, inputs, quantize=quantize)
            except Exception as err:  # noqa: BLE001 (one this ExecuTorch cannot export: say so, make the others)
                print(f"{name}_{kind}: export failed: {str(err)[:400]}")
                continue
            with torch.no_grad():
                eager = eager_module(*inputs)
            eager = eager if isinstance(eager, (tuple, list)) else (eager,)
            write_case(OUT / f"{name}_{kind}", inputs, eager, pte, fresh=True)
            print(f"{name}_{kind}: {len(pte)} bytes", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

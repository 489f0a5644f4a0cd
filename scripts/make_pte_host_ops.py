"""Makes the ExecuTorch programs (.pte) whose host operators tests/test_pte_host_ops.py runs: tiny modules exported
through ExecuTorch's Arm TOSA partitioner (tosa_vk/tools/torch_export.py) that leave aten operators on the host
(the partitioner does not take them, or `host_ops` keeps them off), committed with their inputs and PyTorch eager's
outputs. Run by hand in an environment with the `torch` extra (scripts/test_torch.sh makes .venv-torch):

    .venv-torch/bin/python scripts/make_pte_host_ops.py [NAME ...]    # writes tests/data/pte_host/<name>/

Each <name>/ holds model.pte, input_<i>.npy (a 0-d array for an int / float / bool input), eager_<i>.npy and
desc.json (torch_export.write_case's layout: `tosa-vk run --test-desc ... --compare` checks).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "pte_host"
sys.path.insert(0, str(ROOT))

from tosa_vk.tools.torch_export import export_pte, write_case  # noqa: E402


class Scalars(nn.Module):  # a float, an int and a bool method input (the export specialises them)
    def forward(self, x, y, alpha: float, n: int, flag: bool):
        z = x + alpha * y
        return (z * n if flag else z - n).relu()


class Embedding(nn.Module):  # BERT's word embedding: aten::embedding on the host
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, ids):
        return self.fc(self.emb(ids))


class Indexing(nn.Module):  # index.Tensor, index_put, gather, select / slice, expand, arange, where
    def forward(self, x, idx):
        a = x[idx]  # index.Tensor
        b = torch.gather(x, 1, idx.unsqueeze(1).expand(-1, 3) % 3)
        c = x[:, 1:3]  # slice_copy
        d = x[1]  # select_copy
        e = x.index_put((idx,), torch.ones(idx.shape[0], x.shape[1]))
        f = torch.arange(x.shape[1], dtype=torch.float32).expand(x.shape[0], -1)
        g = torch.where(x > 0, x, f)
        return a, b, c, d, e, g


class Reductions(nn.Module):  # argmax / argmin, max.dim / min.dim with indices, sum / mean over dims
    def forward(self, x):
        mx, imx = torch.max(x, dim=1)
        mn, imn = torch.min(x, dim=-1, keepdim=True)
        return torch.argmax(x, dim=1), torch.argmin(x), mx, imx, mn, imn, x.sum(dim=(0, 2)), x.mean(dim=-1)


class Pool(nn.Module):  # max_pool2d_with_indices (the indices returned)
    def forward(self, x):
        return nn.functional.max_pool2d(x, 2, stride=2, return_indices=True)


class Bitwise(nn.Module):  # bitwise and / or / xor / not on ints and bools
    def forward(self, a, b):
        return a & b, a | b, a ^ b, ~a, (a > 0) & (b > 0), ~(a > b)


class Casts(nn.Module):  # dim-order copies: int64 -> int32 and float -> int casts, a channels-last copy
    def forward(self, x, i):
        return i.to(torch.int32) + 1, (x * 4).to(torch.int32), x.to(memory_format=torch.channels_last) * 2


class Permute(nn.Module):  # permute / view / squeeze kept on the host: their int lists
    def forward(self, x):
        return torch.relu(x).permute(2, 0, 1).reshape(4, 6).unsqueeze(0).squeeze(0)


class InPlace(nn.Module):  # an input changed in place: to_executorch adds its copy_ write-back (the program, and
    # export_pte's eager, return the changed input first: torch.export's user-input mutation output)
    def forward(self, x, buf):
        buf.add_(x)
        return buf * 2


class NoneInput(nn.Module):  # an optional argument exported as None: a method input of value None
    def forward(self, x, y, rounding_mode: str | None = None):
        return torch.div(x, y, rounding_mode=rounding_mode)


class LeakyInPlace(nn.Module):  # leaky_relu in place on the input: the program returns the changed input too
    def __init__(self):
        super().__init__()
        self.act = nn.LeakyReLU(0.1, inplace=True)

    def forward(self, x):
        return self.act(x)


class SelectScatter(nn.Module):  # the memory planner aliases a view of a host operator's result (no instruction)
    def forward(self, x, y):
        return torch.select_scatter(x, y, 0, 1)


class Rfft2(nn.Module):  # complex values between host operators (_fft_r2c, view_as_real_copy)
    def forward(self, x):
        z = torch.fft.rfft2(x)
        return z.real, z.imag


class GridSample(nn.Module):  # grid_sampler_2d on the host: bilinear / zeros and nearest / reflection
    def forward(self, x, grid):
        a = nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        b = nn.functional.grid_sample(x, grid, mode="nearest", padding_mode="reflection", align_corners=True)
        return a, b


class Full(nn.Module):  # full / zeros / ones
    def forward(self, x):
        return x + torch.full((2, 3), 1.5), torch.zeros(2, 3) + x, torch.ones_like(x) * x


def models():
    torch.manual_seed(0)
    yield "scalars_fp32", Scalars(), (torch.randn(2, 3), torch.randn(2, 3), 0.5, 3, True), {}
    yield "embedding_fp32", Embedding(), (torch.tensor([[1, 5, 19, 0, 7]]),), {}
    yield "indexing_fp32", Indexing(), (torch.randn(4, 3), torch.tensor([2, 0, 3])), {}
    yield "reductions_fp32", Reductions(), (torch.randn(2, 5, 3),), {}
    yield "pool_indices_fp32", Pool(), (torch.randn(1, 2, 4, 6),), {}
    yield (
        "bitwise_int32",
        Bitwise(),
        (torch.randint(-8, 8, (3, 4), dtype=torch.int32), torch.randint(-8, 8, (3, 4), dtype=torch.int32)),
        {},
    )
    yield "casts_fp32", Casts(), (torch.randn(1, 3, 2, 2), torch.tensor([1, -2, 2**40])), {}
    yield "permute_host_fp32", Permute(), (torch.randn(2, 3, 4),), {"host_ops": ["permute_copy", "relu"]}
    yield "in_place_fp32", InPlace(), (torch.randn(2, 3), torch.randn(2, 3)), {}
    yield "full_fp32", Full(), (torch.randn(2, 3),), {}
    yield "none_input_fp32", NoneInput(), (torch.randn(5), torch.rand(5) + 0.5, None), {}
    yield "leaky_in_place_fp32", LeakyInPlace(), (torch.randn(1, 2, 3, 3),), {}
    yield "select_scatter_fp32", SelectScatter(), (torch.randn(3, 4), torch.randn(4)), {}
    yield "rfft2_fp32", Rfft2(), (torch.randn(2, 4, 8),), {}
    yield "grid_sample_fp32", GridSample(), (torch.randn(1, 2, 5, 6), torch.rand(1, 3, 4, 2) * 2.6 - 1.3), {}


def main(names: list[str]) -> None:
    for name, module, inputs, options in models():
        if names and name not in names:
            continue
        module.eval()
        folder = OUT / name
        try:
            pte, eager_module = export_pte(module, [i.clone() if torch.is_tensor(i) else i for i in inputs],
                                           **options)  # fmt: skip
        except Exception as err:  # noqa: BLE001 (a module this ExecuTorch cannot export: say so, make the others)
            print(f"{name}: export failed: {type(err).__name__}: {str(err)[:300]}")
            continue
        given = [i.clone() if torch.is_tensor(i) else i for i in inputs]
        with torch.no_grad():
            eager = eager_module(*given)
        eager = eager if isinstance(eager, tuple) else (eager,)
        write_case(folder, inputs, eager, pte, fresh=True)
        print(f"{name}: {len(pte)} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])

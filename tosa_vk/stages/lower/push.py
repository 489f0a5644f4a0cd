"""The push-constant block of every built-in shader, declared once.

The lowering packs a dispatch's values with its shader's layout (`LAYOUT.pack(...)` -> Push, which LowerCtx.kernel
records in Kernel.push_constants / push_layout); VGF export, whose files carry no push-constant values, bakes the
same values into the module as a const struct built from the same layout (`baked`). Every built-in shader declares
its block as `layout(push_constant) uniform Params { ... } p;` under `#ifndef PUSH_BAKED`, which export defines to
that const struct. tests/test_push_layouts.py checks each layout against its shader's GLSL.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from ...abi.shader_abi import MAX_RANK

Member = tuple[str, str, int]  # (name, GLSL scalar type, array length or 0)
_CODES = {"uint": "I", "int": "i", "float": "f"}  # std430: every member here is 4 bytes, arrays of stride 4


class Push(NamedTuple):
    """Packed values and the layout they follow."""

    data: bytes
    layout: tuple[Member, ...]


class PushLayout(NamedTuple):
    members: tuple[Member, ...]

    @property
    def format(self) -> str:
        return "<" + "".join(_CODES[t] * max(n, 1) for _, t, n in self.members)

    def pack(self, *values: int | float) -> Push:
        """The block from its values in declaration order, arrays flattened in place."""
        want = sum(max(n, 1) for _, _, n in self.members)
        if len(values) != want:
            raise ValueError(f"push constants {[m[0] for m in self.members]} take {want} values, got {len(values)}")
        return Push(struct.pack(self.format, *values), self.members)


def layout(*members: tuple[str, str] | Member) -> PushLayout:
    return PushLayout(tuple((m[0], m[1], m[2] if len(m) > 2 else 0) for m in members))


def _uints(*names: str) -> list[tuple[str, str]]:
    return [(n, "uint") for n in names]


def _ints(*names: str) -> list[tuple[str, str]]:
    return [(n, "int") for n in names]


def _arrays(length: int, *names: str) -> list[Member]:
    return [(n, "int", length) for n in names]


NONE = layout()  # only LowerCtx.word's scalars (EP_PUSH): convolutions, element-wise groups
TOTAL = layout(("total", "uint"))  # unary, cast, table
CLAMP_FLOAT = layout(("total", "uint"), ("lo", "float"), ("hi", "float"))
CLAMP_INT = layout(("total", "uint"), ("lo", "int"), ("hi", "int"))
BINARY = layout(("total", "uint"), ("rank", "int"), *_arrays(MAX_RANK, "shape", "stride_a", "stride_b"))
SELECT = layout(("total", "uint"), ("rank", "int"), *_arrays(MAX_RANK, "shape", "stride_a", "stride_b", "stride_c"))
RESCALE = layout(*_uints("total", "channels"))
REDUCE = layout(*_uints("total", "axis_len", "inner", "chunk", "chunks"))  # reduce and argmax
# the subgroup family's reduce and argmax (tosa_vk/stages/lower/families/reduction_subgroup.py)
REDUCE_SUBGROUP = layout(*_uints("groups", "axis_len", "inner", "chunk", "chunks", "xblocks"))
COPY = layout(
    ("total", "uint"),
    *_ints("rank", "src_base", "dst_base"),
    *_arrays(MAX_RANK, "shape", "src_stride", "dst_stride", "wrap"),
)
TRANSPOSE = layout(
    ("tiles", "uint"),
    *_ints("rank", "src_base", "dst_base", "n_i", "n_j", "src_stride_i", "dst_stride_j", "tiles_i", "tiles_j"),
    *_arrays(4, "shape", "src_stride", "dst_stride"),
)
PAD = layout(("total", "uint"), ("rank", "int"), *_arrays(MAX_RANK, "shape", "in_shape", "lo", "in_stride"))
GATHER = layout(*_uints("total", "C", "W"), ("K", "int"))  # gather and scatter
ROW_GATHER = layout(*_uints("total", "C", "W"), *_ints("K", "R"))
RESIZE = layout(
    ("total", "uint"), *_ints("C", "OW", "OH", "IW", "IH", "sy_n", "sy_d", "sx_n", "sx_d", "off_y", "off_x")
)
MATMUL = layout(*_uints("groups", "H", "C", "W", "tiles_h", "blocks_w", "k_len", "splits"))
MATMUL_FAST = layout(*_uints("groups", "H", "C", "W", "tiles_h", "blocks_w"))
# matmul_fast.comp's own: + lanes_w, the invocations of a workgroup side by side along W (the rest along H)
MATMUL_FAST_LANES = layout(*_uints("groups", "H", "C", "W", "tiles_h", "blocks_w", "lanes_w"))
MATMUL_SUM = layout(*_uints("total", "plane", "splits"))
DEPTHWISE = layout(*_ints("n", "ih", "iw", "c", "oh", "ow", "pt", "pl", "packed"))
POOL = layout(*_uints("total", "IH", "IW", "C", "OH", "OW"), *_ints("KH", "KW", "SY", "SX", "PT", "PL"))
FFT = layout(*_uints("total", "L", "S", "Ns", "tw_step", "H", "W"))
FFT_TWIDDLE = layout(*_uints("count", "L"))
MATMUL_T_BLOCK_SCALED = layout(*_uints("total", "H", "W", "C", "D"))
CONV2D_BLOCK_SCALED = layout(
    *_uints("total", "IH", "IW", "IC", "OH", "OW", "OC", "KH", "KW", "BC"), *_ints("PT", "PL", "SY", "SX", "DY", "DX")
)

# shader (path under shaders/, without .comp) -> its layout(s); what tests/test_push_layouts.py checks
SHADERS: dict[str, tuple[PushLayout, ...]] = {
    "elementwise_unary/unary": (TOTAL,),
    "type_conversion/cast": (TOTAL,),
    "elementwise_binary/table": (TOTAL,),
    "activation/activation": (CLAMP_FLOAT, CLAMP_INT),
    "elementwise_binary/binary": (BINARY,),
    "elementwise_ternary/select": (SELECT,),
    "type_conversion/rescale": (RESCALE,),
    "reduction/reduce": (REDUCE,),
    "reduction/argmax": (REDUCE,),
    "reduction/reduce_subgroup": (REDUCE_SUBGROUP,),
    "reduction/argmax_subgroup": (REDUCE_SUBGROUP,),
    "data_layout/copy": (COPY,),
    "data_layout/transpose": (TRANSPOSE,),
    "data_layout/pad": (PAD,),
    "scatter_gather/gather": (GATHER,),
    "scatter_gather/scatter": (GATHER,),
    "scatter_gather/row_gather": (ROW_GATHER,),
    "image/resize": (RESIZE,),
    "tensor_ops/matmul": (MATMUL,),
    "tensor_ops/matmul_fast": (MATMUL_FAST_LANES,),
    "tensor_ops/matmul_tiled": (MATMUL_FAST,),
    "tensor_ops/matmul_coopmat": (MATMUL_FAST,),
    "tensor_ops/matmul_sum": (MATMUL_SUM,),
    "tensor_ops/pool": (POOL,),
    "tensor_ops/fft": (FFT,),
    "tensor_ops/fft_twiddle": (FFT_TWIDDLE,),
    "fused/elementwise": (NONE,),
    "fused/rows": (NONE,),
    "convolution/depthwise": (DEPTHWISE,),
    "type_conversion/cast_to_block_scaled": (TOTAL,),
    "type_conversion/cast_from_block_scaled": (TOTAL,),
    "tensor_ops/matmul_t_block_scaled": (MATMUL_T_BLOCK_SCALED,),
    "convolution/conv2d_block_scaled": (CONV2D_BLOCK_SCALED,),
}


def baked(members: tuple[Member, ...], data: bytes) -> str:
    """GLSL declaring `p` as a const Params holding `data`: what PUSH_BAKED stands for in a baked module."""
    values = iter(struct.unpack_from(PushLayout(members).format, data))
    fields, inits = [], []
    for name, glsl, n in members:
        fields.append(f"{glsl} {name}[{n}];" if n else f"{glsl} {name};")
        items = [literal(glsl, next(values)) for _ in range(max(n, 1))]
        inits.append(f"{glsl}[{n}]({', '.join(items)})" if n else items[0])
    return f"struct Params {{ {' '.join(fields)} }}; const Params p = Params({', '.join(inits)});"


def literal(glsl: str, value: int | float) -> str:
    """An exact GLSL literal of a push-constant value (ints by bit pattern; floats by repr, infinities as 1/0)."""
    if glsl in ("float", "half", "double", "float16_t"):
        v = float(value)
        if np.isnan(v):
            raise ValueError("a NaN push-constant value cannot be baked exactly")
        text = "(1.0/0.0)" if v == np.inf else "(-1.0/0.0)" if v == -np.inf else repr(v)
        if "e" not in text and "." not in text and "(" not in text:
            text += ".0"
        return {
            "float": text,
            "half": f"float16_t({text})",
            "float16_t": f"float16_t({text})",
            "double": f"double({text})",
        }[glsl]
    v = int(value)
    return {
        "int": f"int(0x{v & 0xFFFFFFFF:08x}u)",
        "uint": f"0x{v:08x}u",
        "int16": f"int16_t({v})",
        "uint16": f"uint16_t({v})",
        "int64": f"int64_t(0x{v & (2**64 - 1):016x}ul)",
        "uint64": f"uint64_t(0x{v:016x}ul)",
    }[glsl]

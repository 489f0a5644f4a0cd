"""Image operators (spec 2.12): RESIZE in NEAREST and BILINEAR modes.

Sample positions follow the pseudocode in integers: y = oy * scale_y_d + offset_y, iy = idiv_floor(y, scale_y_n),
ry = y - iy * scale_y_n (likewise x). Integer BILINEAR weights are ry / (scale_y_n - ry) unscaled (the result is
scale_y_n * scale_x_n times the interpolated value), exact in int64; floating-point BILINEAR uses dy = ry / scale_y_n
in float64 and rounds once to the output type. Bilinear is applied separably (rows, then columns), which is exact
for integers and within the fp64 tolerance for floating point.
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import ResizeMode
from .numeric import round_to, to_float64
from .registry import Call, ScaledArray, reference

_CHUNK = 1 << 22  # output elements computed at a time (bounds float64 temporaries)


def _idiv_check(call: Call, a: int, b: int, rule: str) -> int:
    """idiv_check: ERROR_IF(a % b != 0), then the exact quotient (b > 0 here, so Python's % and // agree with C's
    whenever the division is exact)."""
    call.error_if(a % b != 0, rule)
    return a // b


def _axis_positions(out_size: int, in_size: int, scale_n: int, scale_d: int, offset: int):
    """(i0, i1, r) per output position along one axis: the clamped neighbour indices and the remainder."""
    pos = np.arange(out_size, dtype=np.int64) * scale_d + offset
    i = np.floor_divide(pos, scale_n)  # idiv_floor
    r = pos - i * scale_n
    i0 = np.maximum(i, 0)
    i1 = np.minimum(i + 1, in_size - 1)
    return i0, i1, r


@reference("RESIZE")
def RESIZE(call: Call):
    x = call.inputs[0]
    scale = [int(v) for v in np.asarray(call.inputs[1]).reshape(-1)]
    offset = [int(v) for v in np.asarray(call.inputs[2]).reshape(-1)]
    border = [int(v) for v in np.asarray(call.inputs[3]).reshape(-1)]
    out_shape = tuple(call.out_shapes[0])
    call.error_if(x.ndim != 4 or len(out_shape) != 4, "rank(input) != 4 || rank(output) != 4")
    call.error_if(
        len(scale) != 4 or len(offset) != 2 or len(border) != 2, "scale is shape_t<[4]>, offset and border shape_t<[2]>"
    )
    n, ih, iw, c = x.shape
    _, oh, ow, _ = out_shape
    call.error_if(out_shape[0] != n or out_shape[3] != c, "output [N, C] != input [N, C]")
    sy_n, sy_d, sx_n, sx_d = scale
    off_y, off_x = offset
    bor_y, bor_x = border
    call.error_if(max(oh, ow, ih, iw) >= 16384, "max(OH,OW,IH,IW) >= 16384")
    call.error_if(
        sy_n <= 0 or sy_d <= 0 or sx_n <= 0 or sx_d <= 0,
        "scale_y_n <= 0 || scale_y_d <= 0 || scale_x_n <= 0 || scale_x_d <= 0",
    )
    call.error_if(sy_n > (1 << 11) or sx_n > (1 << 11), "scale_y_n > (1 << 11) || scale_x_n > (1 << 11)")
    call.error_if(sy_d >= 16 * sy_n or sx_d >= 16 * sx_n, "scale_y_d >= 16 * scale_y_n || scale_x_d >= 16 * scale_x_n")
    call.error_if(off_y < -sy_n or off_y >= 16 * sy_n, "offset_y < -scale_y_n || offset_y >= 16 * scale_y_n")
    call.error_if(off_x < -sx_n or off_x >= 16 * sx_n, "offset_x < -scale_x_n || offset_x >= 16 * scale_x_n")
    call.error_if(bor_y < -16 * sy_n or bor_y >= sy_n, "border_y < -16 * scale_y_n || border_y >= scale_y_n")
    call.error_if(bor_x < -16 * sx_n or bor_x >= sx_n, "border_x < -16 * scale_x_n || border_x >= scale_x_n")
    num_y = (ih - 1) * sy_n - off_y + bor_y
    num_x = (iw - 1) * sx_n - off_x + bor_x
    rule_y = "OH != idiv_check((IH - 1) * scale_y_n - offset_y + border_y, scale_y_d) + 1"
    rule_x = "OW != idiv_check((IW - 1) * scale_x_n - offset_x + border_x, scale_x_d) + 1"
    call.error_if(oh != _idiv_check(call, num_y, sy_d, rule_y) + 1, rule_y)
    call.error_if(ow != _idiv_check(call, num_x, sx_d, rule_x) + 1, rule_x)

    iy0, iy1, ry = _axis_positions(oh, ih, sy_n, sy_d, off_y)
    ix0, ix1, rx = _axis_positions(ow, iw, sx_n, sx_d, off_x)
    mode = call.attr("mode")
    if mode == ResizeMode.NEAREST:
        # Floating point compares dy = ry / scale_y_n >= 0.5; in exact (fp64) arithmetic that is 2 * ry >= scale_y_n.
        # (With dy rounded to bf16, an odd scale_n > 512 can round dy up to 0.5 and pick the other neighbour, as
        # Arm's non-precise model does; verdicts are against its fp64 results, which this matches.)
        iy = np.where(2 * ry >= sy_n, iy1, iy0)
        ix = np.where(2 * rx >= sx_n, ix1, ix0)
        if call.input_scales:  # TOSA 1.1 block-scaled: each value with its block's scale (C is whole blocks)
            return ScaledArray(x[:, iy][:, :, ix], call.input_scales[0][:, iy][:, :, ix])
        return x[:, iy][:, :, ix]
    call.error_if(bool(call.input_scales), "is_block_scale<in_t>() && mode != NEAREST_NEIGHBOR")
    call.error_if(mode != ResizeMode.BILINEAR, "mode is neither NEAREST nor BILINEAR")

    out_type = call.out_types[0]
    if out_type.is_float:
        v = to_float64(x)
        dy, dx = ry / sy_n, rx / sx_n
        unit_y = unit_x = 1.0
        out = np.empty(out_shape, dtype=out_type.numpy)
    else:
        v = x.astype(np.int64)
        dy, dx = ry, rx
        unit_y, unit_x = sy_n, sx_n
        out = np.empty(out_shape, dtype=np.int64)
    wy0, wy1 = (unit_y - dy)[:, None, None], dy[:, None, None]
    wx0, wx1 = (unit_x - dx)[:, None], dx[:, None]
    rows = max(1, _CHUNK // max(1, n * ow * c))
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, oh, rows):
            s = slice(start, start + rows)
            # acc = v00*(unit_y-dy)*(unit_x-dx) + v01*(unit_y-dy)*dx + v10*dy*(unit_x-dx) + v11*dy*dx
            a = v[:, iy0[s]] * wy0[s] + v[:, iy1[s]] * wy1[s]  # [N, rows, IW, C]
            acc = a[:, :, ix0] * wx0 + a[:, :, ix1] * wx1  # [N, rows, OW, C]
            out[:, s] = round_to(acc, out_type) if out_type.is_float else acc
    return out

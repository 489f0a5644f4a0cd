#version 450
// PAD (spec 2.10.2): out[c] = in[c - lo] where 0 <= c - lo < in_shape in every dimension, else pad_const[0].
// Padding is exact data movement: ELEM_T is a raw unit of 1..16 bytes, one or several elements when the innermost
// dimension and its padding allow; PAD_T is the raw element type and SPLAT(v) repeats one element over a unit.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer In { ELEM_T a[]; };
layout(set = 0, binding = 1) readonly buffer PadConst { PAD_T pad_const[]; };
layout(set = 0, binding = 2) writeonly buffer Out { ELEM_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;
    int rank;
    int shape[MAX_RANK];      // output
    int in_shape[MAX_RANK];
    int lo[MAX_RANK];         // padding before, per dimension
    int in_stride[MAX_RANK];
} p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint rem = i;
    int s = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
        uint n = uint(p.shape[d]);
        int c = int(rem % n) - p.lo[d];
        rem /= n;
        inside = inside && c >= 0 && c < p.in_shape[d];
        s += c * p.in_stride[d];
    }
    o[i] = inside ? a[s] : SPLAT(pad_const[0]);
}

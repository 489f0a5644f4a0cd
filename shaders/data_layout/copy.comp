#version 450
// Strided copy (spec 2.10 data layout: CONCAT, REVERSE, SLICE, TILE, TRANSPOSE; also SCATTER's values_in copy).
// Walks a domain of `rank` dimensions; element i (row-major in the domain) with coordinates c[] is copied from
//   src[src_base + sum(c[d] * src_stride[d])]  (with WRAP: c[d] % wrap[d], TILE's modulo over the input shape)
// to dst[dst_base + sum(c[d] * dst_stride[d])]. Strides may be negative (REVERSE) or 0. Data movement is exact,
// so ELEM_T is just a raw unit of 1, 2, 4, 8 or 16 bytes (uint8_t .. uvec4; see tosa_vk/lower/data_layout.py).
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer Src { ELEM_T src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { ELEM_T dst[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;
    int rank;
    int src_base;
    int dst_base;
    int shape[MAX_RANK];
    int src_stride[MAX_RANK];
    int dst_stride[MAX_RANK];
    int wrap[MAX_RANK];
} p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    int s = p.src_base, t = p.dst_base;
    uint rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
        uint n = uint(p.shape[d]);
        uint c = rem % n;
        rem /= n;
#ifdef WRAP
        s += int(c % uint(p.wrap[d])) * p.src_stride[d];
#else
        s += int(c) * p.src_stride[d];
#endif
        t += int(c) * p.dst_stride[d];
    }
    dst[t] = src[s];
}

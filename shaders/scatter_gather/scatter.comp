#version 450
// SCATTER (spec 2.11.2), second pass: values_out[n, indices[n, w], c] = input[n, w, c]; values_out already holds
// a copy of values_in (data_layout/copy). TOSA REQUIREs that indices are in [0, K) and don't repeat within a
// batch, so writes never collide; an out-of-range index (unpredictable result) is skipped.
// ELEM_T is a raw unit of 1..16 bytes: C is counted in units.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"
#ifndef INDEX_T
#define INDEX_T int
#endif

layout(set = 0, binding = 0) readonly buffer Indices { INDEX_T indices[]; };  // int, or int64_t for i64_t indices
layout(set = 0, binding = 1) readonly buffer In { ELEM_T a[]; };
layout(set = 0, binding = 2) writeonly buffer Out { ELEM_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;   // N * W * C
    uint C;
    uint W;
    int K;
} p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint c = i % p.C, nw = i / p.C, n = nw / p.W;
    INDEX_T k = indices[nw];
    if (k < INDEX_T(0) || k >= INDEX_T(p.K)) return;
    o[(n * uint(p.K) + uint(k)) * p.C + c] = a[i];
}

#version 450
// GATHER (spec 2.11.1): out[n, w, c] = values[n, indices[n, w], c] for values [N, K, C], indices [N, W].
// ELEM_T is a raw unit of 1..16 bytes: C is counted in units (several elements per unit when C allows).
// An index outside [0, K) violates a REQUIRE (unpredictable result): it is clamped to stay inside the buffer.
// INDEX_T: int, or int64_t for i64_t indices (EXT-INT64).
// A piece of a split table (tosa_vk/stages/passes/split.py) stores its units of every row into the whole result
// through the store map of a strided CONCAT, O_AT (include/epilogue.glsl; its first unit and width push words).
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"
#include "types.glsl"
#ifndef INDEX_T
#define INDEX_T int
#endif

layout(set = 0, binding = 0) readonly buffer Values { ELEM_T values[]; };
layout(set = 0, binding = 1) readonly buffer Indices { INDEX_T indices[]; };
layout(set = 0, binding = 2) writeonly buffer Out { ELEM_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;   // N * W * C
    uint C;
    uint W;
    int K;
    EP_PUSH
} p;
#endif
#include "epilogue.glsl"

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint c = i % p.C, nw = i / p.C, n = nw / p.W;
    uint k = uint(clamp(indices[nw], INDEX_T(0), INDEX_T(p.K - 1)));
    o[O_AT(i)] = values[(n * uint(p.K) + k) * p.C + c];
}

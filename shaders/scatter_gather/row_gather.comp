#version 450
// ROW_GATHER (TOSA 1.1): out[n, w * R + r, c] = values[n, indices[n, w] + r, c] for values [N, K, C], indices
// [N, W] and R = row_count rows per index. ELEM_T is a raw unit as in gather.comp (C counted in units).
// IDX64: int64 indices, read as two words. An index with k < 0 or k + R > K violates a REQUIRE (unpredictable
// result): the row read is clamped to stay inside the buffer.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer Values { ELEM_T values[]; };
layout(set = 0, binding = 1) readonly buffer Indices { int indices[]; };
layout(set = 0, binding = 2) writeonly buffer Out { ELEM_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;   // N * W * R * C
    uint C;
    uint W;
    int K;
    int R;
} p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint c = i % p.C, row = i / p.C;
    uint r = row % uint(p.R), nw = row / uint(p.R), n = nw / p.W;
#ifdef IDX64
    int lo = indices[2u * nw], hi = indices[2u * nw + 1u];
    int k = hi == (lo >> 31) ? lo : (hi < 0 ? 0 : p.K - 1);  // past int32: out of range either way
#else
    int k = indices[nw];
#endif
    uint kr = uint(min(clamp(k, 0, p.K - 1) + int(r), p.K - 1));
    o[i] = values[(n * uint(p.K) + kr) * p.C + c];
}

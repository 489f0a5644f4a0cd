#version 450
// ROW_GATHER_BLOCK_SCALED (TOSA 1.1), one tensor of its (values, scales) list: out[n, w * R + r, c] =
// values[n, indices[n, w] + r, c] for values [N, K, C], indices [N, W], R = row_count; the scales (C / block_size
// columns) are gathered by a second dispatch of the same shader. ELEM_T is a raw unit of 1..16 bytes, C counted in
// units; INDEX_T the index type (int or int64_t). An index with index + R outside [0, K] violates a REQUIRE
// (unpredictable result): rows are clamped to stay inside the buffer.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer Values { ELEM_T values[]; };
layout(set = 0, binding = 1) readonly buffer Indices { INDEX_T indices[]; };
layout(set = 0, binding = 2) writeonly buffer Out { ELEM_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; uint C; uint W; int K; uint R; } p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint c = i % p.C, row = i / p.C;  // output row n * W * R + w * R + r
    uint r = row % p.R, nw = row / p.R, n = nw / p.W;
    uint k = uint(clamp(int(indices[nw]) + int(r), 0, p.K - 1));
    o[i] = values[(n * uint(p.K) + k) * p.C + c];
}

#version 450
// MATMUL with a long C (spec 2.3.7), second pass: out[n, i] = sum over the splits s of P[n, s, i] (matmul.comp's
// PARTIAL sums in the accumulator type), rounded once to the output type.
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InP { P_T part[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;     // N * H * W
    uint plane;     // H * W
    uint splits;
} p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint n = i / p.plane, r = i % p.plane;
    uint idx = n * p.splits * p.plane + r;
    P_C acc = LOAD_P(part[idx]);
    for (uint s = 1u; s < p.splits; ++s) acc += LOAD_P(part[idx + s * p.plane]);
    o[i] = STORE_O(acc);
}

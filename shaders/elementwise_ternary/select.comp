#version 450
// SELECT (spec 2.7.1) with broadcasting: out = a ? b : c. The values are copied as stored (bit-exact, NaN
// payloads included). BROADCAST when an input is broadcast (else all inputs have the output's shape).
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) readonly buffer InC { C_T c[]; };
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
layout(push_constant) uniform Params {
    uint total;
    int rank;
    int shape[MAX_RANK];
    int stride_a[MAX_RANK];
    int stride_b[MAX_RANK];
    int stride_c[MAX_RANK];
} p;

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
#ifdef BROADCAST
    uint ia, ib, ic;
    BROADCAST_OFFSET(i, p.rank, p.shape, p.stride_a, ia);
    BROADCAST_OFFSET(i, p.rank, p.shape, p.stride_b, ib);
    BROADCAST_OFFSET(i, p.rank, p.shape, p.stride_c, ic);
#else
    uint ia = i, ib = i, ic = i;
#endif
    o[i] = LOAD_A(a[ia]) ? b[ib] : c[ic];
}

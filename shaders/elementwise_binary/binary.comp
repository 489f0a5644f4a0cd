#version 450
// Element-wise binary operators with broadcasting (spec 2.5): out = OP(a, b), computed in the compute type
// COMPUTE_T. Defines from the lowering: A_*, B_*, O_* (tosa_vk/lower/types.py), COMPUTE_T, OP(a, b), and
// BROADCAST when an input is broadcast (else both inputs have the output's shape). OP may call the
// helpers of include/elementwise.glsl. SHIFT_BUFFER adds binding 3, S: MUL's run-time shift (T<i8_t>[1]),
// read as SHIFT.
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
layout(push_constant) uniform Params {
    uint total;
    int rank;
    int shape[MAX_RANK];
    int stride_a[MAX_RANK];
    int stride_b[MAX_RANK];
} p;
#ifdef SHIFT_BUFFER
layout(set = 0, binding = 3) readonly buffer InS { S_T s[]; };
#define SHIFT int(s[0])
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
#ifdef BROADCAST
    uint ia, ib;
    BROADCAST_OFFSET(i, p.rank, p.shape, p.stride_a, ia);
    BROADCAST_OFFSET(i, p.rank, p.shape, p.stride_b, ib);
#else
    uint ia = i, ib = i;
#endif
    COMPUTE_T x = COMPUTE_T(LOAD_A(a[ia]));
    COMPUTE_T y = COMPUTE_T(LOAD_B(b[ib]));
    o[i] = STORE_O(OP(x, y));
}

#version 450
// SELECT (spec 2.7.1) with broadcasting: out = a ? b : c, the values copied as stored (bit-exact, NaN payloads
// included). Specialization constants (tosa_vk/lower/elementwise_binary.py): per input X = A, B, C, X_MODE 0 (the
// output's shape), 1 (one element), 2 (broadcast: offset from the push-constant shape / strides) or 3 (broadcast,
// along the innermost dimension too); VEC4: 4 elements per invocation with 4-vector loads / stores (X_T4), the
// last invocation also does the tail; with X broadcast the innermost (coalesced) dimension is a multiple of 4, so
// X's 4 elements are consecutive, or equal (mode 3).
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) readonly buffer InC { C_T c[]; };
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
// the same buffers seen as 4-vectors (VEC4)
layout(set = 0, binding = 0) readonly buffer InA4 { A_T4 a4[]; };
layout(set = 0, binding = 1) readonly buffer InB4 { B_T4 b4[]; };
layout(set = 0, binding = 2) readonly buffer InC4 { C_T4 c4[]; };
layout(set = 0, binding = 3) writeonly buffer Out4 { O_T4 o4[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;
    int rank;
    int shape[MAX_RANK];
    int stride_a[MAX_RANK];
    int stride_b[MAX_RANK];
    int stride_c[MAX_RANK];
} p;
#endif

void scalar_element(uint i) {
    uint ia, ib, ic;
    INPUT_OFFSET(A, p.stride_a, i, ia)
    INPUT_OFFSET(B, p.stride_b, i, ib)
    INPUT_OFFSET(C, p.stride_c, i, ic)
    o[i] = LOAD_A(a[ia]) ? b[ib] : c[ic];
}

void main() {
    if (VEC4 == 0) {
        uint i = flat_index();
        if (i < p.total) scalar_element(i);
        return;
    }
    uint j = flat_index();
    uint first = j * 4u;
    if (first + 4u <= p.total) {
        uint ia, ib, ic;
        INPUT_OFFSET(A, p.stride_a, first, ia)
        INPUT_OFFSET(B, p.stride_b, first, ib)
        INPUT_OFFSET(C, p.stride_c, first, ic)
        A_T4 va = INPUT_SPLAT(A) ? A_T4(a[ia]) : a4[ia >> 2];
        B_T4 vb = INPUT_SPLAT(B) ? B_T4(b[ib]) : b4[ib >> 2];
        C_T4 vc = INPUT_SPLAT(C) ? C_T4(c[ic]) : c4[ic >> 2];
        O_T4 r;
        for (int k = 0; k < 4; ++k) r[k] = LOAD_A(va[k]) ? vb[k] : vc[k];
        o4[j] = r;
    } else {
        for (uint i = first; i < p.total; ++i) scalar_element(i);
    }
}

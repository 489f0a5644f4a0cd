#version 450
// SELECT (spec 2.7.1) with broadcasting: out = a ? b : c, the values copied as stored (bit-exact, NaN payloads
// included). Per input X = A, B, C: X_SCALAR (one element), X_BROADCAST (offset from the push-constant shape /
// strides) or neither (the output's shape). VEC4: 4 elements per invocation with 4-vector loads / stores
// (X_T4), the last invocation also does the tail; with X_BROADCAST the innermost (coalesced) dimension is a
// multiple of 4, so X's 4 elements are consecutive, or equal (X_INNER_SPLAT).
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) readonly buffer InC { C_T c[]; };
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
#ifdef VEC4  // the same buffers seen as 4-vectors
layout(set = 0, binding = 0) readonly buffer InA4 { A_T4 a4[]; };
layout(set = 0, binding = 1) readonly buffer InB4 { B_T4 b4[]; };
layout(set = 0, binding = 2) readonly buffer InC4 { C_T4 c4[]; };
layout(set = 0, binding = 3) writeonly buffer Out4 { O_T4 o4[]; };
#endif
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

#define OFFSET(X, strides, i, r) \
    if (X##_MODE == 1) r = 0u; else if (X##_MODE == 2) BROADCAST_OFFSET(i, p.rank, p.shape, strides, r) else r = i;
#if defined(A_SCALAR)
#define A_MODE 1
#elif defined(A_BROADCAST)
#define A_MODE 2
#else
#define A_MODE 0
#endif
#if defined(B_SCALAR)
#define B_MODE 1
#elif defined(B_BROADCAST)
#define B_MODE 2
#else
#define B_MODE 0
#endif
#if defined(C_SCALAR)
#define C_MODE 1
#elif defined(C_BROADCAST)
#define C_MODE 2
#else
#define C_MODE 0
#endif

#ifdef A_INNER_SPLAT
#define A_SPLAT 1
#else
#define A_SPLAT 0
#endif
#ifdef B_INNER_SPLAT
#define B_SPLAT 1
#else
#define B_SPLAT 0
#endif
#ifdef C_INNER_SPLAT
#define C_SPLAT 1
#else
#define C_SPLAT 0
#endif
// the 4 elements of X for 4 consecutive outputs are equal
#define SPLAT(X) (X##_MODE == 1 || X##_SPLAT == 1)

void scalar_element(uint i) {
    uint ia, ib, ic;
    OFFSET(A, p.stride_a, i, ia)
    OFFSET(B, p.stride_b, i, ib)
    OFFSET(C, p.stride_c, i, ic)
    o[i] = LOAD_A(a[ia]) ? b[ib] : c[ic];
}

void main() {
#ifdef VEC4
    uint j = flat_index();
    uint first = j * 4u;
    if (first + 4u <= p.total) {
        uint ia, ib, ic;
        OFFSET(A, p.stride_a, first, ia)
        OFFSET(B, p.stride_b, first, ib)
        OFFSET(C, p.stride_c, first, ic)
        A_T4 va = SPLAT(A) ? A_T4(a[ia]) : a4[ia >> 2];
        B_T4 vb = SPLAT(B) ? B_T4(b[ib]) : b4[ib >> 2];
        C_T4 vc = SPLAT(C) ? C_T4(c[ic]) : c4[ic >> 2];
        O_T4 r;
        for (int k = 0; k < 4; ++k) r[k] = LOAD_A(va[k]) ? vb[k] : vc[k];
        o4[j] = r;
    } else {
        for (uint i = first; i < p.total; ++i) scalar_element(i);
    }
#else
    uint i = flat_index();
    if (i < p.total) scalar_element(i);
#endif
}

#version 450
// Element-wise binary operators with broadcasting (spec 2.5, 2.8): out = OP(a, b), computed in the compute
// type COMPUTE_T. Defines from the lowering: A_*, B_*, O_* (tosa_vk/lower/types.py), COMPUTE_T, OP(a, b)
// (may call the helpers of include/elementwise.glsl). Specialization constants (tosa_vk/lower/elementwise_binary.py):
// per input X = A, B, X_MODE
//   0  the output's shape;
//   1  one element, read for every output;
//   2  broadcast along some dimensions: offset from the push-constant shape / strides;
//   3  that, and along the innermost (coalesced) dimension.
// VEC4: each invocation does 4 consecutive elements with 4-vector loads / stores (X_T4: the storage
// 4-vector type), the last one also the tail. With X broadcast, the innermost (coalesced) dimension is a
// multiple of 4, so the 4 outputs share a row: X's 4 elements are consecutive, or equal (mode 3).
// SHIFT_BUFFER adds binding 3, S: MUL's run-time shift (T<i8_t>[1]), read as SHIFT.
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
// the same buffers seen as 4-vectors (VEC4)
layout(set = 0, binding = 0) readonly buffer InA4 { A_T4 a4[]; };
layout(set = 0, binding = 1) readonly buffer InB4 { B_T4 b4[]; };
layout(set = 0, binding = 2) writeonly buffer Out4 { O_T4 o4[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;
    int rank;
    int shape[MAX_RANK];
    int stride_a[MAX_RANK];
    int stride_b[MAX_RANK];
} p;
#endif
#ifdef SHIFT_BUFFER
layout(set = 0, binding = 3) readonly buffer InS { S_T s[]; };
#define SHIFT int(s[0])
#endif

O_T apply(A_T va, B_T vb) { return STORE_O(OP(COMPUTE_T(LOAD_A(va)), COMPUTE_T(LOAD_B(vb)))); }

void scalar_element(uint i) {
    uint ia, ib;
    INPUT_OFFSET(A, p.stride_a, i, ia)
    INPUT_OFFSET(B, p.stride_b, i, ib)
    o[i] = apply(a[ia], b[ib]);
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
        uint ia, ib;
        INPUT_OFFSET(A, p.stride_a, first, ia)
        INPUT_OFFSET(B, p.stride_b, first, ib)
        A_T4 va = INPUT_SPLAT(A) ? A_T4(a[ia]) : a4[ia >> 2];
        B_T4 vb = INPUT_SPLAT(B) ? B_T4(b[ib]) : b4[ib >> 2];
        o4[j] = O_T4(apply(va.x, vb.x), apply(va.y, vb.y), apply(va.z, vb.z), apply(va.w, vb.w));
    } else {
        for (uint i = first; i < p.total; ++i) scalar_element(i);
    }
}

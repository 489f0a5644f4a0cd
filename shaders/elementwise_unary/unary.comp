#version 450
// Element-wise unary operators (spec 2.6): out = OP(in), one element per invocation. Defines from the
// lowering (tosa_vk/lower/elementwise_unary.py): A_*, O_* (tosa_vk/lower/types.py) and either
//   OP(x)       on the compute value (LOAD_A -> OP -> STORE_O), OP may call include/unary.glsl, or
//   BITS_OP(v)  on the stored value itself (sign-bit operations on floats: exact for every encoding);
// NEGATE adds ZERO_POINTS: bindings Z1 / Z2 hold input1_zp / output_zp (one element each, constant or not)
// and OP(x, zp1, zp2).
#include "types.glsl"
#include "index.glsl"
#include "unary.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
#ifdef ZERO_POINTS
layout(set = 0, binding = 1) readonly buffer InZ1 { Z1_T z1[]; };
layout(set = 0, binding = 2) readonly buffer InZ2 { Z2_T z2[]; };
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
#else
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
#endif
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; } p;
#endif

// PER_INVOCATION consecutive elements per invocation (fewer invocations: less overhead on lavapipe).
#ifndef PER_INVOCATION
#define PER_INVOCATION 1
#endif

void main() {
    uint base = flat_index() * PER_INVOCATION;
    for (uint k = 0u; k < PER_INVOCATION; ++k) {
        uint i = base + k;
        if (i >= p.total) return;
#if defined(BITS_OP)
        o[i] = BITS_OP(a[i]);
#elif defined(ZERO_POINTS)
        o[i] = STORE_O(OP(LOAD_A(a[i]), LOAD_Z1(z1[0]), LOAD_Z2(z2[0])));
#else
        o[i] = STORE_O(OP(LOAD_A(a[i])));
#endif
    }
}

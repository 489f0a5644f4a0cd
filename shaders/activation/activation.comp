#version 450
// Activation functions (spec 2.4): out = OP(in), one element per invocation, or four with VEC4. Defines from the lowering
// (tosa_vk/lower/activation.py): A_*, O_* (tosa_vk/lower/types.py), OP(x) on the compute value (may call
// include/unary.glsl and include/elementwise.glsl). CLAMP defines CLAMP_T, the type of the push-constant
// bounds lo / hi (min_val / max_val, exact in int or fp32 for every input type).
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"
#include "unary.glsl"

#ifndef CLAMP_T
#define CLAMP_T int
#endif

#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; CLAMP_T lo; CLAMP_T hi; } p;
#endif

#ifdef VEC4
// Four elements per invocation through 4-vector loads and stores (total is a multiple of 4).
layout(set = 0, binding = 0) readonly buffer InA { A_T4 a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T4 o[]; };

void main() {
    uint i = flat_index();
    if (i >= p.total / 4u) return;
    A_T4 v = a[i];
    O_T4 r;
    r.x = STORE_O(OP(LOAD_A(v.x)));
    r.y = STORE_O(OP(LOAD_A(v.y)));
    r.z = STORE_O(OP(LOAD_A(v.z)));
    r.w = STORE_O(OP(LOAD_A(v.w)));
    o[i] = r;
}
#else
layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    o[i] = STORE_O(OP(LOAD_A(a[i])));
}
#endif

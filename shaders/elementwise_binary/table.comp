#version 450
// TABLE (spec 2.5.17): int8 -> table[value + 128] of a 256-entry int8 table; with LOOKUP_INT16, int16 ->
// apply_lookup_s on a 513-entry int16 table, an interpolated 16.7 int32. The table is the input tensor T.
// 4 elements per invocation with 4-vector loads / stores (A_T4, O_T4); the last invocation does the tail.
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 0) readonly buffer InA4 { A_T4 a4[]; };
layout(set = 0, binding = 1) readonly buffer InT { T_T table[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
layout(set = 0, binding = 2) writeonly buffer Out4 { O_T4 o4[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; } p;
#endif

O_T lookup(A_T v) {
    int value = LOAD_A(v);
#ifdef LOOKUP_INT16
    int result;
    LOOKUP_S(table, value, result);
    return STORE_O(result);
#else
    return table[value + 128];
#endif
}

void main() {
    uint j = flat_index();
    uint first = j * 4u;
    if (first + 4u <= p.total) {
        A_T4 v = a4[j];
        o4[j] = O_T4(lookup(v.x), lookup(v.y), lookup(v.z), lookup(v.w));
    } else {
        for (uint i = first; i < p.total; ++i) o[i] = lookup(a[i]);
    }
}

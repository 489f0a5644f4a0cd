#version 450
// TABLE (spec 2.5.17): int8 -> table[value + 128] of a 256-entry int8 table; with LOOKUP_INT16, int16 ->
// apply_lookup_s on a 513-entry int16 table, an interpolated 16.7 int32. The table is the input tensor T.
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InT { T_T table[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
layout(push_constant) uniform Params { uint total; } p;

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    int value = LOAD_A(a[i]);
#ifdef LOOKUP_INT16
    int result;
    LOOKUP_S(table, value, result);
    o[i] = STORE_O(result);
#else
    o[i] = table[value + 128];
#endif
}

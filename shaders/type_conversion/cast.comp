#version 450
// CAST (spec 2.13.1): out = CONVERT(in), element-wise. Defines from the lowering: A_* (input), O_* (output)
// (tosa_vk/lower/types.py) and CONVERT(x), an expression of the input's compute value x whose result STORE_O
// converts exactly or with the one rounding the spec asks for (float -> float: round to nearest even, fp8 in
// OCP-OFP8's non-saturating mode; see include/types.glsl).
#include "types.glsl"
#include "index.glsl"
#include "conversion.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; } p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    A_C x = LOAD_A(a[i]);
    o[i] = STORE_O(CONVERT(x));
}

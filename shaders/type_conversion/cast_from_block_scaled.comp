#version 450
// CAST_FROM_BLOCK_SCALED (TOSA 1.1): out = value x 2^(scale - 127), element-wise, with the scale of the element's
// block of BLOCK elements (block i / BLOCK of the flat index: the last dimension is whole blocks). Defines: A_* (MX
// data), S_* (fp8ue8m0 scales), O_* (output), BLOCK; NAN_KEEPS_VALUE: where both are NaN the value's NaN is kept
// (Arm's reference model does so for bf16 outputs; fp32 outputs get the scale's positive NaN).
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InS { S_T s[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; } p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint code = uint(s[i / uint(BLOCK)]);
    float x = LOAD_A(a[i]);
    float v = ldexp(x, int(code) - 127);  // exact: no multiply by a (subnormal) 2^-127
    if (isnan(x)) v = uintBitsToFloat(0x7fc00000u | (floatBitsToUint(x) & 0x80000000u));  // quiet, no payload
    if (code == 255u) {
#ifdef NAN_KEEPS_VALUE
        v = isnan(x) ? v : uintBitsToFloat(0x7fc00000u);
#else
        v = uintBitsToFloat(0x7fc00000u);
#endif
    }
    o[i] = STORE_O(v);
}

#version 450
// CAST_TO_BLOCK_SCALED (TOSA 1.1): one invocation a block of BLOCK elements (the last dimension is whole blocks, so
// block b is flat elements b * BLOCK .., push constant total = the number of blocks). Defines: A_* (input), O_* (MX data), S_* (fp8ue8m0 scales), BLOCK,
// OUT_MAX (the largest value rounding to normal_max of O), OUT_EXP (floor(log2(OUT_MAX))), CEIL_SCALE (fp8e4m3),
// NAN_CODE (fp8e5m2: the NaN code Arm's reference model writes, 0x7e).
// The scale is the spec's calc_block_scale, found exactly: the smallest 2^k with max_abs / 2^k <= OUT_MAX
// (CEIL_SCALE) or < OUT_MAX (the other types: floor + 1), clipped to fp8ue8m0's [2^-127, 2^127]; NaN (0xff) when
// the block holds a NaN or an infinity; 2^-127 for an all-zero block. Data: x / 2^k rounded by STORE_O.
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
layout(set = 0, binding = 2) writeonly buffer OutS { S_T s[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; } p;
#endif

bool within(float m, int k) {
#ifdef CEIL_SCALE
    return ldexp(m, -k) <= OUT_MAX;
#else
    return ldexp(m, -k) < OUT_MAX;
#endif
}

void main() {
    uint b = flat_index();
    if (b >= p.total) return;
    uint base = b * uint(BLOCK);
    float m = 0.0;
    bool special = false;
    for (uint i = 0u; i < uint(BLOCK); ++i) {
        float x = LOAD_A(a[base + i]);
        special = special || isnan(x) || isinf(x);
        m = max(m, abs(x));
    }
    if (special) {
        s[b] = S_T(255);
#ifdef NAN_CODE
        for (uint i = 0u; i < uint(BLOCK); ++i) o[base + i] = O_T(NAN_CODE);  // as Arm's reference model writes it
#else
        for (uint i = 0u; i < uint(BLOCK); ++i) o[base + i] = STORE_O(uintBitsToFloat(0x7fc00000u));
#endif
        return;
    }
    int k = -127;
    if (m > 0.0) {
        int e;
        frexp(m, e);  // 2^(e-1) <= m < 2^e: every k below e - OUT_EXP - 2 leaves m / 2^k above OUT_MAX
        k = e - OUT_EXP - 3;
        while (!within(m, k)) k += 1;
        k = clamp(k, -127, 127);
    }
    s[b] = S_T(k + 127);
    for (uint i = 0u; i < uint(BLOCK); ++i) o[base + i] = STORE_O(ldexp(LOAD_A(a[base + i]), -k));
}

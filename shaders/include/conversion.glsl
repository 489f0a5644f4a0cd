// Helpers of the type-conversion operators (spec 2.13): CAST rounding / saturation and RESCALE's scaling
// helpers (spec "Scaling Helpers": apply_scale_32 / apply_scale_16) in 64-bit integer arithmetic.
#ifndef TOSA_VK_CONVERSION_GLSL
#define TOSA_VK_CONVERSION_GLSL

#extension GL_EXT_shader_explicit_arithmetic_types : require

// CAST integer -> float: `v` rounded once (to nearest, ties to even) to `sig` significant bits (24 for fp32,
// 11 for fp16, 8 for bf16). The result is exact in fp32, so the STORE conversion to the output type adds no second
// rounding (int32 -> fp32 -> bf16 would round twice).
float int_to_float_rne(int v, int sig) {
    uint a = uint(v < 0 ? -v : v);                          // -INT_MIN wraps to INT_MIN: uint 2^31, right
    int msb = findMSB(a);
    int drop = msb + 1 - sig;                               // low bits that don't fit the significand
    if (drop > 0) {
        uint q = a >> uint(drop), rem = a & ((1u << uint(drop)) - 1u), half_ = 1u << uint(drop - 1);
        if (rem > half_ || (rem == half_ && (q & 1u) == 1u)) q += 1u;
        float r = ldexp(float(q), drop);                    // q <= 2^sig: exact
        return v < 0 ? -r : r;
    }
    return float(v);                                        // at most `sig` bits: exact
}

// CAST float -> integer: round_to_nearest_int (ties to even), then apply_clip_s to [lo, hi]. A NaN input gives an
// unpredictable result; 0 like the reference backend.
int float_to_int_sat(float x, int lo, int hi) {
    if (isnan(x)) return 0;
    float r = roundEven(x);
    if (r <= float(lo)) return lo;                          // float(lo) = -2^(bits-1) is exact
    if (r >= -float(lo)) return hi;                         // 2^(bits-1) is exact; maximum_s is not for int32
    return clamp(int(r), lo, hi);
}

// apply_scale_32: (value * multiplier + round) >> shift, arithmetic shift; DOUBLE_ROUND moves the rounding point
// by 2^30 towards the value's sign when shift > 31. REQUIREs (multiplier >= 0, 2 <= shift <= 62, value range) are
// the graph's responsibility.
int64_t apply_scale_32(int64_t value, int64_t multiplier, int shift, bool double_round) {
    int64_t round_ = int64_t(1) << (shift - 1);
    // The sign as (value >> 63) | 1, without a comparison: lavapipe (Mesa 22.3, LLVM 15) evaluated `value >= 0` as
    // true for negative values in some inlined uses (fused element-wise kernels), a wrong rounding for them.
    if (double_round && shift > 31) round_ += ((value >> 63) | int64_t(1)) * (int64_t(1) << 30);
    return (value * multiplier + round_) >> shift;
}

// apply_scale_16: an int48 value scaled by an int16 multiplier.
int64_t apply_scale_16(int64_t value, int64_t multiplier, int shift) {
    return (value * multiplier + (int64_t(1) << (shift - 1))) >> shift;
}

// RESCALE (spec 2.13.2) of one extended value: clip(apply_scale(value - input_zp, multiplier, shift) + output_zp,
// lo, hi), the 32-bit scale (`scale32`, `double_round`) or the 16-bit one. The one statement of its arithmetic:
// rescale.comp calls it, and so does every epilogue that applies a RESCALE (tosa_vk/lower/epilogue.py).
int64_t tosa_rescale(int64_t value, int64_t input_zp, int64_t multiplier, int shift, bool scale32, bool double_round,
                     int64_t output_zp, int64_t lo, int64_t hi) {
    value -= input_zp;
    int64_t r = scale32 ? apply_scale_32(value, multiplier, shift, double_round) : apply_scale_16(value, multiplier, shift);
    return clamp(r + output_zp, lo, hi);
}

#endif

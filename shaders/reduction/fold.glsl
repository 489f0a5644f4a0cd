// What every reduction kernel shares (reduce.comp, reduce_subgroup.comp): the once-rounded fp64 -> fp32 step of
// fp16 / bf16 sums and products, and the prologue (the reduction before this one, tosa_vk/fuse.py) read per element.
#ifndef TOSA_VK_REDUCTION_FOLD_GLSL
#define TOSA_VK_REDUCTION_FOLD_GLSL

// fp64 -> fp32 rounded to odd: truncate, then set the last bit when inexact. Rounding that to a format with at
// most 22 fraction bits (fp16, bf16) to nearest gives the correctly rounded result of the fp64 value (no double
// rounding), so fp16 / bf16 sums and products are rounded once, like static_cast<in_out_t>(acc).
float f64_to_f32_odd(double d) {
    float f = float(d);
    if (isnan(f) || isinf(f)) return f;
    double back = double(f);
    if (back == d) return f;
    uint u = floatBitsToUint(f);
    if (abs(back) > abs(d)) u -= 1u;  // one step toward zero: the truncation of d
    return uintBitsToFloat(u | 1u);
}

#ifdef PROLOGUE
A_T prologue(uint idx) {
    uint k = (idx / P_INNER) * P_LEN * P_INNER + idx % P_INNER;
    P_ACC_T acc = P_INIT;
    for (uint n = 0u; n < P_LEN; ++n, k += P_INNER) {
        acc = P_STEP(acc, LOAD_A(a[k]));
    }
    return STORE_A(P_FINISH);
}
#define A_AT(idx) prologue(idx)
#else
#define A_AT(idx) a[idx]
#endif

#endif

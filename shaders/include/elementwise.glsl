// Scalar helpers of the element-wise operators (spec 2.5, 2.7, 2.8, 4.5.1), one per spec pseudocode function.
#ifndef TOSA_VK_ELEMENTWISE_GLSL
#define TOSA_VK_ELEMENTWISE_GLSL

// apply_max_s / apply_min_s for floats with the nan_mode of MAXIMUM / MINIMUM / CLAMP.
float max_propagate(float a, float b) { return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : max(a, b); }
float min_propagate(float a, float b) { return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : min(a, b); }
float max_ignore(float a, float b) { return isnan(a) ? b : (isnan(b) ? a : max(a, b)); }
float min_ignore(float a, float b) { return isnan(a) ? b : (isnan(b) ? a : min(a, b)); }
// ABS as its own kernel (activation.comp) computes it: abs() of an integer (abs(minimum) violates a REQUIRE), a
// float's sign bit cleared (-0 -> +0, NaN stays NaN); an epilogue step or a group member calls it (fuse.NAMED)
int tosa_abs(int x) { return abs(x); }
float tosa_abs(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0x7fffffffu); }

// apply_intdiv_s (INTDIV): truncation toward zero. value2 == 0 and INT_MIN / -1 are REQUIRE violations; they
// are kept away from the hardware divide (which may trap) and give 0 / INT_MIN.
int intdiv_s(int a, int b) {
    if (b == 0) return 0;
    if (b == -1) return -a;
    return a / b;
}

// ARITHMETIC_RIGHT_SHIFT: with `round`, add the last bit shifted out when value2 > 0 (cannot overflow: the
// shift halved the range first).
int arithmetic_right_shift(int a, int b, bool round_) {
    int r = a >> b;
    if (round_ && b > 0) r += (a >> (b - 1)) & 1;
    return r;
}

// LOGICAL_RIGHT_SHIFT: zero_extend the `bits`-wide value (mask), shift, then the store wraps to the type.
int logical_right_shift(int a, int b, uint mask) { return int((uint(a) & mask) >> uint(b)); }

#ifdef ELEMENTWISE_INT64  // defined by lowerings that checked shaderInt64, and for every INT64 binding
// The same for i64_t (EXT-INT64): the shift amount is REQUIREd in [0, 63].
int64_t intdiv_s(int64_t a, int64_t b) {
    if (b == int64_t(0)) return int64_t(0);
    if (b == -1l) return -a;  // INT64_MIN / -1 (a REQUIRE violation) wraps instead of trapping
    return a / b;
}
int64_t arithmetic_right_shift(int64_t a, int64_t b, bool round_) {
    int64_t r = a >> b;
    if (round_ && b > int64_t(0)) r += (a >> (b - 1l)) & 1l;
    return r;
}
int64_t logical_right_shift(int64_t a, int64_t b) { return int64_t(uint64_t(a) >> uint64_t(b)); }

// MUL for i32_t: with shift > 0 the 64-bit product is rounded and shifted (REQUIRE: the result fits in i32_t),
// else apply_mul_s keeps the low 32 bits.
int mul_shift(int a, int b, int shift) {
    if (shift <= 0) return a * b;
    int64_t product = int64_t(a) * int64_t(b);
    product = (product + (int64_t(1) << (shift - 1))) >> shift;
    return int(product);
}
#endif

// apply_lookup_s (spec 4.5.1.x, TABLE int16): value as 9.7 fixed point; the top 9 bits index the 513-entry
// table, the low 7 interpolate between table[index] and table[index + 1]. Result 16.7 in an int32.
#define LOOKUP_S(table, value, result) { \
    int v_ = (value); int index_ = (v_ + 32768) >> 7; int fraction_ = v_ & 0x7f; \
    int base_ = int(table[index_]); int next_ = int(table[index_ + 1]); \
    result = (base_ << 7) + (next_ - base_) * fraction_; }

#ifdef ELEMENTWISE_FP64  // defined by lowerings that checked shaderFloat64
// POW (spec 2.5.15) computed in fp64 so the result meets the error bound for any exponent: exp(y * log(x)).
// GLSL has no fp64 exp / log: both are range reduction + series here, accurate to a few fp64 ulp.
const double LN2_F64 = 0.6931471805599453094LF;
const double ODD_RECIPROCALS[11] = double[](1.0LF, 0.3333333333333333LF, 0.2LF, 0.14285714285714285LF, 0.1111111111111111LF, 0.09090909090909091LF, 0.07692307692307693LF, 0.06666666666666667LF, 0.058823529411764705LF, 0.05263157894736842LF, 0.047619047619047616LF);  // 1 / (2k + 1)
const double INV_FACTORIALS[15] = double[](
    1.0LF, 1.0LF, 0.5LF, 0.16666666666666666LF, 0.041666666666666664LF, 0.008333333333333333LF, 0.001388888888888889LF, 0.0001984126984126984LF, 2.48015873015873e-05LF, 2.7557319223985893e-06LF, 2.755731922398589e-07LF, 2.505210838544172e-08LF, 2.08767569878681e-09LF, 1.6059043836821613e-10LF, 1.1470745597729725e-11LF);  // 1 / n!

// log(x) for a positive finite normal double: x = m * 2^e with m in [sqrt(1/2), sqrt(2)),
// log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716.
double log_f64(double x) {
    uvec2 w = unpackDouble2x32(x);
    int e = int((w.y >> 20) & 0x7ffu) - 1023;
    double m = packDouble2x32(uvec2(w.x, (w.y & 0x000fffffu) | 0x3ff00000u));
    if (m > 1.4142135623730951LF) { m *= 0.5LF; e += 1; }
    double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s;
    double sum = 1.0LF / 23.0LF;  // Horner: 1 + s2/3 + s2^2/5 + ... + s2^11/23 (s^23 / 23 < 1e-19)
    for (int k = 10; k >= 0; --k) sum = sum * s2 + ODD_RECIPROCALS[k];
    sum *= s;
    return 2.0LF * sum + double(e) * LN2_F64;
}

// exp(t): t = k ln2 + r with |r| <= ln2 / 2, Taylor series of exp(r), times 2^k built from its bits.
// |t| is clamped to 700: exp(+-700) already overflows / underflows every 32-bit-or-narrower float.
double exp_f64(double t) {
    t = clamp(t, -700.0LF, 700.0LF);
    double k = roundEven(t * 1.4426950408889634LF);  // t / ln2
    double r = t - k * LN2_F64;
    double sum = INV_FACTORIALS[14];  // Horner: sum r^n / n!, n <= 14 (0.35^15 / 15! < 1e-18)
    for (int n = 13; n >= 0; --n) sum = sum * r + INV_FACTORIALS[n];
    return sum * packDouble2x32(uvec2(0u, uint(int(k) + 1023) << 20));
}

// apply_pow: REQUIRE(x >= 0, x > 0 || y > 0, both finite); x == 0 && y > 0 gives 0, y == 0 gives 1.
float pow_f64(float x, float y) {
    if (isnan(x) || isnan(y) || x < 0.0) return uintBitsToFloat(0x7fc00000u);
    if (x == 0.0) return y > 0.0 ? 0.0 : (y == 0.0 ? 1.0 : uintBitsToFloat(0x7f800000u));
    if (y == 0.0) return 1.0;
    return float(exp_f64(double(y) * log_f64(double(x))));
}
#endif

#endif

// Math helpers of the element-wise unary and activation kernels (spec 2.6, 2.4).
// The transcendental functions are evaluated in fp64 arithmetic (range reduction + polynomial; GLSL has no
// fp64 exp/log/sin) and rounded once to the fp32 compute type, so their error is ~0.5 ulp of fp32: far inside
// the spec's bounds (EXP/LOG/SIN/COS/TANH/SIGMOID ABS_ERROR, ERF 5 ulp, RSQRT 2 ulp, RECIPROCAL 1 ulp) for
// fp32, fp16 and bf16 alike. Special values follow each operator's "Floating-point behavior" table.
#ifndef TOSA_VK_UNARY_GLSL
#define TOSA_VK_UNARY_GLSL

#extension GL_EXT_shader_explicit_arithmetic_types : require

#ifdef ELEMENTWISE_INT64  // an INT64 binding (EXT-INT64)
// count_leading_zeros of an i64_t: 64 for 0 (findMSB has no 64-bit form)
int64_t clz64(int64_t a) {
    uint hi = uint(uint64_t(a) >> 32ul), lo = uint(uint64_t(a) & 0xfffffffful);
    return int64_t(hi != 0u ? 31 - findMSB(hi) : 63 - findMSB(lo));
}
#endif

#define F32_NAN uintBitsToFloat(0x7fc00000u)
#define F32_INF uintBitsToFloat(0x7f800000u)

const double LN2_HI = 6.93147180369123816490e-01LF;   // fdlibm's split of ln(2): LN2_HI has 32 significant bits
const double LN2_LO = 1.90821492927058770002e-10LF;
const double LOG2E = 1.44269504088896338700e+00LF;

// exp(x) for |x| <= 1000: x = k ln2 + r, |r| <= ln2/2, exp(r) by its Taylor series to r^14 (error < 1e-17).
double exp_d(double x) {
    double k = floor(x * LOG2E + 0.5LF);
    double r = fma(-k, LN2_HI, x);
    r = fma(-k, LN2_LO, r);
    double p = 1.0LF / 87178291200.0LF;               // 1/14!
    p = fma(p, r, 1.0LF / 6227020800.0LF);
    p = fma(p, r, 1.0LF / 479001600.0LF);
    p = fma(p, r, 1.0LF / 39916800.0LF);
    p = fma(p, r, 1.0LF / 3628800.0LF);
    p = fma(p, r, 1.0LF / 362880.0LF);
    p = fma(p, r, 1.0LF / 40320.0LF);
    p = fma(p, r, 1.0LF / 5040.0LF);
    p = fma(p, r, 1.0LF / 720.0LF);
    p = fma(p, r, 1.0LF / 120.0LF);
    p = fma(p, r, 1.0LF / 24.0LF);
    p = fma(p, r, 1.0LF / 6.0LF);
    p = fma(p, r, 0.5LF);
    p = fma(p, r, 1.0LF);
    p = fma(p, r, 1.0LF);
    // scale by 2^k in two steps so that neither factor over/underflows on its own
    int ki = int(k);
    int k1 = ki / 2;
    return ldexp(ldexp(p, k1), ki - k1);
}

// log(x) for finite x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s), s = (m-1)/(m+1).
double log_d(double x) {
    int e;
    double m = frexp(x, e);
    if (m < 0.70710678118654752440LF) { m *= 2.0LF; e -= 1; }
    double f = m - 1.0LF;
    double s = f / (2.0LF + f);                          // |s| <= 0.1716
    double s2 = s * s;
    double p = 1.0LF / 23.0LF;
    p = fma(p, s2, 1.0LF / 21.0LF);
    p = fma(p, s2, 1.0LF / 19.0LF);
    p = fma(p, s2, 1.0LF / 17.0LF);
    p = fma(p, s2, 1.0LF / 15.0LF);
    p = fma(p, s2, 1.0LF / 13.0LF);
    p = fma(p, s2, 1.0LF / 11.0LF);
    p = fma(p, s2, 1.0LF / 9.0LF);
    p = fma(p, s2, 1.0LF / 7.0LF);
    p = fma(p, s2, 1.0LF / 5.0LF);
    p = fma(p, s2, 1.0LF / 3.0LF);
    double logm = 2.0LF * s + 2.0LF * s * s2 * p;
    double de = double(e);
    return fma(de, LN2_HI, fma(de, LN2_LO, logm));
}

// sin and cos of r in [-pi/4, pi/4] by their Taylor series (error < 1e-17).
double sin_poly(double r) {
    double r2 = r * r;
    double p = -1.0LF / 1307674368000.0LF;             // -1/15!
    p = fma(p, r2, 1.0LF / 6227020800.0LF);
    p = fma(p, r2, -1.0LF / 39916800.0LF);
    p = fma(p, r2, 1.0LF / 362880.0LF);
    p = fma(p, r2, -1.0LF / 5040.0LF);
    p = fma(p, r2, 1.0LF / 120.0LF);
    p = fma(p, r2, -1.0LF / 6.0LF);
    return fma(r * r2, p, r);
}
double cos_poly(double r) {
    double r2 = r * r;
    double p = 1.0LF / 20922789888000.0LF;             // 1/16!
    p = fma(p, r2, -1.0LF / 87178291200.0LF);
    p = fma(p, r2, 1.0LF / 479001600.0LF);
    p = fma(p, r2, -1.0LF / 3628800.0LF);
    p = fma(p, r2, 1.0LF / 40320.0LF);
    p = fma(p, r2, -1.0LF / 720.0LF);
    p = fma(p, r2, 1.0LF / 24.0LF);
    p = fma(p, r2, -0.5LF);
    return fma(r2, p, 1.0LF);
}

// sin(x + quadrant * pi/2) for finite x. Cody-Waite reduction with fdlibm's three-part pi/2 (the first part
// has 33 bits: exact products for |k| < 2^20). Beyond, the spec's SIN/COS bound (proportional to 1 + |x|)
// exceeds 1, so any value in [-1, 1] is compliant: r is clamped to keep the polynomial in range.
double sincos_d(double x, int quadrant) {
    double k = floor(x * 6.36619772367581382433e-01LF + 0.5LF);   // x * 2/pi
    double r = fma(-k, 1.57079632673412561417e+00LF, x);
    r = fma(-k, 6.07710050650619224932e-11LF, r);
    r = fma(-k, 2.02226624879595063154e-21LF, r);
    r = clamp(r, -0.78539816339744830962LF, 0.78539816339744830962LF);
    int q = (int(k - 4.0LF * floor(k * 0.25LF)) + quadrant) & 3;
    double v = (q & 1) == 0 ? sin_poly(r) : cos_poly(r);
    return q >= 2 ? -v : v;
}

float tosa_exp(float x) {
    if (isnan(x)) return x;
    if (x > 89.0) return F32_INF;
    if (x < -105.0) return 0.0;
    return float(exp_d(double(x)));
}

float tosa_log(float x) {
    if (isnan(x) || x < 0.0) return F32_NAN;             // apply_log: log(x < 0) is NaN
    if (x == 0.0) return -F32_INF;
    if (isinf(x)) return x;
    return float(log_d(double(x)));
}

float tosa_sin(float x) {
    if (isnan(x) || isinf(x)) return F32_NAN;
    if (x == 0.0) return x;                               // keeps the sign of zero
    return float(sincos_d(double(x), 0));
}

float tosa_cos(float x) {
    if (isnan(x) || isinf(x)) return F32_NAN;
    return float(sincos_d(double(x), 1));
}

// 1 / x and 1 / sqrt(x) in fp64 (correctly rounded there), rounded once: within 1 ulp of fp32.
float tosa_reciprocal(float x) { return float(1.0LF / double(x)); }

float tosa_rsqrt(float x) {
    if (isnan(x) || x < 0.0) return F32_NAN;              // includes -inf
    if (x == 0.0) return (floatBitsToUint(x) >> 31) != 0u ? -F32_INF : F32_INF;
    return float(1.0LF / sqrt(double(x)));
}

// tanh(x): its Taylor series to x^15 for |x| < 0.1 (relative error < 1e-19), else (e - 1) / (e + 1) with
// e = exp(2|x|) (relative error < 1e-15): both far below the spec's bound.
float tosa_tanh(float x) {
    if (isnan(x)) return x;
    float ax = abs(x);
    if (ax > 20.0) return sign(x);                        // tanh rounds to +-1 in fp32
    double d = double(x);
    if (ax < 0.1) {
        double d2 = d * d;
        double p = -929569.0LF / 638512875.0LF;
        p = fma(p, d2, 21844.0LF / 6081075.0LF);
        p = fma(p, d2, -1382.0LF / 155925.0LF);
        p = fma(p, d2, 62.0LF / 2835.0LF);
        p = fma(p, d2, -17.0LF / 315.0LF);
        p = fma(p, d2, 2.0LF / 15.0LF);
        p = fma(p, d2, -1.0LF / 3.0LF);
        return float(fma(d * d2, p, d));
    }
    double e = exp_d(2.0LF * abs(d));
    float t = float((e - 1.0LF) / (e + 1.0LF));
    return x < 0.0 ? -t : t;
}

float tosa_sigmoid(float x) {
    if (isnan(x)) return x;
    double dx = clamp(double(x), -700.0LF, 700.0LF);
    return float(1.0LF / (1.0LF + exp_d(-dx)));
}

// erf(x) for fp32 x, in fp64 (relative error ~1e-15, the spec allows 5 ulp of fp32); erf rounds to +-1 in
// fp32 for |x| >= 3.92. |x| < 0.5: its Maclaurin series to x^27. 0.5 <= |x| < 4: its Taylor series around the
// centre c of one of 7 intervals of width 1/2, from erf'(x) = g(x) = 2/sqrt(pi) exp(-x^2): g's Taylor
// coefficients a_k at c obey (k+1) a_(k+1) = -2c a_k - 2 a_(k-1), a_0 = g(c), and erf(c + h) = erf(c) +
// sum_k a_k h^(k+1) / (k+1). erf(c) and g(c) were computed to 50 digits.
const double ERF_MACLAURIN[14] = double[14](
    1.0LF, -0.3333333333333333LF, 0.1LF, -0.023809523809523808LF, 0.004629629629629629LF,
    -0.0007575757575757576LF, 0.00010683760683760684LF, -1.3227513227513228e-05LF, 1.4589169000933706e-06LF,
    -1.4503852223150468e-07LF, 1.3122532963802806e-08LF, -1.0892221037148573e-09LF, 8.35070279514724e-11LF,
    -5.9477940136376354e-12LF);
const double ERF_AT_CENTRE[7] = double[7](
    0.7111556336535151LF, 0.9229001282564583LF, 0.9866716712191824LF, 0.9985372834133188LF,
    0.9998993780778803LF, 0.9999956972205363LF, 0.9999998862727434LF);
const double ERF_SLOPE_AT_CENTRE[7] = double[7](
    0.6429310691952074LF, 0.2365211224472908LF, 0.05277499593015037LF, 0.007142319022017983LF,
    0.0005862772470937923LF, 2.9189025383581702e-05LF, 8.814321912318039e-07LF);

float tosa_erf(float x) {
    if (isnan(x)) return x;
    float ax = abs(x);
    if (ax >= 4.0) return sign(x);
    if (ax == 0.0) return x;
    double d = double(ax), r;
    if (ax < 0.5) {
        double d2 = d * d, p = ERF_MACLAURIN[13];
        for (int n = 12; n >= 0; --n) p = fma(p, d2, ERF_MACLAURIN[n]);
        r = 1.1283791670955125739LF * d * p;              // 2/sqrt(pi)
    } else {
        int j = min(int((ax - 0.5) * 2.0), 6);
        double c = 0.75LF + 0.5LF * double(j), h = d - c;
        double a = ERF_SLOPE_AT_CENTRE[j], a_prev = 0.0LF, hp = h, sum = 0.0LF;
        for (int k = 0; k < 18; ++k) {
            double inv = 1.0LF / double(k + 1);
            sum = fma(a * hp, inv, sum);
            hp *= h;
            double a_next = -2.0LF * (c * a + a_prev) * inv;
            a_prev = a;
            a = a_next;
        }
        r = min(ERF_AT_CENTRE[j] + sum, 1.0LF);
    }
    float f = float(r);
    return x < 0.0 ? -f : f;
}

#endif

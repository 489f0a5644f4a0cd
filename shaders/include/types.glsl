// Storage <-> compute conversions for every TOSA element type.
// A binding X of TOSA type T is declared by the lowering with defines X_T (storage type), X_C (compute type),
// LOAD_X(v) (storage -> compute) and STORE_X(v) (compute -> storage); see tosa_vk/lower/types.py.
#ifndef TOSA_VK_TYPES_GLSL
#define TOSA_VK_TYPES_GLSL

#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require

// Scalars a kernel reads from its push constants rather than from its code (zero points, clamp bounds:
// tosa_vk/lower LowerCtx.word), so that layers differing only in them share a pipeline: EP_PUSH ends a shader's
// Params block; shaders without one of their own declare `Params { EP_PUSH } p` when EP_WORDS is defined.
#ifdef EP_WORDS
#define EP_PUSH int ep[EP_WORDS];
#else
#define EP_PUSH
#endif

// Word groups read from a uniform texel buffer (TEXEL_<X>: tosa_vk/lower/texels.py) where a storage buffer would be
// indexed: TEXEL_WORDS(t, at, n) is element `at` of an array of n 32-bit words (uint / uvec2 / uvec4 / u64vec4)
// viewed as texels of min(n, 4) words; 8 words are two 16-byte texels.
#define TEXEL_WORDS_1(t, at) texelFetch(t, int(at)).x
#define TEXEL_WORDS_2(t, at) texelFetch(t, int(at)).xy
#define TEXEL_WORDS_4(t, at) texelFetch(t, int(at))
#define TEXEL_WORDS_8(t, at) texel_words8(t, int(at))
#define TEXEL_WORDS_(t, at, n) TEXEL_WORDS_##n(t, at)
#define TEXEL_WORDS(t, at, n) TEXEL_WORDS_(t, at, n)
#ifdef GL_ARB_gpu_shader_int64
u64vec4 texel_words8(usamplerBuffer t, int at) {
    uvec4 a = texelFetch(t, 2 * at), b = texelFetch(t, 2 * at + 1);
    return u64vec4(packUint2x32(a.xy), packUint2x32(a.zw), packUint2x32(b.xy), packUint2x32(b.zw));
}
#endif

// bf16: the top 16 bits of an fp32; round to nearest even, NaN stays NaN.
float bf16_to_f32(uint16_t b) { return uintBitsToFloat(uint(b) << 16); }
uint16_t f32_to_bf16(float f) {
    uint u = floatBitsToUint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

// fp8 e4m3 (fn: no infinities, 0x7f / 0xff are NaN, max 448) and e5m2 (IEEE-like, max 57344).
float fp8e4m3_to_f32(uint8_t v) {
    uint b = uint(v);
    uint s = b >> 7, e = (b >> 3) & 0xfu, m = b & 7u;
    float mag;
    if (e == 15u && m == 7u) return uintBitsToFloat(0x7fc00000u | (s << 31));
    if (e == 0u) mag = float(m) * exp2(-9.0);           // subnormal: m * 2^-3 * 2^-6
    else mag = (1.0 + float(m) / 8.0) * exp2(float(int(e) - 7));
    return s == 1u ? -mag : mag;
}
float fp8e5m2_to_f32(uint8_t v) {
    uint b = uint(v);
    return unpackHalf2x16(b << 8).x;                    // e5m2 is the top byte of an fp16
}

// Rounds |x| to a float format with `mbits` mantissa bits, minimum normal exponent `emin`, to nearest even.
float round_to_format(float x, int mbits, int emin) {
    float a = abs(x);
    if (a == 0.0 || isnan(a) || isinf(a)) return x;
    int e = max(int(floor(log2(a))), emin);
    // log2 may be off by one near powers of two: fix the exponent so 2^e <= a < 2^(e+1) (or subnormal)
    if (exp2(float(e)) > a && e > emin) e -= 1;
    if (exp2(float(e + 1)) <= a) e += 1;
    float quantum = exp2(float(e - mbits));
    float q = a / quantum;
    float r = roundEven(q) * quantum;
    return x < 0.0 ? -r : r;
}

uint8_t f32_to_fp8e4m3(float f) {
    if (isnan(f)) return uint8_t(0x7f);
    float r = round_to_format(f, 3, -6);
    uint s = r < 0.0 || (r == 0.0 && floatBitsToUint(f) >> 31 == 1u) ? 0x80u : 0u;
    float a = abs(r);
    if (a > 448.0) return uint8_t(s | 0x7fu);           // overflow: NaN (no infinity in e4m3fn)
    if (a == 0.0) return uint8_t(s);
    int e = int(floor(log2(a)));
    if (exp2(float(e)) > a) e -= 1;          // log2 may be off by one near powers of two, either way
    if (exp2(float(e + 1)) <= a) e += 1;
    if (e < -6) return uint8_t(s | uint(a * 512.0));    // subnormal: a / 2^-9
    uint m = uint((a / exp2(float(e)) - 1.0) * 8.0);
    return uint8_t(s | (uint(e + 7) << 3) | m);
}
uint8_t f32_to_fp8e5m2(float f) {
    if (isnan(f)) return uint8_t(0x7f);
    float r = round_to_format(f, 2, -14);
    uint s = (floatBitsToUint(f) >> 31) << 7;
    float a = abs(r);
    if (a > 57344.0 || isinf(a)) return uint8_t(s | 0x7cu);  // overflow: infinity
    uint h = packHalf2x16(vec2(a, 0.0));                 // exact: a is representable in e5m2 hence fp16
    return uint8_t(s | (h >> 8));
}

// TOSA 1.1 MX element types, one code a byte (fp4 / fp6 unpacked): sign | exponent | mantissa with `bias`, no
// infinity or NaN (fp4e2m1 max 6, fp6e2m3 7.5, fp6e3m2 28); fp8ue8m0 is 2^(code - 127), 0xff NaN; MXINT8 code / 64.
float mx_float_to_f32(uint b, int mbits, int ebits, int bias) {
    uint s = (b >> (mbits + ebits)) & 1u, e = (b >> mbits) & ((1u << ebits) - 1u), m = b & ((1u << mbits) - 1u);
    float mag = e == 0u ? float(m) * exp2(float(1 - bias - mbits))
                        : (1.0 + float(m) * exp2(float(-mbits))) * exp2(float(int(e) - bias));
    return s == 1u ? -mag : mag;
}
// Round to nearest even, saturating at `maxv`; -0 keeps its sign. NaN has no code: Arm's reference model writes
// exponent all ones, mantissa zero (mx_nan_code).
uint f32_to_mx_float(float f, int mbits, int ebits, int bias, float maxv) {
    if (isnan(f)) return ((1u << ebits) - 1u) << mbits;
    uint s = (floatBitsToUint(f) >> 31) << (mbits + ebits);
    float a = min(abs(round_to_format(f, mbits, 1 - bias)), maxv);
    if (a == 0.0) return s;
    int e;
    frexp(a, e);
    e -= 1;  // 2^e <= a < 2^(e+1)
    if (e < 1 - bias) return s | uint(a * exp2(float(mbits + bias - 1)));  // subnormal: a / 2^(1 - bias - mbits)
    return s | (uint(e + bias) << mbits) | uint((a * exp2(float(-e)) - 1.0) * exp2(float(mbits)));
}
float fp4e2m1_to_f32(uint8_t v) { return mx_float_to_f32(uint(v), 1, 2, 1); }
float fp6e2m3_to_f32(uint8_t v) { return mx_float_to_f32(uint(v), 3, 2, 1); }
float fp6e3m2_to_f32(uint8_t v) { return mx_float_to_f32(uint(v), 2, 3, 3); }
uint8_t f32_to_fp4e2m1(float f) { return uint8_t(f32_to_mx_float(f, 1, 2, 1, 6.0)); }
uint8_t f32_to_fp6e2m3(float f) { return uint8_t(f32_to_mx_float(f, 3, 2, 1, 7.5)); }
uint8_t f32_to_fp6e3m2(float f) { return uint8_t(f32_to_mx_float(f, 2, 3, 3, 28.0)); }
float fp8ue8m0_to_f32(uint8_t v) { return v == uint8_t(255) ? uintBitsToFloat(0x7fc00000u) : ldexp(1.0, int(v) - 127); }
uint8_t f32_to_fp8ue8m0(float f) {  // the power of two at or below f (scales are powers of two)
    if (isnan(f) || f <= 0.0) return uint8_t(isnan(f) ? 255 : 0);
    int e;
    frexp(f, e);
    return uint8_t(clamp(e - 1 + 127, 0, 254));
}
// MXINT8: round to the nearest multiple of 1/64 (ties to even), saturating; NaN -> 127 as Arm's reference model
int8_t f32_to_mxint8(float f) { return int8_t(isnan(f) ? 127 : int(clamp(roundEven(f * 64.0), -128.0, 127.0))); }

#endif

#version 450
// AVG_POOL2D (spec 2.3.2) and MAX_POOL2D (2.3.8) over input [N, IH, IW, C] -> output [N, OH, OW, C].
// Each invocation computes V (1 or 4) consecutive channels of one output position; only the valid part of the
// window is visited (padding never counts: MAX skips it, AVG divides by the number of valid positions).
// Defines: A_* / O_* binding types; VEC4 (C % 4 == 0: 4-vector loads and stores, A_T4 / O_T4); one of
//   MAX_FLOAT (IGNORE for nan_mode IGNORE), MAX_INT, AVG_FLOAT (fp32 sums; one division, one rounding),
//   AVG_INT (int32 sums of value - input_zp, then apply_scale_32(acc, reciprocal_scale(count)) + output_zp,
//   clipped to [LO, HI]; IN_ZP / OUT_ZP expressions, ZP_BUFFER binds ZI / ZO).
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
#ifdef VEC4
layout(set = 0, binding = 0) readonly buffer InA4 { A_T4 a4[]; };
layout(set = 0, binding = 1) writeonly buffer Out4 { O_T4 o4[]; };
#define V 4u
#else
#define V 1u
#endif
#ifdef ZP_BUFFER
layout(set = 0, binding = 2) readonly buffer InZI { ZI_T zi[]; };
layout(set = 0, binding = 3) readonly buffer InZO { ZO_T zo[]; };
#define IN_ZP LOAD_ZI(zi[0])
#define OUT_ZP LOAD_ZO(zo[0])
#endif
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;     // invocations: N * OH * OW * C / V
    uint IH, IW, C, OH, OW;
    int KH, KW, SY, SX, PT, PL;
    EP_PUSH
} p;
#endif

#if defined(MAX_INT) || defined(AVG_INT)
#define S int
#define S4 ivec4
#else
#define S float
#define S4 vec4
#endif

S4 load4(uint idx) {
#ifdef VEC4
    A_T4 v = a4[idx >> 2];
    return S4(LOAD_A(v.x), LOAD_A(v.y), LOAD_A(v.z), LOAD_A(v.w));
#else
    return S4(LOAD_A(a[idx]));
#endif
}

#if defined(MAX_FLOAT)
#ifdef IGNORE
#define INIT uintBitsToFloat(0x7fc00000u)
#define STEP(x, y) max_ignore(x, y)
#else
#define INIT uintBitsToFloat(0xff800000u)
#define STEP(x, y) max_propagate(x, y)
#endif
#define COMBINE(acc, v) acc = S4(STEP(acc.x, v.x), STEP(acc.y, v.y), STEP(acc.z, v.z), STEP(acc.w, v.w))
#elif defined(MAX_INT)
#define INIT (-2147483647 - 1)
#define COMBINE(acc, v) acc = max(acc, v)
#else
#define INIT S(0)
#define COMBINE(acc, v) acc += v
#endif

#ifdef AVG_INT
// apply_scale_32(acc, reciprocal_scale(count)) + output_zp, clipped to the output type
int avg_int(int acc, int count) {
    int k = findMSB(count - 1) + 1;                  // 32 - count_leading_zeros(count - 1)
    int64_t multiplier = ((int64_t(1 << 30) + 1) << k) / int64_t(count);
    int shift = 30 + k;
    int64_t r = (int64_t(acc) * multiplier + (int64_t(1) << (shift - 1))) >> shift;
    return clamp(int(r) + int(OUT_ZP), LO, HI);
}
#endif

// The fused epilogue (include/epilogue.glsl) on each result (element `at`, channel at % C) before its store.
#include "epilogue.glsl"
#ifdef EPILOGUE
#define RES(v, at) EPILOGUE(v, int((at) % p.C), int(at))
#else
#define RES(v, at) (v)
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint cv = p.C / V;
    uint c = (i % cv) * V;
    uint t = i / cv;
    uint ox = t % p.OW;
    t /= p.OW;
    uint oy = t % p.OH;
    uint n = t / p.OH;
    int iy = int(oy) * p.SY - p.PT, ix = int(ox) * p.SX - p.PL;
    int y0 = max(iy, 0), y1 = min(iy + p.KH, int(p.IH));
    int x0 = max(ix, 0), x1 = min(ix + p.KW, int(p.IW));
    S4 acc = S4(INIT);
    for (int y = y0; y < y1; ++y) {
        uint row = ((n * p.IH + uint(y)) * p.IW) * p.C + c;
        for (int x = x0; x < x1; ++x) {
            S4 v = load4(row + uint(x) * p.C);
#ifdef AVG_INT
            v -= S4(IN_ZP);
#endif
            COMBINE(acc, v);
        }
    }
#if defined(AVG_FLOAT)
    acc /= float((y1 - y0) * (x1 - x0));
#elif defined(AVG_INT)
    int count = (y1 - y0) * (x1 - x0);
    acc = ivec4(avg_int(acc.x, count), avg_int(acc.y, count), avg_int(acc.z, count), avg_int(acc.w, count));
#endif
#ifdef VEC4
    o4[i] = O_T4(STORE_O(RES(acc.x, 4u * i)), STORE_O(RES(acc.y, 4u * i + 1u)), STORE_O(RES(acc.z, 4u * i + 2u)),
                 STORE_O(RES(acc.w, 4u * i + 3u)));
#else
    o[i] = STORE_O(RES(acc.x, i));
#endif
}

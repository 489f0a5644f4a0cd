#version 450
// MATMUL (spec 2.3.7) for floating point with C % 8 == 0 and W % (8 * TNB) == 0: out = A [N,H,C] x B [N,C,W],
// summed in fp32 (exact products of every input type; fp32 sums meet the dot-product bound) with fma, rounded
// once to the output type.
// lavapipe (Mesa 22.x) reads storage buffers inside loops lane by lane: the cost is per load instruction, whatever
// its width. So every load here is 32 or 16 bytes carrying 8 elements (UNIT: u64vec4 for fp32, uvec4 for fp16 /
// bf16, uvec2 for fp8), and each invocation computes a large register tile, TM rows x 8 * TNB columns, so that
// per 8 values of c it issues TM + 8 * TNB loads for 64 * TM * TNB multiply-adds.
// A workgroup is LANES invocations: lanes_w side by side along W (sharing their rows of A), LANES / lanes_w of
// those along H (lavapipe: the workgroup is one SIMD vector, so lanes past W or H are wasted vector width; the
// lowering picks the split that wastes fewest for the layer's shape).
#include "types.glsl"
#extension GL_ARB_gpu_shader_int64 : require
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = LANES) in;

// A and B from storage buffers, or (TEXEL_A / TEXEL_B) from uniform texel buffers of 16-byte texels
// (tosa_vk/lower/texels.py: lavapipe fetches texels without its per-lane branches; fp32 / fp16 / bf16 only)
#ifdef TEXEL_A
layout(set = 0, binding = 0) uniform TEXEL_A a8t;
#else
layout(set = 0, binding = 0) readonly buffer InA { UNIT a8[]; };
#endif
#ifdef TEXEL_B
layout(set = 0, binding = 1) uniform TEXEL_B b8t;
#else
layout(set = 0, binding = 1) readonly buffer InB { UNIT b8[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Out4 { O_T4 o4[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint groups;    // N * tiles_h * blocks_w
    uint H, C, W;
    uint tiles_h;   // tiles of (LANES / lanes_w) * TM rows
    uint blocks_w;  // blocks of lanes_w * 8 * TNB columns
    uint lanes_w;   // a power of 2 dividing LANES
    EP_PUSH
} p;
#endif
// The fused epilogue (include/epilogue.glsl) on each result: its channel c is its column, passed in (not at % W:
// lavapipe has no vector integer division, so a modulo per result was 8 scalar divisions per stored vector)
#include "epilogue.glsl"
#ifdef EPILOGUE
#define RES(v, c, at) EPILOGUE(v, int(c), int(at))
#else
#define RES(v, c, at) (v)
#endif

// 8 consecutive elements (one UNIT) -> two vec4
#if defined(UNIT_FP32)
void unpack8(UNIT v, out vec4 lo, out vec4 hi) {
    lo = uintBitsToFloat(uvec4(unpackUint2x32(v.x), unpackUint2x32(v.y)));
    hi = uintBitsToFloat(uvec4(unpackUint2x32(v.z), unpackUint2x32(v.w)));
}
#elif defined(UNIT_FP16)
void unpack8(UNIT v, out vec4 lo, out vec4 hi) {
    lo = vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y));
    hi = vec4(unpackHalf2x16(v.z), unpackHalf2x16(v.w));
}
#elif defined(UNIT_BF16)
vec2 bf16x2(uint u) { return uintBitsToFloat(uvec2(u << 16, u & 0xffff0000u)); }
void unpack8(UNIT v, out vec4 lo, out vec4 hi) {
    lo = vec4(bf16x2(v.x), bf16x2(v.y));
    hi = vec4(bf16x2(v.z), bf16x2(v.w));
}
#else  // fp8: UNIT uvec2, DECODE8 the fp8 -> fp32 conversion of types.glsl
vec4 fp8x4(uint u) {
    return vec4(DECODE8(uint8_t(u & 0xffu)), DECODE8(uint8_t((u >> 8) & 0xffu)),
                DECODE8(uint8_t((u >> 16) & 0xffu)), DECODE8(uint8_t(u >> 24)));
}
void unpack8(UNIT v, out vec4 lo, out vec4 hi) { lo = fp8x4(v.x); hi = fp8x4(v.y); }
#endif

// LOAD8_A / LOAD8_B(unit index, lo, hi): the 8 elements of one UNIT as two vec4
#if defined(UNIT_FP32)
#define TEXEL8(t, at, lo, hi) lo = uintBitsToFloat(texelFetch(t, int(2u * (at)))); \
                              hi = uintBitsToFloat(texelFetch(t, int(2u * (at) + 1u)));
#else
#define TEXEL8(t, at, lo, hi) unpack8(texelFetch(t, int(at)), lo, hi);
#endif
#ifdef TEXEL_A
#define LOAD8_A(at, lo, hi) TEXEL8(a8t, at, lo, hi)
#else
#define LOAD8_A(at, lo, hi) unpack8(a8[at], lo, hi);
#endif
#ifdef TEXEL_B
#define LOAD8_B(at, lo, hi) TEXEL8(b8t, at, lo, hi)
#else
#define LOAD8_B(at, lo, hi) unpack8(b8[at], lo, hi);
#endif

#define K8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#if TM == 16
#define ROWS(X) K8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#elif TM == 8
#define ROWS(X) K8(X)
#else
#define ROWS(X) X(0) X(1) X(2) X(3)
#endif
#if TNB == 2
#define COLS(X, i) X(i, 0) X(i, 1)
#define COLS_K(X, k) X(0, k) X(1, k)
#else
#define COLS(X, i) X(i, 0)
#define COLS_K(X, k) X(0, k)
#endif

void main() {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
#ifndef EXACT  // EXACT: no spare workgroup, lane or row (lavapipe: every guard masks the stores after it, ~30 %)
    if (g >= p.groups) return;
#endif
    uint tw = g % p.blocks_w;
    g /= p.blocks_w;
    uint th = g % p.tiles_h;
    uint n = g / p.tiles_h;
    uint lane = gl_LocalInvocationID.x;
    uint col = (tw * p.lanes_w + lane % p.lanes_w) * (8u * TNB);
    uint row0 = (th * (uint(LANES) / p.lanes_w) + lane / p.lanes_w) * TM;
#ifndef EXACT
    if (col >= p.W || row0 >= p.H) return;  // a spare lane (no barriers here)
#endif
    uint bcol = col;
#ifdef B_BROADCAST  // one B matrix for every n (MATMUL_T with D == 1)
    uint brow = 0u;
#else
    uint brow = n * p.C;
#endif
    // acc<i>_<j>: row i, columns col + 8 j .. + 7 as two vec4 (lo, hi); rows past H read row H - 1
#define DECLJ(i, j) vec4 lo##i##_##j = vec4(0), hi##i##_##j = vec4(0);
#define DECL(i) uint ra##i = ((n * p.H + min(row0 + uint(i), p.H - 1u)) * p.C) >> 3; COLS(DECLJ, i)
    ROWS(DECL)
    for (uint c = 0u; c < p.C; c += 8u) {
#define LB(j, k) vec4 bl##k##_##j, bh##k##_##j; \
        LOAD8_B(((brow + c + uint(k)) * p.W + bcol + 8u * uint(j)) >> 3, bl##k##_##j, bh##k##_##j)
#define LBK(k) COLS_K(LB, k)
        K8(LBK)
#define F(i, j, s, k) lo##i##_##j = fma(vec4(s), bl##k##_##j, lo##i##_##j); \
                      hi##i##_##j = fma(vec4(s), bh##k##_##j, hi##i##_##j);
#define FJ(i, j) F(i, j, al.x, 0) F(i, j, al.y, 1) F(i, j, al.z, 2) F(i, j, al.w, 3) \
                 F(i, j, ah.x, 4) F(i, j, ah.y, 5) F(i, j, ah.z, 6) F(i, j, ah.w, 7)
#define ROW(i) { vec4 al, ah; LOAD8_A(ra##i + (c >> 3), al, ah) COLS(FJ, i) }
        ROWS(ROW)
    }
    uint rows = min(uint(TM), p.H - row0);
#define ST4(v, e, c) O_T4(STORE_O(RES(v.x, c, e)), STORE_O(RES(v.y, (c) + 1u, (e) + 1u)), \
                          STORE_O(RES(v.z, (c) + 2u, (e) + 2u)), STORE_O(RES(v.w, (c) + 3u, (e) + 3u)))
#ifdef EP_OUT_SCALAR
#define ST1(v, e, c) o[O_AT(e)] = STORE_O(RES(v, c, e));
#define SCALARS(v, e, c) ST1(v.x, e, c) ST1(v.y, (e) + 1u, (c) + 1u) ST1(v.z, (e) + 2u, (c) + 2u) \
                         ST1(v.w, (e) + 3u, (c) + 3u)
#define STJ(i, j) { uint oi = ((n * p.H + row0 + uint(i)) * p.W + col + 8u * uint(j)) >> 2; \
        SCALARS(lo##i##_##j, 4u * oi, col + 8u * uint(j)) SCALARS(hi##i##_##j, 4u * oi + 4u, col + 8u * uint(j) + 4u) }
#else
#define STJ(i, j) { uint oi = ((n * p.H + row0 + uint(i)) * p.W + col + 8u * uint(j)) >> 2; \
        o4[O4_AT(oi)] = ST4(lo##i##_##j, 4u * oi, col + 8u * uint(j)); \
        o4[O4_AT(oi + 1u)] = ST4(hi##i##_##j, 4u * oi + 4u, col + 8u * uint(j) + 4u); }
#endif
#if defined(EP_LOOP) && !defined(EP_OUT_SCALAR)
    // a heavy epilogue compiled once, in a loop over the tile's 4-column groups, not unrolled per result (as
    // conv.comp)
    vec4 res[TM * TNB * 2];
#define KEEPJ(i, j) res[(i * TNB + j) * 2] = lo##i##_##j; res[(i * TNB + j) * 2 + 1] = hi##i##_##j;
#define KEEP(i) COLS(KEEPJ, i)
    ROWS(KEEP)
    [[dont_unroll]] for (uint e = 0u; e < rows * TNB * 2u; ++e) {
        uint oi = ((n * p.H + row0 + e / (2u * TNB)) * p.W + col + 4u * (e % (2u * TNB))) >> 2;
        o4[O4_AT(oi)] = ST4(res[e], 4u * oi, col + 4u * (e % (2u * TNB)));
    }
#else
#ifdef EXACT
#define ST(i) { COLS(STJ, i) }
#else
#define ST(i) if (uint(i) < rows) { COLS(STJ, i) }
#endif
    ROWS(ST)
#endif
}

#version 450
// MATMUL (spec 2.3.7): out[n,h,w] = sum_c (A[n,h,c] - A_zp) * (B[n,c,w] - B_zp), A [N,H,C], B [N,C,W].
// Register blocking: each invocation computes a TM x 4 tile of the output (TM rows, 4 consecutive columns as one
// 4-vector accumulator per row), stepping c by 4 so each step is 4 A 4-vectors (rows) x 4 B 4-vectors (c rows).
// A workgroup of LANES invocations shares its TM rows (LANES * 4 consecutive columns): A's addresses are then
// uniform, which lavapipe loads once per SIMD group instead of per lane.
// Defines from tosa_vk/lower/tensor_ops.py:
//   A_*, B_*, O_* binding types; ACC / ACC4 the accumulator type and its 4-vector (float / int / int64_t);
//   MAC(acc, a, b) acc += a * b on ACC4 (a scalar broadcast); TM rows per tile (4 or 8);
//   A_VEC (C % 4 == 0: A read as A_T4 along c), B_VEC (W % 4 == 0: B read as B_T4 and O written as O_T4);
//   A_ZP / B_ZP zero points (expressions; ZP_BUFFER binds ZA, ZB when they are run-time inputs);
//   PARTIAL: split s of `splits` sums c in [s * k_len, (s + 1) * k_len) into O = a temporary [N, splits, H, W]
//   of the accumulator type, summed by matmul_sum.comp (lavapipe ends loops after 65535 iterations per invocation).
//   EPILOGUE(v, c, at): fused operators applied to each result before its store (not with PARTIAL).
//   B_TRANSPOSED: B is bound as [N, W, C]: MATMUL_T's B, or the tensor a fused TRANSPOSE (perms 0, 2, 1) would have
//   made MATMUL's B from. B_BROADCAST: B holds one matrix, used for every n (MATMUL_T with D == 1).
#include "types.glsl"
layout(local_size_x = LANES) in;

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
#ifdef A_VEC
layout(set = 0, binding = 0) readonly buffer InA4 { A_T4 a4[]; };
#endif
#ifdef B_VEC
layout(set = 0, binding = 1) readonly buffer InB4 { B_T4 b4[]; };
layout(set = 0, binding = 2) writeonly buffer Out4 { O_T4 o4[]; };
#endif
#ifdef ZP_BUFFER
layout(set = 0, binding = 3) readonly buffer InZA { ZA_T za[]; };
layout(set = 0, binding = 4) readonly buffer InZB { ZB_T zb[]; };
#define A_ZP LOAD_ZA(za[0])
#define B_ZP LOAD_ZB(zb[0])
#endif

#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint groups;    // workgroups: N * splits * tiles_h * blocks_w
    uint H, C, W;
    uint tiles_h;   // tiles of TM rows
    uint blocks_w;  // blocks of LANES * 4 columns
    uint k_len;     // c per split (C without PARTIAL)
    uint splits;
    EP_PUSH
} p;
#endif
// The fused epilogue (include/epilogue.glsl) on each result: its channel is its column
#include "epilogue.glsl"
#ifdef EPILOGUE
#define RES(v, at) EPILOGUE(v, int((at) % p.W), int(at))
#else
#define RES(v, at) (v)
#endif

#define CT A_C
#define CT4 ACC4
// A value / B 4-vector as the accumulator's operand type, zero point removed
#define AV(v) ACC(CT(LOAD_A(v)) - CT(A_ZP))
#define BV4(v) (ACC4(CT(LOAD_B(v.x)), CT(LOAD_B(v.y)), CT(LOAD_B(v.z)), CT(LOAD_B(v.w))) - ACC4(CT(B_ZP)))

ACC4 loadB(uint row, uint col) {          // B[row, col .. col + 3] (row = n * C + c), clamped to column W - 1
#if defined(B_TRANSPOSED)  // B stored as [N, W, C] (a fused TRANSPOSE's input): B[n, c, w] at (n * W + w) * C + c
    uint c_ = row % p.C, base = (row / p.C) * p.W;
    ACC4 r;
    r.x = ACC(CT(LOAD_B(b[(base + min(col, p.W - 1u)) * p.C + c_])) - CT(B_ZP));
    r.y = ACC(CT(LOAD_B(b[(base + min(col + 1u, p.W - 1u)) * p.C + c_])) - CT(B_ZP));
    r.z = ACC(CT(LOAD_B(b[(base + min(col + 2u, p.W - 1u)) * p.C + c_])) - CT(B_ZP));
    r.w = ACC(CT(LOAD_B(b[(base + min(col + 3u, p.W - 1u)) * p.C + c_])) - CT(B_ZP));
    return r;
#elif defined(B_VEC)
    return BV4(b4[(row * p.W + col) >> 2]);
#else
    uint base = row * p.W;
    ACC4 r;
    r.x = ACC(CT(LOAD_B(b[base + min(col, p.W - 1u)])) - CT(B_ZP));
    r.y = ACC(CT(LOAD_B(b[base + min(col + 1u, p.W - 1u)])) - CT(B_ZP));
    r.z = ACC(CT(LOAD_B(b[base + min(col + 2u, p.W - 1u)])) - CT(B_ZP));
    r.w = ACC(CT(LOAD_B(b[base + min(col + 3u, p.W - 1u)])) - CT(B_ZP));
    return r;
#endif
}

ACC4 loadA4(uint idx) {                   // A[idx .. idx + 3] along c
#ifdef A_VEC
    A_T4 v = a4[idx >> 2];
    return ACC4(AV(v.x), AV(v.y), AV(v.z), AV(v.w));
#else
    return ACC4(AV(a[idx]), AV(a[idx + 1u]), AV(a[idx + 2u]), AV(a[idx + 3u]));
#endif
}

#define ROWS(X) X(0) X(1) X(2) X(3) ROWS_MORE(X)
#if TM == 16
#define ROWS_MORE(X) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#elif TM == 8
#define ROWS_MORE(X) X(4) X(5) X(6) X(7)
#else
#define ROWS_MORE(X)
#endif

void main() {
    // workgroup -> (n, split, row tile, column block); uniform across the workgroup, so A's loads are uniform
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (g >= p.groups) return;
    uint tw = g % p.blocks_w;
    g /= p.blocks_w;
    uint th = g % p.tiles_h;
    g /= p.tiles_h;
    uint split = g % p.splits;
    uint n = g / p.splits;
    uint col = (tw * LANES + gl_LocalInvocationID.x) * 4u;
    uint row0 = th * TM;
    uint k0 = split * p.k_len;
    uint k1 = min(k0 + p.k_len, p.C);
    // A row offsets (rows past H clamp to the last row; their results are not stored)
#define DECL(i) uint ra##i = ((n * p.H + min(row0 + uint(i), p.H - 1u)) * p.C); ACC4 acc##i = ACC4(0);
    ROWS(DECL)
#ifdef B_BROADCAST
    uint brow = 0u;
#else
    uint brow = n * p.C;
#endif
    uint bcol = min(col, p.W - 1u);    // columns past W read a valid column, not stored
    uint c = k0;
    for (; c + 4u <= k1; c += 4u) {
        ACC4 b0 = loadB(brow + c, bcol), b1 = loadB(brow + c + 1u, bcol);
        ACC4 b2 = loadB(brow + c + 2u, bcol), b3 = loadB(brow + c + 3u, bcol);
#define STEP(i) { ACC4 av = loadA4(ra##i + c); \
        MAC(acc##i, av.x, b0); MAC(acc##i, av.y, b1); MAC(acc##i, av.z, b2); MAC(acc##i, av.w, b3); }
        ROWS(STEP)
    }
    for (; c < k1; ++c) {
        ACC4 bv = loadB(brow + c, bcol);
#define TAIL(i) MAC(acc##i, AV(a[ra##i + c]), bv);
        ROWS(TAIL)
    }
    if (col >= p.W) return;
#if defined(B_VEC) && !defined(EP_OUT_SCALAR)
#define STORE4(oi, v) o4[O4_AT((oi) >> 2)] = O_T4(STORE_O(RES(v.x, oi)), STORE_O(RES(v.y, (oi) + 1u)), \
                                          STORE_O(RES(v.z, (oi) + 2u)), STORE_O(RES(v.w, (oi) + 3u)))
#else
#define STORE4(oi, v) { o[O_AT(oi)] = STORE_O(RES(v.x, oi)); o[O_AT(oi + 1u)] = STORE_O(RES(v.y, (oi) + 1u)); \
                        o[O_AT(oi + 2u)] = STORE_O(RES(v.z, (oi) + 2u)); \
                        o[O_AT(oi + 3u)] = STORE_O(RES(v.w, (oi) + 3u)); }
#endif
    uint rows = min(uint(TM), p.H - row0);
    uint cols = min(4u, p.W - col);
#ifdef PARTIAL
    uint obase = ((split + p.splits * n) * p.H + row0) * p.W + col;
#else
    uint obase = (n * p.H + row0) * p.W + col;
#endif
#define STORE(i) if (uint(i) < rows) { uint oi = obase + uint(i) * p.W; \
        if (cols == 4u) { STORE4(oi, acc##i); } else { \
            o[O_AT(oi)] = STORE_O(RES(acc##i.x, oi)); \
            if (cols > 1u) o[O_AT(oi + 1u)] = STORE_O(RES(acc##i.y, oi + 1u)); \
            if (cols > 2u) o[O_AT(oi + 2u)] = STORE_O(RES(acc##i.z, oi + 2u)); } }
    ROWS(STORE)
}

#version 450
// MATMUL (spec 2.3.7), the tiled family (tosa_vk/lower/matmul_tiled.py): out[n,h,w] = sum_c (A[n,h,c] - A_zp) *
// (B[n,c,w] - B_zp), A [N,H,C], B [N,C,W] (B_TRANSPOSED: bound as [N,W,C]; B_BROADCAST: one matrix for every n).
// A workgroup computes a BM x BN tile of one n's output: per BK-long slice of C it stages A [BM, BK] and B [BK, BN]
// in shared memory (every invocation loads a few elements; edges past H, W or C stage zeros), then each invocation
// multiplies its TR x TC register block out of shared memory: rows ty + i * BM / TR (strided: neighbouring
// invocations read neighbouring rows), columns tx * TC .. + TC - 1 (contiguous: vector stores).
// Floating point: each input converted to fp32 when staged (exact for fp32 / fp16 / bf16 / fp8), fp32 fma sums:
// the dot-product bound of every output type. int8: int32 sums of (a - A_zp) * (b - B_zp), zero points taken off
// when staged; INT8_DOT: raw bytes packed four k at a time, dot4x8 products, and the zero points by the identity
// sum (a - za)(b - zb) = sum ab - zb sum a - za sum b + C za zb (exact in wrapping int32, as the sums themselves).
// Defines: BM BN BK TR TC the tile; THREADS = (BM / TR) * (BN / TC); ACC (float / int) the accumulator;
// A_ZP / B_ZP (int8; ZP_BUFFER binds ZA, ZB); O_VEC: 4-vector stores (W % 4 == 0, TC % 4 == 0);
// EPILOGUE / O_AT / O4_AT / EP_LOOP as include/epilogue.glsl (EP_LOOP: the store loop stays a loop).
#include "types.glsl"
#extension GL_EXT_control_flow_attributes : enable
#ifdef INT8_DOT
#include "dot.glsl"
#endif
layout(local_size_x = THREADS) in;

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
#ifdef O_VEC
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
    uint groups;    // N * tiles_h * blocks_w
    uint H, C, W;
    uint tiles_h;   // tiles of BM rows
    uint blocks_w;  // tiles of BN columns
    EP_PUSH
} p;
#endif
#include "epilogue.glsl"
#ifdef EPILOGUE
#define RES(v, at) EPILOGUE(v, int((at) % p.W), int(at))
#else
#define RES(v, at) (v)
#endif

#define RSTEP (BM / TR)          // row stride of an invocation's rows
#define CT (BN / TC)             // invocations across a tile's columns
#ifdef INT8_DOT
#define KS (BK / 4)              // packed words per slice (4 k each)
#define SH_T uint
#else
#define KS BK
#define SH_T ACC
#endif
shared SH_T As[KS][BM];          // As[k][r] = A[row0 + r, k0 + k]
shared SH_T Bs[KS][BN];          // Bs[k][c] = B[k0 + k, col0 + c]

#ifdef B_TRANSPOSED
#define B_AT(k, c) ((bbase + (c)) * p.C + (k))  // bbase = (n or 0) * W
#else
#define B_AT(k, c) ((bbase + (k)) * p.W + (c))  // bbase = (n or 0) * C
#endif

#ifdef INT8_DOT
// A[r][k] / B[k][c] as a signed byte, 0 outside the matrix (adds nothing to any of the identity's sums)
int a_at(uint r, uint k, uint aplane) { return r < p.H && k < p.C ? int(LOAD_A(a[aplane + r * p.C + k])) : 0; }
int b_at(uint k, uint c, uint bbase) { return k < p.C && c < p.W ? int(LOAD_B(b[B_AT(k, c)])) : 0; }
uint pack4(int x, int y, int z, int w) {
    return (uint(x) & 0xffu) | ((uint(y) & 0xffu) << 8) | ((uint(z) & 0xffu) << 16) | (uint(w) << 24);
}
#endif

#define A_WORDS (BM * KS)
#define B_WORDS (KS * BN)
#define A_LOADS ((A_WORDS + THREADS - 1) / THREADS)
#define B_LOADS ((B_WORDS + THREADS - 1) / THREADS)

void main() {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (g >= p.groups) return;  // uniform across the workgroup: no barrier is skipped by part of it
    uint tw = g % p.blocks_w;
    g /= p.blocks_w;
    uint th = g % p.tiles_h;
    uint n = g / p.tiles_h;
    uint row0 = th * BM, col0 = tw * BN;
    uint tid = gl_LocalInvocationID.x;
    uint tx = tid % CT, ty = tid / CT;
    uint aplane = n * p.H * p.C;
#ifdef B_BROADCAST
    uint bn = 0u;
#else
    uint bn = n;
#endif
#ifdef B_TRANSPOSED
    uint bbase = bn * p.W;
#else
    uint bbase = bn * p.C;
#endif
    ACC acc[TR][TC];
    [[unroll]] for (uint i = 0u; i < TR; ++i) {
        [[unroll]] for (uint j = 0u; j < TC; ++j) acc[i][j] = ACC(0);
    }
#if defined(INT8_DOT) && defined(ZP_CORRECT)
    int rsum[TR], csum[TC];
    [[unroll]] for (uint i = 0u; i < TR; ++i) rsum[i] = 0;
    [[unroll]] for (uint j = 0u; j < TC; ++j) csum[j] = 0;
#endif
    // per slice: the staging loops unroll (a few loads each), the k loop is the driver's to unroll or not (GPU
    // compilers do; on lavapipe a 128 x 128 tile unrolled is 2-3x the LLVM time): the lowering keeps slices x
    // (KS + 1) within the driver's loop budget (lavapipe's, tosa_vk/target.py)
    for (uint k0 = 0u; k0 < p.C; k0 += BK) {
        [[unroll]] for (uint s = 0u; s < A_LOADS; ++s) {
            uint l = tid + s * THREADS;
            if (A_LOADS * THREADS == A_WORDS || l < A_WORDS) {
                uint r = l / KS, k = l % KS;  // neighbouring invocations: neighbouring k (A's rows run along C)
#ifdef INT8_DOT
                uint gr = row0 + r, gk = k0 + 4u * k;
                As[k][r] = pack4(a_at(gr, gk, aplane), a_at(gr, gk + 1u, aplane), a_at(gr, gk + 2u, aplane),
                                 a_at(gr, gk + 3u, aplane));
#else
                ACC v = ACC(0);
                if (row0 + r < p.H && k0 + k < p.C) v = ACC(A_C(LOAD_A(a[aplane + (row0 + r) * p.C + k0 + k])) - A_C(A_ZP));
                As[k][r] = v;
#endif
            }
        }
        [[unroll]] for (uint s = 0u; s < B_LOADS; ++s) {
            uint l = tid + s * THREADS;
            if (B_LOADS * THREADS == B_WORDS || l < B_WORDS) {
#ifdef B_TRANSPOSED
                uint c = l / KS, k = l % KS;  // B's rows of [W, C] run along C
#else
                uint k = l / BN, c = l % BN;
#endif
#ifdef INT8_DOT
                uint gk = k0 + 4u * k, gc = col0 + c;
                Bs[k][c] = pack4(b_at(gk, gc, bbase), b_at(gk + 1u, gc, bbase), b_at(gk + 2u, gc, bbase),
                                 b_at(gk + 3u, gc, bbase));
#else
                ACC v = ACC(0);
                if (k0 + k < p.C && col0 + c < p.W) v = ACC(B_C(LOAD_B(b[B_AT(k0 + k, col0 + c)])) - B_C(B_ZP));
                Bs[k][c] = v;
#endif
            }
        }
        barrier();
        for (uint k = 0u; k < KS; ++k) {
            SH_T av[TR], bv[TC];
            [[unroll]] for (uint i = 0u; i < TR; ++i) av[i] = As[k][ty + i * RSTEP];
            [[unroll]] for (uint j = 0u; j < TC; ++j) bv[j] = Bs[k][tx * TC + j];
            [[unroll]] for (uint i = 0u; i < TR; ++i) {
                [[unroll]] for (uint j = 0u; j < TC; ++j) {
#if defined(INT8_DOT)
                    acc[i][j] += dot4x8(av[i], bv[j]);
#elif defined(ACC_FLOAT)
                    acc[i][j] = fma(av[i], bv[j], acc[i][j]);
#else
                    acc[i][j] += av[i] * bv[j];
#endif
                }
            }
#if defined(INT8_DOT) && defined(ZP_CORRECT)
            [[unroll]] for (uint i = 0u; i < TR; ++i) rsum[i] += dot4x8(av[i], 0x01010101u);
            [[unroll]] for (uint j = 0u; j < TC; ++j) csum[j] += dot4x8(0x01010101u, bv[j]);
#endif
        }
        barrier();
    }
#if defined(INT8_DOT) && defined(ZP_CORRECT)
    int zpa = int(A_ZP), zpb = int(B_ZP);
    [[unroll]] for (uint i = 0u; i < TR; ++i) {
        [[unroll]] for (uint j = 0u; j < TC; ++j)
            acc[i][j] += int(p.C) * zpa * zpb - zpb * rsum[i] - zpa * csum[j];
    }
#endif
    uint colt = col0 + tx * TC;
#ifdef EP_LOOP
#define STORE_LOOP [[dont_unroll]]  // a heavy epilogue compiled once, not once per result (as matmul_fast.comp)
#else
#define STORE_LOOP [[unroll]]
#endif
#if defined(O_VEC) && !defined(EP_OUT_SCALAR)
    // W % 4 == 0 and colt % 4 == 0: a group of 4 columns is wholly inside W or wholly past it
    STORE_LOOP for (uint e = 0u; e < TR * (TC / 4); ++e) {
        uint i = e / (TC / 4), j = 4u * (e % (TC / 4));
        uint r = row0 + ty + i * RSTEP, c = colt + j;
        if (r < p.H && c < p.W) {
            uint oi = (n * p.H + r) * p.W + c;
            o4[O4_AT(oi >> 2)] = O_T4(STORE_O(RES(acc[i][j], oi)), STORE_O(RES(acc[i][j + 1u], oi + 1u)),
                                      STORE_O(RES(acc[i][j + 2u], oi + 2u)), STORE_O(RES(acc[i][j + 3u], oi + 3u)));
        }
    }
#else
    STORE_LOOP for (uint e = 0u; e < TR * TC; ++e) {
        uint i = e / TC, j = e % TC;
        uint r = row0 + ty + i * RSTEP, c = colt + j;
        if (r < p.H && c < p.W) {
            uint oi = (n * p.H + r) * p.W + c;
            o[O_AT(oi)] = STORE_O(RES(acc[i][j], oi));
        }
    }
#endif
}

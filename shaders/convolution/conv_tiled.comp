#version 450
// CONV2D / CONV3D (spec 2.3.2, 2.3.3) and, with TRANSPOSED, TRANSPOSE_CONV2D (2.3.5) as an implicit GEMM on
// shared-memory tiles (the "tiled" kernel family, tosa_vk/lower/conv_tiled.py): rows are output pixels
// (n, od, oh, ow), columns output channels, the reduction k = ((kd * KH + kh) * KW + kw) * IC + ic runs along the
// weights' own layout [OC, KD, KH, KW, IC], so a weight row is contiguous. A workgroup computes a BM x BN tile of
// the result: per BK-long slice of k its invocations stage the im2col'd input slice [BK][BM] and the weight slice
// [BK][BN] in shared memory, then each multiplies its TM x TN register block out of them.
// TRANSPOSED gathers instead: out[oy] takes in[iy] through tap ky where iy * SH + PT + ky = oy (PT the out_pad
// before); taps no input reaches add nothing.
// Geometry (N, ID, IH, IW, IC, OC, KD, KH, KW, OD, OH, OW, SD / SH / SW, DD / DH / DW, PD / PT / PL), BIAS_SCALAR
// are int specialization constants; the tile (BM, BN, BK, TM, TN) is compiled in (defines): it sizes shared memory.
// Types: floating point summed in fp32 (SHARED_T float16_t holds fp16 / fp8 inputs, exactly, where the class uses
// fp16); integers minus their zero points in int32, or with INT8_DOT four int8 products a word (dot.glsl), the zero
// points applied after: sum (x - zx)(w - zw) = sum xw - zw sum x - zx sum w + slots zx zw, exact in wrapping int32.
#include "types.glsl"
#include "convolution/conv_common.glsl"
#ifdef INT8_DOT
#include "dot.glsl"
#endif

layout(local_size_x = THREADS) in;

BIAS_BINDING
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
INPUT_WORDS
WEIGHT_WORDS
ZERO_POINT_BINDINGS
PARTIAL_BINDING

const int M = N * OD * OH * OW;
const int TAPS = KD * KH * KW;
const int K = TAPS * IC;
#ifndef K_BEGIN
#define K_BEGIN 0
#define K_END K
#endif

#ifdef INT8_DOT
#define KV 4  // k values per shared entry: 4 int8 packed in a word
#define ENTRY_T uint
#else
#define KV 1
#define ENTRY_T SHARED_T
#endif
#define LK (BK / KV)  // shared entries per row of a slice
#define RSTEP (THREADS / LK)  // rows one pass of the workgroup loads (the lowering makes THREADS a multiple of LK)
#define A_LOADS ((BM + RSTEP - 1) / RSTEP)
#define B_LOADS ((BN + RSTEP - 1) / RSTEP)
#define TX (BN / TN)  // invocations along a tile's columns

shared ENTRY_T as_[LK][BM];
shared ENTRY_T bs_[LK][BN];
#if defined(SKIP_PADDED) && !defined(INTEGER)
// which staged inputs are real taps: a padded one times an infinite weight must add nothing, not NaN
shared bool av_[LK][BM];
#define ACCUMULATE(acc, a, b, valid) acc += (valid) ? (a) * (b) : 0.0
#else
#define ACCUMULATE(acc, a, b, valid) acc += (a) * (b)
#endif

// The input element of tap `k` for the row whose origin is (n, d0, h0, w0), or -1 where the tap is padding.
int input_at(int k, int n, int d0, int h0, int w0) {
    int ic = k % IC, tap = k / IC;
    int kw = tap % KW, kh = (tap / KW) % KH, kd = tap / (KW * KH);
#ifdef TRANSPOSED
    int ty = h0 - kh, tx = w0 - kw;
    if (ty < 0 || tx < 0 || ty % SH != 0 || tx % SW != 0) return -1;
    int ih = ty / SH, iw = tx / SW, id = 0;
#else
    int id = d0 + kd * DD, ih = h0 + kh * DH, iw = w0 + kw * DW;
#endif
    if (id < 0 || id >= ID || ih < 0 || ih >= IH || iw < 0 || iw >= IW) return -1;
    return (((n * ID + id) * IH + ih) * IW + iw) * IC + ic;
}

void main() {
    int t = int(gl_LocalInvocationID.x);
    int m0 = int(gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * BM;
    int n0 = int(gl_WorkGroupID.y) * BN;
    if (m0 >= M) return;  // the whole workgroup: spare groups of a spilled grid
    int kl = t % LK;   // this invocation's entry in each staged row
    int r0 = t / LK;   // and its first row; then every RSTEP-th

    // the origin of each input row this invocation stages: its output pixel's first tap
    int a_n[A_LOADS], a_d[A_LOADS], a_h[A_LOADS], a_w[A_LOADS];
    bool a_in[A_LOADS];
    [[unroll]] for (int j = 0; j < A_LOADS; ++j) {
        int m = m0 + r0 + j * RSTEP;
        a_in[j] = r0 + j * RSTEP < BM && m < M;
        m = min(m, M - 1);
        int ow = m % OW, rest = m / OW;
        int oh = rest % OH; rest /= OH;
        int od = rest % OD;
        a_n[j] = rest / OD;
#ifdef TRANSPOSED
        a_d[j] = 0; a_h[j] = oh - PT; a_w[j] = ow - PL;
#else
        a_d[j] = od * SD - PD; a_h[j] = oh * SH - PT; a_w[j] = ow * SW - PL;
#endif
    }

    int ty = t / TX, tx = t % TX;
    ACC_T acc[TM][TN];
    [[unroll]] for (int i = 0; i < TM; ++i) [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] = ACC_T(0);
#ifdef INT8_DOT
    int rs[TM], cs[TN];  // sums of the raw inputs of each row, of the raw weights of each column
    [[unroll]] for (int i = 0; i < TM; ++i) rs[i] = 0;
    [[unroll]] for (int j = 0; j < TN; ++j) cs[j] = 0;
#endif

    for (int k0 = K_BEGIN; k0 < K_END; k0 += BK) {
        [[unroll]] for (int j = 0; j < A_LOADS; ++j) {
            int r = r0 + j * RSTEP;
            if (r < BM) {
#ifdef INT8_DOT
                uint word = 0u;
                [[unroll]] for (int q = 0; q < 4; ++q) {
                    int k = k0 + kl * 4 + q;
                    int at = a_in[j] && k < K_END ? input_at(k, a_n[j], a_d[j], a_h[j], a_w[j]) : -1;
                    int v = at >= 0 ? LOAD_X(x[X_AT(at)]) : IZP;  // padding reads as the zero point: adds 0
                    word |= (uint(v) & 0xffu) << (8 * q);
                }
                as_[kl][r] = word;
#else
                int k = k0 + kl;
                int at = a_in[j] && k < K_END ? input_at(k, a_n[j], a_d[j], a_h[j], a_w[j]) : -1;
                as_[kl][r] = at >= 0 ? SHARED_T(IN_VALUE(LOAD_X(x[X_AT(at)]))) : SHARED_T(0);
#if defined(SKIP_PADDED) && !defined(INTEGER)
                av_[kl][r] = at >= 0;
#endif
#endif
            }
        }
        [[unroll]] for (int j = 0; j < B_LOADS; ++j) {
            int r = r0 + j * RSTEP;
            if (r < BN) {
                int oc = n0 + r;
#ifdef INT8_DOT
                uint word = 0u;
                [[unroll]] for (int q = 0; q < 4; ++q) {
                    int k = k0 + kl * 4 + q;
                    int v = oc < OC && k < K_END ? LOAD_W(w[oc * K + k]) : 0;
                    word |= (uint(v) & 0xffu) << (8 * q);
                }
                bs_[kl][r] = word;
#else
                int k = k0 + kl;
                bs_[kl][r] = oc < OC && k < K_END ? SHARED_T(W_VALUE(LOAD_W(w[oc * K + k]))) : SHARED_T(0);
#endif
            }
        }
        barrier();
        [[unroll]] for (int e = 0; e < LK; ++e) {
            ENTRY_T a[TM], b[TN];
            [[unroll]] for (int i = 0; i < TM; ++i) a[i] = as_[e][ty * TM + i];
            [[unroll]] for (int j = 0; j < TN; ++j) b[j] = bs_[e][tx * TN + j];
#ifdef INT8_DOT
            [[unroll]] for (int i = 0; i < TM; ++i) rs[i] += dot4x8(a[i], 0x01010101u);
            [[unroll]] for (int j = 0; j < TN; ++j) cs[j] += dot4x8(0x01010101u, b[j]);
            [[unroll]] for (int i = 0; i < TM; ++i) [[unroll]] for (int j = 0; j < TN; ++j)
                acc[i][j] += dot4x8(a[i], b[j]);
#else
            [[unroll]] for (int i = 0; i < TM; ++i) {
#if defined(SKIP_PADDED) && !defined(INTEGER)
                bool valid = av_[e][ty * TM + i];
#endif
                [[unroll]] for (int j = 0; j < TN; ++j) ACCUMULATE(acc[i][j], ACC_T(a[i]), ACC_T(b[j]), valid);
            }
#endif
        }
        barrier();
    }
#ifdef INT8_DOT
    {
        int slots = ((K_END - K_BEGIN + BK - 1) / BK) * BK;  // every slot staged, real or not, is in the sums
        [[unroll]] for (int i = 0; i < TM; ++i) [[unroll]] for (int j = 0; j < TN; ++j)
            acc[i][j] += slots * IZP * WZP - WZP * rs[i] - IZP * cs[j];
    }
#endif

    int mb = m0 + ty * TM, cb = n0 + tx * TN;
#ifdef PARTIAL_IN
    [[unroll]] for (int i = 0; i < TM; ++i) [[unroll]] for (int j = 0; j < TN; ++j)
        if (mb + i < M && cb + j < OC) acc[i][j] += partial[(mb + i) * OC + cb + j];
#endif
#ifdef EP_LOOP
    // a heavy epilogue compiled once, in a loop over the block, not unrolled per result (as conv.comp)
    ACC_T res[TM * TN];
    [[unroll]] for (int i = 0; i < TM; ++i) [[unroll]] for (int j = 0; j < TN; ++j) res[i * TN + j] = acc[i][j];
    [[dont_unroll]] for (int e = 0; e < TM * TN; ++e) {
        int m = mb + e / TN, oc = cb + e % TN;
        if (m < M && oc < OC) STORE_RESULT(m * OC + oc, res[e], oc);
    }
#else
    [[unroll]] for (int i = 0; i < TM; ++i) [[unroll]] for (int j = 0; j < TN; ++j) {
        int m = mb + i, oc = cb + j;
        if (m < M && oc < OC) STORE_RESULT(m * OC + oc, acc[i][j], oc);
    }
#endif
}

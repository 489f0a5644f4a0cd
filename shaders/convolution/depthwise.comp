#version 450
// DEPTHWISE_CONV2D (spec 2.3.4): out[n, oh, ow, c * M + m] = bias[c * M + m] + sum over the taps (kh, kw) inside
// the input of (in[n, ih, iw, c] - input_zp) * (weight[kh, kw, c, m] - weight_zp).
// An invocation computes TILE_P consecutive output pixels of one row x one chunk of VE output channels
// (gl_WorkGroupID.y). With M == 1 the chunk is VE channels of both input and weight, read as packed words
// (conv_common.glsl) and multiplied as 4-vectors; otherwise VE = 1. Per input row the SPAN input columns of
// the tile are loaded once for all KW taps.
// Taps, strides, dilations, the channel multiplier M and the tile are specialization constants, VE compiled in
// (tosa_vk/lower/convolution.py); shapes and pads are push constants (no loop depends on them), so that layers of
// one kind share a pipeline.
#include "types.glsl"
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    int n, ih, iw, c;       // input [N, IH, IW, C]
    int oh, ow;             // output [N, OH, OW, C * M]
    int pt, pl;             // padding before (top, left)
    int packed;             // PACKED_BLOCKS: channel blocks per pixel tile (0: blocks are gl_WorkGroupID.y)
    EP_PUSH
} p;
#endif
#define CONV_PARAMS  // (conv_common.glsl: this block holds the zero points and epilogue scalars too)
#define N p.n
#define IH p.ih
#define IW p.iw
#define C p.c
#define OH p.oh
#define OW p.ow
#define PT p.pt
#define PL p.pl
#define PACKED_BLOCKS p.packed
#include "convolution/conv_common.glsl"

layout(local_size_x = WORKGROUP) in;

BIAS_BINDING
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
INPUT_WORDS
WEIGHT_WORDS
ZERO_POINT_BINDINGS
#if VE >= 4
OUTPUT_VEC4
#endif

#define OCH (C * M)                                  // output channels
#define OWT ((OW + TILE_P - 1) / TILE_P)
#define TILES (N * OH * OWT)
const int SPAN = (TILE_P - 1) * SW + (KW - 1) * DW + 1;

#if VE >= 4
#define ACCV_T ACC4_T
#define ACCV(v) ACC4_T(v)
#define ACC_ELEM(a, e) (a)[e]
#else
#define ACCV_T ACC_T
#define ACCV(v) ACC_T(v)
#define ACC_ELEM(a, e) (a)
#endif

void main() {
    TILE_AND_BLOCK
    int ow0 = (tile % OWT) * TILE_P;
    int rest = tile / OWT;
    int oh = rest % OH;
    int n = rest / OH;
    int oc0 = block * VE;            // first output channel of the chunk
    int c0 = oc0 / M;                                // its input channel (M == 1 whenever VE > 1)
    int iw0 = ow0 * SW - PL;

    ACCV_T acc[TILE_P][NG];
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int q = 0; q < NG; ++q) acc[px][q] = ACCV(0);

    for (int kh = 0; kh < KH; ++kh) {
        int ih = oh * SH - PT + kh * DH;
        bool row_in = ih >= 0 && ih < IH;
        int row = (n * IH + ih) * IW;
        CHUNK_T xv[SPAN][NG];
        bool valid[SPAN];
        [[unroll]] for (int s = 0; s < SPAN; ++s) {
            valid[s] = row_in && iw0 + s >= 0 && iw0 + s < IW;
            LOAD_X_CHUNK(xv[s], (row + iw0 + s) * C + c0, valid[s]);
        }
        [[unroll]] for (int kw = 0; kw < KW; ++kw) {
            CHUNK_T wv[NG];
            LOAD_W_CHUNK(wv, (kh * KW + kw) * OCH + oc0);
            [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int q = 0; q < NG; ++q)
                DW_ACCUMULATE(acc[px][q], xv[px * SW + kw * DW][q], wv[q], valid[px * SW + kw * DW]);
        }
    }
    int obase = ((n * OH + oh) * OW + ow0) * OCH + oc0;
#if defined(EP_LOOP) && VE >= 4
    // a heavy epilogue compiled once, in a loop over the tile's 4-channel groups (as conv.comp)
    ACC4_T res[TILE_P * NG];
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int q = 0; q < NG; ++q)
        res[px * NG + q] = acc[px][q];
    [[dont_unroll]] for (int e = 0; e < TILE_P * NG; ++e) {
        int px = e / NG, q = e % NG;
        if (ow0 + px >= OW) continue;
        STORE4_RESULT(obase + px * OCH + q * 4, res[e], oc0 + q * 4);
    }
#else
    [[unroll]] for (int px = 0; px < TILE_P; ++px) {
        if (ow0 + px >= OW) continue;
#if VE >= 4
        [[unroll]] for (int q = 0; q < NG; ++q) STORE4_RESULT(obase + px * OCH + q * 4, acc[px][q], oc0 + q * 4);
#else
        o[obase + px * OCH] = STORE_O(RESULT(acc[px][0], oc0, obase + px * OCH));
#endif
    }
#endif
}

#version 450
// CONV2D / CONV3D (spec 2.3.2, 2.3.3): out[n, od, oh, ow, oc] = bias[oc] + sum over the taps (kd, kh, kw) inside
// the input and ic of (in - input_zp) * (weight - weight_zp); CONV2D runs as CONV3D with ID = OD = KD = 1.
// Register blocking: an invocation computes TILE_P consecutive output pixels of one row x TILE_C output channels
// (the channel block is gl_WorkGroupID.y). Per input row (kd, kh) and chunk of VE input channels it loads the
// SPAN input columns its pixels read through all KW taps once, then KW x TILE_C weight chunks, and does
// KW x TILE_P x TILE_C x VE multiply-adds: loads, not arithmetic, are what costs on lavapipe.
// Geometry (N, ID, IH, IW, IC, OC, KD, KH, KW, OD, OH, OW, strides SD / SH / SW, dilations DD / DH / DW, pads PD / PT /
// PL), the tile (TILE_P, TILE_C), PACKED_BLOCKS and BIAS_SCALAR are int specialization constants
// (tosa_vk/lower/convolution.py): the driver folds the index math and unrolls the tap loops as if they were compiled
// in, and one module serves every layer of the same types.
// OC4: OC is a multiple of 4 (a preprocessor fact, so a define). X_SCALED / W_SCALED: block-scaled operands
// (TOSA 1.1, conv_common.glsl).
#include "types.glsl"
#include "convolution/conv_common.glsl"

layout(local_size_x = WORKGROUP) in;

BIAS_BINDING
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
INPUT_WORDS
WEIGHT_WORDS
ZERO_POINT_BINDINGS
X_SCALE_BINDING
W_SCALE_BINDING
PARTIAL_BINDING
#if defined(MAT) && defined(OC4) && !defined(PARTIAL_OUT) && !defined(EP_OUT_SCALAR)
#define STORE_VEC4
OUTPUT_VEC4
#endif

const int TAPS = KD * KH * KW;
const int OWT = (OW + TILE_P - 1) / TILE_P;          // pixel tiles per output row
const int TILES = N * OD * OH * OWT;
const int SPAN = (TILE_P - 1) * SW + (KW - 1) * DW + 1;  // input columns a tile reads in one input row

void main() {
    TILE_AND_BLOCK
    int ow0 = (tile % OWT) * TILE_P;
    int rest = tile / OWT;
    int oh = rest % OH; rest /= OH;
    int od = rest % OD;
    int n = rest / OD;
    int oc0 = block * TILE_C;
    int iw0 = ow0 * SW - PL;                          // input column of span position 0

#ifdef MAT
#define ACC_ELEMENT(a, px, c) a[px][(c) / 4][(c) % 4]
#else
#define ACC_ELEMENT(a, px, c) a[px][c]
#endif
#ifdef MAT
    // 4 output channels at a time: acc[p][c4] += (4 input channels of pixel p) x (4 x 4 weights), one
    // vector-matrix product; integers (int8) go through fp32, exact per chunk row (|partial| < 2^24, checked
    // by the lowering), then add to int32 accumulators.
    ACC4_T acc[TILE_P][TILE_C / 4];
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C / 4; ++c) acc[px][c] = ACC4_T(0);
#else
    ACC_T acc[TILE_P][TILE_C];
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C; ++c) acc[px][c] = ACC_T(0);
#endif

#ifdef PARTIAL_IN
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C; ++c) {
        int at = (((n * OD + od) * OH + oh) * OW + ow0 + px) * OC + oc0 + c;
        ACC_ELEMENT(acc, px, c) = ow0 + px < OW && oc0 + c < OC ? partial[at] : ACC_T(0);
    }
#endif

    for (int kd = 0; kd < KD; ++kd) {
        int id = od * SD - PD + kd * DD;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * SH - PT + kh * DH;
            bool row_in = id >= 0 && id < ID && ih >= 0 && ih < IH;
            int row = ((n * ID + id) * IH + ih) * IW;
            int tap0 = (kd * KH + kh) * KW;
            for (int i = IC_BEGIN; i < IC_END; i += VE) {
                CHUNK_T xv[SPAN][NG];
                bool valid[SPAN];
                [[unroll]] for (int s = 0; s < SPAN; ++s) {
                    valid[s] = row_in && iw0 + s >= 0 && iw0 + s < IW;
                    LOAD_X_CHUNK(xv[s], (row + iw0 + s) * IC + i, valid[s]);
                }
#ifdef MAT
#ifdef INTEGER
                vec4 part[TILE_P][TILE_C / 4];
                [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C / 4; ++c) part[px][c] = vec4(0);
#define PART part
#else
#define PART acc
#endif
                [[unroll]] for (int kw = 0; kw < KW; ++kw) {
                    mat4 m[TILE_C / 4][NG];
                    [[unroll]] for (int c = 0; c < TILE_C / 4; ++c) {
                        CHUNK_T w0[NG], w1[NG], w2[NG], w3[NG];
                        int wi = (tap0 + kw) * IC + i;
                        LOAD_W_CHUNK(w0, min(4 * c + oc0, OC - 1) * TAPS * IC + wi);
                        LOAD_W_CHUNK(w1, min(4 * c + oc0 + 1, OC - 1) * TAPS * IC + wi);
                        LOAD_W_CHUNK(w2, min(4 * c + oc0 + 2, OC - 1) * TAPS * IC + wi);
                        LOAD_W_CHUNK(w3, min(4 * c + oc0 + 3, OC - 1) * TAPS * IC + wi);
                        [[unroll]] for (int q = 0; q < NG; ++q)
                            m[c][q] = mat4(vec4(w0[q]), vec4(w1[q]), vec4(w2[q]), vec4(w3[q]));
                    }
                    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C / 4; ++c)
                        [[unroll]] for (int q = 0; q < NG; ++q)
                            MAT_ACCUMULATE(PART[px][c], vec4(xv[px * SW + kw * DW][q]) * m[c][q], valid[px * SW + kw * DW]);
                }
#ifdef INTEGER
                [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C / 4; ++c)
                    acc[px][c] += ivec4(part[px][c]);
#endif
#else
                [[unroll]] for (int kw = 0; kw < KW; ++kw) {
                    [[unroll]] for (int c = 0; c < TILE_C; ++c) {
                        CHUNK_T wv[NG];
                        LOAD_W_CHUNK(wv, (min(oc0 + c, OC - 1) * TAPS + tap0 + kw) * IC + i);
                        [[unroll]] for (int px = 0; px < TILE_P; ++px)
                            DOT_CHUNK(acc[px][c], xv[px * SW + kw * DW], wv, valid[px * SW + kw * DW]);
                    }
                }
#endif
            }
        }
    }
    int obase = (((n * OD + od) * OH + oh) * OW + ow0) * OC;
#if defined(EP_LOOP) && defined(STORE_VEC4)
    // A heavy epilogue (EP_LOOP: tosa_vk/lower/epilogue.py) in a loop over the tile's 4-channel groups, not unrolled
    // per result: the driver compiles it once (lavapipe: an int8 RESCALE unrolled over a 4 x 8 tile was ~200 ms of
    // LLVM, per layer; light ones like a CLAMP stay unrolled: the loop costs their kernels ~4 % at run time).
    const int GROUPS4 = TILE_P * (TILE_C / 4);
    ACC4_T res[GROUPS4];
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C / 4; ++c)
        res[px * (TILE_C / 4) + c] = acc[px][c];
    [[dont_unroll]] for (int e = 0; e < GROUPS4; ++e) {
        int px = e / (TILE_C / 4), c = e % (TILE_C / 4);
        if (ow0 + px >= OW || oc0 + 4 * c >= OC) continue;
        STORE4_RESULT(obase + px * OC + oc0 + 4 * c, res[e], oc0 + 4 * c);
    }
#else
    [[unroll]] for (int px = 0; px < TILE_P; ++px) {
        if (OW % TILE_P != 0 && ow0 + px >= OW) continue;
#ifdef STORE_VEC4
        [[unroll]] for (int c = 0; c < TILE_C / 4; ++c) {
            if (OC % TILE_C != 0 && oc0 + 4 * c >= OC) continue;
            STORE4_RESULT(obase + px * OC + oc0 + 4 * c, acc[px][c], oc0 + 4 * c);
        }
#else
        [[unroll]] for (int c = 0; c < TILE_C; ++c) {
            if (OC % TILE_C != 0 && oc0 + c >= OC) continue;
            STORE_RESULT(obase + px * OC + oc0 + c, ACC_ELEMENT(acc, px, c), oc0 + c);
        }
#endif
    }
#endif
}

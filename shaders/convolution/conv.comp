#version 450
// CONV2D / CONV3D (spec 2.3.2, 2.3.3): out[n, od, oh, ow, oc] = bias[oc] + sum over the taps (kd, kh, kw) inside
// the input and ic of (in - input_zp) * (weight - weight_zp); CONV2D runs as CONV3D with ID = OD = KD = 1.
// Register blocking: an invocation computes TILE_P consecutive output pixels of one row x TILE_C output channels
// (the channel block is gl_WorkGroupID.y). Per input row (kd, kh) and chunk of VE input channels it loads the
// SPAN input columns its pixels read through all KW taps once, then KW x TILE_C weight chunks, and does
// KW x TILE_P x TILE_C x VE multiply-adds: loads, not arithmetic, are what costs on lavapipe.
// Geometry is compiled in (tosa_vk/lower/convolution.py): index math folds, the tile loops unroll.
#include "types.glsl"
#include "convolution/conv_common.glsl"

layout(local_size_x = WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer InX { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer InW { W_T w[]; };
layout(set = 0, binding = 2) readonly buffer InB { B_T bias[]; };
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
INPUT_WORDS
WEIGHT_WORDS
ZERO_POINT_BINDINGS

const int TAPS = KD * KH * KW;
const int OWT = (OW + TILE_P - 1) / TILE_P;          // pixel tiles per output row
const int TILES = N * OD * OH * OWT;
const int SPAN = (TILE_P - 1) * SW + (KW - 1) * DW + 1;  // input columns a tile reads in one input row

void main() {
    int tile = int(gl_GlobalInvocationID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x * WORKGROUP);
    bool live = tile < TILES;
    tile = min(tile, TILES - 1);                      // spare invocations redo the last tile, store nothing
    int ow0 = (tile % OWT) * TILE_P;
    int rest = tile / OWT;
    int oh = rest % OH; rest /= OH;
    int od = rest % OD;
    int n = rest / OD;
    int oc0 = int(gl_WorkGroupID.y) * TILE_C;
    int iw0 = ow0 * SW - PL;                          // input column of span position 0

    ACC_T acc[TILE_P][TILE_C];
    [[unroll]] for (int p = 0; p < TILE_P; ++p) [[unroll]] for (int c = 0; c < TILE_C; ++c) acc[p][c] = ACC_T(0);

    for (int kd = 0; kd < KD; ++kd) {
        int id = od * SD - PD + kd * DD;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * SH - PT + kh * DH;
            bool row_in = id >= 0 && id < ID && ih >= 0 && ih < IH;
            int row = ((n * ID + id) * IH + ih) * IW;
            int tap0 = (kd * KH + kh) * KW;
            for (int i = 0; i < IC; i += VE) {
                CHUNK_T xv[SPAN][NG];
                bool valid[SPAN];
                [[unroll]] for (int s = 0; s < SPAN; ++s) {
                    valid[s] = row_in && iw0 + s >= 0 && iw0 + s < IW;
                    LOAD_X_CHUNK(xv[s], (row + iw0 + s) * IC + i, valid[s]);
                }
                [[unroll]] for (int kw = 0; kw < KW; ++kw) {
                    [[unroll]] for (int c = 0; c < TILE_C; ++c) {
                        CHUNK_T wv[NG];
                        LOAD_W_CHUNK(wv, (min(oc0 + c, OC - 1) * TAPS + tap0 + kw) * IC + i);
                        [[unroll]] for (int p = 0; p < TILE_P; ++p)
                            DOT_CHUNK(acc[p][c], xv[p * SW + kw * DW], wv, valid[p * SW + kw * DW]);
                    }
                }
            }
        }
    }
    if (!live) return;
    int obase = (((n * OD + od) * OH + oh) * OW + ow0) * OC;
    [[unroll]] for (int p = 0; p < TILE_P; ++p) {
        [[unroll]] for (int c = 0; c < TILE_C; ++c) {
#if OW % TILE_P != 0
            if (ow0 + p >= OW) continue;
#endif
#if OC % TILE_C != 0
            if (oc0 + c >= OC) continue;
#endif
            o[obase + p * OC + oc0 + c] = STORE_O(FINISH(acc[p][c], oc0 + c));
        }
    }
}

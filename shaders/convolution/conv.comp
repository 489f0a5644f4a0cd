#version 450
// CONV2D / CONV3D (spec 2.3.2, 2.3.3): out[n, od, oh, ow, oc] = bias[oc] + sum over taps (kd, kh, kw) inside the
// input and ic of (in - input_zp) * (weight - weight_zp); CONV2D is CONV3D with ID = OD = KD = 1.
// Register blocking: each invocation computes TILE_P consecutive output pixels of one row x TILE_C output
// channels (gl_WorkGroupID.y picks the channel block, so weight addresses are the same in a whole workgroup).
// Geometry is compiled in (defines from tosa_vk/lower/convolution.py) so index math folds and loops unroll.
#extension GL_EXT_control_flow_attributes : enable
#include "types.glsl"
#include "convolution/conv_common.glsl"

layout(local_size_x = WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer InX { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer InW { W_T w[]; };
layout(set = 0, binding = 2) readonly buffer InB { B_T bias[]; };
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
#if VEC == 4  // input and weight rows seen as 4-vectors along IC
layout(set = 0, binding = 0) readonly buffer InX4 { X_T4 x4[]; };
layout(set = 0, binding = 1) readonly buffer InW4 { W_T4 w4[]; };
#endif
ZERO_POINT_BINDINGS

const int TAPS = KD * KH * KW;
const int OWT = (OW + TILE_P - 1) / TILE_P;       // pixel tiles per output row
const int TILES = N * OD * OH * OWT;

void main() {
    int tile = int(gl_GlobalInvocationID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x * WORKGROUP);
    bool live = tile < TILES;
    tile = min(tile, TILES - 1);                   // dead invocations compute a copy of the last tile
    int ow0 = (tile % OWT) * TILE_P;
    int rest = tile / OWT;
    int oh = rest % OH; rest /= OH;
    int od = rest % OD;
    int n = rest / OD;
    int oc0 = int(gl_WorkGroupID.y) * TILE_C;
    int wrow[TILE_C];                              // weight row of each channel (clamped at the OC tail)
    [[unroll]] for (int c = 0; c < TILE_C; ++c) wrow[c] = min(oc0 + c, OC - 1) * TAPS * IC;

    ACC_T acc[TILE_P][TILE_C];
    [[unroll]] for (int p = 0; p < TILE_P; ++p) [[unroll]] for (int c = 0; c < TILE_C; ++c) acc[p][c] = ACC_T(0);

    UNROLL_TAPS for (int kd = 0; kd < KD; ++kd) {
        int id = od * SD - PD + kd * DD;
        UNROLL_TAPS for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * SH - PT + kh * DH;
            bool row_in = id >= 0 && id < ID && ih >= 0 && ih < IH;
            int row = ((n * ID + id) * IH + ih) * IW;
            UNROLL_TAPS for (int kw = 0; kw < KW; ++kw) {
                int tap = (kd * KH + kh) * KW + kw;
                int xb[TILE_P];
                bool valid[TILE_P];
                [[unroll]] for (int p = 0; p < TILE_P; ++p) {
                    int iw = (ow0 + p) * SW - PL + kw * DW;
                    valid[p] = row_in && iw >= 0 && iw < IW;
                    xb[p] = valid[p] ? (row + iw) * IC : 0;  // padding: read element 0, then use 0
                }
#if VEC == 4
                UNROLL_IC for (int i = 0; i < IC / 4; ++i) {
                    XC4 xv[TILE_P];
                    [[unroll]] for (int p = 0; p < TILE_P; ++p)
                        xv[p] = valid[p] ? IN_VALUE(LOAD4_X(x4[xb[p] / 4 + i])) : XC4(0);
                    [[unroll]] for (int c = 0; c < TILE_C; ++c) {
                        WC4 wv = W_VALUE(LOAD4_W(w4[(wrow[c] + tap * IC) / 4 + i]));
                        [[unroll]] for (int p = 0; p < TILE_P; ++p) ACCUMULATE(acc[p][c], DOT4(xv[p], wv), valid[p]);
                    }
                }
#else
                UNROLL_IC for (int i = 0; i < IC; ++i) {
                    X_C xv[TILE_P];
                    [[unroll]] for (int p = 0; p < TILE_P; ++p)
                        xv[p] = valid[p] ? IN_VALUE(LOAD_X(x[xb[p] + i])) : X_C(0);
                    [[unroll]] for (int c = 0; c < TILE_C; ++c) {
                        W_C wv = W_VALUE(LOAD_W(w[wrow[c] + tap * IC + i]));
                        [[unroll]] for (int p = 0; p < TILE_P; ++p) ACCUMULATE(acc[p][c], MUL1(xv[p], wv), valid[p]);
                    }
                }
#endif
            }
        }
    }
    if (!live) return;
    int obase = (((n * OD + od) * OH + oh) * OW + ow0) * OC;
    [[unroll]] for (int p = 0; p < TILE_P; ++p) {
        [[unroll]] for (int c = 0; c < TILE_C; ++c) {
            if (ow0 + p < OW && oc0 + c < OC) o[obase + p * OC + oc0 + c] = STORE_O(FINISH(acc[p][c], oc0 + c));
        }
    }
}

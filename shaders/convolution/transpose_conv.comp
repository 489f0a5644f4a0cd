#version 450
// TRANSPOSE_CONV2D (spec 2.3.5): input pixel (iy, ix) through tap (ky, kx) adds to output
// (iy * SY + PT + ky, ix * SX + PL + kx). Gathered per output: oy receives the taps ky = (oy - PT) mod SY,
// + SY, ... with iy = (oy - PT - ky) / SY inside the input (likewise x).
// An invocation computes TILE_P output pixels of one row that share their column phase (ox = phase + k * SX,
// so every pixel sees the same kx taps, reading consecutive input columns) x TILE_C output channels.
// Geometry, tile and channel-block packing are specialization constants (tosa_vk/lower/convolution.py).
#include "types.glsl"
#include "convolution/conv_common.glsl"

layout(local_size_x = WORKGROUP) in;

BIAS_BINDING
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
INPUT_WORDS
WEIGHT_WORDS
ZERO_POINT_BINDINGS
PARTIAL_BINDING

const int COLS = (OW + SX - 1) / SX;                // output columns of phase 0 (the most of any phase)
const int JT = (COLS + TILE_P - 1) / TILE_P;         // pixel tiles per phase and row
const int TILES = N * OH * SX * JT;

int pmod(int a, int b) { int r = a % b; return r < 0 ? r + b : r; }

void main() {
    TILE_AND_BLOCK
    int j = tile % JT;
    int rest = tile / JT;
    int phase = rest % SX; rest /= SX;
    int oy = rest % OH;
    int n = rest / OH;
    int oc0 = block * TILE_C;
    int ox0 = phase + j * TILE_P * SX;              // pixel px is at ox0 + px * SX

    ACC_T acc[TILE_P][TILE_C];
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C; ++c) acc[px][c] = ACC_T(0);

#ifdef PARTIAL_IN
    [[unroll]] for (int px = 0; px < TILE_P; ++px) [[unroll]] for (int c = 0; c < TILE_C; ++c) {
        int ox = ox0 + px * SX;
        int at = ((n * OH + oy) * OW + ox) * OC + oc0 + c;
        acc[px][c] = ox < OW && oc0 + c < OC ? partial[at] : ACC_T(0);
    }
#endif

    for (int ky = pmod(oy - PT, SY); ky < KH; ky += SY) {
        int iy = (oy - PT - ky) / SY;                // exact
        bool row_in = iy >= 0 && iy < IH;
        int row = (n * IH + iy) * IW;
        for (int kx = pmod(ox0 - PL, SX); kx < KW; kx += SX) {
            int ix0 = (ox0 - PL - kx) / SX;          // exact; pixel px reads column ix0 + px
            for (int i = IC_BEGIN; i < IC_END; i += VE) {
                CHUNK_T xv[TILE_P][NG];
                bool valid[TILE_P];
                [[unroll]] for (int px = 0; px < TILE_P; ++px) {
                    valid[px] = row_in && ix0 + px >= 0 && ix0 + px < IW;
                    LOAD_X_CHUNK(xv[px], (row + ix0 + px) * IC + i, valid[px]);
                }
                [[unroll]] for (int c = 0; c < TILE_C; ++c) {
                    CHUNK_T wv[NG];
                    LOAD_W_CHUNK(wv, ((min(oc0 + c, OC - 1) * KH + ky) * KW + kx) * IC + i);
                    [[unroll]] for (int px = 0; px < TILE_P; ++px) DOT_CHUNK(acc[px][c], xv[px], wv, valid[px]);
                }
            }
        }
    }
    [[unroll]] for (int px = 0; px < TILE_P; ++px) {
        int ox = ox0 + px * SX;
        if (ox >= OW) continue;
        int obase = ((n * OH + oy) * OW + ox) * OC;
        [[unroll]] for (int c = 0; c < TILE_C; ++c) {
            if (OC % TILE_C != 0 && oc0 + c >= OC) continue;
            STORE_RESULT(obase + oc0 + c, acc[px][c], oc0 + c);
        }
    }
}

#version 450
// DEPTHWISE_CONV2D (spec 2.3.4) on a shared-memory input patch (the "tiled" kernel family,
// tosa_vk/lower/conv_tiled.py): out[n, oh, ow, c * M + m] = bias[c * M + m] + sum over the taps (kh, kw) inside the
// input of (in[n, ih, iw, c] - input_zp) * (weight[kh, kw, c, m] - weight_zp).
// A workgroup computes a TH x TW tile of output pixels of one image for CB input channels (all M multipliers of
// each): it stages the input patch those pixels read, halo included, once in shared memory (channels fastest, as in
// memory), then its invocations walk the tile's outputs, output channels fastest, each reading its taps from the
// patch. Geometry and BIAS_SCALAR are int specialization constants; the tile (TH, TW, CB, THREADS) is compiled in.
// Floating point sums in fp32 (SHARED_T float16_t stages fp16 / fp8 inputs exactly where the class uses fp16),
// integers minus their zero points in int32.
#include "types.glsl"
#include "convolution/conv_common.glsl"

layout(local_size_x = THREADS) in;

BIAS_BINDING
layout(set = 0, binding = 3) writeonly buffer Out { O_T o[]; };
INPUT_WORDS
WEIGHT_WORDS
ZERO_POINT_BINDINGS

const int PH = (TH - 1) * SH + (KH - 1) * DH + 1;  // patch rows and columns
const int PW = (TW - 1) * SW + (KW - 1) * DW + 1;
const int OHT = (OH + TH - 1) / TH, OWT = (OW + TW - 1) / TW;

// PH / PW are specialization-constant expressions, so the patch's size is the lowering's PATCH (a define)
shared SHARED_T staged[PATCH];
#if defined(SKIP_PADDED) && !defined(INTEGER)
shared bool real[PATCH];  // a padded tap times an infinite weight must add nothing, not NaN
#define ACCUMULATE(acc, a, b, at) acc += real[at] ? (a) * (b) : 0.0
#else
#define ACCUMULATE(acc, a, b, at) acc += (a) * (b)
#endif

void main() {
    int t = int(gl_LocalInvocationID.x);
    int tile = int(gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x);
    if (tile >= N * OHT * OWT) return;  // the whole workgroup: spare groups of a spilled grid
    int ow0 = (tile % OWT) * TW, oh0 = (tile / OWT % OHT) * TH, n = tile / (OWT * OHT);
    int c0 = int(gl_WorkGroupID.y) * CB;
    int ih0 = oh0 * SH - PT, iw0 = ow0 * SW - PL;

    for (int e = t; e < PH * PW * CB; e += THREADS) {
        int c = c0 + e % CB, pos = e / CB;
        int ih = ih0 + pos / PW, iw = iw0 + pos % PW;
        bool in_ = c < C && ih >= 0 && ih < IH && iw >= 0 && iw < IW;
        staged[e] = in_ ? SHARED_T(IN_VALUE(LOAD_X(x[((n * IH + ih) * IW + iw) * C + c]))) : SHARED_T(0);
#if defined(SKIP_PADDED) && !defined(INTEGER)
        real[e] = in_;
#endif
    }
    barrier();

    const int CBM = CB * M;
    for (int item = t; item < TH * TW * CBM; item += THREADS) {
        int ocl = item % CBM, pix = item / CBM;
        int r = pix / TW, cc = pix % TW, cl = ocl / M, mi = ocl % M;
        int oh = oh0 + r, ow = ow0 + cc, c = c0 + cl;
        if (oh >= OH || ow >= OW || c >= C) continue;
        ACC_T acc = ACC_T(0);
        for (int kh = 0; kh < KH; ++kh) {
            for (int kw = 0; kw < KW; ++kw) {
                int at = ((r * SH + kh * DH) * PW + cc * SW + kw * DW) * CB + cl;
                ACC_T wv = ACC_T(W_VALUE(LOAD_W(w[((kh * KW + kw) * C + c) * M + mi])));
                ACCUMULATE(acc, ACC_T(staged[at]), wv, at);
            }
        }
        int oc = c * M + mi;
        STORE_RESULT(((n * OH + oh) * OW + ow) * (C * M) + oc, acc, oc);
    }
}

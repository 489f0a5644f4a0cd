#version 450
// FFT2D / RFFT2D (spec 2.3.6, 2.3.9): one radix-2 Stockham pass of the 1-D transforms of length L along one
// axis (element stride S) of the complex [N, H, W] data; log2(W) passes along W, then log2(H) along H, give
// the 2-D transform in natural order. One butterfly per invocation (no loops: lavapipe's loop budget).
// Pass with sub-transform size Ns: q < L/2, k = q mod Ns, a = x[q], b = x[q + L/2] * w^k (w = e^(-+ i pi / Ns)),
// y[2 (q - k) + k] = a + b, y[2 (q - k) + k + Ns] = a - b.
// Defines: IN_SPLIT (read the real / imaginary inputs RE, IM; IN_REAL: RE only, imaginary 0) else X (complex
// temporary); OUT_SPLIT (write OR, OI; RFFT_OUT: columns 0 .. W/2 only, and imaginary 0 at (0 or H/2, 0 or W/2)
// as the spec's RFFT2D skips them) else Y; INVERSE (e^(+i...)); IDENTITY (H = W = 1: a copy); the binding
// numbers B_*. TW: the twiddle table of fft_twiddle.comp for length p.tw_len.
#include "index.glsl"

#ifdef IN_SPLIT
layout(set = 0, binding = B_RE) readonly buffer InRe { float in_re[]; };
#ifndef IN_REAL
layout(set = 0, binding = B_IM) readonly buffer InIm { float in_im[]; };
#endif
#else
layout(set = 0, binding = B_X) readonly buffer InX { vec2 x[]; };
#endif
#ifdef OUT_SPLIT
layout(set = 0, binding = B_OR) writeonly buffer OutRe { float out_re[]; };
layout(set = 0, binding = B_OI) writeonly buffer OutIm { float out_im[]; };
#else
layout(set = 0, binding = B_Y) writeonly buffer OutY { vec2 y[]; };
#endif
#ifndef IDENTITY
layout(set = 0, binding = B_TW) readonly buffer InTw { vec2 tw[]; };
#endif
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;     // butterflies: N * H * W / 2 (elements for IDENTITY)
    uint L;         // transform length
    uint S;         // element stride of the axis (1 along W, W along H)
    uint Ns;        // sub-transform size of this pass
    uint tw_step;   // table index per k: tw_len / (2 Ns)
    uint H, W;
} p;
#endif

vec2 load(uint i) {
#ifdef IN_SPLIT
#ifdef IN_REAL
    return vec2(in_re[i], 0.0);
#else
    return vec2(in_re[i], in_im[i]);
#endif
#else
    return x[i];
#endif
}

void store(uint i, vec2 v) {
#ifdef OUT_SPLIT
    uint w = i % p.W;
    uint t = i / p.W;
#ifdef RFFT_OUT
    uint half_w = p.W / 2u;
    if (w > half_w) return;
    uint h = t % p.H;
    if ((h == 0u || h == p.H / 2u) && (w == 0u || w == half_w)) v.y = 0.0;
    uint oi = t * (half_w + 1u) + w;
#else
    uint oi = i;
#endif
    out_re[oi] = v.x;
    out_im[oi] = v.y;
#else
    y[i] = v;
#endif
}

void main() {
    uint g = flat_index();
    if (g >= p.total) return;
#ifdef IDENTITY
    store(g, load(g));
#else
    uint half_l = p.L / 2u;
    uint inner = g % p.S;
    uint rest = g / p.S;
    uint q = rest % half_l;
    uint base = (rest / half_l) * p.L * p.S + inner;
    vec2 a = load(base + q * p.S);
    vec2 b = load(base + (q + half_l) * p.S);
    uint k = q & (p.Ns - 1u);
    vec2 w = tw[k * p.tw_step];
#ifndef INVERSE
    w.y = -w.y;
#endif
    b = vec2(b.x * w.x - b.y * w.y, b.x * w.y + b.y * w.x);
    uint j = 2u * (q - k) + k;
    store(base + j * p.S, a + b);
    store(base + (j + p.Ns) * p.S, a - b);
#endif
}

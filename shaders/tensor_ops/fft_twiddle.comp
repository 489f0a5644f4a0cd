#version 450
// FFT2D / RFFT2D (spec 2.3.6, 2.3.9) twiddle table: tw[m] = (cos(2 pi m / L), sin(2 pi m / L)), m < L / 2,
// computed in fp64 (octant reduction of the exact fraction m / L, then Taylor series on [0, pi / 4]) and rounded
// once to fp32. The FFT passes read tw[k * L / (2 Ns)] for their sub-transform size 2 Ns.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#include "index.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { vec2 tw[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint count;     // L / 2
    uint L;
} p;
#endif

const double TWO_PI = 6.283185307179586476925286766559LF;

// (cos x, sin x) for 0 <= x <= pi / 4 (terms to x^18 / 18!: error below 1e-17)
dvec2 cos_sin(double x) {
    double x2 = x * x;
    double c = 1.0LF, s = 1.0LF;
    double tc = 1.0LF, ts = 1.0LF;
    for (int k = 1; k <= 9; ++k) {
        tc *= -x2 / double((2 * k - 1) * (2 * k));
        ts *= -x2 / double((2 * k) * (2 * k + 1));
        c += tc;
        s += ts;
    }
    return dvec2(c, s * x);
}

void main() {
    uint m = flat_index();
    if (m >= p.count) return;
    double f = double(m) / double(p.L);             // exact: L is a power of two; 0 <= f < 1/2
    bool neg_cos = f > 0.25LF;
    if (neg_cos) f = 0.5LF - f;                      // cos(2 pi f) = -cos(2 pi (1/2 - f)), sin unchanged
    bool swap = f > 0.125LF;
    if (swap) f = 0.25LF - f;                        // cos <-> sin of 2 pi (1/4 - f)
    dvec2 cs = cos_sin(TWO_PI * f);
    if (swap) cs = cs.yx;
    if (neg_cos) cs.x = -cs.x;
    tw[m] = vec2(cs);
}

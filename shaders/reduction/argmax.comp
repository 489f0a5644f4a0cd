#version 450
// ARGMAX (spec 2.3.1; a tensor operator, kept beside the reductions it resembles): the first index of the
// maximum along one axis, output int32. The input is viewed as [outer, axis, inner], the output as [outer, inner].
// Defines: A_* / O_* binding types, FLOAT when the input is floating point, IGNORE for nan_mode IGNORE.
// Floating point (as apply_max_s with nan_mode): PROPAGATE -> the first NaN wins; IGNORE -> NaNs are skipped,
// and an all-NaN axis gives index 0. -0 and +0 compare equal (the first one is kept).
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
layout(push_constant) uniform Params {
    uint total;     // output elements = outer * inner
    uint axis_len;  // shape1[axis]
    uint inner;     // product of the dimensions after the axis
} p;

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint r = i % p.inner;
    uint idx = (i - r) * p.axis_len + r;
    A_C m = LOAD_A(a[idx]);
    int best = 0;
    for (uint k = 1u; k < p.axis_len; ++k) {
        idx += p.inner;
        A_C x = LOAD_A(a[idx]);
#ifdef FLOAT
#ifdef IGNORE
        if (isnan(x)) continue;
        if (isnan(m) || x > m) { m = x; best = int(k); }
#else
        if (isnan(m)) break;                 // a NaN is the maximum: keep the first one
        if (isnan(x) || x > m) { m = x; best = int(k); }
#endif
#else
        if (x > m) { m = x; best = int(k); }
#endif
    }
    o[i] = STORE_O(best);
}

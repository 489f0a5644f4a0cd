#version 450
// ARGMAX (spec 2.3.1; a tensor operator, kept beside the reductions it resembles): the first index of the
// maximum along one axis, output int32. Like reduce.comp it runs in passes over [outer, axis_len, inner] split
// into `chunks` pieces of `chunk`; a pass that is not the last writes each piece's maximum (PV, input type) and
// its axis index (PI), and the next pass (PARTIAL_IN) folds those pairs in order, taking the index along.
// Strict comparisons in axis order keep the first index of the maximum.
// Defines: A_* / O_* binding types (O: int32 indices, the output or PI; an int64 output for EXT-INT64), FLOAT for floating point, IGNORE for
// nan_mode IGNORE, PARTIAL_IN (AI: the indices of the partial maxima in A), PARTIAL_OUT (PV: maxima written),
// and the binding numbers B_AI, B_O, B_PV.
// Floating point (as apply_max_s with nan_mode): PROPAGATE -> the first NaN wins; IGNORE -> NaNs are skipped,
// and an all-NaN axis gives index 0. -0 and +0 compare equal (the first one is kept).
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
#ifdef PARTIAL_IN
layout(set = 0, binding = B_AI) readonly buffer InAI { int ai[]; };
#endif
layout(set = 0, binding = B_O) writeonly buffer Out { O_T o[]; };
#ifdef PARTIAL_OUT
layout(set = 0, binding = B_PV) writeonly buffer OutV { PV_T pv[]; };
#endif
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;     // results of this pass = outer * chunks * inner
    uint axis_len;
    uint inner;
    uint chunk;
    uint chunks;
} p;
#endif

#ifdef PARTIAL_IN
#define INDEX(idx, k) ai[idx]
#else
#define INDEX(idx, k) int(k)
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint r = i % p.inner;
    uint t = i / p.inner;
    uint j = t % p.chunks;
    uint start = j * p.chunk;
    uint idx = ((t / p.chunks) * p.axis_len + start) * p.inner + r;
    uint n = min(p.chunk, p.axis_len - start);
    A_T mv = a[idx];                           // the maximum so far, as stored
    A_C m = LOAD_A(mv);
    int best = INDEX(idx, start);
    for (uint k = 1u; k < n; ++k) {
        idx += p.inner;
        A_C x = LOAD_A(a[idx]);
#ifdef FLOAT
#ifdef IGNORE
        if (isnan(x)) continue;
        bool take = isnan(m) || x > m;
#else
        if (isnan(m)) break;                   // a NaN is the maximum: keep the first one
        bool take = isnan(x) || x > m;
#endif
#else
        bool take = x > m;
#endif
        if (take) { m = x; mv = a[idx]; best = INDEX(idx, start + k); }
    }
    o[i] = O_T(best);                          // int32, or int64 (EXT-INT64)
#ifdef PARTIAL_OUT
    pv[i] = mv;
#endif
}

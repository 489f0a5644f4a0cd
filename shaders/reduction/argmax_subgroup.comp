#version 450
// ARGMAX (spec 2.3.1) for GPUs, the subgroup family (tosa_vk/lower/reduction_subgroup.py): the passes, pieces and
// workgroups of reduce_subgroup.comp (SG_X x SG_Y invocations; SG_X == 1: a row, subgroup operations, else
// columns meeting in shared memory), folding (value, index) pairs: a pair takes another's place when `better`
// says so, a commutative rule (the larger value; on a tie the smaller index), so any grouping gives the first
// index of the maximum. A pass that is not the last writes each piece's maximum (PV) and its index (O, int32);
// the next (PARTIAL_IN) reads them (A, AI).
// Floating point (FLOAT) as argmax.comp: PROPAGATE -> the first NaN wins; IGNORE (IGNORE) -> NaNs are skipped and
// an all-NaN axis gives its first index; -0 == +0. Defines: as argmax.comp's, and SG_X, SG_Y.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
layout(local_size_x = SG_X * SG_Y) in;

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
    uint groups;    // workgroups of this pass = outer * chunks * xblocks
    uint axis_len;
    uint inner;
    uint chunk;     // axis elements per workgroup
    uint chunks;
    uint xblocks;   // ceil(inner / SG_X)
} p;
#endif

#ifdef PARTIAL_IN
#define INDEX(idx, k) ai[idx]
#else
#define INDEX(idx, k) int(k)
#endif
const int NONE = 0x7fffffff;  // the index of an empty pair (an invocation past its piece's end)

#ifdef FLOAT
// PROPAGATE: a NaN is above every number; IGNORE: below (an all-NaN pair is only ever a placeholder)
#ifdef IGNORE
#define ABOVE(u, v) (!isnan(u) && (isnan(v) || u > v))
#else
#define ABOVE(u, v) (!isnan(v) && (isnan(u) || u > v))
#endif
#define SAME(u, v) ((isnan(u) && isnan(v)) || u == v)
#else
#define ABOVE(u, v) ((u) > (v))
#define SAME(u, v) ((u) == (v))
#endif

// whether (x, xi) takes the place of (m, mi)
bool better(A_C x, int xi, A_C m, int mi) {
    if (xi == NONE) return false;
    if (mi == NONE) return true;
    return ABOVE(x, m) || (SAME(x, m) && xi < mi);
}

#if SG_X == 1
shared A_C part_v[SG_Y];
shared int part_i[SG_Y];
#else
shared A_C part_v[SG_X * SG_Y];
shared int part_i[SG_X * SG_Y];
#endif

void main() {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (g >= p.groups) return;  // a spare workgroup of a grid spilled into y (uniform: no barrier is skipped)
    uint lid = gl_LocalInvocationIndex;
    uint x = lid % uint(SG_X), y = lid / uint(SG_X);
    uint xb = g % p.xblocks, t = g / p.xblocks;
    uint j = t % p.chunks, ob = t / p.chunks;
    uint col = xb * uint(SG_X) + x;
    uint start = j * p.chunk;
    uint n = min(p.chunk, p.axis_len - start);
    A_C m = A_C(0);
    int mi = NONE;
    if (col < p.inner) {
        uint idx = (ob * p.axis_len + start + y) * p.inner + col;
        for (uint k = y; k < n; k += uint(SG_Y), idx += uint(SG_Y) * p.inner) {
            A_C v = LOAD_A(a[idx]);
            int vi = INDEX(idx, start + k);
            if (better(v, vi, m, mi)) { m = v; mi = vi; }
        }
    }
#if SG_X == 1
    // the subgroup's best pair: its best value (NaN flags first, as subgroupMax leaves NaNs undefined), then the
    // smallest index holding it
    bool live = mi != NONE;
#ifdef FLOAT
    bool nan = live && isnan(m);
#ifdef IGNORE
    bool special = subgroupAnd(!live || nan);  // nothing but NaN: the smallest index of a NaN
#else
    bool special = subgroupOr(nan);            // a NaN: the smallest index of a NaN
#endif
    A_C top = special ? uintBitsToFloat(0x7fc00000u)
                      : subgroupMax(live && !nan ? m : -uintBitsToFloat(0x7f800000u));
    bool holds = live && (special ? nan : !nan && m == top);
#else
    A_C top = subgroupMax(live ? m : A_C(-2147483647 - 1));
    bool holds = live && m == top;
#endif
    int topi = subgroupMin(holds ? mi : NONE);
    if (subgroupElect()) { part_v[gl_SubgroupID] = top; part_i[gl_SubgroupID] = topi; }
    barrier();
    if (lid != 0u) return;
    m = part_v[0];
    mi = part_i[0];
    for (uint s = 1u; s < gl_NumSubgroups; ++s) {
        if (better(part_v[s], part_i[s], m, mi)) { m = part_v[s]; mi = part_i[s]; }
    }
#else
    part_v[lid] = m;
    part_i[lid] = mi;
    barrier();
    if (y != 0u || col >= p.inner) return;
    for (uint s = 1u; s < uint(SG_Y); ++s) {
        uint at = s * uint(SG_X) + x;
        if (better(part_v[at], part_i[at], m, mi)) { m = part_v[at]; mi = part_i[at]; }
    }
#endif
    uint i = (ob * p.chunks + j) * p.inner + col;
    o[i] = O_T(mi);                            // int32, or int64 (EXT-INT64)
#ifdef PARTIAL_OUT
    pv[i] = STORE_PV(m);
#endif
}

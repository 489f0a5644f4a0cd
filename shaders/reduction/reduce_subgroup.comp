#version 450
// Reductions along one axis (spec 2.9) for GPUs, the subgroup family (tosa_vk/lower/reduction_subgroup.py): a
// workgroup of SG_X x SG_Y invocations reduces SG_X adjacent results of one pass. A pass views its input as
// [outer, axis_len, inner] and splits the axis into `chunks` pieces of `chunk` elements (the last pass has one);
// workgroup g takes results (outer o, piece j, inner columns xb * SG_X ..) and invocation (x, y) folds elements
// y, y + SG_Y, .. of its piece in column xb * SG_X + x, so adjacent invocations read adjacent addresses:
//   SG_X == 1 (the axis is innermost, a row): the SG_Y invocations of a row meet by SG_REDUCE, a subgroup
//            operation, then the partials of the subgroups (gl_NumSubgroups: any subgroup size) in shared memory;
//   SG_X > 1  (columns): invocations of one y are adjacent columns; the SG_Y partials of a column meet in shared
//            memory, folded in y order by the invocation of y 0.
// No assumption on which invocations form a subgroup. The operations combine partials with STEP, as reduce.comp
// does (sum, product, max / min with nan_mode, and / or), so results equal the sequential fold up to the order of
// floating-point sums and products.
// Defines (as reduce.comp's): A_* / O_*, ACC_T, INIT, READ(v), STEP(acc, x), WRITE(acc) (the result through
// EPILOGUE(v, c, at) in the last pass; C_OUT results per channel row), PROLOGUE / P_* (reduction/fold.glsl);
// and SG_X, SG_Y, SG_REDUCE(v) (the subgroup's fold of v: subgroupAdd / Mul / Max / Min / And / Or, or a sg_*
// function below for floating-point maxima and minima with their NaN rules).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"
#include "elementwise.glsl"
layout(local_size_x = SG_X * SG_Y) in;

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint groups;    // workgroups of this pass = outer * chunks * xblocks
    uint axis_len;  // length of the axis this pass reads
    uint inner;     // product of the dimensions after the axis
    uint chunk;     // axis elements per workgroup
    uint chunks;    // ceil(axis_len / chunk)
    uint xblocks;   // ceil(inner / SG_X)
    EP_PUSH
} p;
#endif
#include "epilogue.glsl"
#include "reduction/fold.glsl"

// Floating-point maxima / minima of a subgroup as apply_max_s / apply_min_s with nan_mode (elementwise.glsl):
// subgroupMax / Min leave NaN operands undefined, so NaNs are flags. PROPAGATE: any NaN -> NaN. IGNORE: NaN is
// the "none yet" value (INIT), the result is NaN only when every invocation has NaN.
#define SG_NAN uintBitsToFloat(0x7fc00000u)
#define SG_INF uintBitsToFloat(0x7f800000u)
float sg_max_propagate(float v) { return subgroupOr(isnan(v)) ? SG_NAN : subgroupMax(isnan(v) ? -SG_INF : v); }
float sg_min_propagate(float v) { return subgroupOr(isnan(v)) ? SG_NAN : subgroupMin(isnan(v) ? SG_INF : v); }
float sg_max_ignore(float v) { return subgroupAnd(isnan(v)) ? SG_NAN : subgroupMax(isnan(v) ? -SG_INF : v); }
float sg_min_ignore(float v) { return subgroupAnd(isnan(v)) ? SG_NAN : subgroupMin(isnan(v) ? SG_INF : v); }

#if SG_X == 1
shared ACC_T part[SG_Y];  // one per subgroup: at most SG_Y of them (subgroups of one invocation)
#else
shared ACC_T part[SG_X * SG_Y];
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
    ACC_T acc = INIT;
    if (col < p.inner) {
        uint idx = (ob * p.axis_len + start + y) * p.inner + col;
        for (uint k = y; k < n; k += uint(SG_Y), idx += uint(SG_Y) * p.inner) {
            acc = STEP(acc, READ(A_AT(idx)));
        }
    }
#if SG_X == 1
    acc = SG_REDUCE(acc);
    if (subgroupElect()) part[gl_SubgroupID] = acc;
    barrier();
    if (lid != 0u) return;
    acc = part[0];
    for (uint s = 1u; s < gl_NumSubgroups; ++s) acc = STEP(acc, part[s]);
#else
    part[lid] = acc;
    barrier();
    if (y != 0u || col >= p.inner) return;
    for (uint s = 1u; s < uint(SG_Y); ++s) acc = STEP(acc, part[s * uint(SG_X) + x]);
#endif
    uint i = (ob * p.chunks + j) * p.inner + col;
    o[i] = WRITE(acc);
}

#version 450
// A fused row group (tosa_vk/stages/fuse.py, tosa_vk/stages/lower/fused/rows.py): element-wise operators with REDUCE_SUM / MAX / MIN
// along the last axis, one row of RG_LEN elements per RG_LANES invocations (RG_WG / RG_LANES rows per workgroup).
// ROW_BODY (generated) runs one pass over the row per reduction, recomputing the element-wise values it reads from
// the inputs (cheaper than a round trip through memory), folds each lane's share, then the lanes meet through
// shared memory (RG_COMBINE_*: any subgroup size); a last pass stores the values used outside the group.
// RG_LANES is 1 on the register class (lavapipe: no barriers, one invocation walks its row as reduce.comp does).
#include "types.glsl"
#include "fused.glsl"
#ifdef EP_WORDS  // only the scalars of LowerCtx.word (types.glsl)
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { EP_PUSH } p;
#endif
#endif
layout(local_size_x = RG_WG) in;
EP_DECLS

// the passes ROW_BODY lists (tosa_vk/stages/lower/fused/render.py): over the lane's share of the row (j: the element,
// c: its channel, cl: its last coordinate), `body` computes the element's values; RG_FOLD folds `value` into a new
// accumulator `a` with `step`, RG_STORE_PASS stores them; RG_STORE_SCALAR stores a value of the row
#define RG_FOLD(T, a, init, n, lanes, cl, body, step, value) T a = init; \
    for (uint j = lane; j < n; j += lanes) { int c = int(j); int cl = c; body a = step(a, value); }
#define RG_STORE_PASS(n, lanes, cl, body, stores) \
    for (uint j = lane; j < n; j += lanes) { int c = int(j); int cl = c; body if (valid) { stores } }
#define RG_STORE_SCALAR(x, e) if (valid && lane == 0u) x[row] = e;

#if RG_LANES > 1
// the partials of every lane, one array per accumulator type the group uses
#ifdef RG_SHARED_DOUBLE
shared double rg_d[RG_WG];
#endif
#ifdef RG_SHARED_FLOAT
shared float rg_f[RG_WG];
#endif
#ifdef RG_SHARED_INT
shared int rg_i[RG_WG];
#endif
// folds the lanes' partials of `acc` into every lane of the row: a tree over shared memory (uniform control flow)
#define RG_COMBINE(arr, acc, STEP_FN) { \
    arr[gl_LocalInvocationID.x] = acc; barrier(); \
    for (uint s_ = RG_LANES / 2u; s_ > 0u; s_ >>= 1u) { \
        if (lane < s_) arr[gl_LocalInvocationID.x] = STEP_FN(arr[gl_LocalInvocationID.x], arr[gl_LocalInvocationID.x + s_]); \
        barrier(); } \
    acc = arr[gl_LocalInvocationID.x - lane]; barrier(); }
#else
#define RG_COMBINE(arr, acc, STEP_FN)
#endif

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint lane = gl_LocalInvocationID.x % uint(RG_LANES);
    uint wanted = wg * uint(RG_WG / RG_LANES) + gl_LocalInvocationID.x / uint(RG_LANES);
    bool valid = wanted < uint(RG_ROWS);
#if RG_LANES > 1
    uint row = min(wanted, uint(RG_ROWS) - 1u);  // every lane reaches every barrier
#else
    if (!valid) return;
    uint row = wanted;
#endif
    int c = 0;
    ROW_BODY
}

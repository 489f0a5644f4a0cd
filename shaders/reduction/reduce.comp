#version 450
// Reductions along one axis (spec 2.9): REDUCE_ALL / ANY / MAX / MIN / PRODUCT / SUM.
// The input is viewed as [outer, axis, inner] and the output as [outer, 1, inner]; one invocation per output
// element folds the axis in order, as the pseudocode does. Defines from the lowering (tosa_vk/lower/reduction.py):
//   A_*, O_*          binding types (tosa_vk/lower/types.py)
//   ACC_T             accumulator type (bool, int, float or double)
//   INIT              the accumulator's initial value (true / false / minimum_s / maximum_s / NaN / 1 / 0)
//   STEP(acc, x)      the new accumulator from acc and the element x (in A's compute type)
//   FINISH(acc)       the value handed to STORE_O
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
layout(push_constant) uniform Params {
    uint total;     // output elements = outer * inner
    uint axis_len;  // shape1[axis]
    uint inner;     // product of the dimensions after the axis
} p;

// fp64 -> fp32 rounded to odd: truncate, then set the last bit when inexact. Rounding that to a format with at
// most 22 fraction bits (fp16, bf16) to nearest gives the correctly rounded result of the fp64 value (no double
// rounding), so fp16 / bf16 sums and products are rounded once, like static_cast<in_out_t>(acc).
float f64_to_f32_odd(double d) {
    float f = float(d);
    if (isnan(f) || isinf(f)) return f;
    double back = double(f);
    if (back == d) return f;
    uint u = floatBitsToUint(f);
    if (abs(back) > abs(d)) u -= 1u;  // one step toward zero: the truncation of d
    return uintBitsToFloat(u | 1u);
}

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint r = i % p.inner;
    uint idx = (i - r) * p.axis_len + r;  // (i / inner) * axis_len * inner + r
    ACC_T acc = INIT;
    for (uint k = 0u; k < p.axis_len; ++k, idx += p.inner) {
        acc = STEP(acc, LOAD_A(a[idx]));
    }
    o[i] = STORE_O(FINISH(acc));
}

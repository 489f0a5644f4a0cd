#version 450
// Reductions along one axis (spec 2.9): REDUCE_ALL / ANY / MAX / MIN / PRODUCT / SUM, in one or more passes.
// A pass views its input as [outer, axis_len, inner] and splits the axis into `chunks` pieces of `chunk`
// elements; one invocation per [outer, chunks, inner] element folds its piece in axis order. The last pass has
// one chunk (the whole axis, possibly of the partial results of earlier passes) and writes the output.
// Passes bound each invocation's loop: lavapipe (gallivm) ends any invocation's loops after 65535 iterations in
// total (LP_MAX_TGSI_LOOP_ITERATIONS), and they spread a long axis over many invocations.
// Defines from the lowering (tosa_vk/lower/reduction.py):
//   A_*, O_*          binding types (tosa_vk/lower/types.py)
//   ACC_T             accumulator type (bool, int, float or double)
//   INIT              the accumulator's initial value (true / false / minimum_s / maximum_s / NaN / 1 / 0)
//   READ(v)           an input element (or a partial result) from its storage value
//   STEP(acc, x)      the new accumulator from acc and x (associative: partial results combine with it too)
//   WRITE(acc)        the storage value of the result (the output rounded once, or a partial result)
//   PROLOGUE          (first pass only) `a` is the input of the reduction before this one (tosa_vk/fuse.py):
//                     element idx of that reduction's result, folded here by prologue(idx) over P_LEN elements
//                     P_INNER apart, with P_INIT / P_STEP / P_FINISH (what its own single pass computes)
//   EPILOGUE(v, c, at) the operators applied to each result before its store (include/epilogue.glsl; C_OUT
//                     channels)
//   HEAD              (one pass) the results are the input of a classifier, a 1x1 CONV2D on a 1x1 image, done here
//                     too (tosa_vk/fuse.py): workgroup (block, n) folds the H_C results of batch n into shared
//                     memory as H_X(acc) (the result through EPILOGUE, as its type stores it), then each invocation
//                     computes one of the H_OC output channels, acc = H_MAC(acc, xv, k) over the channels (k: the
//                     weight's index), and stores H_RESULT(acc, oc, at) (bias and the convolution's own chain,
//                     H_EPILOGUE); HEAD_DECLS declares the weights, the bias and that chain
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;     // results of this pass = outer * chunks * inner
    uint axis_len;  // length of the axis this pass reads
    uint inner;     // product of the dimensions after the axis
    uint chunk;     // axis elements per invocation
    uint chunks;    // ceil(axis_len / chunk)
    EP_PUSH
} p;
#endif
#include "epilogue.glsl"

#include "reduction/fold.glsl"

// result i of this pass: the fold of its chunk of the axis
ACC_T fold(uint i) {
    uint r = i % p.inner;
    uint t = i / p.inner;
    uint j = t % p.chunks;
    uint start = j * p.chunk;
    uint idx = ((t / p.chunks) * p.axis_len + start) * p.inner + r;
    uint n = min(p.chunk, p.axis_len - start);
    ACC_T acc = INIT;
    for (uint k = 0u; k < n; ++k, idx += p.inner) {
        acc = STEP(acc, READ(A_AT(idx)));
    }
    return acc;
}

#ifdef HEAD
#include "fused.glsl"
HEAD_DECLS
shared H_X_T pooled[H_C];

void main() {
    uint n = gl_WorkGroupID.y;
    for (uint c = gl_LocalInvocationID.x; c < H_C; c += WORKGROUP) {
        uint i = n * H_C + c;
        ACC_T acc = fold(i);
        pooled[c] = H_X(acc);
    }
    barrier();
    uint oc = gl_WorkGroupID.x * WORKGROUP + gl_LocalInvocationID.x;
    if (oc >= H_OC) return;
    H_ACC_T acc = H_ACC_T(0);
    for (uint c = 0u; c < H_C; ++c) {
        acc = H_MAC(acc, pooled[c], oc * H_C + c);
    }
    uint at = n * H_OC + oc;
    o[at] = H_RESULT(acc, oc, at);
}
#else
void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    ACC_T acc = fold(i);
    o[i] = WRITE(acc);
}
#endif

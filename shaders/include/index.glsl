// Flat invocation index and broadcasting helpers shared by the element-wise kernels.
#ifndef TOSA_VK_INDEX_GLSL
#define TOSA_VK_INDEX_GLSL

// WORKGROUP and MAX_RANK are #defined by the shader compiler from tosa_vk/shader_abi.py.
layout(local_size_x = WORKGROUP) in;

// 1-D grids may spill into y when they exceed maxComputeWorkGroupCount.x (tosa_vk/lower/__init__.py::grid_1d).
uint flat_index() { return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WORKGROUP; }

// Offset into a tensor whose per-dimension strides (0 where it is broadcast) are `strides`, for the element
// `idx` of an output of shape `shape` (row-major, `rank` dimensions).
#define BROADCAST_OFFSET(idx, rank, shape, strides, result) { \
    uint rem_ = idx; result = 0u; \
    for (int d_ = rank - 1; d_ >= 0; --d_) { \
        uint c_ = rem_ % uint(shape[d_]); rem_ /= uint(shape[d_]); result += c_ * uint(strides[d_]); } }

// Input X's element for output element i, by its broadcast pattern X_MODE (a specialization constant,
// tosa_vk/lower/elementwise_binary.py::broadcast_defines: 0 the output's shape, 1 one element, 2 broadcast, 3 also
// along the innermost dimension), with the output's shape in the push constants p.rank / p.shape.
#define INPUT_OFFSET(X, strides, i, r) \
    if (X##_MODE == 1) r = 0u; else if (X##_MODE >= 2) BROADCAST_OFFSET(i, p.rank, p.shape, strides, r) else r = i;
// whether X's 4 elements for 4 consecutive outputs are one and the same
#define INPUT_SPLAT(X) (X##_MODE == 1 || X##_MODE == 3)

#endif

// Shared pieces of the convolution kernels (spec 2.3): chunked loads along the reduction axis, zero points,
// the bias add. Defines from tosa_vk/lower/convolution.py:
//   X_* / W_* / B_* / O_*  type defines of input, weight, bias, output (tosa_vk/lower/types.py);
//   ACC_T                  accumulator: float (every floating-point type), int (int8), int64_t (int16 -> int48);
//                          ACC4_T its 4-vector;
//   INTEGER                integer types: subtract the zero points, IZP / WZP (push-constant words) or, with
//                          ZP_BUFFERS, read from bindings 4 and 5 (IZ, WZ);
//   VE                     elements per chunk: the reduction axis is read VE elements at a time. VE = 4 .. 32:
//                          a chunk is XWORDS (WWORDS) 32-bit words (uint / uvec2 / uvec4 / u64vec4 views)
//                          holding VE / 4 groups of 4 elements, unpacked to 4-vectors by UNPACK4_X(GROUP_X(t, q))
//                          (likewise W). One lavapipe load costs about the same whatever its width, so packed
//                          8 / 16-bit data moves 2-4x faster; 4-vector arithmetic keeps the SPIR-V (and glslc's
//                          time) 4x smaller. VE = 1 reads single elements (x[], w[]).
//   INPUT_WORDS / WEIGHT_WORDS declare bindings 0 and 1 in the chosen view.
#ifndef TOSA_VK_CONV_COMMON_GLSL
#define TOSA_VK_CONV_COMMON_GLSL

#extension GL_EXT_control_flow_attributes : enable

// WORKGROUP is #defined by the shader compiler from tosa_vk/shader_abi.py.

#ifdef ZP_BUFFERS
#define ZERO_POINT_BINDINGS \
    layout(set = 0, binding = 4) readonly buffer InIZ { IZ_T iz[]; }; \
    layout(set = 0, binding = 5) readonly buffer InWZ { WZ_T wz[]; };
#define IZP int(LOAD_IZ(iz[0]))
#define WZP int(LOAD_WZ(wz[0]))
#else
#define ZERO_POINT_BINDINGS
#endif

#ifdef INTEGER
#define IN_VALUE(v) ((v) - IZP)
#define W_VALUE(v) ((v) - WZP)
#define C4 ivec4
#else
#define IN_VALUE(v) (v)
#define W_VALUE(v) (v)
#define C4 vec4
#endif

// X_SCALED / W_SCALED (TOSA 1.1 CONV2D, a block-scaled input / weight): one fp8ue8m0 scale per 32 elements of the
// reduction axis, from binding XS_AT / WS_AT (XS_* / WS_* type defines). An element reads as value x scale in fp32,
// as the spec's tensor_read<in_t, acc_t> does (a NaN scale makes its block NaN); a chunk (VE <= 32 elements, VE
// divides 32) lies in one block, so it takes one scale.
#ifdef X_SCALED
#define X_SCALE_BINDING layout(set = 0, binding = XS_AT) readonly buffer InXS { XS_T xs[]; };
#define SCALE_X(v, i) ((v) * LOAD_XS(xs[(i) / 32]))
#else
#define X_SCALE_BINDING
#define SCALE_X(v, i) (v)
#endif
#ifdef W_SCALED
#define W_SCALE_BINDING layout(set = 0, binding = WS_AT) readonly buffer InWS { WS_T ws[]; };
#define SCALE_W(v, i) ((v) * LOAD_WS(ws[(i) / 32]))
#else
#define W_SCALE_BINDING
#define SCALE_W(v, i) (v)
#endif

#define WORD_TYPE_1 uint
#define WORD_TYPE_2 uvec2
#define WORD_TYPE_4 uvec4
#define WORD_TYPE_8 u64vec4
#define WORD_TYPE_(n) WORD_TYPE_##n
#define WORD_TYPE(n) WORD_TYPE_(n)

#if VE >= 4
#define NG (VE / 4)          // 4-vector groups per chunk
#define CHUNK_T C4
#define XWORD_T WORD_TYPE(XWORDS)
#define WWORD_T WORD_TYPE(WWORDS)
// input / weight chunks from storage buffers, or (TEXEL_X / TEXEL_W) from uniform texel buffers
#ifdef TEXEL_X
#define INPUT_WORDS layout(set = 0, binding = 0) uniform TEXEL_X xt;
#define X_WORDS(at) TEXEL_WORDS(xt, at, XWORDS)
#else
#define INPUT_WORDS layout(set = 0, binding = 0) readonly buffer InXw { XWORD_T xw[]; };
#define X_WORDS(at) xw[at]
#endif
#ifdef TEXEL_W
#define WEIGHT_WORDS layout(set = 0, binding = 1) uniform TEXEL_W wt;
#define W_WORDS(at) TEXEL_WORDS(wt, at, WWORDS)
#else
#define WEIGHT_WORDS layout(set = 0, binding = 1) readonly buffer InWw { WWORD_T ww[]; };
#define W_WORDS(at) ww[at]
#endif
// The chunk of VE elements starting at element `i` (a multiple of VE), as values (zero point subtracted); an
// input chunk outside the tensor (padding) reads element 0 and becomes 0.
#define LOAD_X_CHUNK(dst, i, valid) { \
    XWORD_T t_ = X_WORDS((valid) ? (i) / VE : 0); \
    [[unroll]] for (int q_ = 0; q_ < NG; ++q_) \
        dst[q_] = mix(C4(0), SCALE_X(IN_VALUE(UNPACK4_X(GROUP_X(t_, q_))), (valid) ? (i) : 0), bvec4(valid)); }
#define LOAD_W_CHUNK(dst, i) { \
    WWORD_T t_ = W_WORDS((i) / VE); \
    [[unroll]] for (int q_ = 0; q_ < NG; ++q_) dst[q_] = SCALE_W(W_VALUE(UNPACK4_W(GROUP_W(t_, q_))), i); }
#ifdef INTEGER
// int32 products of a chunk summed in int32 (|sum| < 2^31 for VE <= 16 even for int16 x int8), then widened
#define DOT_CHUNK(acc, a, b, valid) { ivec4 s_ = (a)[0] * (b)[0]; \
    [[unroll]] for (int q_ = 1; q_ < NG; ++q_) s_ += (a)[q_] * (b)[q_]; \
    acc += ACC_T(s_.x + s_.y + s_.z + s_.w); }
#elif defined(SKIP_PADDED)
// Padded taps add nothing even for non-finite weights (the spec skips their multiplies; a padded input read as
// 0 times an infinite weight would be NaN).
#define DOT_CHUNK(acc, a, b, valid) { \
    [[unroll]] for (int q_ = 0; q_ < NG; ++q_) acc += mix(0.0, dot((a)[q_], (b)[q_]), valid); }
#else
#define DOT_CHUNK(acc, a, b, valid) { [[unroll]] for (int q_ = 0; q_ < NG; ++q_) acc += dot((a)[q_], (b)[q_]); }
#endif

#else  // VE == 1
#define NG 1
#define CHUNK_T X_C
#define INPUT_WORDS layout(set = 0, binding = 0) readonly buffer InX { X_T x[]; };
#define WEIGHT_WORDS layout(set = 0, binding = 1) readonly buffer InW { W_T w[]; };
// X_AT(i): where input element i (NHWC order) is stored; a fused TRANSPOSE before the convolution permutes it
#ifndef X_AT
#define X_AT(i) (i)
#endif
#define LOAD_X_CHUNK(dst, i, valid) { \
    dst[0] = mix(X_C(0), SCALE_X(IN_VALUE(LOAD_X(x[X_AT((valid) ? (i) : 0)])), (valid) ? (i) : 0), valid); }
#define LOAD_W_CHUNK(dst, i) { dst[0] = SCALE_W(W_VALUE(LOAD_W(w[i])), i); }
#if defined(SKIP_PADDED) && !defined(INTEGER)
#define DOT_CHUNK(acc, a, b, valid) acc += mix(0.0, (a)[0] * (b)[0], valid)
#else
#define DOT_CHUNK(acc, a, b, valid) acc += ACC_T((a)[0] * (b)[0])
#endif
#endif

#if defined(SKIP_PADDED) && !defined(INTEGER)
#define MAT_ACCUMULATE(acc, v, valid) acc += mix(vec4(0), v, bvec4(valid))
#else
#define MAT_ACCUMULATE(acc, v, valid) acc += (v)
#endif

// Depthwise: element-wise products of 4-vectors (or scalars with VE = 1) accumulated per channel.
#if defined(SKIP_PADDED) && !defined(INTEGER)
#define DW_ACCUMULATE(acc, a, b, valid) acc += (valid) ? ACCV_T((a) * (b)) : ACCV_T(0)
#else
#define DW_ACCUMULATE(acc, a, b, valid) acc += ACCV_T((a) * (b))
#endif

// BIAS_SCALAR: a specialization constant (1: one bias value for every output channel)
#define BIAS_INDEX(oc) (BIAS_SCALAR != 0 ? 0 : (oc))

// out = acc + bias[(BC == 1) ? 0 : oc]: floating point rounds once to the output type from fp32; integers are
// exact (int32 + int32 for int8 inputs, int48 as int64 for int16).
// The bias from a storage buffer, or (TEXEL_B: fp32 / int32) fetched from a texel buffer as float / int
#ifdef TEXEL_B
#define BIAS_BINDING layout(set = 0, binding = 2) uniform TEXEL_B bt;
#define BIAS_AT(i) texelFetch(bt, i).x
#else
#define BIAS_BINDING layout(set = 0, binding = 2) readonly buffer InB { B_T bias[]; };
#define BIAS_AT(i) LOAD_B(bias[i])
#endif
#define FINISH(acc, oc) ((acc) + ACC_T(BIAS_AT(BIAS_INDEX(oc))))
// The kernel's push constants: zero points (IZP / WZP) and the epilogue's scalars
#if defined(EP_WORDS) && !defined(CONV_PARAMS)  // only the scalars of LowerCtx.word (types.glsl)
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { EP_PUSH } p;
#endif
#endif
// What is stored: the result, through the fused operators after the convolution where the fuse stage chose them
// (include/epilogue.glsl; O_* then describe the last one's output).
#include "epilogue.glsl"
#ifdef EPILOGUE
#define RESULT(acc, oc, at) EPILOGUE(FINISH(acc, oc), oc, at)
#else
#define RESULT(acc, oc, at) FINISH(acc, oc)
#endif

// The invocation's pixel tile (`tile`; spare invocations past the last one return at once: on a SIMD CPU like
// lavapipe a batch of spare lanes then costs nothing, where computing a clamped tile made a one-tile layer cost a
// whole workgroup) and channel block (`block`): blocks are gl_WorkGroupID.y, or with PACKED_BLOCKS > 0 (the number
// of blocks; layers with fewer tiles than a workgroup has invocations) part of the x index, so that a small layer's
// workgroups are not mostly spare invocations. PACKED_BLOCKS is a specialization constant or a push constant.
#define TILE_AND_BLOCK \
    int gid_ = int(gl_GlobalInvocationID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x * WORKGROUP); \
    int tile = PACKED_BLOCKS > 0 ? gid_ / max(PACKED_BLOCKS, 1) : gid_; \
    int block = PACKED_BLOCKS > 0 ? gid_ % max(PACKED_BLOCKS, 1) : int(gl_WorkGroupID.y); \
    if (tile >= TILES) return;

// Reductions too long for one invocation (lavapipe ends a shader's loops after 65535 iterations in total) run in
// passes over ranges [IC_BEGIN, IC_END) of the input channels; passes but the last write their raw accumulators to
// PARTIAL (binding PARTIAL_AT, the output's layout, ACC_T elements), passes but the first start from them.
#ifndef IC_BEGIN
#define IC_BEGIN 0
#define IC_END IC
#endif
#if defined(PARTIAL_IN) || defined(PARTIAL_OUT)
#define PARTIAL_BINDING layout(set = 0, binding = PARTIAL_AT) buffer Partial { ACC_T partial[]; };
#else
#define PARTIAL_BINDING
#endif
#ifdef PARTIAL_OUT
#define STORE_RESULT(at, acc, oc) partial[at] = (acc)
#else
#define STORE_RESULT(at, acc, oc) o[O_AT(at)] = STORE_O(RESULT(acc, oc, at))
#endif
// 4 consecutive output channels from a 4-vector accumulator, one vector store (`at` a multiple of 4; O_T4 is the
// storage 4-vector of the output, its buffer seen as `o4`).
#define OUTPUT_VEC4 layout(set = 0, binding = 3) writeonly buffer Out4 { O_T4 o4[]; };
#define STORE4_RESULT(at, acc, oc) o4[O4_AT((at) / 4)] = O_T4(STORE_O(RESULT((acc).x, oc, at)), \
    STORE_O(RESULT((acc).y, (oc) + 1, (at) + 1)), STORE_O(RESULT((acc).z, (oc) + 2, (at) + 2)), \
    STORE_O(RESULT((acc).w, (oc) + 3, (at) + 3)))

#endif

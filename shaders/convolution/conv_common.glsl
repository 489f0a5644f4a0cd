// Shared pieces of the convolution kernels (spec 2.3): chunked loads along the reduction axis, zero points,
// the bias add. Defines from tosa_vk/lower/convolution.py:
//   X_* / W_* / B_* / O_*  type defines of input, weight, bias, output (tosa_vk/lower/types.py);
//   ACC_T                  accumulator: float (every floating-point type), int (int8), int64_t (int16 -> int48);
//   INTEGER                integer types: subtract the zero points, constants IZP / WZP or, with ZP_BUFFERS, read
//                          from bindings 4 and 5 (IZ, WZ);
//   VE                     elements per chunk: the reduction axis is read VE elements at a time. With VE > 1 each
//                          chunk is XWORDS (WWORDS) 32-bit words (uint / uvec2 / uvec4 views of the buffers), and
//                          X_EPW elements per word are unpacked with UNPACK_X(u, e) (likewise W). One lavapipe load
//                          costs about the same whatever its width, so packed 8 / 16-bit data moves 2-4x faster.
#ifndef TOSA_VK_CONV_COMMON_GLSL
#define TOSA_VK_CONV_COMMON_GLSL

#extension GL_EXT_control_flow_attributes : enable

#ifndef WORKGROUP
#define WORKGROUP 64
#endif

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
#else
#define IN_VALUE(v) (v)
#define W_VALUE(v) (v)
#endif

// Word views of the input and weight buffers.
#define WORD_TYPE_1 uint
#define WORD_TYPE_2 uvec2
#define WORD_TYPE_4 uvec4
#define WORD_TYPE_(n) WORD_TYPE_##n
#define WORD_TYPE(n) WORD_TYPE_(n)
#if VE > 1
#define XWORD_T WORD_TYPE(XWORDS)
#define WWORD_T WORD_TYPE(WWORDS)
#define INPUT_WORDS layout(set = 0, binding = 0) readonly buffer InXw { XWORD_T xw[]; };
#define WEIGHT_WORDS layout(set = 0, binding = 1) readonly buffer InWw { WWORD_T ww[]; };
#else
#define INPUT_WORDS
#define WEIGHT_WORDS
#endif
#if XWORDS == 1
#define XWORD(t, q) (t)
#else
#define XWORD(t, q) (t)[q]
#endif
#if WWORDS == 1
#define WWORD(t, q) (t)
#else
#define WWORD(t, q) (t)[q]
#endif

// The chunk of VE elements starting at element `i` (a multiple of VE) of the input / weight buffers, as values
// (zero point subtracted); an input chunk outside the tensor (padding) reads element 0 and becomes 0.
#if VE > 1
#define LOAD_X_CHUNK(dst, i, valid) { \
    XWORD_T t_ = xw[(valid) ? (i) / VE : 0]; \
    [[unroll]] for (int q_ = 0; q_ < XWORDS; ++q_) [[unroll]] for (int e_ = 0; e_ < X_EPW; ++e_) \
        dst[q_ * X_EPW + e_] = (valid) ? IN_VALUE(UNPACK_X(XWORD(t_, q_), e_)) : X_C(0); }
#define LOAD_W_CHUNK(dst, i) { \
    WWORD_T t_ = ww[(i) / VE]; \
    [[unroll]] for (int q_ = 0; q_ < WWORDS; ++q_) [[unroll]] for (int e_ = 0; e_ < W_EPW; ++e_) \
        dst[q_ * W_EPW + e_] = W_VALUE(UNPACK_W(WWORD(t_, q_), e_)); }
#else
#define LOAD_X_CHUNK(dst, i, valid) { dst[0] = (valid) ? IN_VALUE(LOAD_X(x[(valid) ? (i) : 0])) : X_C(0); }
#define LOAD_W_CHUNK(dst, i) { dst[0] = W_VALUE(LOAD_W(w[i])); }
#endif

// Sum of the products of two chunks: integer products summed in int32 (|sum| < 2^31 for VE <= 16 even for
// int16 x int8), then widened; floating point accumulates product by product in fp32.
#ifdef INTEGER
#define DOT_CHUNK(acc, a, b, valid) { int s_ = 0; \
    [[unroll]] for (int e_ = 0; e_ < VE; ++e_) s_ += (a)[e_] * (b)[e_]; acc += ACC_T(s_); }
#elif defined(SKIP_PADDED)
// Padded taps add nothing even for non-finite weights (the spec skips their multiplies; a padded input read as
// 0 times an infinite weight would be NaN).
#define DOT_CHUNK(acc, a, b, valid) { \
    [[unroll]] for (int e_ = 0; e_ < VE; ++e_) acc += (valid) ? (a)[e_] * (b)[e_] : 0.0; }
#else
#define DOT_CHUNK(acc, a, b, valid) { [[unroll]] for (int e_ = 0; e_ < VE; ++e_) acc += (a)[e_] * (b)[e_]; }
#endif

#ifdef BIAS_SCALAR
#define BIAS_INDEX(oc) 0
#else
#define BIAS_INDEX(oc) (oc)
#endif

// out = acc + bias[(BC == 1) ? 0 : oc]: floating point rounds once to the output type from fp32; integers are
// exact (int32 + int32 for int8 inputs, int48 as int64 for int16).
#define FINISH(acc, oc) ((acc) + ACC_T(LOAD_B(bias[BIAS_INDEX(oc)])))

#endif

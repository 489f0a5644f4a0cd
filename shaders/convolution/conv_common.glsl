// Shared pieces of the convolution kernels (spec 2.3): zero points, 4-vector loads, the bias add.
// Defines from tosa_vk/lower/convolution.py: X_* (input), W_* (weight), B_* / O_* (bias / output) type defines,
// XC4 / WC4 (compute 4-vectors), ACC_T (float, int or int64_t), INTEGER, and the zero points either as
// constants IZP / WZP or, with ZP_BUFFERS, read from bindings 4 and 5 (IZ, WZ).
#ifndef TOSA_VK_CONV_COMMON_GLSL
#define TOSA_VK_CONV_COMMON_GLSL

#define WORKGROUP 64

#ifdef ZP_BUFFERS
#define ZERO_POINT_BINDINGS \
    layout(set = 0, binding = 4) readonly buffer InIZ { IZ_T iz[]; }; \
    layout(set = 0, binding = 5) readonly buffer InWZ { WZ_T wz[]; };
#define IZP int(LOAD_IZ(iz[0]))
#define WZP int(LOAD_WZ(wz[0]))
#else
#define ZERO_POINT_BINDINGS
#endif

#define LOAD4_X(v) XC4(LOAD_X((v).x), LOAD_X((v).y), LOAD_X((v).z), LOAD_X((v).w))
#define LOAD4_W(v) WC4(LOAD_W((v).x), LOAD_W((v).y), LOAD_W((v).z), LOAD_W((v).w))

#ifdef INTEGER
// (in - input_zp) * (weight - weight_zp): the products of a 4-vector summed in int32 (|sum| < 2^31 for
// int16 x int8), then widened to the accumulator.
#define IN_VALUE(v) ((v) - IZP)
#define W_VALUE(v) ((v) - WZP)
#define DOT4(a, b) ACC_T((a).x * (b).x + (a).y * (b).y + (a).z * (b).z + (a).w * (b).w)
#define MUL1(a, b) ACC_T((a) * (b))
#else
#define IN_VALUE(v) (v)
#define W_VALUE(v) (v)
#define DOT4(a, b) dot(a, b)
#define MUL1(a, b) ((a) * (b))
#endif

// SKIP_PADDED: padded taps add nothing even for non-finite weights (the spec skips their multiplies; a padded
// input read as 0 times an infinite weight would be NaN). Without it padded inputs are read as 0.
#ifdef SKIP_PADDED
#define ACCUMULATE(acc, v, valid) acc += (valid) ? (v) : ACC_T(0)
#else
#define ACCUMULATE(acc, v, valid) acc += (v)
#endif

#ifdef BIAS_SCALAR
#define BIAS_INDEX(oc) 0
#else
#define BIAS_INDEX(oc) (oc)
#endif

// out = acc + bias[(BC == 1) ? 0 : oc]: floating point rounds once to the output type from fp32; integers are
// exact (int32 + int32 for int8 inputs, int48 as int64 for int16).
#ifdef INTEGER
#define FINISH(acc, oc) ((acc) + ACC_T(LOAD_B(bias[BIAS_INDEX(oc)])))
#else
#define FINISH(acc, oc) ((acc) + LOAD_B(bias[BIAS_INDEX(oc)]))
#endif

#endif

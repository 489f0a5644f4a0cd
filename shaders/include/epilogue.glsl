// The epilogue a kernel applies to each result before its single store (tosa_vk/fuse.py): EPILOGUE(v, c) is
// composed by tosa_vk/lower/epilogue.py from these pieces, innermost first, for output channel c.
//   EP_RESCALE   RESCALE (spec 2.13.2) of the int32 result: multiplier / shift bound at EP_M_AT / EP_S_AT (EM_T /
//                ES_T, per channel with EP_PER_CHANNEL), zero points EP_IZP / EP_OZP, EP_SCALE32 / EP_DOUBLE_ROUND /
//                EP_OZP_MASK (an unsigned output's zero point, zero-extended), clip to [EP_OUT_MIN, EP_OUT_MAX];
//                the same arithmetic as shaders/type_conversion/rescale.comp.
//   EP_CLAMPk(x) CLAMP number k (the bounds are literals of the value's type; floats use elementwise.glsl's
//                NaN rules).
#ifndef TOSA_VK_EPILOGUE_GLSL
#define TOSA_VK_EPILOGUE_GLSL

#ifdef EPILOGUE
#include "elementwise.glsl"
#ifdef EP_RESCALE
#include "conversion.glsl"
layout(set = 0, binding = EP_M_AT) readonly buffer EpM { EM_T em[]; };
layout(set = 0, binding = EP_S_AT) readonly buffer EpS { ES_T es[]; };

int ep_rescale(int64_t value, int c) {
#ifndef EP_PER_CHANNEL
    c = 0;
#endif
    int shift = LOAD_ES(es[c]);
#ifdef EP_SCALE32
#ifdef EP_DOUBLE_ROUND
    int64_t r = apply_scale_32(value - int64_t(EP_IZP), int64_t(LOAD_EM(em[c])), shift, true);
#else
    int64_t r = apply_scale_32(value - int64_t(EP_IZP), int64_t(LOAD_EM(em[c])), shift, false);
#endif
#else
    int64_t r = apply_scale_16(value - int64_t(EP_IZP), int64_t(LOAD_EM(em[c])), shift);
#endif
    return int(clamp(r + int64_t(EP_OZP), int64_t(EP_OUT_MIN), int64_t(EP_OUT_MAX)));
}
#endif
#endif

#endif

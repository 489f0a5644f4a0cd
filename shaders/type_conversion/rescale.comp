#version 450
// RESCALE (spec 2.13.2): out = clip(apply_scale(extend(in) - input_zp, multiplier[c], shift[c]) + output_zp),
// in 64-bit integer arithmetic (int48 values are stored as int64), bit-exact for every rounding mode
// (INEXACT_ROUND is computed as SINGLE_ROUND, which meets its error bound).
// Bindings: A (input), M (multiplier, int32 if SCALE32 else int16), S (shift, int8), IZ / OZ (the zero points,
// one element of in_t / out_t), O (output). Defines: SCALE32, DOUBLE_ROUND, PER_CHANNEL, IN_MASK / OUT_MASK
// (zero_extend masks of unsigned input / output), OUT_MIN / OUT_MAX (the output's clip range).
#include "types.glsl"
#include "index.glsl"
#include "conversion.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InM { M_T m[]; };
layout(set = 0, binding = 2) readonly buffer InS { S_T s[]; };
layout(set = 0, binding = 3) readonly buffer InIZ { IZ_T iz[]; };
layout(set = 0, binding = 4) readonly buffer InOZ { OZ_T oz[]; };
layout(set = 0, binding = 5) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; uint channels; } p;
#endif

// zero_extend (unsigned) or sign_extend of a loaded value to int64
#ifdef IN_MASK
#define EXTEND_IN(v) (int64_t(v) & int64_t(IN_MASK))
#else
#define EXTEND_IN(v) int64_t(v)
#endif
#ifdef OUT_MASK
#define EXTEND_OUT(v) (int64_t(v) & int64_t(OUT_MASK))
#else
#define EXTEND_OUT(v) int64_t(v)
#endif

#ifdef SCALE32
#define SCALE32_ON true
#else
#define SCALE32_ON false
#endif
#ifdef DOUBLE_ROUND
#define DOUBLE_ROUND_ON true
#else
#define DOUBLE_ROUND_ON false
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
#ifdef PER_CHANNEL
    uint c = i % p.channels;                      // the channel is the innermost dimension
#else
    uint c = 0u;
#endif
    int64_t r = tosa_rescale(EXTEND_IN(LOAD_A(a[i])), EXTEND_IN(LOAD_IZ(iz[0])), int64_t(LOAD_M(m[c])),
                             LOAD_S(s[c]), SCALE32_ON, DOUBLE_ROUND_ON, EXTEND_OUT(LOAD_OZ(oz[0])),
                             int64_t(OUT_MIN), int64_t(OUT_MAX));
    o[i] = STORE_O(int(r));                       // static_cast<out_t>: unsigned results keep their bits
}

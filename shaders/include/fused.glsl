// The pieces of fused kernels (tosa_vk/stages/fuse.py): epilogue chains (epilogue.glsl), element-wise groups
// (fused/elementwise.comp) and row groups (fused/rows.comp). tosa_vk/stages/lower/fused/render.py is the one place
// that names them: a fused kernel's defines (EP_DECLS, GROUP_BODY, ROW_BODY, EPILOGUE, ...) are lists of calls of
// these macros and functions with names, numbers and types, never statements of their own.
// Every step computes what its operator's own kernel computes: fp32 results are `precise` (no contraction into a
// fused multiply-add across steps: each rounds as its kernel's store does); int32 wraps.
#ifndef TOSA_VK_FUSED_GLSL
#define TOSA_VK_FUSED_GLSL

#include "elementwise.glsl"
#ifdef EP_INT64
#include "conversion.glsl"
#endif
#ifdef EP_FP64
#include "unary.glsl"
#endif

// --- declarations: binding b named X (its X_T storage type, TEXEL_X sampler: tosa_vk/stages/lower/context.py) as
// the array x
#define EP_BUF(b, X, x) layout(set = 0, binding = b) readonly buffer Ep##X { X##_T x[]; };
#define EP_WBUF(b, X, x) layout(set = 0, binding = b) writeonly buffer Ep##X { X##_T x[]; };
#define EP_TEX(b, X, x) layout(set = 0, binding = b) uniform TEXEL_##X x;

// --- statements: a value, a store, a coordinate of the flat index (r_: what is left of it), an index map step
#define EP_LET(T, x, e) T x = e;
#define EP_STORE(x, at, e) x[at] = e;
#define EP_COORDS(i) uint r_ = i;
#define EP_COORD(x, n) int x = int(r_ % n); r_ /= n;
#define EP_MAP(e) i = e;

// --- functions: a chain of steps on v (its channel c, its element at) returning `result`; the store map of a layout
// tail, EP_OUT(at) (a list of EP_MAP); a fold step of a reduction
#define EP_CHAIN_FN(name, T, T_IN, steps, result) T name(T_IN v, int c, int at) { steps return result; }
#define EP_OUT_FN(maps) int ep_out(int i) { maps return i; }
#define EP_STEP_FN(name, T, e) T name(T a, T b) { return e; }

// --- steps
int ep_add_i32(int a, int b) { return a + b; }
int ep_sub_i32(int a, int b) { return a - b; }
int ep_mul_i32(int a, int b) { return a * b; }  // MUL with shift 0: the low 32 bits
float ep_add_f32(float a, float b) { precise float r = a + b; return r; }
float ep_sub_f32(float a, float b) { precise float r = a - b; return r; }
float ep_mul_f32(float a, float b) { precise float r = a * b; return r; }
int ep_max_i32(int a, int b) { return max(a, b); }
int ep_min_i32(int a, int b) { return min(a, b); }
int ep_clamp_i32(int x, int lo, int hi) { return clamp(x, lo, hi); }
float ep_clamp_f32_propagate(float x, float lo, float hi) { return min_propagate(max_propagate(x, lo), hi); }
float ep_clamp_f32_ignore(float x, float lo, float hi) { return min_ignore(max_ignore(x, lo), hi); }
// comparisons are ordered: false with a NaN, -0 == +0
bool ep_equal_i32(int a, int b) { return a == b; }
bool ep_greater_i32(int a, int b) { return a > b; }
bool ep_greater_equal_i32(int a, int b) { return a >= b; }
bool ep_equal_f32(float a, float b) { return a == b; }
bool ep_greater_f32(float a, float b) { return a > b; }
bool ep_greater_equal_f32(float a, float b) { return a >= b; }
bool ep_logical_and(bool a, bool b) { return a && b; }
bool ep_logical_or(bool a, bool b) { return a || b; }
bool ep_logical_xor(bool a, bool b) { return a != b; }
bool ep_logical_not(bool a) { return !a; }
int ep_select_i32(bool s, int a, int b) { return s ? a : b; }
float ep_select_f32(bool s, float a, float b) { return s ? a : b; }
bool ep_select_bool(bool s, bool a, bool b) { return s ? a : b; }
int ep_wrap(int x, int bits) { return bitfieldExtract(x, 0, bits); }  // an int8 / int16 store's narrowing
#ifdef EP_INT64
// RESCALE as rescale.comp computes it (conversion.glsl's tosa_rescale); the result lies in [lo, hi], an int
int ep_rescale(int v, int izp, int m, int s, bool scale32, bool double_round, int ozp, int lo, int hi) {
    return int(tosa_rescale(int64_t(v), int64_t(izp), int64_t(m), s, scale32, double_round, int64_t(ozp),
                            int64_t(lo), int64_t(hi)));
}
#endif

#endif

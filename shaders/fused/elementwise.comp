#version 450
// A fused element-wise group (tosa_vk/fuse.py, tosa_vk/lower/group.py): each invocation does one element of the
// group's shape. GROUP_BODY (generated) finds the element's coordinates, reads the group's inputs there (broadcast
// and SLICE offsets folded into the index), computes every operator as its own kernel would, and stores the values
// used outside the group; EP_DECLS declares the buffers and helpers it uses (include/epilogue.glsl's pieces).
#include "types.glsl"
#include "index.glsl"
#include "elementwise.glsl"
#ifdef EP_INT64
#include "conversion.glsl"
#endif
#ifdef EP_FP64
#include "unary.glsl"
#endif
#ifdef EP_WORDS  // only the scalars of LowerCtx.word (types.glsl)
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { EP_PUSH } p;
#endif
#endif
EP_DECLS

void main() {
    uint i = flat_index();
    if (i >= uint(TOTAL)) return;
    GROUP_BODY
}

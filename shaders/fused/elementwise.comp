#version 450
// A fused element-wise group (tosa_vk/stages/fuse.py, tosa_vk/stages/lower/fused/group.py): each invocation does one element of the
// group's shape. GROUP_BODY (generated) finds the element's coordinates, reads the group's inputs there (broadcast
// and SLICE offsets folded into the index), computes every operator as its own kernel would, and stores the values
// used outside the group; EP_DECLS declares the buffers it uses; both are lists of calls of include/fused.glsl's pieces.
#include "types.glsl"
#include "index.glsl"
#include "fused.glsl"
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

#version 450
// Tiled strided copy for TRANSPOSE-like walks (spec 2.10.7), where the destination's contiguous dimension I is
// strided in the source and the source's contiguous dimension J is strided in the destination. Each workgroup
// moves one TILE x TILE block of the (J, I) plane through shared memory: it reads rows contiguous in the source,
// then writes rows contiguous in the destination, 16 elements per invocation. Remaining dimensions (up to 4) and
// the tile position come from the flat workgroup index. ELEM_T is a raw unit (exact data movement), held in
// shared memory as SHARED_T (TO_SHARED / FROM_SHARED convert).
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"

#define TILE 32
#define ROWS (WORKGROUP / TILE)

layout(set = 0, binding = 0) readonly buffer Src { ELEM_T src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { ELEM_T dst[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint tiles;          // workgroups that do work: tiles_i * tiles_j * prod(shape)
    int rank;            // other dimensions
    int src_base;
    int dst_base;
    int n_i, n_j;        // extents of I (dst stride 1) and J (src stride 1)
    int src_stride_i;    // I's stride in the source
    int dst_stride_j;    // J's stride in the destination
    int tiles_i, tiles_j;
    int shape[4];
    int src_stride[4];
    int dst_stride[4];
} p;
#endif

shared SHARED_T tile[TILE][TILE + 1];

void main() {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (g >= p.tiles) return;   // uniform over the workgroup
    int ti = int(g % uint(p.tiles_i));
    g /= uint(p.tiles_i);
    int tj = int(g % uint(p.tiles_j));
    g /= uint(p.tiles_j);
    int s0 = p.src_base, d0 = p.dst_base;
    for (int d = p.rank - 1; d >= 0; --d) {
        uint n = uint(p.shape[d]);
        int c = int(g % n);
        g /= n;
        s0 += c * p.src_stride[d];
        d0 += c * p.dst_stride[d];
    }
    int lane = int(gl_LocalInvocationID.x);
    int a = lane % TILE, r = lane / TILE;
    int i0 = ti * TILE, j0 = tj * TILE;
    // read: lanes along J (contiguous in the source)
    if (j0 + a < p.n_j)
        for (int b = r; b < TILE && i0 + b < p.n_i; b += ROWS)
            tile[b][a] = TO_SHARED(src[s0 + (j0 + a) + (i0 + b) * p.src_stride_i]);
    barrier();
    // write: lanes along I (contiguous in the destination)
    if (i0 + a < p.n_i)
        for (int b = r; b < TILE && j0 + b < p.n_j; b += ROWS)
            dst[d0 + (i0 + a) + (j0 + b) * p.dst_stride_j] = FROM_SHARED(tile[a][b]);
}

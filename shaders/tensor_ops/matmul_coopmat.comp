#version 450
// MATMUL (spec 2.3.7) with VK_KHR_cooperative_matrix (subgroup scope): out = A [N,H,C] x B [N,C,W] for fp16
// (ACC_T float, or float16_t for an fp16 output: the spec's "fp16 with fp16 accumulate") and int8 (ACC_T int, zero
// points zero: tosa_vk/lower/matmul_coopmat.py declines others). Needs glslang >= 13 (tosa_vk/vulkan/glsl_compiler.py).
// A workgroup computes a BM x BN block (TILES_M x TILES_N products of CM_M x CM_N); per BK-deep slice of C it stages
// both operands in shared memory, zero-padded past H, W and C (so any shape works), and each subgroup multiplies its
// tiles there. The results go through shared memory and are written element by element with the fused epilogue
// (include/epilogue.glsl: EPILOGUE, O_AT), so fused CLAMP / RESCALE chains work as in matmul_fast.comp.
// Subgroup size is never assumed: subgroup s owns tiles s, s + gl_NumSubgroups, ... (TPS of them per round); with
// the SUBGROUPS the lowering planned for (WG / the target's subgroup size) there is one round, with fewer subgroups
// (a driver choosing a wider one) more rounds, each over all of C, every invocation at every barrier.
// COOPMAT_EMULATE: each subgroup does its products lane by lane in shared memory instead, through the same staging,
// tile ownership and epilogue: how tests check all but the cooperative-matrix instructions on a device without them.
#include "types.glsl"
#ifndef COOPMAT_EMULATE
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require  // (required with it: the Vulkan memory model)
#endif
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = WG) in;

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint groups;    // N * tiles_h * blocks_w
    uint H, C, W;
    uint tiles_h;   // blocks of BM rows
    uint blocks_w;  // blocks of BN columns
    EP_PUSH
} p;
#endif
#include "epilogue.glsl"
#ifdef EPILOGUE
#define RES(v, at) EPILOGUE(v, int((at) % p.W), int(at))
#else
#define RES(v, at) (v)
#endif

#define BM (TILES_M * CM_M)
#define BN (TILES_N * CM_N)
#define BK (KSTEPS * CM_K)
#define TILES (TILES_M * TILES_N)
#define CM_A coopmat<A_T, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA>
#define CM_B coopmat<B_T, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB>
#define CM_C coopmat<ACC_T, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>

shared A_T sa[BM * BK];
shared B_T sb[BK * BN];
shared ACC_T sc[BM * BN];
#ifdef COOPMAT_EMULATE
#define CM_MN (CM_M * CM_N)
shared ACC_T se[TILES * CM_MN];
#endif

void main() {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (g >= p.groups) return;  // uniform over the workgroup: no barrier is skipped by part of it
    uint tw = g % p.blocks_w;
    g /= p.blocks_w;
    uint th = g % p.tiles_h;
    uint n = g / p.tiles_h;
    uint row0 = th * uint(BM), col0 = tw * uint(BN);
    uint lid = gl_LocalInvocationID.x;
    uint per_round = gl_NumSubgroups * uint(TPS);
    uint rounds = (uint(TILES) + per_round - 1u) / per_round;
    for (uint r = 0u; r < rounds; ++r) {
#ifdef COOPMAT_EMULATE
        for (int s = 0; s < TPS; ++s) {
            uint t = r * per_round + uint(s) * gl_NumSubgroups + gl_SubgroupID;
            if (t < uint(TILES))
                for (uint e = gl_SubgroupInvocationID; e < uint(CM_MN); e += gl_SubgroupSize)
                    se[t * CM_MN + e] = ACC_T(0);
        }
#else
        CM_C acc[TPS];
        [[unroll]] for (int s = 0; s < TPS; ++s) acc[s] = CM_C(ACC_T(0));
#endif
        for (uint k0 = 0u; k0 < p.C; k0 += uint(BK)) {
            for (uint e = lid; e < uint(BM * BK); e += uint(WG)) {
                uint row = row0 + e / uint(BK), k = k0 + e % uint(BK);
                sa[e] = row < p.H && k < p.C ? a[(n * p.H + row) * p.C + k] : A_T(0);
            }
            for (uint e = lid; e < uint(BK * BN); e += uint(WG)) {
                uint k = k0 + e / uint(BN), col = col0 + e % uint(BN);
                sb[e] = k < p.C && col < p.W ? b[(n * p.C + k) * p.W + col] : B_T(0);
            }
            barrier();
            [[unroll]] for (int s = 0; s < TPS; ++s) {
                uint t = r * per_round + uint(s) * gl_NumSubgroups + gl_SubgroupID;
                if (t < uint(TILES)) {  // uniform over the subgroup
                    uint tr = t / uint(TILES_N), tc = t % uint(TILES_N);
#ifdef COOPMAT_EMULATE
                    for (uint e = gl_SubgroupInvocationID; e < uint(CM_MN); e += gl_SubgroupSize) {
                        uint i = tr * uint(CM_M) + e / uint(CM_N), j = tc * uint(CM_N) + e % uint(CM_N);
                        ACC_T sum = se[t * CM_MN + e];
                        for (uint kk = 0u; kk < uint(BK); ++kk)
                            sum += ACC_T(sa[i * uint(BK) + kk]) * ACC_T(sb[kk * uint(BN) + j]);
                        se[t * CM_MN + e] = sum;
                    }
#else
                    [[unroll]] for (int ks = 0; ks < KSTEPS; ++ks) {
                        CM_A ma;
                        CM_B mb;
                        coopMatLoad(ma, sa, tr * uint(CM_M * BK) + uint(ks * CM_K), uint(BK),
                                    gl_CooperativeMatrixLayoutRowMajor);
                        coopMatLoad(mb, sb, uint(ks * CM_K * BN) + tc * uint(CM_N), uint(BN),
                                    gl_CooperativeMatrixLayoutRowMajor);
                        acc[s] = coopMatMulAdd(ma, mb, acc[s]);
                    }
#endif
                }
            }
            barrier();
        }
        [[unroll]] for (int s = 0; s < TPS; ++s) {
            uint t = r * per_round + uint(s) * gl_NumSubgroups + gl_SubgroupID;
            if (t < uint(TILES)) {
                uint tr = t / uint(TILES_N), tc = t % uint(TILES_N);
#ifdef COOPMAT_EMULATE
                for (uint e = gl_SubgroupInvocationID; e < uint(CM_MN); e += gl_SubgroupSize)
                    sc[(tr * uint(CM_M) + e / uint(CM_N)) * uint(BN) + tc * uint(CM_N) + e % uint(CM_N)] =
                        se[t * CM_MN + e];
#else
                coopMatStore(acc[s], sc, tr * uint(CM_M * BN) + tc * uint(CM_N), uint(BN),
                             gl_CooperativeMatrixLayoutRowMajor);
#endif
            }
        }
        barrier();
        // this round's tiles (all of them with one round): element by element through the epilogue
        uint first = r * per_round, last = min(uint(TILES), first + per_round);
        for (uint e = lid; e < uint(BM * BN); e += uint(WG)) {
            uint lr = e / uint(BN), lc = e % uint(BN);
            uint t = (lr / uint(CM_M)) * uint(TILES_N) + lc / uint(CM_N);
            uint row = row0 + lr, col = col0 + lc;
            if (t >= first && t < last && row < p.H && col < p.W) {
                uint at = (n * p.H + row) * p.W + col;
                o[O_AT(at)] = STORE_O(RES(V_C(sc[e]), at));
            }
        }
        barrier();
    }
}

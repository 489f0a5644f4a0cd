#version 450
// MATMUL_T_BLOCK_SCALED (TOSA 1.1): out[n, h, w] = sum over blocks b of (sum_i A[n, h, b*BLOCK + i] * B[d, w, ..])
// x 2^(A_scale[n, h, b] - 127) x 2^(B_scale[d, w, b] - 127), d = 0 when D == 1 (B broadcast) else n. One invocation
// an output, fp32 sums per block as the spec's pseudocode; the two scales are applied with one ldexp (exact, where
// their fp32 product could underflow). A NaN scale (0xff) makes its block NaN. Defines: A_* / B_* (MX data, decoded
// by LOAD_A / LOAD_B; MATMUL_T's block-scaled rows also bring a plain fp8 / fp16 / bf16 / fp32 operand with unit
// scales, tosa_vk/passes/block_scaled.py), S_* / T_* (fp8ue8m0 scales of A / B), O_* (fp32 or bf16 output), BLOCK.
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InS { S_T sa[]; };
layout(set = 0, binding = 2) readonly buffer InB { B_T b[]; };
layout(set = 0, binding = 3) readonly buffer InT { T_T sb[]; };
layout(set = 0, binding = 4) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params { uint total; uint H; uint W; uint C; uint D; } p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint w = i % p.W, nh = i / p.W, n = nh / p.H;
    uint d = p.D == 1u ? 0u : n;
    uint blocks = p.C / uint(BLOCK);
    uint arow = nh * p.C, brow = (d * p.W + w) * p.C;
    float acc = 0.0;
    for (uint k = 0u; k < blocks; ++k) {
        float block_acc = 0.0;
        for (uint j = 0u; j < uint(BLOCK); ++j) {
            uint c = k * uint(BLOCK) + j;
            block_acc += LOAD_A(a[arow + c]) * LOAD_B(b[brow + c]);
        }
        uint ea = uint(sa[nh * blocks + k]), eb = uint(sb[(d * p.W + w) * blocks + k]);
        acc += (ea == 255u || eb == 255u) ? uintBitsToFloat(0x7fc00000u) : ldexp(block_acc, int(ea + eb) - 254);
    }
    o[i] = STORE_O(acc);
}

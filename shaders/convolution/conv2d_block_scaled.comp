#version 450
// CONV2D_BLOCK_SCALED (TOSA 1.1): one invocation an output [n, oy, ox, oc]; per kernel tap inside the input and per
// block of BLOCK input channels, an fp32 sum of value x weight scaled by both scales with one ldexp (exact, where
// their fp32 product could underflow); padded taps are skipped (no multiplies there). A NaN scale (0xff) makes its
// block NaN. Then + bias (broadcast when BC == 1). Defines: A_* / W_* (MX input / weight data), S_* / T_* (their
// fp8ue8m0 scales), C_* (fp32 bias), O_* (fp32 output), BLOCK.
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) readonly buffer InS { S_T sa[]; };
layout(set = 0, binding = 2) readonly buffer InW { W_T wt[]; };
layout(set = 0, binding = 3) readonly buffer InT { T_T sw[]; };
layout(set = 0, binding = 4) readonly buffer InC { C_T bias[]; };
layout(set = 0, binding = 5) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total; uint IH; uint IW; uint IC; uint OH; uint OW; uint OC; uint KH; uint KW; uint BC;
    int PT; int PL; int SY; int SX; int DY; int DX;
} p;
#endif

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    uint oc = i % p.OC, r = i / p.OC, ox = r % p.OW;
    r /= p.OW;
    uint oy = r % p.OH, n = r / p.OH;
    uint blocks = p.IC / uint(BLOCK);
    float acc = 0.0;
    for (uint ky = 0u; ky < p.KH; ++ky) {
        int y = int(oy) * p.SY - p.PT + int(ky) * p.DY;
        if (y < 0 || y >= int(p.IH)) continue;
        for (uint kx = 0u; kx < p.KW; ++kx) {
            int x = int(ox) * p.SX - p.PL + int(kx) * p.DX;
            if (x < 0 || x >= int(p.IW)) continue;
            uint pixel = (n * p.IH + uint(y)) * p.IW + uint(x), tap = (oc * p.KH + ky) * p.KW + kx;
            for (uint k = 0u; k < blocks; ++k) {
                float block_acc = 0.0;
                for (uint j = 0u; j < uint(BLOCK); ++j) {
                    uint c = k * uint(BLOCK) + j;
                    block_acc += LOAD_A(a[pixel * p.IC + c]) * LOAD_W(wt[tap * p.IC + c]);
                }
                uint ea = uint(sa[pixel * blocks + k]), ew = uint(sw[tap * blocks + k]);
                acc += (ea == 255u || ew == 255u) ? uintBitsToFloat(0x7fc00000u) : ldexp(block_acc, int(ea + ew) - 254);
            }
        }
    }
    o[i] = STORE_O(acc + LOAD_C(bias[p.BC == 1u ? 0u : oc]));
}

#version 450
// RESIZE (spec 2.12.1), NHWC, one invocation per output element. Sample positions follow the pseudocode in
// integers: y = oy * scale_y_d + offset_y, iy = idiv_floor(y, scale_y_n), ry = y - iy * scale_y_n (likewise x),
// neighbours iy0 = max(iy, 0), iy1 = min(iy + 1, IH - 1).
// Defines: A_* / O_* binding types and one of
//   NEAREST            copy the nearest sample (2 * ry >= scale_y_n picks iy1: exact, also for floating point)
//   BILINEAR_INT       acc = sum v * weights with unit = scale_n and d = r, in ACC_T (int for i8 -> i32,
//                      int64_t for i16 -> i48): exact
//   BILINEAR_FLOAT     dy = ry / scale_y_n in ACC_T (float or double), acc as the pseudocode's four terms
#include "types.glsl"
#include "index.glsl"

layout(set = 0, binding = 0) readonly buffer InA { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer Out { O_T o[]; };
#ifdef PUSH_BAKED
PUSH_BAKED  // VGF export: this dispatch's values as a const (tosa_vk/lower/push.py)
#else
layout(push_constant) uniform Params {
    uint total;
    int C, OW, OH, IW, IH;
    int sy_n, sy_d, sx_n, sx_d;
    int off_y, off_x;
} p;
#endif

// idiv_floor for a positive divisor (GLSL leaves / of negative operands undefined).
int idiv_floor(int a, int b) { return a >= 0 ? a / b : -((b - 1 - a) / b); }

void main() {
    uint i = flat_index();
    if (i >= p.total) return;
    int c = int(i % uint(p.C));
    uint t = i / uint(p.C);
    int ox = int(t % uint(p.OW));
    t /= uint(p.OW);
    int oy = int(t % uint(p.OH));
    int n = int(t / uint(p.OH));

    int y = oy * p.sy_d + p.off_y;
    int x = ox * p.sx_d + p.off_x;
    int iy = idiv_floor(y, p.sy_n);
    int ix = idiv_floor(x, p.sx_n);
    int ry = y - iy * p.sy_n;
    int rx = x - ix * p.sx_n;
    int iy0 = max(iy, 0), iy1 = min(iy + 1, p.IH - 1);
    int ix0 = max(ix, 0), ix1 = min(ix + 1, p.IW - 1);
    uint row0 = uint(n * p.IH + iy0) * uint(p.IW), row1 = uint(n * p.IH + iy1) * uint(p.IW);
    uint C = uint(p.C);

#ifdef NEAREST
    uint sy = 2 * ry >= p.sy_n ? row1 : row0;
    uint sx = uint(2 * rx >= p.sx_n ? ix1 : ix0);
    o[i] = a[(sy + sx) * C + uint(c)];
#else
    ACC_T v00 = ACC_T(LOAD_A(a[(row0 + uint(ix0)) * C + uint(c)]));
    ACC_T v01 = ACC_T(LOAD_A(a[(row0 + uint(ix1)) * C + uint(c)]));
    ACC_T v10 = ACC_T(LOAD_A(a[(row1 + uint(ix0)) * C + uint(c)]));
    ACC_T v11 = ACC_T(LOAD_A(a[(row1 + uint(ix1)) * C + uint(c)]));
#ifdef BILINEAR_INT
    ACC_T unit_y = ACC_T(p.sy_n), unit_x = ACC_T(p.sx_n), dy = ACC_T(ry), dx = ACC_T(rx);
#else
    ACC_T unit_y = ACC_T(1.0), unit_x = ACC_T(1.0);
    ACC_T dy = ACC_T(ry) / ACC_T(p.sy_n), dx = ACC_T(rx) / ACC_T(p.sx_n);
#endif
    ACC_T acc = v00 * (unit_y - dy) * (unit_x - dx);
    acc += v01 * (unit_y - dy) * dx;
    acc += v10 * dy * (unit_x - dx);
    acc += v11 * dy * dx;
    o[i] = STORE_O(O_C(acc));
#endif
}

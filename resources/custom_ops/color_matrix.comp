#version 450
// color_matrix: y[p] = M * x[p] + bias for every pixel p of an NHWC tensor with C = 3 (a buffer path: channels
// stay in the shape). Input at set 0 binding 1, output at set 1 binding 0 (bindings need not be 0..n-1).
layout(local_size_x = LOCAL_SIZE_X) in;
layout(set = 0, binding = 1) readonly buffer In { float x[]; };
layout(set = 1, binding = 0) writeonly buffer Out { float y[]; };
layout(push_constant) uniform Push { float m[9]; float bias[3]; uint pixels; } pc;

void main() {
    uint p = gl_GlobalInvocationID.x;
    if (p >= pc.pixels) return;
    vec3 v = vec3(x[3 * p], x[3 * p + 1], x[3 * p + 2]);
    for (uint r = 0; r < 3; ++r)
        y[3 * p + r] = pc.m[3 * r] * v.x + pc.m[3 * r + 1] * v.y + pc.m[3 * r + 2] * v.z + pc.bias[r];
}

#version 450
// gradient: central differences of a one-channel storage image (edges clamped), written to an RGBA storage
// image as (d/dx, d/dy, magnitude, 1).
layout(local_size_x = LOCAL_SIZE_X, local_size_y = LOCAL_SIZE_Y) in;
layout(set = 0, binding = 0, r32f) uniform readonly image2D src;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D dst;

float at(ivec2 p, ivec2 size) { return imageLoad(src, clamp(p, ivec2(0), size - 1)).r; }

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(src);
    if (p.x >= size.x || p.y >= size.y) return;
    float dx = 0.5 * (at(p + ivec2(1, 0), size) - at(p - ivec2(1, 0), size));
    float dy = 0.5 * (at(p + ivec2(0, 1), size) - at(p - ivec2(0, 1), size));
    imageStore(dst, p, vec4(dx, dy, sqrt(dx * dx + dy * dy), 1.0));
}

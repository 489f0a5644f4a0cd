#version 450
// grid_sample: bilinear sampling of an RGBA image (a COMBINED_IMAGE_SAMPLER, linear filter, clamp to edge) at the
// normalised coordinates of a grid buffer [1, Ho, Wo, 2] in [-1, 1] (x, y; align_corners = false).
layout(local_size_x = LOCAL_SIZE_X, local_size_y = LOCAL_SIZE_Y) in;
layout(set = 0, binding = 0) uniform sampler2D image;
layout(set = 0, binding = 1) readonly buffer Grid { float grid[]; };
layout(set = 0, binding = 2) writeonly buffer Out { vec4 y[]; };
layout(push_constant) uniform Push { uint out_w; uint out_h; } pc;

void main() {
    uvec2 p = gl_GlobalInvocationID.xy;
    if (p.x >= pc.out_w || p.y >= pc.out_h) return;
    uint i = p.y * pc.out_w + p.x;
    vec2 g = vec2(grid[2 * i], grid[2 * i + 1]);
    y[i] = textureLod(image, (g + 1.0) * 0.5, 0.0);
}

#version 450
// A storage image's texels written into a tensor's bytes (the inverse of buffer_to_image.comp): the CHANNELS
// components of texel (x, y) of the W x H image go to dst[(y * W + x) * CHANNELS]; IMAGE_FORMAT is the image's GLSL
// format qualifier (r32f, rg32f, rgba32f).
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, IMAGE_FORMAT) uniform readonly image2D src;
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(src);
    if (p.x >= size.x || p.y >= size.y) return;
    uint at = (uint(p.y) * uint(size.x) + uint(p.x)) * CHANNELS;
    vec4 texel = imageLoad(src, p);
    for (uint c = 0; c < CHANNELS; ++c) dst[at + c] = texel[c];
}

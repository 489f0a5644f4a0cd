#version 450
// A tensor's bytes written into a storage image (VGF export: tosa_vk/vgf_export.py converts a tensor bound as a
// buffer by one dispatch and as an image by another). Texel (x, y) of the W x H image gets the CHANNELS
// consecutive floats at src[(y * W + x) * CHANNELS] of the [H, W, C] / [1, H, W, C] tensor (the layout the runtime's
// buffer-to-image copy uses); IMAGE_FORMAT is the image's GLSL format qualifier (r32f, rg32f, rgba32f).
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1, IMAGE_FORMAT) uniform writeonly image2D dst;

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(dst);
    if (p.x >= size.x || p.y >= size.y) return;
    uint at = (uint(p.y) * uint(size.x) + uint(p.x)) * CHANNELS;
    vec4 texel = vec4(0.0, 0.0, 0.0, 1.0);
    for (uint c = 0; c < CHANNELS; ++c) texel[c] = src[at + c];
    imageStore(dst, p, texel);
}

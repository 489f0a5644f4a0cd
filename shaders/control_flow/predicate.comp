#version 450
// WHILE_LOOP's condition (a bool) as the 32-bit predicate VK_EXT_conditional_rendering reads: the runtime records
// several iterations ahead and the device skips those after the condition turned false (tosa_vk/vulkan/runtime.py).
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
layout(local_size_x = 1) in;

layout(set = 0, binding = 0) readonly buffer A { A_T a[]; };
layout(set = 0, binding = 1) writeonly buffer O { uint o[]; };

void main() {
    o[0] = LOAD_A(a[0]) ? 1u : 0u;
}

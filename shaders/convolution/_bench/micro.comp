
#version 450
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_ballot : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 64) in;
layout(set=0, binding=0) readonly buffer A { float a[]; };
layout(set=0, binding=0) readonly buffer A4 { vec4 a4[]; };
layout(set=0, binding=0) readonly buffer A8 { u64vec4 a8[]; };
layout(set=0, binding=0) readonly buffer AM { mat4 am[]; };
layout(set=0, binding=1) writeonly buffer O { float o[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    uint u = gl_WorkGroupID.x;
    float acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
    vec4 v = vec4(g);
    LOOPATTR for (int i = 0; i < ITERS; ++i) {
        BODY
    }
    o[g] = acc0 + acc1 + acc2 + acc3;
}

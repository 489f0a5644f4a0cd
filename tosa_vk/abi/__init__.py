"""The contract a kernel keeps with the runtime: the shader ABI (workgroup, bindings), SPIR-V reflection and
validation, the GLSL gate for a model's own shaders, Arm's custom-shader payload."""

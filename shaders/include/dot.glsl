// int8 products four at a time: OpSDot of SPV_KHR_integer_dot_product (Vulkan 1.3's shaderIntegerDotProduct; the
// int8dot kernel feature, tosa_vk/device_class.py). Declared through GL_EXT_spirv_intrinsics: Debian's glslang 11
// has no GL_EXT_integer_dot_product. Only kernels the lowering gives INT8_DOT include it: a module with the
// capability fails pipeline creation on a device without the feature.
#ifndef TOSA_VK_DOT_GLSL
#define TOSA_VK_DOT_GLSL
#extension GL_EXT_spirv_intrinsics : require

// sum of the four signed-byte products of a and b (each 4 int8 packed in a word, byte 0 lowest); operand 0 is
// PackedVectorFormat4x8Bit. Capabilities 6019 DotProduct, 6018 DotProductInput4x8BitPacked; instruction 4450 OpSDot.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8_packed(uint a, uint b, spirv_literal int packed_vector_format);
#define dot4x8(a, b) sdot4x8_packed(a, b, 0)

#endif

// Scalar helpers of the element-wise operators (spec 4.5.1), one per spec pseudocode function.
#ifndef TOSA_VK_ELEMENTWISE_GLSL
#define TOSA_VK_ELEMENTWISE_GLSL

// apply_max_s / apply_min_s for floats with the nan_mode of MAXIMUM / MINIMUM / CLAMP.
float max_propagate(float a, float b) { return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : max(a, b); }
float min_propagate(float a, float b) { return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : min(a, b); }
float max_ignore(float a, float b) { return isnan(a) ? b : (isnan(b) ? a : max(a, b)); }
float min_ignore(float a, float b) { return isnan(a) ? b : (isnan(b) ? a : min(a, b)); }

#endif

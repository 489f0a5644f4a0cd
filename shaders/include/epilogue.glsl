// The epilogue a kernel applies to each result before its single store (tosa_vk/fuse.py): EPILOGUE(v, c, at) is
// an expression composed by tosa_vk/lower/epilogue.py, v the result's compute value, c its output channel, at its
// element index in the stored tensor; EP_DECLS declares what it reads (the other operand of an ADD / SUB / MUL /
// MAXIMUM / MINIMUM, a RESCALE's multiplier and shift) and one function per RESCALE, with the arithmetic of
// shaders/type_conversion/rescale.comp.
#ifndef TOSA_VK_EPILOGUE_GLSL
#define TOSA_VK_EPILOGUE_GLSL

#ifdef EPILOGUE
#include "elementwise.glsl"
#ifdef EP_INT64
#include "conversion.glsl"
#endif
#ifdef EP_FP64
#include "unary.glsl"
#endif
EP_DECLS
#endif

#endif

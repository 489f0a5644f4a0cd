// The epilogue a kernel applies to each result before its single store (tosa_vk/fuse.py): EPILOGUE(v, c, at) is
// a call of the chain (tosa_vk/stages/lower/fused/epilogue.py, written by fused/render.py), v the result's compute
// value, c its output channel, at its element index in the stored tensor; EP_DECLS declares what it reads (the other
// operand of an ADD / SUB / MUL / MAXIMUM / MINIMUM, a RESCALE's multiplier and shift, a TABLE) and the chain,
// ep_chain(v, c, at): fused.glsl's EP_BUF / EP_TEX / EP_CHAIN_FN calls, one named function of fused.glsl and
// friends per step (a RESCALE is conversion.glsl's tosa_rescale, as in rescale.comp).
// A chain may end in layout operators (RESHAPE / TRANSPOSE): the kernel then stores through their index map,
// EP_OUT(at) -> the element's index in the stored tensor. O_AT(at) is the index a scalar store writes, O4_AT(i) the
// 4-vector a vector store of elements 4i .. 4i + 3 writes (EP_OUT_SCALAR: the map does not keep 4 consecutive
// elements together, so the kernel stores scalars).
#ifndef TOSA_VK_EPILOGUE_GLSL
#define TOSA_VK_EPILOGUE_GLSL

#if defined(EPILOGUE) || defined(EP_OUT)
#include "fused.glsl"
EP_DECLS
#endif

#ifdef EP_OUT
#define O_AT(at) uint(EP_OUT(int(at)))
#define O4_AT(i) (uint(EP_OUT(4 * int(i))) >> 2)
#else
#define O_AT(at) (at)
#define O4_AT(i) (i)
#endif

#endif

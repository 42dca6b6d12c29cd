#pragma once
// KOTML_OT_UNROLL before a fixed-length lane loop of a host SIMD kernel: those
// loops must become straight-line vector code even at -O2, where GCC leaves
// short loops rolled. nvcc (which also translates host files in a CUDA build)
// knows only its own spelling; these kernels are not used there.

#if defined(__CUDACC__) || defined(__clang__)
#define KOTML_OT_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define KOTML_OT_UNROLL _Pragma("GCC unroll 16")
#else
#define KOTML_OT_UNROLL
#endif

#pragma once
// KOTML_OT_UNROLL before a fixed-length lane loop of a host SIMD kernel: those
// loops must become straight-line vector code even at -O2, where GCC leaves
// short loops rolled. In a CUDA build nvcc's front end and its host compiler
// each warn about the other's spelling ("unroll" against "GCC unroll"), so the
// macro is empty there: these files are built at -O3, where GCC unrolls the
// lane loops itself, and their kernels never run on the device.

#if defined(__CUDACC__)
#define KOTML_OT_UNROLL
#elif defined(__clang__)
#define KOTML_OT_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define KOTML_OT_UNROLL _Pragma("GCC unroll 16")
#else
#define KOTML_OT_UNROLL
#endif

#pragma once
// KOTML_SIMD_CLONES before the definition of a host kernel: GCC compiles the
// function once per x86 SIMD level (x86-64-v4: AVX-512, v3: AVX2, and the
// baseline) and picks the clone for the CPU at load time, so a binary built for
// baseline x86-64, as Debian's packages are, still runs its exp- and
// bandwidth-bound loops at the full vector width. Elsewhere it expands to
// nothing. Only host code carries it; device passes keep portable loops.

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KOTML_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KOTML_SIMD_CLONES
#endif

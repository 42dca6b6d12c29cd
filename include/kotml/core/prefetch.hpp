#pragma once
// A hint that one cache line will be read soon, for host loops that know an
// address a step before they need it but whose addresses no hardware
// prefetcher can guess (a walk over a graph's rows in heap order). It changes
// no value. A GPU's device pass gets nothing: its latency is hidden by other
// warps, not by hints.

#include <Kokkos_Core.hpp>

#include "kotml/core/math.hpp"  // KOTML_DEVICE_PASS

namespace kotml {

KOKKOS_FORCEINLINE_FUNCTION void prefetch_line(const void* address) {
#if !defined(KOTML_DEVICE_PASS) && (defined(__GNUC__) || defined(__clang__))
  __builtin_prefetch(address);
#else
  (void)address;
#endif
}

}  // namespace kotml

#pragma once
// Sparse index arrays stored in 32 bits (scipy's and anndata's choice whenever
// they fit), widened to kotml's 64-bit indices with their range taken in the
// same pass. Built at -O3 with the SIMD files (src/CMakeLists.txt): at -O2 GCC
// leaves the loop scalar, and it was a quarter of reading a whole matrix.

#include <cstddef>
#include <cstdint>

namespace kotml::io::detail {

struct IndexRange {
  std::int32_t low = 0, high = -1;  // empty input: no index at all
};

/// out[i] = in[i] for i < n; returns the smallest and largest index.
IndexRange widen_indices(const std::int32_t* in, std::size_t n, std::int64_t* out) noexcept;

}  // namespace kotml::io::detail

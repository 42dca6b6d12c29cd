#pragma once
// The range of a sparse matrix's 32-bit indices, taken in one pass that GCC
// vectorises: built at -O3 with the SIMD files (src/CMakeLists.txt), since at
// -O2 it leaves the loop scalar, and the check was then a tenth of reading a
// whole matrix.

#include <cstddef>
#include <cstdint>

namespace kotml::io::detail {

struct IndexRange {
  std::int32_t low = 0, high = -1;  // no index at all: an empty range
};

/// The smallest and largest of in[0, n).
IndexRange index_range(const std::int32_t* in, std::size_t n) noexcept;

}  // namespace kotml::io::detail

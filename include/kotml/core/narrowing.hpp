#pragma once
// Checks a float64 -> float32 conversion of user data before it happens:
// finite values beyond float32's range would become inf (and be reported as
// "NaN or infinite" later), and non-zero values below its smallest normal
// number (1.2e-38) would flush to zero or lose their digits, silently giving
// zero distances or a cosine of 1. Either is said, with the remedy.

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"

namespace kotml {

struct NarrowingCount {
  std::size_t overflow = 0;   // finite, |x| > FLT_MAX
  std::size_t underflow = 0;  // 0 < |x| < FLT_MIN (normal)
};

inline NarrowingCount count_float32_narrowing(const double* values, std::size_t n) {
  NarrowingCount c;
  constexpr double largest = std::numeric_limits<float>::max();
  constexpr double smallest = std::numeric_limits<float>::min();
  for (std::size_t k = 0; k < n; ++k) {
    const double a = std::fabs(values[k]);
    if (std::isfinite(a) && a > largest) ++c.overflow;
    if (a > 0.0 && a < smallest) ++c.underflow;
  }
  return c;
}

inline NarrowingCount count_float32_narrowing(const std::vector<double>& values) {
  return count_float32_narrowing(values.data(), values.size());
}

/// Error naming file and element when values counted by `c` do not survive
/// float32; `remedy` says how to keep float64 (an option of the calling command).
inline void require_float32_range(const NarrowingCount& c, const std::string& file, const std::string& element,
                                  const std::string& remedy) {
  if (c.overflow > 0)
    throw Error(file, element,
                std::to_string(c.overflow) + " finite value(s) above 3.4e38 overflow on conversion to float32; " + remedy);
  if (c.underflow > 0)
    throw Error(file, element,
                std::to_string(c.underflow) +
                    " non-zero value(s) below 1.2e-38 underflow on conversion to float32; " + remedy);
}

inline void require_float32_range(const std::vector<double>& values, const std::string& file,
                                  const std::string& element, const std::string& remedy) {
  require_float32_range(count_float32_narrowing(values), file, element, remedy);
}

}  // namespace kotml

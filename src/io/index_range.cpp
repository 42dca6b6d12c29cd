#include "index_range.hpp"

namespace kotml::io::detail {

IndexRange index_range(const std::int32_t* in, std::size_t n) noexcept {
  if (n == 0) return {};
  std::int32_t low = in[0], high = in[0];
  for (std::size_t i = 0; i < n; ++i) {
    low = in[i] < low ? in[i] : low;
    high = in[i] > high ? in[i] : high;
  }
  return {low, high};
}

}  // namespace kotml::io::detail

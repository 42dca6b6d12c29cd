#include "index_widening.hpp"

namespace kotml::io::detail {

IndexRange widen_indices(const std::int32_t* in, std::size_t n, std::int64_t* out) noexcept {
  if (n == 0) return {};
  std::int32_t low = in[0], high = in[0];
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t j = in[i];
    out[i] = j;
    low = j < low ? j : low;
    high = j > high ? j : high;
  }
  return {low, high};
}

}  // namespace kotml::io::detail

// Host versions of the row log-sum-exp (see row_lse.hpp). The loops keep W
// independent accumulators, which compilers map onto SIMD registers without
// reordering any sum: lane l always adds terms j ≡ l (mod W) in increasing j,
// and the lanes are combined in a fixed order.

#include <cmath>
#include <limits>

#include "row_lse.hpp"

namespace kotml::ot::detail {
namespace {

template <class T, int W>
__attribute__((always_inline)) inline T row_lse_lanes(const T* __restrict c, const T* __restrict h,
                                                      std::int64_t m, T s) {
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  T top_lane[W];
  for (int l = 0; l < W; ++l) top_lane[l] = minus_inf;
  std::int64_t j = 0;
  for (; j + W <= m; j += W)
    for (int l = 0; l < W; ++l) {
      const T v = h[j + l] - s * c[j + l];
      top_lane[l] = v > top_lane[l] ? v : top_lane[l];
    }
  T top = minus_inf;
  for (int l = 0; l < W; ++l) top = top_lane[l] > top ? top_lane[l] : top;
  for (std::int64_t t = j; t < m; ++t) {
    const T v = h[t] - s * c[t];
    top = v > top ? v : top;
  }
  if (!(top > minus_inf)) return top;  // every term is zero (or NaN was seen)

  T sum_lane[W];
  for (int l = 0; l < W; ++l) sum_lane[l] = 0;
  j = 0;
  for (; j + W <= m; j += W)
    for (int l = 0; l < W; ++l) sum_lane[l] += fast_exp(h[j + l] - s * c[j + l] - top);
  T sum = 0;
  for (int l = 0; l < W; ++l) sum += sum_lane[l];
  for (std::int64_t t = j; t < m; ++t) sum += fast_exp(h[t] - s * c[t] - top);
  return top + std::log(sum);
}

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KOTML_OT_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KOTML_OT_SIMD_CLONES
#endif

KOTML_OT_SIMD_CLONES
double row_lse_host(const double* c, const double* h, std::int64_t m, double s) {
  return row_lse_lanes<double, 8>(c, h, m, s);
}

KOTML_OT_SIMD_CLONES
float row_lse_host(const float* c, const float* h, std::int64_t m, float s) {
  return row_lse_lanes<float, 16>(c, h, m, s);
}

}  // namespace kotml::ot::detail

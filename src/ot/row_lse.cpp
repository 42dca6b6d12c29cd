// Host versions of the row log-sum-exp (see row_lse.hpp). The loops keep W
// independent accumulators, which compilers map onto SIMD registers without
// reordering any sum: lane l always adds terms j ≡ l (mod W) in increasing j,
// and the lanes are combined in a fixed pairwise tree.

#include <cmath>
#include <limits>

#include "row_lse.hpp"

// The fixed-length lane loops below must become straight-line SIMD code even at
// -O2, where GCC leaves short loops rolled.
#if defined(__GNUC__) && !defined(__clang__)
#define KOTML_OT_UNROLL _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define KOTML_OT_UNROLL _Pragma("unroll")
#else
#define KOTML_OT_UNROLL
#endif

namespace kotml::ot::detail {
namespace {

template <class T, int W>
__attribute__((always_inline)) inline T row_lse_lanes(const T* __restrict c, const T* __restrict h,
                                                      std::int64_t m, T s) {
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  const std::int64_t full = m - m % W;
  // The last partial block is padded to W lanes with −∞ terms (exp gives 0), so
  // it runs through the same vector code as the others.
  T tail_c[W], tail_h[W];
  KOTML_OT_UNROLL
  for (int l = 0; l < W; ++l) {
    const bool inside = full + l < m;
    tail_c[l] = inside ? c[full + l] : T(0);
    tail_h[l] = inside ? h[full + l] : minus_inf;
  }
  T top_lane[W];
  for (int l = 0; l < W; ++l) top_lane[l] = minus_inf;
  for (std::int64_t j = 0; j < full; j += W)
    for (int l = 0; l < W; ++l) {
      const T v = h[j + l] - s * c[j + l];
      top_lane[l] = v > top_lane[l] ? v : top_lane[l];
    }
  KOTML_OT_UNROLL
  for (int l = 0; l < W; ++l) {
    const T v = tail_h[l] - s * tail_c[l];
    top_lane[l] = v > top_lane[l] ? v : top_lane[l];
  }
  // Lanes are combined pairwise in a fixed tree: short latency, fixed order.
  KOTML_OT_UNROLL
  for (int width = W / 2; width >= 1; width /= 2)
    KOTML_OT_UNROLL
    for (int l = 0; l < width; ++l) top_lane[l] = top_lane[l + width] > top_lane[l] ? top_lane[l + width] : top_lane[l];
  const T top = top_lane[0];
  if (!(top > minus_inf)) return top;  // every term is zero (or NaN was seen)

  T sum_lane[W];
  for (int l = 0; l < W; ++l) sum_lane[l] = 0;
  for (std::int64_t j = 0; j < full; j += W)
    for (int l = 0; l < W; ++l) sum_lane[l] += fast_exp(h[j + l] - s * c[j + l] - top);
  KOTML_OT_UNROLL
  for (int l = 0; l < W; ++l) sum_lane[l] += fast_exp(tail_h[l] - s * tail_c[l] - top);
  KOTML_OT_UNROLL
  for (int width = W / 2; width >= 1; width /= 2)
    KOTML_OT_UNROLL
    for (int l = 0; l < width; ++l) sum_lane[l] += sum_lane[l + width];
  return top + std::log(sum_lane[0]);
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

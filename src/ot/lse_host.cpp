// Host versions of the log-sum-exp family (see kotml/ot/lse.hpp). For rows: The loops keep W
// independent accumulators, which compilers map onto SIMD registers without
// reordering any sum: lane l always adds terms j ≡ l (mod W) in increasing j,
// and the lanes are combined in a fixed pairwise tree.

#include <cmath>
#include <limits>

#include "kotml/core/simd_levels.hpp"
#include "kotml/ot/lse.hpp"
#include "unroll.hpp"

namespace kotml::ot::detail {
namespace {

// Range of Σ exp(term − shift) over which a guessed shift is accepted: the
// largest term is then a normal number and nothing overflows.
template <class T>
struct ShiftRange;
template <>
struct ShiftRange<float> {
  static constexpr float lowest = 0x1p-60f, highest = 0x1p60f;
};
template <>
struct ShiftRange<double> {
  static constexpr double lowest = 0x1p-500, highest = 0x1p500;
};

template <class T, int W>
__attribute__((always_inline)) inline T lane_sum(T* lanes) {
  // Lanes are combined pairwise in a fixed tree: short latency, fixed order.
  KOTML_OT_UNROLL
  for (int width = W / 2; width >= 1; width /= 2)
    KOTML_OT_UNROLL
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  return lanes[0];
}

/// Σ_j exp(h_j − s·c_j − shift), the last partial block padded with −∞ terms.
template <class T, int W>
__attribute__((always_inline)) inline T shifted_sum(const T* __restrict c, const T* __restrict h, std::int64_t full,
                                                    const T* tail_c, const T* tail_h, T s, T shift) {
  T sum_lane[W];
  for (int l = 0; l < W; ++l) sum_lane[l] = 0;
  for (std::int64_t j = 0; j < full; j += W)
    for (int l = 0; l < W; ++l) sum_lane[l] += fast_exp(h[j + l] - s * c[j + l] - shift);
  KOTML_OT_UNROLL
  for (int l = 0; l < W; ++l) sum_lane[l] += fast_exp(tail_h[l] - s * tail_c[l] - shift);
  return lane_sum<T, W>(sum_lane);
}

template <class T, int W>
__attribute__((always_inline)) inline T row_lse_lanes(const T* __restrict c, const T* __restrict h,
                                                      std::int64_t m, T s, T shift) {
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
  // One pass with the caller's guess of the result as the shift; accepted when
  // the sum shows that no term overflowed and the largest is a normal number.
  if (shift > minus_inf && shift < -minus_inf) {
    const T sum = shifted_sum<T, W>(c, h, full, tail_c, tail_h, s, shift);
    if (sum >= ShiftRange<T>::lowest && sum <= ShiftRange<T>::highest) return shift + std::log(sum);
  }
  // Otherwise two passes: the maximum, then the sum shifted by it.
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
  KOTML_OT_UNROLL
  for (int width = W / 2; width >= 1; width /= 2)
    KOTML_OT_UNROLL
    for (int l = 0; l < width; ++l) top_lane[l] = top_lane[l + width] > top_lane[l] ? top_lane[l + width] : top_lane[l];
  const T top = top_lane[0];
  if (!(top > minus_inf)) return top;  // every term is zero (or NaN was seen)
  return top + std::log(shifted_sum<T, W>(c, h, full, tail_c, tail_h, s, top));
}

/// Σ_j p_j c_j with p_j = exp(own + h_j − s·c_j), each p_j stored in plan if
/// given; lanes summed in T, combined in double.
template <class T, int W>
__attribute__((always_inline)) inline double row_transport_lanes(const T* __restrict c, const T* __restrict h,
                                                                 std::int64_t m, T s, T own, T* __restrict plan) {
  const std::int64_t full = m - m % W;
  T acc[W];
  for (int l = 0; l < W; ++l) acc[l] = 0;
  if (plan) {
    for (std::int64_t j = 0; j < full; j += W)
      for (int l = 0; l < W; ++l) {
        const T p = fast_exp(own + h[j + l] - s * c[j + l]);
        plan[j + l] = p;
        acc[l] += p * c[j + l];
      }
  } else {
    for (std::int64_t j = 0; j < full; j += W)
      for (int l = 0; l < W; ++l) acc[l] += fast_exp(own + h[j + l] - s * c[j + l]) * c[j + l];
  }
  double total = 0;
  for (int l = 0; l < W; ++l) total += static_cast<double>(acc[l]);
  for (std::int64_t j = full; j < m; ++j) {
    const T p = fast_exp(own + h[j] - s * c[j]);
    if (plan) plan[j] = p;
    total += static_cast<double>(p) * static_cast<double>(c[j]);
  }
  return total;
}

}  // namespace

KOTML_SIMD_DISPATCHED(double, row_lse_host, (const double* c, const double* h, std::int64_t m, double s, double shift),
                      (c, h, m, s, shift), row_lse_lanes<double, 8>(c, h, m, s, shift))

KOTML_SIMD_DISPATCHED(float, row_lse_host, (const float* c, const float* h, std::int64_t m, float s, float shift),
                      (c, h, m, s, shift), row_lse_lanes<float, 16>(c, h, m, s, shift))

/// Σ_j exp(h_j − s·c_j − shift), the lanes of row_lse's one-pass path.
template <class T, int W>
__attribute__((always_inline)) inline T row_sum_lanes(const T* __restrict c, const T* __restrict h, std::int64_t m,
                                                      T s, T shift) {
  const std::int64_t full = m - m % W;
  T tail_c[W], tail_h[W];
  KOTML_OT_UNROLL
  for (int l = 0; l < W; ++l) {
    const bool inside = full + l < m;
    tail_c[l] = inside ? c[full + l] : T(0);
    tail_h[l] = inside ? h[full + l] : -std::numeric_limits<T>::infinity();
  }
  return shifted_sum<T, W>(c, h, full, tail_c, tail_h, s, shift);
}

KOTML_SIMD_DISPATCHED(double, row_sum_host, (const double* c, const double* h, std::int64_t m, double s, double shift),
                      (c, h, m, s, shift), row_sum_lanes<double, 8>(c, h, m, s, shift))

KOTML_SIMD_DISPATCHED(float, row_sum_host, (const float* c, const float* h, std::int64_t m, float s, float shift),
                      (c, h, m, s, shift), row_sum_lanes<float, 16>(c, h, m, s, shift))

KOTML_SIMD_DISPATCHED(double, row_transport_host,
                      (const double* c, const double* h, std::int64_t m, double s, double own, double* plan),
                      (c, h, m, s, own, plan), row_transport_lanes<double, 8>(c, h, m, s, own, plan))

KOTML_SIMD_DISPATCHED(double, row_transport_host,
                      (const float* c, const float* h, std::int64_t m, float s, float own, float* plan),
                      (c, h, m, s, own, plan), row_transport_lanes<float, 16>(c, h, m, s, own, plan))

// Columns: the portable bodies, compiled per SIMD level; the lanes run across
// the columns of a tile row, so no sum is reordered.

KOTML_SIMD_DISPATCHED(void, column_max_tile_host,
                      (const double* c, std::int64_t ld, std::int64_t rows, std::int64_t width, const double* u,
                       double s, double* top),
                      (c, ld, rows, width, u, s, top), column_max_tile<double>(c, ld, rows, width, u, s, top))

KOTML_SIMD_DISPATCHED(void, column_max_tile_host,
                      (const float* c, std::int64_t ld, std::int64_t rows, std::int64_t width, const float* u, float s,
                       float* top),
                      (c, ld, rows, width, u, s, top), column_max_tile<float>(c, ld, rows, width, u, s, top))

KOTML_SIMD_DISPATCHED(void, column_sum_tile_host,
                      (const double* c, std::int64_t ld, std::int64_t rows, std::int64_t width, const double* u,
                       double s, const double* shift, double* acc),
                      (c, ld, rows, width, u, s, shift, acc),
                      column_sum_tile<double>(c, ld, rows, width, u, s, shift, acc))

KOTML_SIMD_DISPATCHED(void, column_sum_tile_host,
                      (const float* c, std::int64_t ld, std::int64_t rows, std::int64_t width, const float* u, float s,
                       const float* shift, float* acc),
                      (c, ld, rows, width, u, s, shift, acc),
                      column_sum_tile<float>(c, ld, rows, width, u, s, shift, acc))

}  // namespace kotml::ot::detail

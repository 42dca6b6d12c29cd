// Host SIMD kernel of the network simplex's pricing scan (see simplex_pricing.hpp).

#include "simplex_pricing.hpp"

#include <cstring>

#include "kotml/core/simd_levels.hpp"

namespace kotml::ot::detail {
namespace {

/// The plain scan, also the tail of the vector one.
inline std::int32_t price_sequential(const double* cost, const std::int8_t* out_of_basis, const double* pi_col,
                                     double pi_row, std::int32_t first, std::int32_t count, double& best,
                                     std::int32_t at) {
  for (std::int32_t t = first; t < count; ++t) {
    const double reduced = out_of_basis[t] ? cost[t] + pi_row - pi_col[t] : 0.0;
    if (reduced < best) {
      best = reduced;
      at = t;
    }
  }
  return at;
}

// GCC's auto-vectoriser leaves this arg-min scalar (the lanes' compare-and-keep
// chains defeat SLP), so it is written with GCC/Clang vector types; other
// compilers, and nvcc's host pass, where it is never called, get the plain scan.
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__INTEL_COMPILER)
#define KOTML_OT_VECTOR_PRICING 1

using Doubles = double __attribute__((vector_size(64)));
using Offsets = std::int64_t __attribute__((vector_size(64)));
using States = std::int8_t __attribute__((vector_size(8)));

/// Eight lanes each keep their own smallest reduced cost and its first offset;
/// the lanes are merged by value, ties to the smaller offset, which is the first
/// smallest of the whole segment, as the sequential scan finds it. Arcs in the
/// basis are multiplied by their 0 state instead of skipped, so every load
/// happens; they give ±0, which never beats best ≤ 0.
__attribute__((always_inline)) inline std::int32_t price_lanes(const double* __restrict cost,
                                                               const std::int8_t* __restrict out_of_basis,
                                                               const double* __restrict pi_col, double pi_row,
                                                               std::int32_t count, double& best) {
  constexpr int lanes = 8;
  Doubles lane_best = Doubles{} + best;
  Offsets lane_at = Offsets{} - 1;
  Offsets offset = {0, 1, 2, 3, 4, 5, 6, 7};
  std::int32_t t = 0;
  for (; t + lanes <= count; t += lanes) {
    Doubles c, p;
    States s;
    std::memcpy(&c, cost + t, sizeof c);
    std::memcpy(&p, pi_col + t, sizeof p);
    std::memcpy(&s, out_of_basis + t, sizeof s);
    const Doubles reduced = __builtin_convertvector(s, Doubles) * (c + pi_row - p);
    const Offsets lower = reduced < lane_best;
    lane_best = lower ? reduced : lane_best;
    lane_at = lower ? offset : lane_at;
    offset += lanes;
  }
  double value = best;
  std::int32_t at = -1;
  for (int l = 0; l < lanes; ++l) {
    if (lane_at[l] < 0) continue;
    if (lane_best[l] < value || (lane_best[l] == value && lane_at[l] < at)) {
      value = lane_best[l];
      at = static_cast<std::int32_t>(lane_at[l]);
    }
  }
  // The tail comes after every lane's arcs, so only a strictly smaller cost wins.
  at = price_sequential(cost, out_of_basis, pi_col, pi_row, t, count, value, at);
  best = value;
  return at;
}
#endif

__attribute__((always_inline)) inline std::int32_t scan_segment(const double* cost, const std::int8_t* out_of_basis,
                                                                const double* pi_col, double pi_row, std::int32_t count,
                                                                double& best) {
#ifdef KOTML_OT_VECTOR_PRICING
  return price_lanes(cost, out_of_basis, pi_col, pi_row, count, best);
#else
  return price_sequential(cost, out_of_basis, pi_col, pi_row, 0, count, best, -1);
#endif
}

}  // namespace

KOTML_SIMD_DISPATCHED(std::int32_t, price_segment_host,
                      (const double* cost, const std::int8_t* out_of_basis, const double* pi_col, double pi_row,
                       std::int32_t count, double& best),
                      (cost, out_of_basis, pi_col, pi_row, count, best),
                      scan_segment(cost, out_of_basis, pi_col, pi_row, count, best))

}  // namespace kotml::ot::detail

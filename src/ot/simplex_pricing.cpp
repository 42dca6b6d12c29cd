// Host SIMD kernels of the network simplex's pricing scan (see simplex_pricing.hpp).
//
// The scan is an arg-min over a row segment, with a loop-carried chain per lane
// (compare, then keep value and offset) that limits one accumulator to about
// one vector per compare-and-blend latency. Four independent accumulators, each
// taking every fourth vector, keep the vector units busy; the lanes are merged
// at the end by value, ties to the smaller offset, which is the first smallest
// arc of the segment, as the sequential scan finds it. So every level returns
// the same arc, and the pivots, the plan and the potentials are the same bits.
//
// The arc states (one byte, 1 = out of the basis) are widened to 64-bit lane
// masks with the ISA's sign-extending load: GCC 12 turns the generic vector
// conversion int8 → int64 into eight scalar conversions, which cost more than
// the rest of the loop. That is why the x86-64-v4 and x86-64-v3 kernels are
// written apart, each with its own width; the baseline level runs the plain
// loop, which GCC compiles better than 128-bit vectors of this code.

#include "simplex_pricing.hpp"

#include <cstring>

#include "kotml/core/simd_levels.hpp"

#if KOTML_SIMD_HAS_LEVELS
#include <immintrin.h>
#endif

namespace kotml::ot::detail {
namespace {

/// The plain scan from offset `first`: the baseline level, and the tail of the
/// vector kernels (after every lane's arcs, so only a strictly smaller cost wins).
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

std::int32_t price_baseline(const double* cost, const std::int8_t* out_of_basis, const double* pi_col,
                            double pi_row, std::int32_t count, double& best) {
  return price_sequential(cost, out_of_basis, pi_col, pi_row, 0, count, best, -1);
}

#if KOTML_SIMD_HAS_LEVELS

/// Merges `lanes` (value, offset) pairs into `best`: the smallest value below
/// best, ties to the smaller offset; offsets < 0 mark lanes that found nothing.
inline std::int32_t merge_lanes(const double* value, const std::int64_t* offset, int lanes, double& best) {
  std::int32_t at = -1;
  for (int l = 0; l < lanes; ++l) {
    if (offset[l] < 0) continue;
    if (value[l] < best || (value[l] == best && offset[l] < at)) {
      best = value[l];
      at = static_cast<std::int32_t>(offset[l]);
    }
  }
  return at;
}

constexpr int accumulators = 4;

using Doubles8 = double __attribute__((vector_size(64)));
using Offsets8 = std::int64_t __attribute__((vector_size(64)));
using Unsigned8 = std::uint64_t __attribute__((vector_size(64)));

/// One vector of arcs from t into one accumulator.
__attribute__((target("arch=x86-64-v4"), always_inline)) inline void step_x86_64_v4(
    const double* __restrict cost, const std::int8_t* __restrict out_of_basis, const double* __restrict pi_col,
    double pi_row, std::int32_t t, const Offsets8& offset, Doubles8& lane_best, Offsets8& lane_at) {
  Doubles8 c, p;
  std::memcpy(&c, cost + t, sizeof c);
  std::memcpy(&p, pi_col + t, sizeof p);
  const auto out = reinterpret_cast<Offsets8>(
      _mm512_maskz_cvtepi8_epi64(
          0xFF, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(out_of_basis + t))));
  const Doubles8 reduced = c + pi_row - p;
  const Offsets8 lower = (reduced < lane_best) & (out != 0);
  lane_best = lower ? reduced : lane_best;
  lane_at = lower ? offset : lane_at;
}

/// Folds the accumulators into the first, lane by lane: the smaller value, ties
/// to the smaller offset (−1, nothing found, is the largest as unsigned; such a
/// lane still holds the starting best, which a found value is always below).
__attribute__((target("arch=x86-64-v4"), always_inline)) inline void fold_x86_64_v4(Doubles8* lane_best,
                                                                                            Offsets8* lane_at) {
  for (int k = 1; k < accumulators; ++k) {
    const Unsigned8 at_k = reinterpret_cast<Unsigned8>(lane_at[k]), at_0 = reinterpret_cast<Unsigned8>(lane_at[0]);
    const Offsets8 take = (lane_best[k] < lane_best[0]) | ((lane_best[k] == lane_best[0]) & (at_k < at_0));
    lane_best[0] = take ? lane_best[k] : lane_best[0];
    lane_at[0] = take ? lane_at[k] : lane_at[0];
  }
}

__attribute__((target("arch=x86-64-v4"))) std::int32_t price_x86_64_v4(const double* __restrict cost,
                                                                        const std::int8_t* __restrict out_of_basis,
                                                                        const double* __restrict pi_col,
                                                                        double pi_row, std::int32_t count,
                                                                        double& best) {
  constexpr int width = 8;
  Doubles8 lane_best[accumulators];
  Offsets8 lane_at[accumulators];
  Offsets8 offset[accumulators];
  for (int k = 0; k < accumulators; ++k) {
    lane_best[k] = Doubles8{} + best;
    lane_at[k] = Offsets8{} - 1;
    offset[k] = Offsets8{0, 1, 2, 3, 4, 5, 6, 7} + width * k;
  }
  std::int32_t t = 0;
  for (; t + width * accumulators <= count; t += width * accumulators)
    for (int k = 0; k < accumulators; ++k) {
      step_x86_64_v4(cost, out_of_basis, pi_col, pi_row, t + width * k, offset[k], lane_best[k], lane_at[k]);
      offset[k] += width * accumulators;
    }
  for (; t + width <= count; t += width) {
    step_x86_64_v4(cost, out_of_basis, pi_col, pi_row, t, offset[0], lane_best[0], lane_at[0]);
    offset[0] += width;
  }
  fold_x86_64_v4(lane_best, lane_at);
  double values[width];
  std::int64_t offsets[width];
  std::memcpy(values, &lane_best[0], sizeof values);
  std::memcpy(offsets, &lane_at[0], sizeof offsets);
  double value = best;
  std::int32_t at = merge_lanes(values, offsets, width, value);
  at = price_sequential(cost, out_of_basis, pi_col, pi_row, t, count, value, at);
  best = value;
  return at;
}

using Doubles4 = double __attribute__((vector_size(32)));
using Offsets4 = std::int64_t __attribute__((vector_size(32)));
using Unsigned4 = std::uint64_t __attribute__((vector_size(32)));

/// One vector of arcs from t into one accumulator.
__attribute__((target("arch=x86-64-v3"), always_inline)) inline void step_x86_64_v3(
    const double* __restrict cost, const std::int8_t* __restrict out_of_basis, const double* __restrict pi_col,
    double pi_row, std::int32_t t, const Offsets4& offset, Doubles4& lane_best, Offsets4& lane_at) {
  Doubles4 c, p;
  std::memcpy(&c, cost + t, sizeof c);
  std::memcpy(&p, pi_col + t, sizeof p);
  std::int32_t states;
  std::memcpy(&states, out_of_basis + t, sizeof states);
  const auto out = reinterpret_cast<Offsets4>(_mm256_cvtepi8_epi64(_mm_cvtsi32_si128(states)));
  const Doubles4 reduced = c + pi_row - p;
  const Offsets4 lower = (reduced < lane_best) & (out != 0);
  lane_best = lower ? reduced : lane_best;
  lane_at = lower ? offset : lane_at;
}

/// Folds the accumulators into the first, lane by lane: the smaller value, ties
/// to the smaller offset (−1, nothing found, is the largest as unsigned; such a
/// lane still holds the starting best, which a found value is always below).
__attribute__((target("arch=x86-64-v3"), always_inline)) inline void fold_x86_64_v3(Doubles4* lane_best,
                                                                                            Offsets4* lane_at) {
  for (int k = 1; k < accumulators; ++k) {
    const Unsigned4 at_k = reinterpret_cast<Unsigned4>(lane_at[k]), at_0 = reinterpret_cast<Unsigned4>(lane_at[0]);
    const Offsets4 take = (lane_best[k] < lane_best[0]) | ((lane_best[k] == lane_best[0]) & (at_k < at_0));
    lane_best[0] = take ? lane_best[k] : lane_best[0];
    lane_at[0] = take ? lane_at[k] : lane_at[0];
  }
}

__attribute__((target("arch=x86-64-v3"))) std::int32_t price_x86_64_v3(const double* __restrict cost,
                                                                        const std::int8_t* __restrict out_of_basis,
                                                                        const double* __restrict pi_col,
                                                                        double pi_row, std::int32_t count,
                                                                        double& best) {
  constexpr int width = 4;
  Doubles4 lane_best[accumulators];
  Offsets4 lane_at[accumulators];
  Offsets4 offset[accumulators];
  for (int k = 0; k < accumulators; ++k) {
    lane_best[k] = Doubles4{} + best;
    lane_at[k] = Offsets4{} - 1;
    offset[k] = Offsets4{0, 1, 2, 3} + width * k;
  }
  std::int32_t t = 0;
  for (; t + width * accumulators <= count; t += width * accumulators)
    for (int k = 0; k < accumulators; ++k) {
      step_x86_64_v3(cost, out_of_basis, pi_col, pi_row, t + width * k, offset[k], lane_best[k], lane_at[k]);
      offset[k] += width * accumulators;
    }
  for (; t + width <= count; t += width) {
    step_x86_64_v3(cost, out_of_basis, pi_col, pi_row, t, offset[0], lane_best[0], lane_at[0]);
    offset[0] += width;
  }
  fold_x86_64_v3(lane_best, lane_at);
  double values[width];
  std::int64_t offsets[width];
  std::memcpy(values, &lane_best[0], sizeof values);
  std::memcpy(offsets, &lane_at[0], sizeof offsets);
  double value = best;
  std::int32_t at = merge_lanes(values, offsets, width, value);
  at = price_sequential(cost, out_of_basis, pi_col, pi_row, t, count, value, at);
  best = value;
  return at;
}

#endif

}  // namespace

KOTML_SIMD_DISPATCH_TO(std::int32_t, price_segment_host,
                       (const double* cost, const std::int8_t* out_of_basis, const double* pi_col, double pi_row,
                        std::int32_t count, double& best),
                       (cost, out_of_basis, pi_col, pi_row, count, best), price_x86_64_v4, price_x86_64_v3,
                       price_baseline)

}  // namespace kotml::ot::detail

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
// the rest of the loop. So each level has its own widening load and width (8
// lanes for x86-64-v4, 4 for x86-64-v3) around one kernel body
// (KOTML_PRICE_LANES); the baseline level runs the plain loop, which GCC
// compiles better than 128-bit vectors of this code.

#include "simplex_pricing.hpp"

#include <cstring>

#include "kotml/core/simd_levels.hpp"

#if KOTML_SIMD_HAS_LEVELS
#include <immintrin.h>
#endif

namespace kotml::ot::detail {
namespace {

std::int32_t price_baseline(const double* cost, const std::int8_t* out_of_basis, const double* pi_col,
                            double pi_row, std::int32_t count, double& best) {
  return price_from(cost, out_of_basis, pi_col, pi_row, 0, count, best, -1);
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
using Doubles4 = double __attribute__((vector_size(32)));
using Offsets4 = std::int64_t __attribute__((vector_size(32)));
using Unsigned4 = std::uint64_t __attribute__((vector_size(32)));

/// The states of 8 (4) arcs as 64-bit lanes, one sign-extending load.
__attribute__((target("arch=x86-64-v4"), always_inline)) inline Offsets8 widen_x86_64_v4(const std::int8_t* states) {
  return reinterpret_cast<Offsets8>(
      _mm512_maskz_cvtepi8_epi64(0xFF, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(states))));
}
__attribute__((target("arch=x86-64-v3"), always_inline)) inline Offsets4 widen_x86_64_v3(const std::int8_t* states) {
  std::int32_t bytes;
  std::memcpy(&bytes, states, sizeof bytes);
  return reinterpret_cast<Offsets4>(_mm256_cvtepi8_epi64(_mm_cvtsi32_si128(bytes)));
}

// The scan of one level, written once for both (a macro: GCC will not inline a
// target-specific intrinsic into a generic template, and a generic template of
// 64-byte vectors is lowered to narrower ones before it is inlined):
//  * step_LEVEL: one vector of arcs from t into one accumulator;
//  * fold_LEVEL: the accumulators into the first, lane by lane, the smaller value,
//    ties to the smaller offset (−1, nothing found, is the largest as unsigned;
//    such a lane still holds the starting best, which a found value is below);
//  * price_LEVEL: accumulators over whole vectors, the fold, the lane merge and
//    the scalar tail.
#define KOTML_PRICE_LANES(LEVEL, TARGET, WIDTH, DOUBLES, OFFSETS, UNSIGNED, ...)                                  \
  __attribute__((target(TARGET), always_inline)) inline void step_##LEVEL(                                      \
      const double* __restrict cost, const std::int8_t* __restrict out_of_basis, const double* __restrict pi_col, \
      double pi_row, std::int32_t t, const OFFSETS& offset, DOUBLES& lane_best, OFFSETS& lane_at) {               \
    DOUBLES c, p;                                                                                                 \
    std::memcpy(&c, cost + t, sizeof c);                                                                          \
    std::memcpy(&p, pi_col + t, sizeof p);                                                                        \
    const OFFSETS out = widen_##LEVEL(out_of_basis + t);                                                          \
    const DOUBLES reduced = c + pi_row - p;                                                                       \
    const OFFSETS lower = (reduced < lane_best) & (out != 0);                                                     \
    lane_best = lower ? reduced : lane_best;                                                                      \
    lane_at = lower ? offset : lane_at;                                                                           \
  }                                                                                                               \
                                                                                                                  \
  __attribute__((target(TARGET), always_inline)) inline void fold_##LEVEL(DOUBLES* lane_best, OFFSETS* lane_at) { \
    for (int k = 1; k < accumulators; ++k) {                                                                      \
      const UNSIGNED at_k = reinterpret_cast<UNSIGNED>(lane_at[k]), at_0 = reinterpret_cast<UNSIGNED>(lane_at[0]); \
      const OFFSETS take = (lane_best[k] < lane_best[0]) | ((lane_best[k] == lane_best[0]) & (at_k < at_0));      \
      lane_best[0] = take ? lane_best[k] : lane_best[0];                                                          \
      lane_at[0] = take ? lane_at[k] : lane_at[0];                                                                \
    }                                                                                                             \
  }                                                                                                               \
                                                                                                                  \
  __attribute__((target(TARGET))) std::int32_t price_##LEVEL(                                                   \
      const double* __restrict cost, const std::int8_t* __restrict out_of_basis, const double* __restrict pi_col, \
      double pi_row, std::int32_t count, double& best) {                                                          \
    constexpr int width = WIDTH;                                                                                  \
    DOUBLES lane_best[accumulators];                                                                              \
    OFFSETS lane_at[accumulators];                                                                                \
    OFFSETS offset[accumulators];                                                                                 \
    for (int k = 0; k < accumulators; ++k) {                                                                      \
      lane_best[k] = DOUBLES{} + best;                                                                            \
      lane_at[k] = OFFSETS{} - 1;                                                                                 \
      offset[k] = OFFSETS{__VA_ARGS__} + width * k;                                                               \
    }                                                                                                             \
    std::int32_t t = 0;                                                                                           \
    for (; t + width * accumulators <= count; t += width * accumulators)                                          \
      for (int k = 0; k < accumulators; ++k) {                                                                    \
        step_##LEVEL(cost, out_of_basis, pi_col, pi_row, t + width * k, offset[k], lane_best[k], lane_at[k]);     \
        offset[k] += width * accumulators;                                                                        \
      }                                                                                                           \
    for (; t + width <= count; t += width) {                                                                      \
      step_##LEVEL(cost, out_of_basis, pi_col, pi_row, t, offset[0], lane_best[0], lane_at[0]);                   \
      offset[0] += width;                                                                                         \
    }                                                                                                             \
    fold_##LEVEL(lane_best, lane_at);                                                                             \
    double values[width];                                                                                         \
    std::int64_t offsets[width];                                                                                  \
    std::memcpy(values, &lane_best[0], sizeof values);                                                            \
    std::memcpy(offsets, &lane_at[0], sizeof offsets);                                                            \
    double value = best;                                                                                          \
    std::int32_t at = merge_lanes(values, offsets, width, value);                                                 \
    at = price_from(cost, out_of_basis, pi_col, pi_row, t, count, value, at);                               \
    best = value;                                                                                                 \
    return at;                                                                                                    \
  }

KOTML_PRICE_LANES(x86_64_v4, "arch=x86-64-v4", 8, Doubles8, Offsets8, Unsigned8, 0, 1, 2, 3, 4, 5, 6, 7)
KOTML_PRICE_LANES(x86_64_v3, "arch=x86-64-v3", 4, Doubles4, Offsets4, Unsigned4, 0, 1, 2, 3)

#undef KOTML_PRICE_LANES

#endif

}  // namespace

KOTML_SIMD_DISPATCH_TO(std::int32_t, price_segment_host,
                       (const double* cost, const std::int8_t* out_of_basis, const double* pi_col, double pi_row,
                        std::int32_t count, double& best),
                       (cost, out_of_basis, pi_col, pi_row, count, best), price_x86_64_v4, price_x86_64_v3,
                       price_baseline)

}  // namespace kotml::ot::detail

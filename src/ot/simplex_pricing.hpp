#pragma once
// The network simplex's pricing scan over one row segment of arcs: the most
// negative reduced cost c_ij + pi_i − pi_j among the arcs out of the basis. It
// is most of the time of a warm EMD re-solve (near the optimum every pivot scans
// many blocks), so on host backends it runs in SIMD registers
// (price_segment_host, in simplex_pricing.cpp, built for several x86 SIMD
// levels); GPU threads keep the portable loop.
//
// Both give the same answer as the plain loop "if (r < best) take it": the
// first arc, in column order, of the smallest reduced cost below `best`.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"

namespace kotml::ot::detail {

/// The plain scan from offset `first` on, keeping `at` unless an arc below
/// `best` is found: GPU threads' scan, the host's baseline level, and the tail
/// of the host vector kernels (which pass their lanes' best and offset in).
KOKKOS_INLINE_FUNCTION std::int32_t price_from(const double* cost, const std::int8_t* out_of_basis,
                                               const double* pi_col, double pi_row, std::int32_t first,
                                               std::int32_t count, double& best, std::int32_t at) {
  for (std::int32_t t = first; t < count; ++t) {
    const double reduced = out_of_basis[t] ? cost[t] + pi_row - pi_col[t] : 0.0;
    if (reduced < best) {
      best = reduced;
      at = t;
    }
  }
  return at;
}

/// Host kernel: see price_segment.
std::int32_t price_segment_host(const double* cost, const std::int8_t* out_of_basis, const double* pi_col,
                                double pi_row, std::int32_t count, double& best);

/// Over count arcs of one row (cost, out_of_basis and pi_col at the row's first
/// arc of the segment): returns the offset of the first arc whose reduced cost
/// is the smallest and below `best`, and lowers `best` to it; −1 (best kept)
/// when there is none.
KOKKOS_INLINE_FUNCTION std::int32_t price_segment(const double* cost, const std::int8_t* out_of_basis,
                                                  const double* pi_col, double pi_row, std::int32_t count,
                                                  double& best) {
#ifdef KOTML_DEVICE_PASS
  return price_from(cost, out_of_basis, pi_col, pi_row, 0, count, best, -1);
#else
  return price_segment_host(cost, out_of_basis, pi_col, pi_row, count, best);
#endif
}

}  // namespace kotml::ot::detail

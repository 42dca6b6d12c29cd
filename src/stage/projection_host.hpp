#pragma once
// The inner block of the projection Z = X Aᵀ on host backends: four rows of X
// (float, as the donor pool stores them) against eight columns of Aᵀ, 32 sums
// in registers, compiled for several x86 SIMD levels (projection_host.cpp). The
// kernel in projection.cpp calls it in its host pass and keeps a portable loop for
// GPUs; both add each sum's terms in feature order, so results do not depend on
// the backend's thread count or on the SIMD level.

#include <cstdint>

namespace kotml::stage::detail {

inline constexpr std::int64_t project_block_rows = 4;
inline constexpr std::int64_t project_block_comps = 8;

/// sums[i·8 + l] = Σ_f a_t[f·ld_a + l] · x_i[f] for the four rows x_i (rows[i]
/// points at row i of X), f = 0 … d−1 in order; a_t holds eight columns.
void project_block_host(const float* const rows[4], const double* a_t, std::int64_t ld_a, std::int64_t d,
                        double sums[32]);

}  // namespace kotml::stage::detail

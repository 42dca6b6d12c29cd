#pragma once
// Host version of sampled GW's momentum update, compiled in gw_simd_host.cpp for
// each x86 SIMD level and run at the active one (kotml/core/simd_levels.hpp). The kernels in gw_kernels.hpp call it in the host pass of
// their bodies and keep the portable loop for device passes; it performs the
// same operations in the same order (eight lanes combined in a fixed tree), so
// results do not depend on the thread or rank count. The Sinkhorn's row and
// column loops are the ot family's (kotml/ot/lse.hpp).

#include <cstdint>

namespace kotml::gw::detail {

/// One row of T ← (1−α)·T + α·exp(u − Λ/ε + v); out = {Σ T, Σ Λ·T, Σ (ΔT)²}.
void momentum_row_host(const double* cost, double* plan, const double* log_v, std::int64_t count, double u,
                       double inv_eps, double alpha, double out[3]);
void momentum_row_host(const float* cost, float* plan, const float* log_v, std::int64_t count, float u,
                       float inv_eps, float alpha, double out[3]);

}  // namespace kotml::gw::detail

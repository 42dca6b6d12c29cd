#pragma once
// Host versions of the inner loops of sampled GW's Sinkhorn and momentum update,
// compiled in gw_simd_host.cpp for several x86 SIMD levels and picked at load
// time (GCC function multiversioning), as the OT Sinkhorn's rows are. The
// kernels in gw_kernels.hpp call them in the host pass of their bodies and keep
// their portable loops for device passes. Each performs the same operations in
// the same order as the portable loop it replaces (eight row lanes combined in a
// fixed tree; column accumulators in row order), so results do not depend on the
// thread or rank count.

#include <cstdint>

namespace kotml::gw::detail {

/// log( Σ_k exp(log_v[k] − cost[k]·inv_eps) + exp(extra) ).
double row_log_sum_exp_host(const double* cost, const double* log_v, std::int64_t count, double inv_eps,
                            double extra);
float row_log_sum_exp_host(const float* cost, const float* log_v, std::int64_t count, float inv_eps,
                           float extra);

/// For rows r0 ≤ i < r1 of a row-major block (leading dimension ld), columns
/// k0 ≤ k0 + c < k0 + width:  top[c] = max(top[c], log_u[i] − cost(i, k0+c)·inv_eps).
void column_max_tile_host(const double* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const double* log_u, double inv_eps,
                          double* top);
void column_max_tile_host(const float* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const float* log_u, float inv_eps, float* top);

/// acc[c] += exp(log_u[i] − cost(i, k0+c)·inv_eps − shift[c]) over the same tile.
void column_sum_tile_host(const double* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const double* log_u, double inv_eps,
                          const double* shift, double* acc);
void column_sum_tile_host(const float* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const float* log_u, float inv_eps,
                          const float* shift, float* acc);

/// One row of T ← (1−α)·T + α·exp(u − Λ/ε + v); out = {Σ T, Σ Λ·T, Σ (ΔT)²}.
void momentum_row_host(const double* cost, double* plan, const double* log_v, std::int64_t count, double u,
                       double inv_eps, double alpha, double out[3]);
void momentum_row_host(const float* cost, float* plan, const float* log_v, std::int64_t count, float u,
                       float inv_eps, float alpha, double out[3]);

}  // namespace kotml::gw::detail

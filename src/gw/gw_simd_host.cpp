// The host clones of sampled GW's inner loops (see gw_simd_host.hpp): the
// portable bodies of gw_kernels.hpp, inlined into functions that GCC compiles
// once per x86 SIMD level and picks by the CPU at load time. The default build
// targets baseline x86-64 (two doubles per vector); these loops are bound by
// the exp polynomial and gain the full vector width.

#include "gw_simd_host.hpp"

#include "gw_kernels.hpp"
#include "kotml/core/simd_clones.hpp"

namespace kotml::gw::detail {

KOTML_SIMD_CLONES
double row_log_sum_exp_host(const double* cost, const double* log_v, std::int64_t count, double inv_eps,
                            double extra) {
  return row_log_sum_exp<double>(cost, log_v, count, inv_eps, extra);
}

KOTML_SIMD_CLONES
float row_log_sum_exp_host(const float* cost, const float* log_v, std::int64_t count, float inv_eps,
                           float extra) {
  return row_log_sum_exp<float>(cost, log_v, count, inv_eps, extra);
}

KOTML_SIMD_CLONES
void column_max_tile_host(const double* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const double* log_u, double inv_eps,
                          double* top) {
  column_max_tile<double>(cost, ld, r0, r1, k0, width, log_u, inv_eps, top);
}

KOTML_SIMD_CLONES
void column_max_tile_host(const float* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const float* log_u, float inv_eps, float* top) {
  column_max_tile<float>(cost, ld, r0, r1, k0, width, log_u, inv_eps, top);
}

KOTML_SIMD_CLONES
void column_sum_tile_host(const double* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const double* log_u, double inv_eps,
                          const double* shift, double* acc) {
  column_sum_tile<double>(cost, ld, r0, r1, k0, width, log_u, inv_eps, shift, acc);
}

KOTML_SIMD_CLONES
void column_sum_tile_host(const float* cost, std::int64_t ld, std::int64_t r0, std::int64_t r1,
                          std::int64_t k0, std::int64_t width, const float* log_u, float inv_eps,
                          const float* shift, float* acc) {
  column_sum_tile<float>(cost, ld, r0, r1, k0, width, log_u, inv_eps, shift, acc);
}

KOTML_SIMD_CLONES
void momentum_row_host(const double* cost, double* plan, const double* log_v, std::int64_t count, double u,
                       double inv_eps, double alpha, double out[3]) {
  momentum_row<double>(cost, plan, log_v, count, u, inv_eps, alpha, out);
}

KOTML_SIMD_CLONES
void momentum_row_host(const float* cost, float* plan, const float* log_v, std::int64_t count, float u,
                       float inv_eps, float alpha, double out[3]) {
  momentum_row<float>(cost, plan, log_v, count, u, inv_eps, alpha, out);
}

}  // namespace kotml::gw::detail

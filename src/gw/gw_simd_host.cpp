// The host copies of sampled GW's momentum update (see gw_simd_host.hpp): the
// portable body of gw_kernels.hpp, inlined into one function per x86 SIMD
// level (kotml/core/simd_levels.hpp). The default build
// targets baseline x86-64 (two doubles per vector); the loop is bound by the
// exp polynomial and gains the full vector width.

#include "gw_simd_host.hpp"

#include "gw_kernels.hpp"
#include "kotml/core/simd_levels.hpp"

namespace kotml::gw::detail {

KOTML_SIMD_DISPATCHED(void, momentum_row_host,
                      (const double* cost, double* plan, const double* log_v, std::int64_t count, double u,
                       double inv_eps, double alpha, double out[3]),
                      (cost, plan, log_v, count, u, inv_eps, alpha, out),
                      momentum_row<double>(cost, plan, log_v, count, u, inv_eps, alpha, out))

KOTML_SIMD_DISPATCHED(void, momentum_row_host,
                      (const float* cost, float* plan, const float* log_v, std::int64_t count, float u, float inv_eps,
                       float alpha, double out[3]),
                      (cost, plan, log_v, count, u, inv_eps, alpha, out),
                      momentum_row<float>(cost, plan, log_v, count, u, inv_eps, alpha, out))

}  // namespace kotml::gw::detail

// Host SIMD kernel of the projection's inner block (see projection_host.hpp).

#include "projection_host.hpp"

#include "kotml/core/simd_levels.hpp"

namespace kotml::stage::detail {

namespace {

__attribute__((always_inline)) inline void project_block(const float* const rows[4], const double* a_t,
                                                         std::int64_t ld_a, std::int64_t d, double sums[32]) {
  constexpr int R = 4, C = 8;
  double s[R][C] = {};
  const float* __restrict x0 = rows[0];
  const float* __restrict x1 = rows[1];
  const float* __restrict x2 = rows[2];
  const float* __restrict x3 = rows[3];
  for (std::int64_t f = 0; f < d; ++f) {
    const double* __restrict a = a_t + f * ld_a;
    const double v0 = static_cast<double>(x0[f]), v1 = static_cast<double>(x1[f]);
    const double v2 = static_cast<double>(x2[f]), v3 = static_cast<double>(x3[f]);
    for (int l = 0; l < C; ++l) {
      s[0][l] += a[l] * v0;
      s[1][l] += a[l] * v1;
      s[2][l] += a[l] * v2;
      s[3][l] += a[l] * v3;
    }
  }
  for (int i = 0; i < R; ++i)
    for (int l = 0; l < C; ++l) sums[i * C + l] = s[i][l];
}

}  // namespace

KOTML_SIMD_DISPATCHED(void, project_block_host,
                      (const float* const rows[4], const double* a_t, std::int64_t ld_a, std::int64_t d,
                       double sums[32]),
                      (rows, a_t, ld_a, d, sums), project_block(rows, a_t, ld_a, d, sums))

}  // namespace kotml::stage::detail

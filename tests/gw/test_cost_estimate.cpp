// The sampled cost estimate: TorchGW's +inf fix and per-block scaling, then
// Λ = (1/M) Σ_m (D_X(i,m) − D_Y(k,m))², checked against that formula on the host.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kotml/gw/cost_estimate.hpp"

using namespace kotml;
using namespace kotml::gw;

namespace {

DistanceBlock block_from(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  DistanceBlock d("raw", rows, cols);
  auto h = Kokkos::create_mirror_view(d);
  for (std::int64_t f = 0; f < rows * cols; ++f) h.data()[f] = v[f];
  Kokkos::deep_copy(d, h);
  return d;
}

/// TorchGW's rule, in float32: inf → 1.5·max finite (1 if none), then / max.
std::vector<float> torchgw_normalised(std::vector<float> v) {
  const float inf = std::numeric_limits<float>::infinity();
  float top = -inf;
  bool any_inf = false;
  for (float x : v) {
    if (std::isinf(x)) any_inf = true;
    else top = std::max(top, x);
  }
  if (any_inf) {
    const float fill = top > -inf ? top * 1.5f : 1.0f;
    for (float& x : v) if (std::isinf(x)) x = fill;
  }
  float mx = -inf;
  for (float x : v) mx = std::max(mx, x);
  if (mx > 0) for (float& x : v) x = x / mx;
  return v;
}

template <class S>
void check(bool with_infinities, double tol) {
  const std::int64_t n = 37, k = 45, m = 13;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 3.0f);
  std::vector<float> dx(n * m), dy(k * m);
  for (auto& x : dx) x = u(rng);
  for (auto& x : dy) x = u(rng);
  if (with_infinities) {
    dx[5] = dx[100] = std::numeric_limits<float>::infinity();
    dy[7] = std::numeric_limits<float>::infinity();
  }
  dist::Comm comm;
  CostEstimate<S> estimate(n, k, m, comm);
  Matrix<S> lambda("lambda", n, k);
  const double top = estimate.build(block_from(dx, n, m), block_from(dy, k, m), lambda, comm);
  const auto nx = torchgw_normalised(dx), ny = torchgw_normalised(dy);
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), lambda);
  double ref_top = -1;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      double s = 0;
      for (std::int64_t t = 0; t < m; ++t) {
        const double d = static_cast<double>(nx[i * m + t]) - static_cast<double>(ny[j * m + t]);
        s += d * d;
      }
      s /= static_cast<double>(m);
      ref_top = std::max(ref_top, s);
      EXPECT_NEAR(h(i, j), s, tol) << i << "," << j;
    }
  EXPECT_NEAR(top, ref_top, tol);
}

}  // namespace

TEST(CostEstimate, MatchesTheSquaredDifferenceFormula) { check<double>(false, 1e-12); }
TEST(CostEstimate, InfinitiesBecomeOneAndAHalfTimesTheMaximum) { check<double>(true, 1e-12); }
TEST(CostEstimate, Float32) { check<float>(true, 2e-6); }

TEST(CostEstimate, AllInfiniteBlockBecomesOnes) {
  const std::int64_t n = 3, k = 2, m = 2;
  const float inf = std::numeric_limits<float>::infinity();
  dist::Comm comm;
  CostEstimate<double> estimate(n, k, m, comm);
  Matrix<double> lambda("lambda", n, k);
  estimate.build(block_from(std::vector<float>(n * m, inf), n, m),
                 block_from({0.0f, 2.0f, 1.0f, 1.0f}, k, m), lambda, comm);
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), lambda);
  // D_X = 1 everywhere; D_Y rows (0, 1) and (0.5, 0.5).
  EXPECT_DOUBLE_EQ(h(0, 0), 0.5 * (1.0 + 0.0));
  EXPECT_DOUBLE_EQ(h(2, 1), 0.25);
}

// Anchor pairs are drawn from T/ΣT, reproducibly.

#include <gtest/gtest.h>

#include <cmath>

#include "kotml/gw/anchor_sampling.hpp"

using namespace kotml;
using namespace kotml::gw;

namespace {

Matrix<double> small_plan(std::vector<double>& row_mass) {
  // Rows 0..3 with masses 0.1, 0, 0.3, 0.6; row 2 splits 1:2 over columns 1, 4.
  const double t[4][5] = {{0.05, 0, 0.05, 0, 0}, {0, 0, 0, 0, 0}, {0, 0.1, 0, 0, 0.2}, {0.6, 0, 0, 0, 0}};
  Matrix<double> plan("plan", 4, 5);
  auto h = Kokkos::create_mirror_view(plan);
  row_mass.assign(4, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 5; ++k) {
      h(i, k) = t[i][k];
      row_mass[i] += t[i][k];
    }
  Kokkos::deep_copy(plan, h);
  return plan;
}

}  // namespace

TEST(AnchorSampling, FrequenciesFollowThePlan) {
  dist::Comm comm;
  std::vector<double> mass;
  const auto plan = small_plan(mass);
  const std::int64_t m = 200;
  AnchorSampler<double> sampler(4, m, comm);
  double counts[4][5] = {};
  const int iterations = 100;
  for (int t = 0; t < iterations; ++t) {
    const auto pairs = sampler.draw(plan, 0, mass, 42, t);
    for (std::int64_t d = 0; d < m; ++d) counts[pairs.source[d]][pairs.target[d]] += 1;
  }
  const double draws = m * iterations;
  const double expected[4][5] = {{0.05, 0, 0.05, 0, 0}, {0, 0, 0, 0, 0}, {0, 0.1, 0, 0, 0.2}, {0.6, 0, 0, 0, 0}};
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 5; ++k) {
      const double pij = expected[i][k];
      const double sd = std::sqrt(pij * (1 - pij) / draws);
      if (pij == 0) EXPECT_EQ(counts[i][k], 0) << i << "," << k;
      else EXPECT_NEAR(counts[i][k] / draws, pij, 5 * sd) << i << "," << k;
    }
}

TEST(AnchorSampling, SameSeedAndIterationSameDraws) {
  dist::Comm comm;
  std::vector<double> mass;
  const auto plan = small_plan(mass);
  AnchorSampler<double> a(4, 50, comm), b(4, 50, comm);
  const auto x = a.draw(plan, 0, mass, 7, 3), y = b.draw(plan, 0, mass, 7, 3);
  EXPECT_EQ(x.source, y.source);
  EXPECT_EQ(x.target, y.target);
  const auto z = a.draw(plan, 0, mass, 7, 4), w = a.draw(plan, 0, mass, 8, 3);
  EXPECT_NE(x.source, z.source);
  EXPECT_NE(x.source, w.source);
}

TEST(AnchorSampling, EmptyPlanDrawsUniformly) {
  dist::Comm comm;
  Matrix<double> plan("zero", 3, 4);
  const std::vector<double> mass(3, 0.0);
  AnchorSampler<double> sampler(3, 3000, comm);
  const auto pairs = sampler.draw(plan, 0, mass, 1, 0);
  int rows[3] = {}, cols[4] = {};
  for (std::size_t d = 0; d < pairs.source.size(); ++d) {
    ++rows[pairs.source[d]];
    ++cols[pairs.target[d]];
  }
  for (int r : rows) EXPECT_NEAR(r, 1000, 150);
  for (int c : cols) EXPECT_NEAR(c, 750, 150);
}

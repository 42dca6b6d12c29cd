// Ground costs: the direct and the GEMM forms against a host reference, exact
// zeros for identical points, and the projection X Aᵀ.

#include <gtest/gtest.h>

#include <cmath>

#include "kotml/core/error.hpp"
#include "kotml/ot/cost.hpp"
#include "ot_test_support.hpp"

namespace kotml::ot {
namespace {

using test::device_matrix;
using test::normal_points;

HostMatrix<double> reference(Cost kind, const std::vector<double>& x, const std::vector<double>& y,
                             std::int64_t n, std::int64_t m, int d) {
  HostMatrix<double> C("ref", n, m);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      const double* xi = &x[static_cast<std::size_t>(i * d)];
      const double* yj = &y[static_cast<std::size_t>(j * d)];
      C(i, j) = ground_cost<double>(kind, xi, yj, d, row_norm<double>(xi, d), row_norm<double>(yj, d));
    }
  return C;
}

void check_cost(Cost kind, int d, double rel_tol) {
  const std::int64_t n = 37, m = 29;
  auto x = normal_points(n, d, 1);
  auto y = normal_points(m, d, 2);
  // Rows 0..4 of y repeat rows 0..4 of x: their costs must be exactly zero.
  for (std::int64_t i = 0; i < 5; ++i)
    for (int k = 0; k < d; ++k) y[static_cast<std::size_t>(i * d + k)] = x[static_cast<std::size_t>(i * d + k)];
  // A near-duplicate: cancellation in the GEMM form would show here.
  y[static_cast<std::size_t>(5 * d)] = x[static_cast<std::size_t>(5 * d)] + 1e-7;
  for (int k = 1; k < d; ++k) y[static_cast<std::size_t>(5 * d + k)] = x[static_cast<std::size_t>(5 * d + k)];
  auto X = device_matrix<double>(x, n, d);
  auto Y = device_matrix<double>(y, m, d);
  Matrix<double> C("C", n, m);
  cost_matrix<double>(kind, X, Y, C);
  auto got = test::to_host(C);
  auto want = reference(kind, x, y, n, m, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      if (kind == Cost::cosine)
        EXPECT_NEAR(got(i, j), want(i, j), 1e-14) << i << "," << j;
      else
        EXPECT_LE(std::fabs(got(i, j) - want(i, j)), rel_tol * want(i, j)) << i << "," << j;
    }
  if (kind != Cost::cosine) {
    for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(got(i, i), 0.0);
  }
}

TEST(Cost, DirectFormMatchesReferenceExactly) {
  for (Cost kind : {Cost::euclidean, Cost::sqeuclidean, Cost::cosine}) check_cost(kind, 5, 0.0);
}

TEST(Cost, GemmFormKeepsNearAndIdenticalPointsExact) {
  for (Cost kind : {Cost::euclidean, Cost::sqeuclidean, Cost::cosine}) check_cost(kind, 40, 1e-12);
}

TEST(Cost, FloatGemmForm) {
  const std::int64_t n = 20, m = 24;
  const int d = 32;
  auto x = normal_points(n, d, 3);
  auto y = normal_points(m, d, 4);
  for (int k = 0; k < d; ++k) y[static_cast<std::size_t>(k)] = x[static_cast<std::size_t>(k)];
  auto X = device_matrix<float>(x, n, d);
  auto Y = device_matrix<float>(y, m, d);
  Matrix<float> C("C", n, m);
  cost_matrix<float>(Cost::sqeuclidean, X, Y, C);
  auto got = test::to_host(C);
  auto want = reference(Cost::sqeuclidean, x, y, n, m, d);
  EXPECT_EQ(got(0, 0), 0.0f);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) EXPECT_NEAR(got(i, j), want(i, j), 1e-5 * (1 + want(i, j)));
}

TEST(Cost, ParseNamesAndRejectOthers) {
  EXPECT_EQ(parse_cost("euclidean"), Cost::euclidean);
  EXPECT_EQ(parse_cost("sqeuclidean"), Cost::sqeuclidean);
  EXPECT_EQ(parse_cost("cosine"), Cost::cosine);
  EXPECT_THROW(parse_cost("manhattan"), Error);
  EXPECT_STREQ(cost_name(Cost::sqeuclidean), "sqeuclidean");
}

TEST(Cost, CosineOfZeroVectorIsOne) {
  const double zero[3] = {0, 0, 0}, v[3] = {1, 2, 3};
  EXPECT_EQ((ground_cost<double>(Cost::cosine, zero, v, 3, 0.0, row_norm<double>(v, 3))), 1.0);
}

TEST(Cost, MismatchedDimensionsAreAnError) {
  Matrix<double> X("X", 3, 2), Y("Y", 4, 3), C("C", 3, 4);
  EXPECT_THROW(cost_matrix<double>(Cost::euclidean, X, Y, C), Error);
}

TEST(Cost, ProjectionIsXTimesATransposed) {
  const std::int64_t n = 11;
  const int d = 7, k = 3;
  auto x = normal_points(n, d, 5);
  auto a = normal_points(k, d, 6);
  auto X = device_matrix<float>(x, n, d);
  auto A = device_matrix<double>(a, k, d);
  Matrix<float> Z("Z", n, k);
  project<float>(X, A, Z);
  auto z = test::to_host(Z);
  for (std::int64_t i = 0; i < n; ++i)
    for (int r = 0; r < k; ++r) {
      double s = 0;
      for (int c = 0; c < d; ++c)
        s += a[static_cast<std::size_t>(r * d + c)] * static_cast<double>(static_cast<float>(x[static_cast<std::size_t>(i * d + c)]));
      EXPECT_EQ(z(i, r), static_cast<float>(s));
    }
}

}  // namespace
}  // namespace kotml::ot

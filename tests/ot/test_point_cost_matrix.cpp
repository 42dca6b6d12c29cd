// ot::PointCostMatrix: dense point costs from the tiled Sinkhorn's kernels are
// OTT's formulas (point_cost_reference), the largest entry comes back, and a
// row's bits do not depend on which other rows are computed with it, nor on
// which side the kernels pack (what sampled GW relies on to give the same Λ on
// any rank count).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kotml/ot/point_cost.hpp"

namespace kotml::ot {
namespace {

template <class T>
Matrix<T> device_matrix(const std::vector<double>& values, std::int64_t rows, std::int64_t cols) {
  Matrix<T> m("points", rows, cols);
  auto h = Kokkos::create_mirror_view(m);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t k = 0; k < cols; ++k) h(i, k) = static_cast<T>(values[static_cast<std::size_t>(i * cols + k)]);
  Kokkos::deep_copy(m, h);
  return m;
}

std::vector<double> random_values(std::int64_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 2.0);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = u(rng);
  return v;
}

template <class T>
Vector<T> norms_of(Cost kind, Matrix<const T> points) {
  Vector<T> out("norms", points.extent(0));
  cost_norms<T>(kind, points, out);
  return out;
}

// 150 rows (two full row tiles and a part) of 37 coordinates.
constexpr std::int64_t n = 150, dim = 37;

// m = 300 columns (a full column tile and a part): x is the smaller side and
// is packed; m = 100: y is.
template <class T>
void check_formulas(Cost kind, std::int64_t m, double tolerance) {
  const auto xv = random_values(n * dim, 1), yv = random_values(m * dim, 2);
  const Matrix<T> x = device_matrix<T>(xv, n, dim), y = device_matrix<T>(yv, m, dim);
  PointCost cost;
  cost.kind = kind;
  cost.feature_weight = 0.7;
  PointCostMatrix<T> costs(cost, m, static_cast<int>(dim), false);
  Matrix<T> out("out", n, m);
  const double top = costs.compute(x, norms_of<T>(kind, x), y, norms_of<T>(kind, y), out);
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), out);
  auto xh = Kokkos::create_mirror_view_and_copy(HostSpace(), x);
  auto yh = Kokkos::create_mirror_view_and_copy(HostSpace(), y);
  double worst = 0, largest = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      std::vector<double> xi(dim), yj(dim);
      for (std::int64_t k = 0; k < dim; ++k) xi[k] = xh(i, k), yj[k] = yh(j, k);
      const double want = point_cost_reference(cost, xi.data(), yj.data(), static_cast<int>(dim));
      worst = std::max(worst, std::fabs(static_cast<double>(h(i, j)) - want) / std::max(1.0, std::fabs(want)));
      largest = std::max(largest, static_cast<double>(h(i, j)));
    }
  EXPECT_LT(worst, tolerance) << cost_name(kind) << " m " << m;
  EXPECT_EQ(top, largest) << cost_name(kind) << " m " << m;
}

TEST(PointCostMatrix, EntriesAreOttsFormulas) {
  for (Cost kind : {Cost::sqeuclidean, Cost::euclidean, Cost::cosine})
    for (std::int64_t m : {100, 300}) {
      check_formulas<double>(kind, m, 1e-13);
      check_formulas<float>(kind, m, 1e-4);
    }
}

// With m = 100 the whole x packs y, and the 40-row and 1-row blocks pack
// themselves; with m = 300 every block packs itself.
template <class T>
void check_rows_alone(Cost kind, std::int64_t m) {
  const auto xv = random_values(n * dim, 3), yv = random_values(m * dim, 4);
  const Matrix<T> x = device_matrix<T>(xv, n, dim), y = device_matrix<T>(yv, m, dim);
  PointCost cost;
  cost.kind = kind;
  cost.feature_weight = 1.0 / static_cast<double>(dim);
  PointCostMatrix<T> costs(cost, m, static_cast<int>(dim), false);
  const auto y_norm = norms_of<T>(cost.kind, y);
  Matrix<T> whole("whole", n, m);
  costs.compute(x, norms_of<T>(cost.kind, x), y, y_norm, whole);
  auto wh = Kokkos::create_mirror_view_and_copy(HostSpace(), whole);
  // Blocks that start inside a 64-row tile of the whole, as a rank's 16-row
  // tiles do, and a single row.
  for (const auto& [begin, end] : {std::make_pair(17, 150), std::make_pair(5, 40), std::make_pair(64, 65)}) {
    const auto rows = std::make_pair(std::int64_t(begin), std::int64_t(end));
    const Matrix<T> part = Kokkos::subview(x, rows, Kokkos::ALL());
    Matrix<T> out("part", end - begin, m);
    costs.compute(part, norms_of<T>(cost.kind, part), y, y_norm, out);
    auto ph = Kokkos::create_mirror_view_and_copy(HostSpace(), out);
    std::int64_t differing = 0;
    for (std::int64_t i = begin; i < end; ++i)
      for (std::int64_t j = 0; j < m; ++j) differing += std::memcmp(&ph(i - begin, j), &wh(i, j), sizeof(T)) != 0;
    EXPECT_EQ(differing, 0) << cost_name(kind) << ": rows " << begin << " to " << end << " of " << m;
  }
  Matrix<T> none("none", 0, m);
  EXPECT_EQ(costs.compute(Kokkos::subview(x, std::make_pair(0, 0), Kokkos::ALL()), Vector<T>("no norms", 0), y,
                          y_norm, none),
            -std::numeric_limits<double>::infinity());
}

TEST(PointCostMatrix, ARowsBitsDoNotDependOnTheRowsBesideIt) {
  for (Cost kind : {Cost::sqeuclidean, Cost::euclidean, Cost::cosine})
    for (std::int64_t m : {100, 300}) {
      check_rows_alone<float>(kind, m);
      check_rows_alone<double>(kind, m);
    }
}

}  // namespace
}  // namespace kotml::ot

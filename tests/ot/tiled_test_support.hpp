#pragma once
// Builders for the tiled Sinkhorn tests: host point sets, their device views
// for one rank's block of rows, and the dense plan from potentials.

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"

namespace kotml::ot::test {

/// A host point set: n points of dim coordinates (row-major), weights, labels.
struct HostCloud {
  std::int64_t n = 0;
  int dim = 0;
  std::vector<double> points, weights;
  std::vector<std::int32_t> labels;
};

/// Gaussian blobs around `labels` centres, weights in [0.5, 1.5], normalised.
inline HostCloud random_cloud(std::int64_t n, int dim, std::uint64_t seed, int labels = 3, double spread = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  std::vector<double> centres(static_cast<std::size_t>(labels * dim));
  for (auto& c : centres) c = 2.0 * normal(gen);
  HostCloud c;
  c.n = n;
  c.dim = dim;
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const int l = static_cast<int>(i % labels);
    c.labels.push_back(l);
    for (int k = 0; k < dim; ++k)
      c.points.push_back(centres[static_cast<std::size_t>(l * dim + k)] + spread * normal(gen));
    c.weights.push_back(uniform(gen));
    total += c.weights.back();
  }
  for (auto& w : c.weights) w /= total;
  return c;
}

/// Device views of rows [begin, begin + count) of a cloud, in precision T.
template <class T>
struct DevicePoints {
  Matrix<T> points;
  Vector<double> weights;
  Kokkos::View<std::int32_t*, MemSpace> labels;

  DevicePoints(const HostCloud& c, std::int64_t begin, std::int64_t count)
      : points("test::points", count, c.dim), weights("test::weights", count), labels("test::labels", count) {
    auto p = Kokkos::create_mirror_view(points);
    auto w = Kokkos::create_mirror_view(weights);
    auto l = Kokkos::create_mirror_view(labels);
    for (std::int64_t i = 0; i < count; ++i) {
      for (int k = 0; k < c.dim; ++k) p(i, k) = static_cast<T>(c.points[static_cast<std::size_t>((begin + i) * c.dim + k)]);
      w(i) = c.weights[static_cast<std::size_t>(begin + i)];
      l(i) = c.labels[static_cast<std::size_t>(begin + i)];
    }
    Kokkos::deep_copy(points, p);
    Kokkos::deep_copy(weights, w);
    Kokkos::deep_copy(labels, l);
  }
  explicit DevicePoints(const HostCloud& c) : DevicePoints(c, 0, c.n) {}

  TiledPoints<T> view() const { return {points, weights, labels}; }
};

/// A label table for `rows` × `cols` labels with entries in [0, 1].
inline LabelCost label_table(int rows, int cols, double weight) {
  LabelCost label;
  label.row_labels = rows;
  label.col_labels = cols;
  label.weight = weight;
  for (int p = 0; p < rows; ++p)
    for (int q = 0; q < cols; ++q) label.table.push_back(p == q ? 0.0 : 0.3 + 0.2 * ((p + 2 * q) % 4));
  return label;
}

/// T_ij = exp((f_i + g_j − c_ij)/ε) from the reference costs (double), n × m.
inline std::vector<double> plan_from_potentials(const PointCost& cost, const HostCloud& x, const HostCloud& y,
                                                const std::vector<double>& f, const std::vector<double>& g,
                                                double epsilon) {
  std::vector<double> plan(static_cast<std::size_t>(x.n * y.n));
  for (std::int64_t i = 0; i < x.n; ++i)
    for (std::int64_t j = 0; j < y.n; ++j) {
      const double c = point_cost_reference(cost, &x.points[static_cast<std::size_t>(i * x.dim)],
                                            &y.points[static_cast<std::size_t>(j * y.dim)], x.dim,
                                            x.labels[static_cast<std::size_t>(i)], y.labels[static_cast<std::size_t>(j)]);
      plan[static_cast<std::size_t>(i * y.n + j)] =
          std::exp((f[static_cast<std::size_t>(i)] + g[static_cast<std::size_t>(j)] - c) / epsilon);
    }
  return plan;
}

}  // namespace kotml::ot::test

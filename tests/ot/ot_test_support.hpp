#pragma once
// Shared helpers of the ot tests: the POT reference cases (fixtures/pot_reference.json,
// made by fixtures/make_fixtures.py) and small builders of batches and costs.

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/core/random.hpp"
#include "support/cli_runner.hpp"

namespace kotml::ot::test {

struct Case {
  std::string name;
  Cost cost = Cost::euclidean;
  int dim = 0;
  std::vector<double> x, y, a, b;  // x: n×dim, y: m×dim row-major
  std::int64_t n = 0, m = 0;
  double expected_cost = 0;
  // Sinkhorn cases only
  double epsilon = 0;
  double relative = -1;  // < 0: absolute epsilon
  double tau_a = 1, tau_b = 1;
  double expected_objective = 0;
  std::vector<double> row_marginal, col_marginal;
};

inline std::vector<Case> load_cases(const std::string& section) {
  const std::string path = kotml::test::test_source_path("ot/fixtures/pot_reference.json");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  const auto json = nlohmann::json::parse(in);
  std::vector<Case> cases;
  for (const auto& c : json.at(section)) {
    Case k;
    k.name = c.at("name").get<std::string>();
    k.cost = parse_cost(c.at("cost").get<std::string>());
    const auto x = c.at("x").get<std::vector<std::vector<double>>>();
    const auto y = c.at("y").get<std::vector<std::vector<double>>>();
    k.n = static_cast<std::int64_t>(x.size());
    k.m = static_cast<std::int64_t>(y.size());
    k.dim = static_cast<int>(x.at(0).size());
    for (const auto& row : x) k.x.insert(k.x.end(), row.begin(), row.end());
    for (const auto& row : y) k.y.insert(k.y.end(), row.begin(), row.end());
    k.a = c.at("a").get<std::vector<double>>();
    k.b = c.at("b").get<std::vector<double>>();
    k.expected_cost = c.at("expected_cost").get<double>();
    if (c.contains("epsilon")) {
      k.epsilon = c.at("epsilon").get<double>();
      if (!c.at("relative").is_null()) k.relative = c.at("relative").get<double>();
      k.tau_a = c.at("tau_a").get<double>();
      k.tau_b = c.at("tau_b").get<double>();
      k.expected_objective = c.at("expected_objective").get<double>();
      k.row_marginal = c.at("expected_row_marginal").get<std::vector<double>>();
      k.col_marginal = c.at("expected_col_marginal").get<std::vector<double>>();
    }
    cases.push_back(std::move(k));
  }
  return cases;
}

template <class T>
std::vector<T> cast_to(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

/// Cloud 0 = x (weights a), cloud 1 = y (weights b); the one pair 0 → 1.
template <class T>
CloudBatch<T> batch_of(const Case& c) {
  return make_cloud_batch<T>({cast_to<T>(c.x), cast_to<T>(c.y)}, c.dim, {c.a, c.b});
}

/// The dense cost of a case, computed on the host directly from the points.
inline HostMatrix<double> host_cost(const Case& c) {
  HostMatrix<double> C("cost", c.n, c.m);
  for (std::int64_t i = 0; i < c.n; ++i) {
    const double* x = &c.x[static_cast<std::size_t>(i * c.dim)];
    const double nx = row_norm<double>(x, c.dim);
    for (std::int64_t j = 0; j < c.m; ++j) {
      const double* y = &c.y[static_cast<std::size_t>(j * c.dim)];
      C(i, j) = ground_cost<double>(c.cost, x, y, c.dim, nx, row_norm<double>(y, c.dim));
    }
  }
  return C;
}

/// Random normal points (n×dim) from a test stream.
inline std::vector<double> normal_points(std::int64_t n, int dim, std::uint64_t index, double shift = 0) {
  random::Stream s(1234, random::Purpose::test_data, index);
  std::vector<double> v(static_cast<std::size_t>(n * dim));
  for (auto& x : v) x = s.normal() + shift;
  return v;
}

inline double relative_error(double value, double expected) {
  return std::fabs(value - expected) / std::max(std::fabs(expected), 1e-300);
}

template <class V>
auto to_host(const V& v) {
  return Kokkos::create_mirror_view_and_copy(HostSpace(), v);
}

template <class T>
Vector<T> device_vector(const std::vector<T>& host, const std::string& label = "v") {
  Vector<T> v(label, host.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < host.size(); ++i) h(i) = host[i];
  Kokkos::deep_copy(v, h);
  return v;
}

template <class T>
Matrix<T> device_matrix(const std::vector<double>& host, std::int64_t rows, std::int64_t cols,
                        const std::string& label = "M") {
  Matrix<T> v(label, rows, cols);
  auto h = Kokkos::create_mirror_view(v);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) h(i, j) = static_cast<T>(host[static_cast<std::size_t>(i * cols + j)]);
  Kokkos::deep_copy(v, h);
  return v;
}

}  // namespace kotml::ot::test

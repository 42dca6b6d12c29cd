#pragma once
// Loads the reference cases written by fixtures/make_fixtures.py.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "support/cli_runner.hpp"

namespace kotml::test {

struct GraphCase {
  std::int64_t n = 0;
  int k = 0;
  std::int64_t dims = 0;
  std::vector<double> points;  // n × dims, row-major
  std::int64_t components_before = 0;
  std::vector<std::int64_t> indptr, indices;
  std::vector<double> data, data_float32;
  std::vector<std::int64_t> landmarks;
  std::vector<double> distances;  // n × n from scipy dijkstra

  Matrix<double> device_points() const {
    Matrix<double> x("test::points", n, dims);
    auto h = Kokkos::create_mirror_view(x);
    for (std::int64_t i = 0; i < n * dims; ++i) h.data()[i] = points[i];
    Kokkos::deep_copy(x, h);
    return x;
  }
};

inline GraphCase load_graph_case(const std::string& name) {
  const std::string base = test_source_path("graph/fixtures/" + name);
  std::ifstream in(base + ".json");
  if (!in) throw std::runtime_error("missing fixture " + base + ".json");
  const auto j = nlohmann::json::parse(in);
  GraphCase c;
  c.n = j.at("n");
  c.k = j.at("k");
  if (!j.at("points").is_null()) {
    for (const auto& row : j.at("points")) {
      c.dims = static_cast<std::int64_t>(row.size());
      for (double v : row) c.points.push_back(v);
    }
  }
  c.components_before = j.at("components_before_bridging");
  c.indptr = j.at("indptr").get<std::vector<std::int64_t>>();
  c.indices = j.at("indices").get<std::vector<std::int64_t>>();
  c.data = j.at("data").get<std::vector<double>>();
  c.data_float32 = j.at("data_float32").get<std::vector<double>>();
  if (j.contains("landmarks")) c.landmarks = j.at("landmarks").get<std::vector<std::int64_t>>();
  std::ifstream bin(base + ".dist.f64", std::ios::binary);
  c.distances.resize(static_cast<std::size_t>(c.n * c.n));
  bin.read(reinterpret_cast<char*>(c.distances.data()),
           static_cast<std::streamsize>(c.distances.size() * sizeof(double)));
  if (!bin) throw std::runtime_error("short fixture " + base + ".dist.f64");
  return c;
}

}  // namespace kotml::test

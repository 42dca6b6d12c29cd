// kNN graphs against torchgw's build_knn_graph (sklearn + scipy), and the
// invariants the graph builders promise.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "fixture.hpp"
#include "kotml/core/error.hpp"
#include "kotml/graph/components.hpp"
#include "kotml/graph/knn_graph.hpp"

using namespace kotml;
using namespace kotml::graph;

namespace {

void expect_graph_equals_reference(const CsrGraph<MemSpace>& g, const test::GraphCase& c) {
  const auto h = copy_graph<HostSpace>(g);
  ASSERT_EQ(g.n, c.n);
  for (std::int64_t i = 0; i <= c.n; ++i) ASSERT_EQ(h.offsets(i), c.indptr[i]) << "row " << i;
  for (std::size_t e = 0; e < c.indices.size(); ++e) {
    ASSERT_EQ(h.neighbors(e), c.indices[e]) << "entry " << e;
    // sklearn's tree search and ours both take sqrt of the summed squares.
    EXPECT_NEAR(h.weights(e), c.data[e], 1e-14 * c.data[e]) << "entry " << e;
    EXPECT_EQ(static_cast<float>(h.weights(e)), static_cast<float>(c.data_float32[e]));
  }
}

}  // namespace

TEST(KnnGraph, SpiralMatchesTorchgw) {
  const auto c = test::load_graph_case("spiral100_k5");
  KnnGraphReport report;
  const auto g = build_knn_graph(c.device_points(), c.k, "spiral", &report);
  EXPECT_EQ(report.components_before_bridging, 1);
  EXPECT_EQ(report.bridges_added, 0);
  expect_graph_equals_reference(g, c);
  EXPECT_TRUE(is_canonical_undirected(g));
}

TEST(KnnGraph, DisconnectedBlobsAreBridgedAsTorchgwDoes) {
  const auto c = test::load_graph_case("blobs80_k3");
  ASSERT_GT(c.components_before, 1);
  KnnGraphReport report;
  const auto g = build_knn_graph(c.device_points(), c.k, "blobs", &report);
  EXPECT_EQ(report.components_before_bridging, c.components_before);
  EXPECT_EQ(report.bridges_added, c.components_before - 1);
  EXPECT_GT(report.longest_bridge, 1.0);  // the blobs are far apart
  expect_graph_equals_reference(g, c);
  EXPECT_EQ(connected_components(g).count, 1);
}

// Coordinates near 1e-300 or 1e150 used to give all-zero or all-inf lengths
// (their squares leave double's range). The blobs case scaled by 2^-1000 and
// 2^+500 must give the same graph with every length scaled by exactly that
// power of two, bridges included.
TEST(KnnGraph, TinyAndHugeCoordinatesGiveTheScaledGraph) {
  const auto c = test::load_graph_case("blobs80_k3");
  const auto reference = copy_graph<HostSpace>(build_knn_graph(c.device_points(), c.k, "blobs"));
  for (const int exponent : {-1000, 500}) {
    const auto points = c.device_points();
    Matrix<double> scaled("scaled", points.extent(0), points.extent(1));
    auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), points);
    auto sh = Kokkos::create_mirror_view(scaled);
    for (std::size_t e = 0; e < h.size(); ++e) sh.data()[e] = std::ldexp(h.data()[e], exponent);
    Kokkos::deep_copy(scaled, sh);
    KnnGraphReport report;
    const auto g = copy_graph<HostSpace>(build_knn_graph(scaled, c.k, "scaled blobs", &report));
    ASSERT_EQ(g.weights.extent(0), reference.weights.extent(0)) << exponent;
    EXPECT_EQ(report.bridges_added, c.components_before - 1);
    for (std::size_t e = 0; e < g.weights.extent(0); ++e) {
      ASSERT_EQ(g.neighbors(e), reference.neighbors(e)) << exponent << " edge " << e;
      ASSERT_EQ(g.weights(e), std::ldexp(reference.weights(e), exponent)) << exponent << " edge " << e;
    }
  }
}

TEST(KnnGraph, NeighboursAreTheKNearestInOrder) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  const std::int64_t n = 300, d = 4;
  const int k = 6;
  Matrix<double> x("x", n, d);
  auto xh = Kokkos::create_mirror_view(x);
  for (std::int64_t i = 0; i < n * d; ++i) xh.data()[i] = normal(rng);
  Kokkos::deep_copy(x, xh);
  const auto nn = k_nearest_neighbors(x, k);
  auto idx = Kokkos::create_mirror_view_and_copy(HostSpace(), nn.indices);
  auto dist = Kokkos::create_mirror_view_and_copy(HostSpace(), nn.distances);
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<double, std::int64_t>> all;
    for (std::int64_t j = 0; j < n; ++j) {
      if (j == i) continue;
      double s = 0;
      for (std::int64_t c = 0; c < d; ++c) s += (xh(i, c) - xh(j, c)) * (xh(i, c) - xh(j, c));
      all.push_back({std::sqrt(s), j});
    }
    std::sort(all.begin(), all.end());
    for (int t = 0; t < k; ++t) {
      EXPECT_EQ(idx(i, t), all[t].second) << i << "," << t;
      EXPECT_EQ(dist(i, t), all[t].first);
    }
  }
}

TEST(KnnGraph, DuplicatePointsKeepTheirZeroLengthEdge) {
  // Points 0 and 2 coincide: each is the other's nearest neighbour at 0.
  Matrix<double> x("x", 5, 1);
  auto xh = Kokkos::create_mirror_view(x);
  const double coords[5] = {0.0, 1.0, 0.0, 3.0, 7.0};
  for (int i = 0; i < 5; ++i) xh(i, 0) = coords[i];
  Kokkos::deep_copy(x, xh);
  const auto g = copy_graph<HostSpace>(build_knn_graph(x, 1));
  // Row 0: 1 (point 1's nearest, tied with 2, goes to the smaller id) and 2
  // (at distance 0, point 0's own nearest).
  ASSERT_EQ(g.offsets(1) - g.offsets(0), 2);
  EXPECT_EQ(g.neighbors(g.offsets(0)), 1);
  EXPECT_EQ(g.neighbors(g.offsets(0) + 1), 2);
  EXPECT_EQ(g.weights(g.offsets(0) + 1), 0.0);
  EXPECT_EQ(connected_components(copy_graph<MemSpace>(g)).count, 1);
}

TEST(KnnGraph, BadInputIsAnError) {
  Matrix<double> x("x", 4, 2);
  EXPECT_THROW(build_knn_graph(x, 4), Error);   // k ≥ n
  EXPECT_THROW(build_knn_graph(x, 0), Error);   // k < 1
  Matrix<double> empty("empty", 0, 2);
  EXPECT_THROW(build_knn_graph(empty, 1), Error);
  auto xh = Kokkos::create_mirror_view(x);
  xh(2, 1) = std::nan("");
  Kokkos::deep_copy(x, xh);
  try {
    build_knn_graph(x, 2, "cloud.h5");
    ADD_FAILURE() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "cloud.h5");
    EXPECT_EQ(e.element(), "point 2");
  }
}

TEST(Components, LabelsAreSmallestIdsOnLongShuffledPaths) {
  // Three paths over shuffled node ids: the worst case for label propagation
  // (long diameter), which pointer jumping must still finish.
  const std::int64_t n = 3000;
  std::vector<std::int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(3));
  std::vector<NodeId> from, to;
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    if (i == 999 || i == 1999) continue;  // cut into [0,1000), [1000,2000), [2000,3000)
    from.push_back(static_cast<NodeId>(perm[i]));
    to.push_back(static_cast<NodeId>(perm[i + 1]));
  }
  Kokkos::View<NodeId*, MemSpace> f("f", from.size()), t("t", to.size());
  Kokkos::View<double*, MemSpace> w("w", from.size());
  Kokkos::deep_copy(w, 1.0);
  auto fh = Kokkos::create_mirror_view(f);
  auto th = Kokkos::create_mirror_view(t);
  for (std::size_t e = 0; e < from.size(); ++e) {
    fh(e) = from[e];
    th(e) = to[e];
  }
  Kokkos::deep_copy(f, fh);
  Kokkos::deep_copy(t, th);
  const auto g = undirected_graph_from_edges(n, f, t, w);
  EXPECT_TRUE(is_canonical_undirected(g));
  const auto c = connected_components(g);
  EXPECT_EQ(c.count, 3);
  auto label = Kokkos::create_mirror_view_and_copy(HostSpace(), c.label);
  for (int part = 0; part < 3; ++part) {
    const std::int64_t smallest =
        *std::min_element(perm.begin() + part * 1000, perm.begin() + (part + 1) * 1000);
    for (std::int64_t i = part * 1000; i < (part + 1) * 1000; ++i)
      EXPECT_EQ(label(perm[i]), smallest);
  }
}

TEST(CsrGraph, EdgesFromAnyOrderGiveTheSameGraph) {
  // Repeated edges keep the shortest length; self-loops vanish.
  const std::vector<std::array<double, 3>> edges = {
      {0, 1, 2.0}, {1, 0, 1.5}, {2, 3, 1.0}, {3, 3, 9.0}, {1, 2, 4.0}, {3, 1, 0.5}};
  auto build = [&](const std::vector<std::size_t>& order) {
    Kokkos::View<NodeId*, MemSpace> f("f", order.size()), t("t", order.size());
    Kokkos::View<double*, MemSpace> w("w", order.size());
    auto fh = Kokkos::create_mirror_view(f);
    auto th = Kokkos::create_mirror_view(t);
    auto wh = Kokkos::create_mirror_view(w);
    for (std::size_t e = 0; e < order.size(); ++e) {
      fh(e) = static_cast<NodeId>(edges[order[e]][0]);
      th(e) = static_cast<NodeId>(edges[order[e]][1]);
      wh(e) = edges[order[e]][2];
    }
    Kokkos::deep_copy(f, fh);
    Kokkos::deep_copy(t, th);
    Kokkos::deep_copy(w, wh);
    return copy_graph<HostSpace>(undirected_graph_from_edges(4, f, t, w));
  };
  const auto a = build({0, 1, 2, 3, 4, 5});
  const auto b = build({5, 3, 4, 1, 2, 0});
  ASSERT_EQ(a.offsets(4), 8);  // {0,1} {1,2} {1,3} {2,3}, both ways
  for (int e = 0; e < 8; ++e) {
    EXPECT_EQ(a.neighbors(e), b.neighbors(e));
    EXPECT_EQ(a.weights(e), b.weights(e));
  }
  EXPECT_EQ(a.weights(a.offsets(0)), 1.5);  // the shorter of the two 0–1 edges
}

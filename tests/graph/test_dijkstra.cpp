// Shortest paths against scipy.sparse.csgraph.dijkstra and landmarks against
// torchgw's farthest-point sampling, on the committed fixtures.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "fixture.hpp"
#include "kotml/core/error.hpp"
#include "kotml/graph/dijkstra.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/graph/landmarks.hpp"

using namespace kotml;
using namespace kotml::graph;

namespace {

Kokkos::View<NodeId*, MemSpace> node_list(const std::vector<NodeId>& ids) {
  Kokkos::View<NodeId*, MemSpace> v("sources", ids.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < ids.size(); ++i) h(i) = ids[i];
  Kokkos::deep_copy(v, h);
  return v;
}

std::vector<NodeId> all_nodes(std::int64_t n) {
  std::vector<NodeId> ids(n);
  for (std::int64_t i = 0; i < n; ++i) ids[i] = static_cast<NodeId>(i);
  return ids;
}

CsrGraph<MemSpace> reference_graph(const test::GraphCase& c) {
  return graph_from_csr(c.n, c.indptr, c.indices, c.data, "fixture");
}

/// Same value up to the last bits of a double: path sums may differ in the
/// order two equally long routes are found.
void expect_matches_scipy(double ours, double scipy, const std::string& where) {
  if (std::isinf(scipy)) {
    EXPECT_TRUE(std::isinf(ours) && ours > 0) << where;
  } else {
    EXPECT_NEAR(ours, scipy, 4e-16 * std::max(1.0, scipy)) << where;
  }
}

void check_all_pairs(const std::string& name) {
  const auto c = test::load_graph_case(name);
  const auto g = reference_graph(c);
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> d("d", c.n, c.n);
  shortest_paths<double>(g, node_list(all_nodes(c.n)), d);
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), d);
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> f("f", c.n, c.n);
  shortest_paths<float>(g, node_list(all_nodes(c.n)), f);
  auto fh = Kokkos::create_mirror_view_and_copy(HostSpace(), f);
  std::int64_t finite = 0;
  for (std::int64_t i = 0; i < c.n; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      const double ref = c.distances[i * c.n + j];
      expect_matches_scipy(h(i, j), ref, name + " " + std::to_string(i) + "," + std::to_string(j));
      EXPECT_EQ(fh(i, j), static_cast<float>(h(i, j)));  // one rounding of the double sum
      finite += std::isfinite(ref);
    }
  EXPECT_GT(finite, c.n);  // the fixture is not trivial
}

}  // namespace

TEST(Dijkstra, AllPairsMatchScipyOnSpiralKnnGraph) { check_all_pairs("spiral100_k5"); }
TEST(Dijkstra, AllPairsMatchScipyOnBridgedBlobs) { check_all_pairs("blobs80_k3"); }
TEST(Dijkstra, DirectedCsrIsTreatedAsUndirectedLikeScipy) {
  check_all_pairs("random60_directed");  // asymmetric weights, unreachable nodes
}

TEST(Dijkstra, KnnGraphFromPointsGivesScipyGeodesics) {
  // End to end: our graph from the points, then our Dijkstra.
  const auto c = test::load_graph_case("spiral100_k5");
  const auto g = build_knn_graph(c.device_points(), c.k);
  const std::vector<NodeId> sources = {99, 0, 42, 42};  // any order, repeats allowed
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> d("d", sources.size(), c.n);
  shortest_paths<double>(g, node_list(sources), d);
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), d);
  for (std::size_t r = 0; r < sources.size(); ++r)
    for (std::int64_t j = 0; j < c.n; ++j)
      expect_matches_scipy(h(r, j), c.distances[sources[r] * c.n + j], "row " + std::to_string(r));
}

TEST(Dijkstra, HeapPopsInKeyOrderThroughDecreaseKeys) {
  // Random inserts and decrease-keys against a sorted reference.
  const int n = 500;
  std::vector<double> key(n);
  std::vector<NodeId> node(n), pos(n, DijkstraHeap::unseen);
  DijkstraHeap heap(key.data(), node.data(), pos.data());
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  std::vector<double> best(n, 1e300);
  for (int step = 0; step < 3 * n; ++step) {
    const NodeId v = static_cast<NodeId>(rng() % n);
    const double d = u(rng);
    if (d < best[v]) {
      best[v] = d;
      heap.push_or_decrease(v, d);
    }
  }
  std::vector<std::pair<double, NodeId>> expected;
  for (int v = 0; v < n; ++v)
    if (best[v] < 1e300) expected.push_back({best[v], v});
  std::sort(expected.begin(), expected.end());
  for (const auto& [d, v] : expected) {
    ASSERT_FALSE(heap.empty());
    double got = 0;
    const NodeId w = heap.pop(got);
    EXPECT_EQ(got, d);
    EXPECT_EQ(w, v);  // keys are distinct here
    EXPECT_EQ(heap.position(w), DijkstraHeap::settled);
  }
  EXPECT_TRUE(heap.empty());
}

TEST(Landmarks, FarthestPointOrderMatchesTorchgw) {
  for (const std::string name : {"spiral100_k5", "blobs80_k3"}) {
    const auto c = test::load_graph_case(name);
    ASSERT_FALSE(c.landmarks.empty());
    const auto g = reference_graph(c);
    const auto lm = farthest_point_landmarks(g, static_cast<std::int64_t>(c.landmarks.size()));
    ASSERT_EQ(lm.nodes.size(), c.landmarks.size());
    auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), lm.distances);
    for (std::size_t l = 0; l < c.landmarks.size(); ++l) {
      EXPECT_EQ(lm.nodes[l], c.landmarks[l]) << name << " landmark " << l;
      for (std::int64_t v = 0; v < c.n; ++v)
        expect_matches_scipy(h(l, v), c.distances[lm.nodes[l] * c.n + v], name);
    }
  }
}

TEST(Landmarks, NeverMoreThanNodesAndNeverUnreachable) {
  // Two nodes joined, one isolated: FPS must not pick the isolated node (+inf),
  // and asking for more landmarks than nodes gives n.
  const std::vector<std::int64_t> indptr = {0, 1, 2, 2}, indices = {1, 0};
  const std::vector<double> data = {2.0, 2.0};
  const auto g = graph_from_csr(3, indptr, indices, data, "tiny");
  const auto lm = farthest_point_landmarks(g, 10);
  ASSERT_EQ(lm.nodes.size(), 3u);
  EXPECT_EQ(lm.nodes[0], 0);
  EXPECT_EQ(lm.nodes[1], 1);
  EXPECT_NE(lm.nodes[2], 2);  // once 0 and 1 are taken, all finite minima are 0
  EXPECT_THROW(farthest_point_landmarks(g, 0), Error);
}

TEST(GraphFromCsr, RejectsBadArrays) {
  const std::vector<std::int64_t> indptr = {0, 1, 2}, indices = {1, 0};
  EXPECT_THROW(graph_from_csr(2, indptr, indices, {1.0, -1.0}, "g"), Error);
  EXPECT_THROW(graph_from_csr(2, indptr, indices, {1.0, std::nan("")}, "g"), Error);
  EXPECT_THROW(graph_from_csr(2, indptr, {1, 5}, {1.0, 1.0}, "g"), Error);
  EXPECT_THROW(graph_from_csr(2, {0, 2, 1}, indices, {1.0, 1.0}, "g"), Error);
  EXPECT_THROW(graph_from_csr(3, indptr, indices, {1.0, 1.0}, "g"), Error);
  EXPECT_NO_THROW(graph_from_csr(2, indptr, indices, {1.0, 1.0}, "g"));
}

// Shortest paths against scipy.sparse.csgraph.dijkstra and landmarks against
// torchgw's farthest-point sampling, on the committed fixtures.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "fixture.hpp"
#include "kotml/core/error.hpp"
#include "kotml/graph/dijkstra.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/graph/landmarks.hpp"
#include "kotml/graph/node_order.hpp"

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

namespace {

struct HostCsr {
  std::vector<EdgeOffset> offsets;
  std::vector<NodeId> neighbors;
  std::vector<double> weights;
};

HostCsr host_csr(const CsrGraph<MemSpace>& g) {
  const auto o = Kokkos::create_mirror_view_and_copy(HostSpace(), g.offsets);
  const auto nb = Kokkos::create_mirror_view_and_copy(HostSpace(), g.neighbors);
  const auto w = Kokkos::create_mirror_view_and_copy(HostSpace(), g.weights);
  return {std::vector<EdgeOffset>(o.data(), o.data() + o.extent(0)),
          std::vector<NodeId>(nb.data(), nb.data() + nb.extent(0)),
          std::vector<double>(w.data(), w.data() + w.extent(0))};
}

/// A path 0-1-...-(n-1) whose nodes carry shuffled ids, lengths 1 + step/10.
CsrGraph<MemSpace> shuffled_path(std::int64_t n, std::vector<NodeId>& id_of_step) {
  id_of_step.resize(static_cast<std::size_t>(n));
  std::iota(id_of_step.begin(), id_of_step.end(), NodeId(0));
  std::shuffle(id_of_step.begin(), id_of_step.end(), std::mt19937_64(7));
  std::vector<std::vector<std::pair<NodeId, double>>> rows(static_cast<std::size_t>(n));
  for (std::int64_t s = 0; s + 1 < n; ++s) {
    const NodeId a = id_of_step[s], b = id_of_step[s + 1];
    rows[a].push_back({b, 1.0 + 0.1 * s});
    rows[b].push_back({a, 1.0 + 0.1 * s});
  }
  std::vector<std::int64_t> indptr = {0}, indices;
  std::vector<double> data;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    for (const auto& [v, w] : row) {
      indices.push_back(v);
      data.push_back(w);
    }
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  return graph_from_csr(n, indptr, indices, data, "path");
}

/// Shortest paths on the locality-ordered graph are the bits of those on g.
template <class T>
void expect_same_rows(const CsrGraph<MemSpace>& g, const std::vector<NodeId>& sources, const std::string& name) {
  const auto ordered = locality_ordered(g, false);
  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> plain("plain", sources.size(), g.n),
      renamed("renamed", sources.size(), g.n);
  shortest_paths<T>(g, node_list(sources), plain);
  shortest_paths<T>(ordered, node_list(sources), renamed);
  const auto a = Kokkos::create_mirror_view_and_copy(HostSpace(), plain);
  const auto b = Kokkos::create_mirror_view_and_copy(HostSpace(), renamed);
  std::int64_t finite = 0;
  for (std::size_t r = 0; r < sources.size(); ++r)
    for (std::int64_t v = 0; v < g.n; ++v) {
      ASSERT_EQ(a(r, v), b(r, v)) << name << " source " << sources[r] << " node " << v;  // inf == inf too
      finite += std::isfinite(a(r, v)) && a(r, v) > 0;
    }
  EXPECT_GT(finite, g.n) << name;  // not a trivial comparison
}

}  // namespace

TEST(NodeOrder, CuthillMckeeLaysAShuffledPathOutInOrder) {
  std::vector<NodeId> id_of_step;
  const auto g = shuffled_path(60, id_of_step);
  const NodeOrder order = cuthill_mckee_order(g);
  ASSERT_EQ(order.old_of_new.size(), 60u);
  for (NodeId i = 0; i < 60; ++i) EXPECT_EQ(order.new_of_old[order.old_of_new[i]], i);
  // Both ends have one neighbour; the smaller id starts, and the walk is the path.
  const bool forward = id_of_step.front() < id_of_step.back();
  for (std::int64_t s = 0; s < 60; ++s)
    EXPECT_EQ(order.old_of_new[forward ? s : 59 - s], id_of_step[s]) << "step " << s;
  const auto renamed = relabelled(g, order);
  EXPECT_TRUE(is_canonical_undirected(renamed));
  const auto h = host_csr(renamed);
  for (NodeId i = 0; i < 60; ++i)
    for (EdgeOffset e = h.offsets[i]; e < h.offsets[i + 1]; ++e) EXPECT_EQ(std::abs(h.neighbors[e] - i), 1);
}

TEST(NodeOrder, RelabellingKeepsEveryEdgeAndLength) {
  const auto c = test::load_graph_case("random60_directed");  // unreachable nodes, several components
  const auto g = reference_graph(c);
  const NodeOrder order = cuthill_mckee_order(g);
  const auto before = host_csr(g), after = host_csr(relabelled(g, order));
  ASSERT_EQ(before.neighbors.size(), after.neighbors.size());
  for (NodeId i = 0; i < static_cast<NodeId>(c.n); ++i) {
    const NodeId u = order.old_of_new[i];
    std::vector<std::pair<NodeId, double>> expected, got;
    for (EdgeOffset e = before.offsets[u]; e < before.offsets[u + 1]; ++e)
      expected.push_back({order.new_of_old[before.neighbors[e]], before.weights[e]});
    for (EdgeOffset e = after.offsets[i]; e < after.offsets[i + 1]; ++e)
      got.push_back({after.neighbors[e], after.weights[e]});
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(got, expected) << "new node " << i;  // rows come sorted by the new ids
  }
}

TEST(NodeOrder, ShortestPathsGiveTheBitsOfTheGraphBeforeRelabelling) {
  for (const std::string name : {"spiral100_k5", "blobs80_k3", "random60_directed"}) {
    const auto c = test::load_graph_case(name);
    const auto g = reference_graph(c);
    expect_same_rows<double>(g, all_nodes(c.n), name);
    expect_same_rows<float>(g, all_nodes(c.n), name);
  }
  // A larger kNN graph of a noisy 3-D roll in random order, where the order moves
  // most nodes far from their input position.
  const std::int64_t n = 1500;
  Matrix<double> x("roll", n, 3);
  auto h = Kokkos::create_mirror_view(x);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = 4.7 * (1.0 + 2.0 * u(rng));
    h(i, 0) = t * std::cos(t);
    h(i, 1) = 20.0 * u(rng);
    h(i, 2) = t * std::sin(t);
  }
  Kokkos::deep_copy(x, h);
  const auto g = build_knn_graph(x, 6);
  expect_same_rows<double>(g, {0, 1, 777, 1499, 0}, "roll");
  expect_same_rows<float>(g, {5, 900}, "roll");
}

TEST(NodeOrder, LandmarksAndTheirRowsAreTheSameInEitherOrder) {
  // farthest_point_landmarks runs on the ordered graph; its choices are in the
  // caller's ids and match torchgw above. Here: the rows equal plain Dijkstra's.
  const auto c = test::load_graph_case("blobs80_k3");
  const auto g = reference_graph(c);
  const auto lm = farthest_point_landmarks(g, 6);
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> plain("plain", lm.nodes.size(), c.n);
  shortest_paths<double>(g, node_list(lm.nodes), plain);
  const auto a = Kokkos::create_mirror_view_and_copy(HostSpace(), plain);
  const auto b = Kokkos::create_mirror_view_and_copy(HostSpace(), lm.distances);
  for (std::size_t l = 0; l < lm.nodes.size(); ++l)
    for (std::int64_t v = 0; v < c.n; ++v) ASSERT_EQ(a(l, v), b(l, v)) << "landmark " << l << " node " << v;
}

TEST(NodeOrder, EachComponentFromItsSmallestDegreeNeighboursByDegreeThenId) {
  // Edges 0-3, 0-6, 0-2, 2-1, 2-4, 2-5, 1-7 and an isolated node 8 (degree 0,
  // so its component comes first). The other starts at 3 (degree 1, smallest
  // id); 0's new neighbours go 6 (degree 1) before 2 (degree 4); 2's go 4, 5
  // (degree 1, by id) before 1 (degree 2).
  const std::vector<std::pair<int, int>> edges = {{0, 3}, {0, 6}, {0, 2}, {2, 1}, {2, 4}, {2, 5}, {1, 7}};
  std::vector<std::vector<std::int64_t>> rows(9);
  for (const auto& [a, b] : edges) rows[a].push_back(b);
  std::vector<std::int64_t> indptr = {0}, indices;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    indices.insert(indices.end(), row.begin(), row.end());
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  const auto g = graph_from_csr(9, indptr, indices, std::vector<double>(indices.size(), 1.0), "small");
  EXPECT_EQ(cuthill_mckee_order(g).old_of_new, (std::vector<NodeId>{8, 3, 0, 6, 2, 4, 5, 1, 7}));
}

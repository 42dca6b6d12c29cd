// The distributed pieces of the graph area on 1, 2 and 3 ranks: the kNN search
// split by rows gives the one-rank graph, and the APSP writer streams every
// rank's rows into one file equal to scipy's matrix.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>

#include "fixture.hpp"
#include "kotml/graph/apsp.hpp"
#include "kotml/graph/knn_graph.hpp"

using namespace kotml;
using namespace kotml::graph;

TEST(GraphAcrossRanks, DistributedKnnGraphIsTheSerialGraph) {
  const dist::Comm world;
  const auto c = test::load_graph_case("blobs80_k3");
  KnnGraphReport a, b;
  const auto serial = copy_graph<HostSpace>(build_knn_graph(c.device_points(), c.k, "s", &a));
  const auto distributed = copy_graph<HostSpace>(build_knn_graph(c.device_points(), c.k, world, "d", &b));
  EXPECT_EQ(a.bridges_added, b.bridges_added);
  ASSERT_EQ(serial.neighbors.extent(0), distributed.neighbors.extent(0));
  for (std::int64_t i = 0; i <= c.n; ++i) EXPECT_EQ(serial.offsets(i), distributed.offsets(i));
  for (std::size_t e = 0; e < serial.neighbors.extent(0); ++e) {
    EXPECT_EQ(serial.neighbors(e), distributed.neighbors(e));
    EXPECT_EQ(serial.weights(e), distributed.weights(e));
  }
}

TEST(GraphAcrossRanks, StreamedShortestPathsEqualScipy) {
  const dist::Comm world;
  const auto c = test::load_graph_case("spiral100_k5");
  const auto g = graph_from_csr(c.n, c.indptr, c.indices, c.data, "fixture");
  std::string dir_path;
  std::unique_ptr<test::TempDir> dir;
  if (world.is_root()) {
    dir = std::make_unique<test::TempDir>();
    dir_path = dir->path();
  }
  world.bcast_string(dir_path);
  // Sources in a scrambled order, so row r is not node r.
  std::vector<NodeId> sources;
  for (NodeId s = 0; s < c.n; ++s) sources.push_back(static_cast<NodeId>((s * 37) % c.n));
  std::optional<io::h5::File> file;
  if (world.is_root()) file.emplace(io::h5::File::create(dir_path + "/d.h5"));
  ApspOptions options;
  options.precision = Precision::float64;
  options.chunk_rows = 3;
  write_shortest_paths(g, sources, options, world, file ? &*file : nullptr, "distances");
  if (!world.is_root()) return;
  const auto d = file->read<double>("distances");
  for (std::int64_t r = 0; r < c.n; ++r)
    for (std::int64_t v = 0; v < c.n; ++v)
      EXPECT_NEAR(d[r * c.n + v], c.distances[sources[r] * c.n + v], 4e-16 * (1 + d[r * c.n + v]));
}

TEST(GraphAcrossRanks, ABadSourceIsAnErrorOnEveryRank) {
  const dist::Comm world;
  const auto c = test::load_graph_case("spiral100_k5");
  const auto g = graph_from_csr(c.n, c.indptr, c.indices, c.data, "fixture");
  EXPECT_THROW(write_shortest_paths(g, {0, 500}, ApspOptions(), world, nullptr, "d"),
               dist::CollectiveError);
}

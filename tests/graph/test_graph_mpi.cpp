// The distributed pieces of the graph area on 1, 2 and 3 ranks: the kNN search
// split by rows gives the one-rank graph, and the APSP writer streams every
// rank's rows into one file equal to scipy's matrix.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

/// The lengths from scrambled sources (row r is not node r) into `name` in a
/// folder of rank 0's, written by every rank in place or gathered by rank 0;
/// the file as rank 0 reads it back.
std::vector<double> shortest_paths_file(const CsrGraph<MemSpace>& g, std::int64_t n, const std::string& dir,
                                        const std::string& name, bool every_rank_writes,
                                        std::vector<NodeId>& sources) {
  const dist::Comm world;
  sources.clear();
  for (NodeId s = 0; s < n; ++s) sources.push_back(static_cast<NodeId>((s * 37) % n));
  std::optional<io::h5::File> file;
  if (world.is_root()) file.emplace(io::h5::File::create(dir + "/" + name));
  ApspOptions options;
  options.precision = Precision::float64;
  options.chunk_rows = 3;
  options.every_rank_writes = every_rank_writes;
  write_shortest_paths(g, sources, options, world, file ? &*file : nullptr, "distances");
  if (!world.is_root()) return {};
  file->write<std::int64_t>("sources", std::vector<std::int64_t>(sources.begin(), sources.end()));
  file->close();
  // Through the verifying reader: the file is whole HDF5 after the raw writes.
  return io::h5::File::open_read(dir + "/" + name).read<double>("distances");
}

TEST(GraphAcrossRanks, ShortestPathsWrittenByEveryRankOrThroughRankZeroEqualScipy) {
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
  std::vector<NodeId> sources;
  const auto in_place = shortest_paths_file(g, c.n, dir_path, "ranks.h5", true, sources);
  const auto gathered = shortest_paths_file(g, c.n, dir_path, "root.h5", false, sources);
  if (!world.is_root()) return;
  ASSERT_EQ(in_place.size(), static_cast<std::size_t>(c.n * c.n));
  for (std::int64_t r = 0; r < c.n; ++r)
    for (std::int64_t v = 0; v < c.n; ++v)
      EXPECT_NEAR(in_place[r * c.n + v], c.distances[sources[r] * c.n + v], 4e-16 * (1 + in_place[r * c.n + v]));
  EXPECT_EQ(in_place, gathered);
}

TEST(GraphAcrossRanks, ABadSourceIsAnErrorOnEveryRank) {
  const dist::Comm world;
  const auto c = test::load_graph_case("spiral100_k5");
  const auto g = graph_from_csr(c.n, c.indptr, c.indices, c.data, "fixture");
  EXPECT_THROW(write_shortest_paths(g, {0, 500}, ApspOptions(), world, nullptr, "d"),
               dist::CollectiveError);
}

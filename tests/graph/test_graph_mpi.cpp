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
#include "kotml/graph/point_cloud.hpp"
#include "kotml/io/hdf5.hpp"

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

TEST(GraphAcrossRanks, PointCloudReadInBlocksIsTheWholeFile) {
  // Seven points: on 2 and 3 ranks each reads a block and the blocks are
  // gathered. A NaN in row 5 (the last rank's block) is an error on every
  // rank, named by its row in the whole cloud whatever the rank count.
  const dist::Comm world;
  const dist::Comm self(MPI_COMM_SELF);
  std::string dir_path;
  std::unique_ptr<test::TempDir> dir;
  const std::int64_t n = 7, d = 3;
  std::vector<double> values(static_cast<std::size_t>(n * d));
  for (std::size_t f = 0; f < values.size(); ++f) values[f] = 0.25 * static_cast<double>(f) - 1.5;
  if (world.is_root()) {
    dir = std::make_unique<test::TempDir>();
    dir_path = dir->path();
    auto good = io::h5::File::create(dir->file("good.h5"));
    good.write<double>("deep/pts", values, {n, d});
    good.close();
    auto bad_values = values;
    bad_values[5 * d + 1] = std::nan("");
    auto bad = io::h5::File::create(dir->file("bad.h5"));
    bad.write<double>("pts", bad_values, {n, d});
    bad.close();
  }
  world.bcast_string(dir_path);
  const auto shared = read_point_cloud(world, dir_path + "/good.h5", "deep/pts", "");
  const auto alone = read_point_cloud(self, dir_path + "/good.h5", "deep/pts", "");
  EXPECT_EQ(shared.n, n);
  EXPECT_EQ(shared.dims, d);
  EXPECT_EQ(shared.values, values);
  EXPECT_EQ(alone.values, values);
  EXPECT_EQ(shared.source, dir_path + "/good.h5:deep/pts");
  std::string message;
  try {
    read_point_cloud(world, dir_path + "/bad.h5", "pts", "");
  } catch (const dist::CollectiveError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("row 5, column 1 is not a finite number"), std::string::npos) << message;
  world.barrier();  // rank 0's folder outlives every rank's reads
}

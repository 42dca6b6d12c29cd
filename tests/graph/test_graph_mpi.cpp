// The distributed pieces of the graph area on 1, 2 and 3 ranks: the kNN search
// split by rows gives the one-rank graph, and the APSP writer streams every
// rank's rows into one file equal to scipy's matrix.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/graph/apsp.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/graph/landmarks.hpp"
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

/// What `write` puts into `name` in a folder of rank 0's (rank 0's file; the
/// other ranks pass nullptr), as rank 0 reads it back.
std::vector<double> written_file(const std::string& dir, const std::string& name,
                                 const std::function<void(io::h5::File*)>& write) {
  const dist::Comm world;
  std::optional<io::h5::File> file;
  if (world.is_root()) file.emplace(io::h5::File::create(dir + "/" + name));
  write(file ? &*file : nullptr);
  if (!world.is_root()) return {};
  file->close();
  // Through the verifying reader: the file is whole HDF5 after the raw writes.
  return io::h5::File::open_read(dir + "/" + name).read<double>("distances");
}

/// The lengths from scrambled sources (row r is not node r), written by every
/// rank in place or gathered by rank 0.
std::vector<double> shortest_paths_file(const CsrGraph<MemSpace>& g, std::int64_t n, const std::string& dir,
                                        const std::string& name, bool every_rank_writes,
                                        std::vector<NodeId>& sources) {
  const dist::Comm world;
  sources.clear();
  for (NodeId s = 0; s < n; ++s) sources.push_back(static_cast<NodeId>((s * 37) % n));
  ApspOptions options;
  options.precision = Precision::float64;
  options.chunk_rows = 3;
  options.every_rank_writes = every_rank_writes;
  return written_file(dir, name, [&](io::h5::File* file) {
    write_shortest_paths(g, sources, options, world, file, "distances");
  });
}

/// A folder of rank 0's, its path known to every rank.
std::string shared_dir(std::unique_ptr<test::TempDir>& dir) {
  const dist::Comm world;
  std::string path;
  if (world.is_root()) {
    dir = std::make_unique<test::TempDir>();
    path = dir->path();
  }
  world.bcast_string(path);
  return path;
}

TEST(GraphAcrossRanks, ShortestPathsWrittenByEveryRankOrThroughRankZeroEqualScipy) {
  const dist::Comm world;
  const auto c = test::load_graph_case("spiral100_k5");
  const auto g = graph_from_csr(c.n, c.indptr, c.indices, c.data, "fixture");
  std::unique_ptr<test::TempDir> dir;
  const std::string dir_path = shared_dir(dir);
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

TEST(GraphAcrossRanks, LandmarkRowsAreWrittenFromTheirChoiceWithoutDijkstra) {
  // The landmarks' rows, copied from the choice, are the bytes Dijkstra from
  // the same sources writes, at both precisions and both ways of writing; no
  // rank runs Dijkstra for them. Seven landmarks in chunks of two: on 3 ranks
  // the blocks are 3, 2 and 2 rows, so rank 0 copies two chunks.
  const dist::Comm world;
  const auto c = test::load_graph_case("spiral100_k5");
  const auto g = graph_from_csr(c.n, c.indptr, c.indices, c.data, "fixture");
  const LocalityOrderedGraph ordered = locality_ordered(g, false);
  const Landmarks landmarks = farthest_point_landmarks(ordered, 7, 11);
  ASSERT_EQ(landmarks.nodes.size(), 7u);
  std::unique_ptr<test::TempDir> dir;
  const std::string dir_path = shared_dir(dir);
  for (const Precision precision : {Precision::float32, Precision::float64}) {
    for (const bool every_rank_writes : {true, false}) {
      ApspOptions options;
      options.precision = precision;
      options.chunk_rows = 2;
      options.every_rank_writes = every_rank_writes;
      const std::string tag = std::string(precision == Precision::float32 ? "f32" : "f64") +
                              (every_rank_writes ? "_ranks" : "_root");
      timers::reset();
      const auto copied = written_file(dir_path, "copied_" + tag + ".h5", [&](io::h5::File* file) {
        write_shortest_paths(landmarks, options, world, file, "distances");
      });
      std::map<std::string, timers::PhaseTime> phases;
      for (const auto& p : timers::phases()) phases[p.name] = p;
      EXPECT_EQ(phases.count("dijkstra"), 0u) << tag;
      const auto mine = dist::block_of(7, world.size(), world.rank());
      EXPECT_EQ(phases["landmark rows"].calls, (mine.end - mine.begin + 1) / 2) << tag;
      const auto computed = written_file(dir_path, "computed_" + tag + ".h5", [&](io::h5::File* file) {
        write_shortest_paths(ordered, landmarks.nodes, options, world, file, "distances");
      });
      if (!world.is_root()) continue;
      // No fatal assertion here: rank 0 must reach the other ranks' next writes.
      EXPECT_EQ(copied, computed) << tag;
      std::int64_t far_from_scipy = copied.size() == static_cast<std::size_t>(7 * c.n) ? 0 : -1;
      for (std::size_t l = 0; l < 7 && far_from_scipy >= 0; ++l)
        for (std::int64_t v = 0; v < c.n; ++v) {
          const double length = copied[l * c.n + v];
          const double tolerance = (precision == Precision::float32 ? 1e-6 : 4e-16) * (1 + length);
          if (!(std::abs(length - c.distances[landmarks.nodes[l] * c.n + v]) <= tolerance)) ++far_from_scipy;
        }
      EXPECT_EQ(far_from_scipy, 0) << tag << ": lengths further from scipy's than the precision (-1: wrong size)";
    }
  }
  world.barrier();  // rank 0's folder outlives every rank's writes
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

// kotml knn-graph and kotml apsp as a user runs them: outputs against the
// scipy/torchgw fixtures, the same bits on three ranks, and one error line with
// exit code 2 for bad input.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "fixture.hpp"
#include "kotml/core/error.hpp"
#include "kotml/graph/graph_file.hpp"
#include "kotml/graph/point_cloud.hpp"
#include "kotml/io/hdf5.hpp"

using namespace kotml;
using kotml::test::run_kotml;
using kotml::test::TempDir;

namespace {

void write_cloud(const std::string& path, const std::vector<double>& values, std::int64_t n,
                 std::int64_t d) {
  auto f = io::h5::File::create(path);
  f.write<double>("x", values, {n, d});
  f.close();
}

void expect_one_error_line(const test::CliResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

}  // namespace

TEST(KnnGraphCli, WritesTheTorchgwGraph) {
  const auto c = test::load_graph_case("blobs80_k3");
  TempDir dir;
  write_cloud(dir.file("cloud.h5"), c.points, c.n, c.dims);
  const auto r = run_kotml({"knn-graph", dir.file("cloud.h5"), "-o", dir.file("g.h5"), "--k", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 bridges added"), std::string::npos) << r.out;
  const auto f = io::h5::File::open_read(dir.file("g.h5"));
  EXPECT_EQ(f.read<std::int64_t>("graph/indptr"), c.indptr);
  EXPECT_EQ(f.read<std::int64_t>("graph/indices"), c.indices);
  const auto data = f.read<double>("graph/data");
  ASSERT_EQ(data.size(), c.data.size());
  for (std::size_t e = 0; e < data.size(); ++e) EXPECT_NEAR(data[e], c.data[e], 1e-14 * c.data[e]);
  EXPECT_EQ(f.read_string_attribute("graph", "encoding-type"), "csr_matrix");
  EXPECT_EQ(f.read_numeric_attribute<std::int64_t>("graph", "components_before_bridging")[0], 4);
}

TEST(ApspCli, DistancesMatchScipyInBothPrecisionsAndOnThreeRanks) {
  const auto c = test::load_graph_case("spiral100_k5");
  TempDir dir;
  write_cloud(dir.file("cloud.h5"), c.points, c.n, c.dims);
  ASSERT_EQ(run_kotml({"knn-graph", dir.file("cloud.h5"), "-o", dir.file("g.h5"), "--k", "5"}).exit_code, 0);
  const auto r64 = run_kotml({"apsp", dir.file("g.h5"), "-o", dir.file("d64.h5"), "--precision", "float64"});
  ASSERT_EQ(r64.exit_code, 0) << r64.err;
  const auto r32 = run_kotml({"apsp", dir.file("cloud.h5"), "--k", "5", "-o", dir.file("d32.h5")});
  ASSERT_EQ(r32.exit_code, 0) << r32.err;
  const auto r3 = run_kotml({"apsp", dir.file("g.h5"), "-o", dir.file("d3.h5"), "--chunk-rows", "7"}, 3);
  ASSERT_EQ(r3.exit_code, 0) << r3.err;
  const auto r3root =
      run_kotml({"apsp", dir.file("g.h5"), "-o", dir.file("d3root.h5"), "--chunk-rows", "7", "--writers", "root"}, 3);
  ASSERT_EQ(r3root.exit_code, 0) << r3root.err;
  const auto d64 = io::h5::File::open_read(dir.file("d64.h5")).read<double>("distances");
  const auto f32 = io::h5::File::open_read(dir.file("d32.h5"));
  EXPECT_EQ(f32.type("distances").dtype, "float32");
  const auto d32 = f32.read<float>("distances");
  const auto d3 = io::h5::File::open_read(dir.file("d3.h5")).read<float>("distances");
  ASSERT_EQ(d64.size(), c.distances.size());
  for (std::size_t f = 0; f < d64.size(); ++f) {
    EXPECT_NEAR(d64[f], c.distances[f], 4e-16 * std::max(1.0, c.distances[f]));
    EXPECT_EQ(d32[f], static_cast<float>(d64[f]));
  }
  EXPECT_EQ(d3, d32);
  EXPECT_EQ(io::h5::File::open_read(dir.file("d3root.h5")).read<float>("distances"), d3);
  // The configuration says who wrote the rows.
  const auto writers_of = [&](const std::string& name) {
    return nlohmann::json::parse(io::h5::File::open_read(dir.file(name)).read_string_attribute("/", "kotml_config"))
        .at("writers")
        .get<std::string>();
  };
  EXPECT_EQ(writers_of("d3.h5"), "ranks");
  EXPECT_EQ(writers_of("d3root.h5"), "root");
  std::vector<std::int64_t> all(c.n);
  for (std::int64_t i = 0; i < c.n; ++i) all[i] = i;
  EXPECT_EQ(f32.read<std::int64_t>("sources"), all);
}

TEST(ApspCli, LandmarkRowsAreTorchgwLandmarks) {
  const auto c = test::load_graph_case("spiral100_k5");
  TempDir dir;
  write_cloud(dir.file("cloud.h5"), c.points, c.n, c.dims);
  const auto r = run_kotml({"apsp", dir.file("cloud.h5"), "--k", "5", "--landmarks",
                            std::to_string(c.landmarks.size()), "--precision", "float64", "-o",
                            dir.file("l.h5")}, 2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = io::h5::File::open_read(dir.file("l.h5"));
  EXPECT_EQ(f.read<std::int64_t>("sources"), c.landmarks);
  const auto d = f.read<double>("distances");
  for (std::size_t l = 0; l < c.landmarks.size(); ++l)
    for (std::int64_t v = 0; v < c.n; ++v)
      EXPECT_NEAR(d[l * c.n + v], c.distances[c.landmarks[l] * c.n + v], 4e-16 * (1 + d[l * c.n + v]));
}

TEST(GraphCli, BadInputIsOneLineAndExitTwo) {
  TempDir dir;
  write_cloud(dir.file("four.h5"), {0, 0, 1, 0, 0, 1, 1, 1}, 4, 2);
  expect_one_error_line(run_kotml({"knn-graph", dir.file("four.h5"), "-o", dir.file("g.h5"), "--k", "4"}),
                        "needs more than k points");
  expect_one_error_line(run_kotml({"apsp", dir.file("four.h5"), "-o", dir.file("d.h5"), "--k", "9"}, 3),
                        "needs more than k points");
  write_cloud(dir.file("empty.h5"), {}, 0, 2);
  expect_one_error_line(run_kotml({"knn-graph", dir.file("empty.h5"), "-o", dir.file("g.h5")}), "empty");
  write_cloud(dir.file("nan.h5"), {0, 0, 1, std::nan(""), 0, 1, 1, 1}, 4, 2);
  expect_one_error_line(run_kotml({"knn-graph", dir.file("nan.h5"), "-o", dir.file("g.h5"), "--k", "2"}),
                        "not a finite number");
  expect_one_error_line(run_kotml({"knn-graph", dir.file("missing.h5"), "-o", dir.file("g.h5")}),
                        "missing.h5");
  {
    auto f = io::h5::File::create(dir.file("neg.h5"));
    f.create_group("graph");
    f.write<std::int64_t>("graph/indptr", {0, 1, 2});
    f.write<std::int64_t>("graph/indices", {1, 0});
    f.write<double>("graph/data", {1.0, -2.0});
    f.close();
  }
  expect_one_error_line(run_kotml({"apsp", dir.file("neg.h5"), "-o", dir.file("d.h5")}, 2),
                        "finite and non-negative");
  // A --group that is not there is named (not the point dataset x).
  expect_one_error_line(run_kotml({"apsp", dir.file("neg.h5"), "-o", dir.file("d.h5"), "--group", "nope"}),
                        "nope: no graph here");
  expect_one_error_line(run_kotml({"apsp", dir.file("four.h5"), "--k", "2", "-o", dir.file("d.h5"),
                                   "--precision", "float16"}),
                        "--precision");
  expect_one_error_line(run_kotml({"apsp", dir.file("four.h5"), "--k", "2", "-o", dir.file("d.h5"),
                                   "--writers", "all"}, 2),
                        "--writers");
  EXPECT_FALSE(test::file_exists(dir.file("g.h5")));
  EXPECT_FALSE(test::file_exists(dir.file("d.h5")));
}

// Infinite lengths are written (scipy's convention for unconnected pairs) but
// never silently: a disconnected graph and a float32 overflow are told apart.
TEST(ApspCli, InfiniteLengthsAreExplained) {
  TempDir dir;
  {
    auto f = io::h5::File::create(dir.file("two_parts.h5"));  // 0-1 and 2-3, no edge between
    f.create_group("graph");
    f.write<std::int64_t>("graph/indptr", {0, 1, 2, 3, 4});
    f.write<std::int64_t>("graph/indices", {1, 0, 3, 2});
    f.write<double>("graph/data", {1.0, 1.0, 2.0, 2.0});
    f.close();
  }
  auto r = run_kotml({"apsp", dir.file("two_parts.h5"), "-o", dir.file("d.h5")}, 2);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("8 of 16 lengths are infinite"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 connected components"), std::string::npos) << r.err;

  std::vector<double> far = {0, 0, 1, 0, 0, 1, 1, 1, 2, 2, 3, 1};  // 6 points, one component with k = 3
  for (double& v : far) v *= 1e150;
  write_cloud(dir.file("far.h5"), far, 6, 2);
  r = run_kotml({"apsp", dir.file("far.h5"), "--k", "3", "-o", dir.file("far_d.h5")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("overflow float32 (use --precision float64)"), std::string::npos) << r.err;
  r = run_kotml({"apsp", dir.file("far.h5"), "--k", "3", "--precision", "float64", "-o", dir.file("far_d.h5")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("infinite"), std::string::npos) << r.err;
}

TEST(PointCloud, ReadsAnnDataRepresentations) {
  const auto path = test::shared_data_path("snareseq_rna.h5ad");
  if (!test::file_exists(path)) GTEST_SKIP() << "shared data not present: " << path;
  EXPECT_TRUE(graph::is_anndata_file(path));
  const dist::Comm comm;
  const auto cloud = graph::read_point_cloud(comm, path, "x", "");
  EXPECT_EQ(cloud.n, 1047);
  EXPECT_EQ(cloud.dims, 10);
  // h5py: X[0, 0], X[0, 1], X[1046, 9] (float32, read as double).
  EXPECT_EQ(cloud.values[0], static_cast<double>(6.688336372375488f));
  EXPECT_EQ(cloud.values[1], static_cast<double>(-2.369600534439087f));
  EXPECT_EQ(cloud.values[1046 * 10 + 9], static_cast<double>(4.050236701965332f));
  EXPECT_THROW(graph::read_point_cloud(comm, path, "x", "X_umap"), Error);
}

TEST(GraphFile, RoundTripsThroughHdf5) {
  const auto c = test::load_graph_case("random60_directed");
  const auto g = graph::graph_from_csr(c.n, c.indptr, c.indices, c.data, "fixture");
  TempDir dir;
  {
    auto f = io::h5::File::create(dir.file("g.h5"));
    graph::write_graph(f, "deep/graph", g);
    f.close();
  }
  const auto f = io::h5::File::open_read(dir.file("g.h5"));
  EXPECT_TRUE(graph::has_graph(f, "deep/graph"));
  EXPECT_FALSE(graph::has_graph(f, "graph"));
  const auto back = graph::copy_graph<HostSpace>(graph::read_graph(f, "deep/graph"));
  const auto orig = graph::copy_graph<HostSpace>(g);
  ASSERT_EQ(back.n, orig.n);
  for (std::int64_t i = 0; i <= orig.n; ++i) EXPECT_EQ(back.offsets(i), orig.offsets(i));
  for (std::size_t e = 0; e < orig.neighbors.extent(0); ++e) {
    EXPECT_EQ(back.neighbors(e), orig.neighbors(e));
    EXPECT_EQ(back.weights(e), orig.weights(e));
  }
  EXPECT_THROW(graph::read_graph(f, "graph"), Error);
}

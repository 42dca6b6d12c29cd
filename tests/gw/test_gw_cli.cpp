// kotml gw as a user runs it: the output file holds what the library computes,
// identically on three ranks; precomputed matrices from the file give the same
// run as the graphs they came from; bad input is one line and exit code 2.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kotml/graph/apsp.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/gw/generators.hpp"
#include "kotml/gw/sampled_gw.hpp"
#include "kotml/io/hdf5.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;
using kotml::test::run_kotml;
using kotml::test::TempDir;

namespace {

const std::vector<std::string> small_run = {"--k", "5", "--M", "30", "--max-iter", "30",
                                            "--epsilon", "0.01", "--min-iter", "10"};

std::vector<std::string> args(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

/// pair.h5 with /x (spiral 120) and /y (Swiss roll 150), and their all-pairs
/// geodesics as /dist_x, /dist_y (float32) when asked.
void write_pair(const std::string& path, bool with_distances) {
  const auto src = gw::spiral(120), tgt = gw::swiss_roll(150);
  auto f = io::h5::File::create(path);
  f.write<double>("x", src.points, {src.n, src.dims});
  f.write<double>("y", tgt.points, {tgt.n, tgt.dims});
  if (with_distances) {
    for (const auto& [m, name] : {std::make_pair(src, "dist_x"), std::make_pair(tgt, "dist_y")}) {
      const auto g = graph::build_knn_graph(device_points(m), 5);
      auto rows = Kokkos::create_mirror_view_and_copy(HostSpace(), graph::shortest_path_rows<float>(g, 0, m.n));
      f.write<float>(name, std::vector<float>(rows.data(), rows.data() + rows.size()), {m.n, m.n});
    }
  }
  f.close();
}

void expect_one_error_line(const test::CliResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

}  // namespace

TEST(GwCli, OutputIsTheLibraryResultOnOneAndThreeRanks) {
  TempDir dir;
  write_pair(dir.file("pair.h5"), false);
  const auto one = run_kotml(args({"gw", dir.file("pair.h5"), "-o", dir.file("one.h5"), "--mode",
                                   "precomputed", "--plan", "dense"}, small_run));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto three = run_kotml(args({"gw", dir.file("pair.h5"), "-o", dir.file("three.h5"), "--mode",
                                     "precomputed", "--plan", "dense"}, small_run), 3);
  ASSERT_EQ(three.exit_code, 0) << three.err;

  // The same run through the library.
  dist::Comm comm;
  const auto src = gw::spiral(120), tgt = gw::swiss_roll(150);
  auto ps = gw::precomputed_from_graph(graph::build_knn_graph(device_points(src), 5), comm);
  auto pt = gw::precomputed_from_graph(graph::build_knn_graph(device_points(tgt), 5), comm);
  gw::SampledGwOptions o;
  o.samples = 30;
  o.max_iter = 30;
  o.epsilon = 0.01;
  o.min_iter_before_converge = 10;
  const auto lib = gw::sampled_gw(*ps, *pt, o, comm);

  const auto a = io::h5::File::open_read(dir.file("one.h5"));
  const auto b = io::h5::File::open_read(dir.file("three.h5"));
  EXPECT_EQ(a.read<std::int64_t>("match"), lib.match);
  EXPECT_EQ(a.read<double>("gw_cost")[0], lib.gw_cost);
  EXPECT_EQ(a.read<std::int64_t>("iterations")[0], lib.iterations);
  EXPECT_EQ(a.read<double>("err_list"), lib.err_list);
  const auto plan = a.read<double>("plan");
  auto lib_plan = Kokkos::create_mirror_view_and_copy(HostSpace(), lib.plan);
  ASSERT_EQ(plan.size(), lib_plan.size());
  for (std::size_t f = 0; f < plan.size(); ++f) ASSERT_EQ(plan[f], lib_plan.data()[f]);
  EXPECT_EQ(b.read<std::int64_t>("match"), lib.match);
  EXPECT_EQ(b.read<double>("plan"), plan);
  EXPECT_NE(a.read_string_attribute("/", "kotml_config").find("\"mode\":\"precomputed\""), std::string::npos);
}

TEST(GwCli, TopKRowsAreTheLargestPlanEntries) {
  TempDir dir;
  write_pair(dir.file("pair.h5"), false);
  const auto common = args({"gw", dir.file("pair.h5"), "--mode", "landmark", "--landmarks", "8"}, small_run);
  ASSERT_EQ(run_kotml(args(common, {"-o", dir.file("dense.h5"), "--plan", "dense"})).exit_code, 0);
  const auto r = run_kotml(args(common, {"-o", dir.file("top.h5"), "--plan", "topk", "--plan-topk", "4"}), 2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dense = io::h5::File::open_read(dir.file("dense.h5")).read<double>("plan");
  const auto top = io::h5::File::open_read(dir.file("top.h5"));
  const auto idx = top.read<std::int64_t>("plan/indices");
  const auto val = top.read<double>("plan/values");
  const auto match = top.read<std::int64_t>("match");
  ASSERT_EQ(idx.size(), 120u * 4);
  for (std::int64_t i = 0; i < 120; ++i) {
    EXPECT_EQ(idx[i * 4], match[i]);
    std::vector<double> row(dense.begin() + i * 150, dense.begin() + (i + 1) * 150);
    std::sort(row.rbegin(), row.rend());
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(val[i * 4 + t], row[t]);
      EXPECT_EQ(val[i * 4 + t], dense[i * 150 + idx[i * 4 + t]]);
    }
  }
}

TEST(GwCli, GivenDistanceMatricesGiveTheGraphRun) {
  TempDir dir;
  write_pair(dir.file("pair.h5"), true);
  const auto from_file = run_kotml(args({"gw", dir.file("pair.h5"), "-o", dir.file("f.h5"), "--mode",
                                         "precomputed"}, small_run));
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  const auto from_graph = run_kotml(args({"gw", dir.file("pair.h5"), "-o", dir.file("g.h5"), "--mode",
                                          "dijkstra"}, small_run));
  ASSERT_EQ(from_graph.exit_code, 0) << from_graph.err;
  EXPECT_EQ(io::h5::File::open_read(dir.file("f.h5")).read<std::int64_t>("match"),
            io::h5::File::open_read(dir.file("g.h5")).read<std::int64_t>("match"));
}

TEST(GwCli, OptionsComeFromAnIniFile) {
  TempDir dir;
  write_pair(dir.file("pair.h5"), false);
  {
    std::ofstream ini(dir.file("gw.ini"));
    ini << "[gw]\nmode = landmark\nlandmarks = 6\nk = 5\nM = 20\nmax-iter = 12\n"
           "mixed-precision = true\nseed = 3\n[apsp]\nprecision = float64\n";
  }
  const auto r = run_kotml({"gw", "--config", dir.file("gw.ini"), dir.file("pair.h5"), "-o",
                            dir.file("out.h5"), "--M", "25"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto config = io::h5::File::open_read(dir.file("out.h5")).read_string_attribute("/", "kotml_config");
  for (const char* setting : {"\"mode\":\"landmark\"", "\"landmarks\":6", "\"M\":25",
                              "\"mixed-precision\":true", "\"seed\":3", "\"max-iter\":12"})
    EXPECT_NE(config.find(setting), std::string::npos) << setting << " in " << config;
}

TEST(GwCli, PairedRunReportsTheFoscttmOfItsPlanOnEveryRankCount) {
  // The same 120 spiral points on both sides, the target rotated into 3-D, so
  // that point i of the source is point i of the target.
  TempDir dir;
  const auto src = gw::spiral(120);
  std::vector<double> rotated;
  for (std::int64_t i = 0; i < src.n; ++i) {
    const double x = src.points[static_cast<std::size_t>(2 * i)], y = src.points[static_cast<std::size_t>(2 * i + 1)];
    for (const double v : {0.6 * x - 0.8 * y, 0.8 * x + 0.6 * y, 0.5}) rotated.push_back(v);
  }
  {
    auto f = io::h5::File::create(dir.file("paired.h5"));
    f.write<double>("x", src.points, {src.n, src.dims});
    f.write<double>("y", rotated, {src.n, 3});
  }
  const auto one = run_kotml(args({"gw", dir.file("paired.h5"), "-o", dir.file("one.h5"), "--mode", "precomputed",
                                   "--plan", "dense", "--paired"}, small_run));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto two = run_kotml(args({"gw", dir.file("paired.h5"), "-o", dir.file("two.h5"), "--mode", "precomputed",
                                   "--paired"}, small_run), 2);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto file = io::h5::File::open_read(dir.file("one.h5"));
  const double reported = file.read<double>("foscttm").at(0);
  EXPECT_EQ(io::h5::File::open_read(dir.file("two.h5")).read<double>("foscttm").at(0), reported);
  EXPECT_NE(one.out.find("FOSCTTM "), std::string::npos) << one.out;
  // SCOT's definition from the written plan: barycentres in the target's
  // coordinates, then the fraction of points nearer than the true partner.
  const auto plan = file.read<double>("plan");
  const std::int64_t n = src.n;
  std::vector<double> projected(static_cast<std::size_t>(n * 3), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    double mass = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double t = plan[static_cast<std::size_t>(i * n + j)];
      mass += t;
      for (int c = 0; c < 3; ++c) projected[static_cast<std::size_t>(3 * i + c)] += t * rotated[static_cast<std::size_t>(3 * j + c)];
    }
    for (int c = 0; c < 3; ++c) projected[static_cast<std::size_t>(3 * i + c)] /= mass;
  }
  auto distance = [&](std::int64_t i, std::int64_t j) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) {
      const double d = projected[static_cast<std::size_t>(3 * i + c)] - rotated[static_cast<std::size_t>(3 * j + c)];
      sum += d * d;
    }
    return sum;
  };
  std::int64_t closer = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) closer += (distance(i, j) < distance(i, i)) + (distance(i, j) < distance(j, j));
  EXPECT_DOUBLE_EQ(reported, 0.5 * static_cast<double>(closer) / static_cast<double>(n * n));
  EXPECT_GE(reported, 0.0);
  EXPECT_LE(reported, 1.0);
  // Clouds of different sizes, or a target known only by its distances, cannot be scored.
  write_pair(dir.file("unpaired.h5"), true);
  expect_one_error_line(run_kotml(args({"gw", dir.file("unpaired.h5"), "-o", dir.file("x.h5"), "--paired"}, small_run)),
                        "--paired");
  expect_one_error_line(run_kotml(args({"gw", dir.file("unpaired.h5"), "-o", dir.file("x.h5"), "--paired", "--mode",
                                        "precomputed"}, small_run)),
                        "distances only");
  EXPECT_FALSE(kotml::test::file_exists(dir.file("x.h5")));
}

TEST(GwCli, BadInputIsOneLineAndExitTwo) {
  TempDir dir;
  auto write = [&](const std::string& name, auto&& fill) {
    auto f = io::h5::File::create(dir.file(name));
    fill(f);
    f.close();
    return dir.file(name);
  };
  const std::vector<double> sq = {0, 0, 1, 0, 0, 1, 1, 1, 2, 2};  // 5 points in 2-D
  const auto good = [&](io::h5::File& f) {
    f.write<double>("x", sq, {5, 2});
    f.write<double>("y", sq, {5, 2});
  };
  const auto pair = write("pair.h5", good);
  const auto out = dir.file("out.h5");
  expect_one_error_line(run_kotml({"gw", pair, "-o", out, "--k", "5"}), "needs more than k points");
  expect_one_error_line(run_kotml({"gw", pair, "-o", out, "--k", "2", "--mode", "geodesic"}), "--mode");
  expect_one_error_line(run_kotml({"gw", pair, "-o", out, "--k", "2", "--M", "0"}), "--M");
  expect_one_error_line(run_kotml({"gw", pair, "-o", out, "--k", "2", "--target-dataset", "z"}), "z");
  // TorchGW's silent fallback (epsilon <= 0 -> 1e-4) is asked for, not taken.
  expect_one_error_line(run_kotml({"gw", pair, "-o", out, "--k", "2", "--epsilon", "0"}), "--epsilon");
  // An epsilon far below the costs overflows the Sinkhorn: no plan is written
  // (it summed to 74 before), on every rank.
  expect_one_error_line(run_kotml({"gw", pair, "-o", out, "--k", "2", "--epsilon", "1e-300"}, 2),
                        "not a transport plan");
  EXPECT_FALSE(kotml::test::file_exists(out));
  const auto nan = write("nan.h5", [&](io::h5::File& f) {
    auto bad = sq;
    bad[3] = std::nan("");
    f.write<double>("x", bad, {5, 2});
    f.write<double>("y", sq, {5, 2});
  });
  expect_one_error_line(run_kotml({"gw", nan, "-o", out, "--k", "2"}, 2), "not a finite number");
  const auto empty = write("empty.h5", [&](io::h5::File& f) {
    f.write<double>("x", sq, {5, 2});
    f.write<double>("y", {}, {0, 2});
  });
  expect_one_error_line(run_kotml({"gw", empty, "-o", out, "--k", "2"}), "empty");
  const std::vector<float> d3 = {0, 1, 2, 1, 0, 1, 2, 1, 0};
  const auto negative = write("neg.h5", [&](io::h5::File& f) {
    auto bad = d3;
    bad[5] = -1;
    f.write<float>("dist_x", d3, {3, 3});
    f.write<float>("dist_y", bad, {3, 3});
  });
  expect_one_error_line(run_kotml({"gw", negative, "-o", out, "--mode", "precomputed"}, 3),
                        "negative distance");
  const auto missing = write("missing.h5", [&](io::h5::File& f) {
    auto bad = d3;
    bad[1] = std::nanf("");
    f.write<float>("dist_x", bad, {3, 3});
    f.write<float>("dist_y", d3, {3, 3});
  });
  expect_one_error_line(run_kotml({"gw", missing, "-o", out, "--mode", "precomputed"}, 2),
                        "missing distance");
  const auto oblong = write("oblong.h5", [&](io::h5::File& f) {
    f.write<float>("dist_x", std::vector<float>(6, 1.0f), {2, 3});
    f.write<float>("dist_y", d3, {3, 3});
  });
  expect_one_error_line(run_kotml({"gw", oblong, "-o", out, "--mode", "precomputed"}), "must be square");
  const auto half = write("half.h5", [&](io::h5::File& f) {
    f.write<float>("dist_x", d3, {3, 3});
    f.write<double>("y", sq, {5, 2});
  });
  expect_one_error_line(run_kotml({"gw", half, "-o", out, "--mode", "precomputed"}), "both distance matrices");
  EXPECT_FALSE(test::file_exists(out));
}

// kotml ot from the command line: the JSON it prints, the plan file it writes,
// and one error line with exit code 2 for every kind of bad input.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "ot_test_support.hpp"
#include "support/cli_runner.hpp"

namespace kotml::ot {
namespace {

using kotml::test::run_kotml;
using kotml::test::TempDir;

struct Problem {
  std::int64_t n = 23, m = 17;
  int dim = 3;
  std::vector<double> x = test::normal_points(23, 3, 2000);
  std::vector<double> y = test::normal_points(17, 3, 2001, 0.5);
  std::vector<double> a, b;
};

void write_input(const std::string& path, const Problem& p, bool with_weights = true) {
  auto file = io::h5::File::create(path);
  file.write("/x", p.x, {p.n, p.dim});
  file.write("/y", p.y, {p.m, static_cast<std::int64_t>(p.y.size()) / std::max<std::int64_t>(p.m, 1)});
  if (with_weights && !p.a.empty()) file.write("/a", p.a);
  if (with_weights && !p.b.empty()) file.write("/b", p.b);
  file.close();
}

nlohmann::json parse(const kotml::test::CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(OtCli, EmdPrintsTheExactCostAndWritesTheSparsePlan) {
  TempDir dir;
  Problem p;
  p.a.assign(static_cast<std::size_t>(p.n), 1.0);
  p.a[3] = 5.0;
  p.a[7] = 0.0;
  write_input(dir.file("in.h5"), p);
  const auto r = run_kotml({"ot", "--input", dir.file("in.h5"), "--plan", dir.file("plan.h5")});
  const auto json = parse(r);
  for (const char* key : {"solver", "cost", "objective", "iterations", "marginal_error", "status", "seconds"})
    EXPECT_TRUE(json.contains(key)) << key;
  EXPECT_EQ(json["solver"], "emd");
  EXPECT_EQ(json["status"], "optimal");
  HostMatrix<double> C("C", p.n, p.m);
  for (std::int64_t i = 0; i < p.n; ++i)
    for (std::int64_t j = 0; j < p.m; ++j)
      C(i, j) = ground_cost<double>(Cost::euclidean, &p.x[static_cast<std::size_t>(3 * i)],
                                    &p.y[static_cast<std::size_t>(3 * j)], 3, 0.0, 0.0);
  const auto sol = emd_dense(C, p.a, std::vector<double>(static_cast<std::size_t>(p.m), 1.0), EmdOptions{});
  EXPECT_LE(test::relative_error(json["cost"].get<double>(), sol.summary.cost), 1e-13);
  EXPECT_LT(json["marginal_error"].get<double>(), 1e-12);
  const auto plan = io::h5::File::open_read(dir.file("plan.h5"));
  const auto values = plan.read<double>("/plan_value");
  const auto rows = plan.read<std::int64_t>("/plan_row");
  EXPECT_EQ(static_cast<std::int64_t>(values.size()), json["plan_size"].get<std::int64_t>());
  double total = 0, on_zero_row = 0;
  for (std::size_t e = 0; e < values.size(); ++e) {
    total += values[e];
    if (rows[e] == 7) on_zero_row += values[e];
  }
  EXPECT_NEAR(total, 1.0, 1e-14);
  EXPECT_EQ(on_zero_row, 0.0);
  EXPECT_EQ(plan.read<double>("/f").size(), static_cast<std::size_t>(p.n));
}

TEST(OtCli, SinkhornWritesTheDensePlanAndHonoursItsOptions) {
  TempDir dir;
  Problem p;
  write_input(dir.file("in.h5"), p);
  const auto r = run_kotml({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--cost", "sqeuclidean",
                            "--epsilon", "0.5", "--relative-epsilon", "--threshold", "1e-11", "--plan",
                            dir.file("plan.h5")});
  const auto json = parse(r);
  EXPECT_EQ(json["status"], "optimal");
  EXPECT_LT(json["marginal_error"].get<double>(), 1e-11);
  double mean = 0;
  for (std::int64_t i = 0; i < p.n; ++i)
    for (std::int64_t j = 0; j < p.m; ++j)
      mean += ground_cost<double>(Cost::sqeuclidean, &p.x[static_cast<std::size_t>(3 * i)],
                                  &p.y[static_cast<std::size_t>(3 * j)], 3, 0.0, 0.0);
  mean /= static_cast<double>(p.n * p.m);
  EXPECT_LE(test::relative_error(json["epsilon"].get<double>(), 0.5 * mean), 1e-12);
  const auto plan = io::h5::File::open_read(dir.file("plan.h5"));
  EXPECT_EQ(plan.shape("/plan"), (std::vector<std::int64_t>{p.n, p.m}));
  const auto P = plan.read<double>("/plan");
  double cost = 0, total = 0;
  for (std::int64_t i = 0; i < p.n; ++i)
    for (std::int64_t j = 0; j < p.m; ++j) {
      const double v = P[static_cast<std::size_t>(i * p.m + j)];
      total += v;
      cost += v * ground_cost<double>(Cost::sqeuclidean, &p.x[static_cast<std::size_t>(3 * i)],
                                      &p.y[static_cast<std::size_t>(3 * j)], 3, 0.0, 0.0);
    }
  EXPECT_NEAR(total, 1.0, 1e-11);
  EXPECT_LE(test::relative_error(cost, json["cost"].get<double>()), 1e-12);

  // Unbalanced: mass is no longer held; the marginal error measures the fixed point.
  const auto u = parse(run_kotml({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--epsilon", "0.2",
                                  "--tau-a", "0.7", "--tau-b", "0.9"}));
  EXPECT_EQ(u["status"], "optimal");
  EXPECT_EQ(u["tau_a"].get<double>(), 0.7);
}

TEST(OtCli, IterationLimitIsAWarningNotAnError) {
  TempDir dir;
  Problem p;
  write_input(dir.file("in.h5"), p);
  const auto r = run_kotml({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--epsilon", "0.01",
                            "--max-iter", "3", "--inner-iterations", "1", "--threshold", "0"});
  const auto json = parse(r);
  EXPECT_EQ(json["status"], "max_iter");
  EXPECT_EQ(json["iterations"], 3);
  // One warning, then the time-per-phase table (which --quiet leaves out).
  ASSERT_FALSE(r.error_lines().empty()) << r.err;
  EXPECT_EQ(r.error_lines()[0].rfind("kotml: warning: ", 0), 0u) << r.err;
  EXPECT_EQ(r.error_lines()[1].rfind("kotml ot: time per phase over 1 rank(s)", 0), 0u) << r.err;
  for (std::size_t i = 1; i < r.error_lines().size(); ++i)
    EXPECT_EQ(r.error_lines()[i].find("warning"), std::string::npos) << r.err;
  const auto e = run_kotml({"ot", "--input", dir.file("in.h5"), "--max-iter", "2", "--quiet"});
  EXPECT_EQ(parse(e)["status"], "max_iter");
  ASSERT_EQ(e.error_lines().size(), 1u) << e.err;
  EXPECT_EQ(e.error_lines()[0].rfind("kotml: warning: ", 0), 0u) << e.err;
}

TEST(OtCli, SameOutputOnSeveralRanks) {
  TempDir dir;
  Problem p;
  write_input(dir.file("in.h5"), p);
  const auto one = parse(run_kotml({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn"}));
  const auto two = parse(run_kotml({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn"}, 2));
  EXPECT_EQ(one["cost"], two["cost"]);
  EXPECT_EQ(one["iterations"], two["iterations"]);
  const auto bad = run_kotml({"ot", "--input", dir.file("missing.h5")}, 2);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.error_lines().size(), 1u) << bad.err;
}

void expect_one_error(const std::vector<std::string>& args, const std::string& fragment,
                      const std::string& plan = "") {
  const auto r = run_kotml(args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
  EXPECT_NE(r.error_lines()[0].find(fragment), std::string::npos) << r.error_lines()[0];
  EXPECT_TRUE(r.out.empty()) << r.out;
  if (!plan.empty()) {
    EXPECT_FALSE(kotml::test::file_exists(plan));
  }
}

// A side read in more than one staging block (ot_input.cpp reads 2^20 values
// through float64 at a time; y here has 2100 × 500): the blocks' values land
// in their rows, the first non-finite coordinate is named by its own row, and
// what float32 cannot hold is counted over all blocks.
TEST(OtCli, SidesReadInBlocksKeepTheirRowsAndEveryCheck) {
  TempDir dir;
  Problem p;
  p.n = 9;
  p.m = 2100;
  p.dim = 500;
  p.x = test::normal_points(p.n, p.dim, 2010);
  p.y = test::normal_points(p.m, p.dim, 2011, 0.25);
  write_input(dir.file("two_blocks.h5"), p);
  const auto json = parse(run_kotml({"ot", "--input", dir.file("two_blocks.h5")}));
  HostMatrix<double> C("C", p.n, p.m);
  for (std::int64_t i = 0; i < p.n; ++i)
    for (std::int64_t j = 0; j < p.m; ++j)
      C(i, j) = ground_cost<double>(Cost::euclidean, &p.x[static_cast<std::size_t>(p.dim * i)],
                                    &p.y[static_cast<std::size_t>(p.dim * j)], p.dim, 0.0, 0.0);
  const auto sol = emd_dense(C, std::vector<double>(static_cast<std::size_t>(p.n), 1.0),
                             std::vector<double>(static_cast<std::size_t>(p.m), 1.0), EmdOptions{});
  EXPECT_LE(test::relative_error(json["cost"].get<double>(), sol.summary.cost), 1e-13);

  Problem late_nan = p;
  late_nan.y[static_cast<std::size_t>(2099 * p.dim + 7)] = std::numeric_limits<double>::quiet_NaN();
  write_input(dir.file("late_nan.h5"), late_nan);
  expect_one_error({"ot", "--input", dir.file("late_nan.h5"), "--solver", "sinkhorn"}, "point 2099 has a non-finite");

  Problem wide = p;
  wide.y[3] = 1e39;                                            // the first block
  wide.y[static_cast<std::size_t>(2098 * p.dim + 1)] = -1e39;  // the second
  wide.y[static_cast<std::size_t>(2099 * p.dim)] = 1e-40;
  write_input(dir.file("wide.h5"), wide);
  const std::string out = dir.file("out.h5");
  expect_one_error({"ot", "--input", dir.file("wide.h5"), "--solver", "sinkhorn", "--precision", "float", "-o", out},
                   "/y: 2 finite value(s) above 3.4e38 overflow", out);
  wide.y[3] = wide.y[static_cast<std::size_t>(2098 * p.dim + 1)] = 1;
  write_input(dir.file("tiny.h5"), wide);
  expect_one_error({"ot", "--input", dir.file("tiny.h5"), "--solver", "sinkhorn", "--precision", "float", "-o", out},
                   "/y: 1 non-zero value(s) below 1.2e-38 underflow", out);
}

TEST(OtCli, BadInputIsOneErrorLineAndExitCodeTwo) {
  TempDir dir;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto variant = [&](const std::string& name, auto change) {
    Problem p;
    change(p);
    write_input(dir.file(name), p);
    return dir.file(name);
  };
  const std::string plan = dir.file("plan.h5");
  expect_one_error({"ot", "--input", variant("nan_x.h5", [&](Problem& p) { p.x[5] = nan; }), "--plan", plan},
                   "/x", plan);
  expect_one_error({"ot", "--input", variant("inf_y.h5", [&](Problem& p) { p.y[0] = inf; })}, "non-finite");
  expect_one_error({"ot", "--input", variant("nan_a.h5", [&](Problem& p) {
                      p.a.assign(23, 1.0);
                      p.a[2] = nan;
                    })},
                   "/a");
  expect_one_error({"ot", "--input", variant("neg_b.h5", [&](Problem& p) {
                      p.b.assign(17, 1.0);
                      p.b[4] = -0.5;
                    }),
                    "--solver", "sinkhorn", "--plan", plan},
                   "negative", plan);
  expect_one_error({"ot", "--input", variant("zero_a.h5", [&](Problem& p) { p.a.assign(23, 0.0); })},
                   "sum to zero");
  expect_one_error({"ot", "--input", variant("dims.h5", [&](Problem& p) {
                      p.y = test::normal_points(17, 4, 2002);
                    })},
                   "dimensions");
  expect_one_error({"ot", "--input", variant("a_length.h5", [&](Problem& p) { p.a.assign(5, 1.0); })}, "/a");
  expect_one_error({"ot", "--input", variant("empty.h5", [&](Problem& p) {
                      p.x.clear();
                      p.n = 0;
                    })},
                   "empty");
  const std::string good = variant("good.h5", [](Problem&) {});
  expect_one_error({"ot", "--input", good, "--solver", "sinkhorn", "--epsilon", "0"}, "--epsilon");
  expect_one_error({"ot", "--input", good, "--solver", "sinkhorn", "--epsilon", "-2"}, "--epsilon");
  expect_one_error({"ot", "--input", good, "--solver", "sinkhorn", "--tau-a", "1.5"}, "--tau-a");
  expect_one_error({"ot", "--input", good, "--epsilon", "0.1"}, "sinkhorn only");
  expect_one_error({"ot", "--input", good, "--cost", "manhattan"}, "--cost");
  expect_one_error({"ot", "--input", good, "--solver", "simplex"}, "--solver");
  expect_one_error({"ot", "--input", dir.file("nothing.h5")}, "nothing.h5");
  {
    auto file = io::h5::File::create(dir.file("no_y.h5"));
    file.write("/x", std::vector<double>{1, 2, 3, 4}, {2, 2});
    file.close();
    expect_one_error({"ot", "--input", dir.file("no_y.h5")}, "/y");
  }
}

// ------------------------------------------------------- the tiled Sinkhorn

/// The same points as an .h5ad pair (obsm/X_emb) instead of /x and /y.
void write_h5ad_pair(const std::string& source, const std::string& target, const Problem& p) {
  for (const auto& [path, points, count] : {std::make_tuple(source, &p.x, p.n), std::make_tuple(target, &p.y, p.m)}) {
    io::AnnDataContent content;
    content.n_obs = count;
    content.n_vars = 2;
    content.x_dense.assign(static_cast<std::size_t>(count * 2), 1.0f);
    content.obsm.push_back({"X_emb", {*points, {count, p.dim}}});
    io::write_anndata(path, content);
  }
}

TEST(OtCli, SinkhornOnH5adAndOnHdf5AreTheSameProblem) {
  TempDir dir;
  Problem p;
  write_input(dir.file("in.h5"), p, false);
  write_h5ad_pair(dir.file("x.h5ad"), dir.file("y.h5ad"), p);
  const std::vector<std::string> common{"--solver", "sinkhorn", "--cost", "cosine", "--epsilon", "0.05",
                                        "--threshold", "1e-8"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "ot");
    args.insert(args.end(), common.begin(), common.end());
    return args;
  };
  const auto h5 = parse(run_kotml(with({"--input", dir.file("in.h5"), "-o", dir.file("a.h5"), "--sinkhorn-domain", "log"})));
  const auto ad = parse(run_kotml(with({"--source", dir.file("x.h5ad"), "--target", dir.file("y.h5ad"), "--use-rep",
                                        "X_emb", "-o", dir.file("b.h5"), "--online"})));
  EXPECT_EQ(h5["status"], "optimal");
  EXPECT_EQ(h5["cost_storage"], "stored");
  EXPECT_EQ(ad["cost_storage"], "online");
  EXPECT_EQ(h5["sinkhorn_domain"], "log");
  EXPECT_EQ(ad["sinkhorn_domain"], "log");
  // By default stored costs take the scaling domain: the same answer up to rounding.
  const auto scaled = parse(run_kotml(with({"--input", dir.file("in.h5"), "-o", dir.file("c.h5")})));
  EXPECT_EQ(scaled["sinkhorn_domain"], "scaling");
  EXPECT_EQ(scaled["iterations"], h5["iterations"]);
  EXPECT_NEAR(scaled["cost"].get<double>(), h5["cost"].get<double>(), 1e-12);
  {
    const auto c = io::h5::File::open_read(dir.file("c.h5")), a = io::h5::File::open_read(dir.file("a.h5"));
    const auto fc = c.read<double>("/f"), fa = a.read<double>("/f");
    for (std::size_t i = 0; i < fa.size(); ++i) EXPECT_NEAR(fc[i], fa[i], 1e-12) << i;
  }
  EXPECT_EQ(h5["cost"], ad["cost"]);
  EXPECT_EQ(h5["iterations"], ad["iterations"]);
  const auto a = io::h5::File::open_read(dir.file("a.h5")), b = io::h5::File::open_read(dir.file("b.h5"));
  for (const char* name : {"/f", "/g", "/errors"}) EXPECT_EQ(a.read<double>(name), b.read<double>(name)) << name;
  EXPECT_EQ(a.read<double>("/f").size(), static_cast<std::size_t>(p.n));
  EXPECT_EQ(a.read<std::int64_t>("/iterations")[0], h5["iterations"].get<std::int64_t>());
  EXPECT_LT(a.read<double>("/errors").back(), 1e-8);
  const auto config = nlohmann::json::parse(a.read_string_attribute("/", "configuration"));
  EXPECT_EQ(config["epsilon"], 0.05);
  EXPECT_LT(h5["marginal_error"].get<double>(), 1e-7);
  EXPECT_NEAR(h5["mass"].get<double>(), 1.0, 1e-8);
}

TEST(OtCli, TiledSinkhornIsTheSameOnThreeRanks) {
  TempDir dir;
  Problem p;
  p.n = 150;  // three row tiles: one per rank
  p.x = test::normal_points(150, 3, 2010);
  p.m = 600;  // three column tiles
  p.y = test::normal_points(600, 3, 2011, 0.5);
  write_input(dir.file("in.h5"), p, false);
  const std::vector<std::string> args{"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--precision",
                                      "float", "--tau-a", "0.9", "--epsilon", "0.1"};
  auto run = [&](int ranks, const std::string& out) {
    auto a = args;
    a.insert(a.end(), {"-o", out});
    return parse(run_kotml(a, ranks));
  };
  const auto one = run(1, dir.file("one.h5"));
  const auto three = run(3, dir.file("three.h5"));
  EXPECT_EQ(one["cost"], three["cost"]);
  EXPECT_EQ(one["error"], three["error"]);
  EXPECT_EQ(one["marginal_error"], three["marginal_error"]);
  // Column sums in chunks of one column tile (1 byte asks for the least) are
  // the bits of one chunk, on three ranks too.
  auto chunked = args;
  chunked.insert(chunked.end(), {"--column-sum-memory", "1", "-o", dir.file("chunked.h5")});
  const auto small = parse(run_kotml(chunked, 3));
  EXPECT_EQ(small["marginal_error"], one["marginal_error"]);
  EXPECT_EQ(small["mass"], one["mass"]);
  EXPECT_EQ(three["ranks"], 3);
  const auto a = io::h5::File::open_read(dir.file("one.h5")), b = io::h5::File::open_read(dir.file("three.h5"));
  EXPECT_EQ(a.read<double>("/f"), b.read<double>("/f"));
  EXPECT_EQ(a.read<double>("/g"), b.read<double>("/g"));
}

TEST(OtCli, NumericalFailureAndOutputsOntoInputsAreErrors) {
  TempDir dir;
  Problem p;
  write_input(dir.file("in.h5"), p, false);
  const std::string out = dir.file("out.h5");
  expect_one_error({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--epsilon", "1e-300", "-o", out},
                   "precision resolves", out);
  expect_one_error({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "-o", dir.file("./in.h5")}, "input");
  EXPECT_EQ(io::h5::File::open_read(dir.file("in.h5")).shape("/x"), (std::vector<std::int64_t>{p.n, p.dim}));
  expect_one_error({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--plan", dir.path()},
                   "not a regular file");
  expect_one_error({"ot", "--input", dir.file("in.h5"), "-o", out}, "sinkhorn only", out);
  // Finite weights whose sum overflows float64 (1e308 each): where only their
  // proportions count (EMD, balanced Sinkhorn) the problem is the uniform one,
  // not "infeasible"; where their mass counts (unbalanced) it is refused.
  Problem huge;
  huge.a.assign(static_cast<std::size_t>(huge.n), 1e308);
  write_input(dir.file("huge.h5"), huge);
  for (const std::string solver : {"emd", "sinkhorn"}) {
    const auto scaled = parse(run_kotml({"ot", "--input", dir.file("huge.h5"), "--solver", solver}));
    const auto plain = parse(run_kotml({"ot", "--input", dir.file("in.h5"), "--solver", solver}));
    EXPECT_EQ(scaled["status"], "optimal") << solver;
    EXPECT_EQ(scaled["cost"], plain["cost"]) << solver;
  }
  expect_one_error({"ot", "--input", dir.file("huge.h5"), "--solver", "sinkhorn", "--tau-a", "0.5", "-o", out},
                   "2^100", out);
  // Coordinates that float32 cannot hold are named with the remedy, not
  // turned into inf or 0 (cosine 1.0 where float64 gives the right answer).
  for (const double scale : {1e40, 1e-300}) {
    Problem scaled;
    for (double& v : scaled.x) v *= scale;
    write_input(dir.file("scaled.h5"), scaled, false);
    expect_one_error({"ot", "--input", dir.file("scaled.h5"), "--solver", "sinkhorn", "--precision", "float",
                      "--cost", "cosine", "-o", out},
                     scale > 1 ? "overflow on conversion to float32" : "underflow on conversion to float32", out);
    const auto fine = run_kotml({"ot", "--input", dir.file("scaled.h5"), "--solver", "sinkhorn", "--cost", "cosine"});
    EXPECT_EQ(fine.exit_code, 0) << fine.err;
  }
  expect_one_error({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--cost-memory", "0"},
                   "--cost-memory");
  expect_one_error({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--column-sum-memory", "-1"},
                   "--column-sum-memory");
  expect_one_error({"ot", "--input", dir.file("in.h5"), "--solver", "sinkhorn", "--updates", "jacobi"}, "--updates");
  expect_one_error({"ot", "--source", dir.file("in.h5"), "--solver", "sinkhorn"}, "--target");
}

}  // namespace
}  // namespace kotml::ot

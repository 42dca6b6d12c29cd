// Sampled GW end to end: TorchGW's spiral → Swiss-roll benchmark (k=5, M=80,
// α=0.8, ε=0.005, s_shared=400, 300 iterations) must match angles with
// |Spearman ρ| ≥ 0.99 in every distance mode; plus reproducibility, the
// semi-relaxed marginals and option checks.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <numeric>

#include "kotml/core/error.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/gw/generators.hpp"
#include "kotml/gw/quality.hpp"
#include "kotml/gw/row_partition.hpp"
#include "kotml/gw/sampled_gw.hpp"

using namespace kotml;
using namespace kotml::gw;

namespace {

struct Benchmark {
  Manifold src = spiral(400), tgt = swiss_roll(500);
  graph::CsrGraph<MemSpace> gs, gt;
  Benchmark() {
    gs = graph::build_knn_graph(device_points(src), 5);
    gt = graph::build_knn_graph(device_points(tgt), 5);
  }
  static SampledGwOptions options() {
    SampledGwOptions o;
    o.samples = 80;
    o.alpha = 0.8;
    o.epsilon = 0.005;
    o.max_iter = 300;
    o.s_shared = 400;
    return o;
  }
};

/// The benchmark clouds and one run per (mode, precision), shared by the tests
/// that look at them and released before Kokkos finalises.
class SpiralBenchmark : public ::testing::Test {
 public:
  static void TearDownTestSuite() {
    done.clear();
    clouds.reset();
  }
  static std::unique_ptr<Benchmark> clouds;
  static std::map<std::pair<DistanceMode, bool>, SampledGwResult> done;
};
std::unique_ptr<Benchmark> SpiralBenchmark::clouds;
std::map<std::pair<DistanceMode, bool>, SampledGwResult> SpiralBenchmark::done;

const Benchmark& benchmark() {
  if (!SpiralBenchmark::clouds) SpiralBenchmark::clouds = std::make_unique<Benchmark>();
  return *SpiralBenchmark::clouds;
}

const SampledGwResult& run_mode(DistanceMode mode, bool mixed) {
  auto& done = SpiralBenchmark::done;
  const auto key = std::make_pair(mode, mixed);
  if (done.count(key)) return done.at(key);
  const auto& b = benchmark();
  dist::Comm comm;
  std::unique_ptr<DistanceProvider> ps, pt;
  switch (mode) {
    case DistanceMode::precomputed:
      ps = precomputed_from_graph(b.gs, comm);
      pt = precomputed_from_graph(b.gt, comm);
      break;
    case DistanceMode::dijkstra:
      ps = dijkstra_provider(b.gs, 2000, comm);
      pt = dijkstra_provider(b.gt, 2000, comm);
      break;
    case DistanceMode::landmark:
    {
      auto both = landmark_providers(b.gs, b.gt, 20, comm);
      ps = std::move(both.source);
      pt = std::move(both.target);
      break;
    }
  }
  auto o = Benchmark::options();
  o.mixed_precision = mixed;
  return done[key] = sampled_gw(*ps, *pt, o, comm);
}

double rho_of(const SampledGwResult& r) {
  return angle_correlation(benchmark().src.angle, benchmark().tgt.angle, r.match);
}

}  // namespace

TEST_F(SpiralBenchmark, SpiralToSwissRollDijkstra) {
  const auto& r = run_mode(DistanceMode::dijkstra, false);
  const double rho = rho_of(r);
  EXPECT_GE(std::fabs(rho), 0.99) << "rho " << rho;
  // TorchGW's invariants: plan non-negative, mass ≤ 1, finite positive cost,
  // the plateau rule stops before max_iter, one err per check.
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), r.plan);
  double mass = 0;
  for (std::size_t f = 0; f < h.size(); ++f) {
    ASSERT_GE(h.data()[f], 0.0);
    mass += h.data()[f];
  }
  EXPECT_LE(mass, 1.0 + 1e-6);
  EXPECT_GT(mass, 0.99);
  EXPECT_TRUE(std::isfinite(r.gw_cost) && r.gw_cost > 0);
  EXPECT_GE(r.iterations, 50);
  EXPECT_LT(r.iterations, 300);
  EXPECT_EQ(r.err_list.size(), r.cost_list.size());
  EXPECT_LT(r.final_epsilon, 0.005);
}

TEST_F(SpiralBenchmark, SpiralToSwissRollPrecomputed) {
  const double rho = rho_of(run_mode(DistanceMode::precomputed, false));
  EXPECT_GE(std::fabs(rho), 0.99) << "rho " << rho;
}

TEST_F(SpiralBenchmark, SpiralToSwissRollLandmarkMixedPrecision) {
  const double rho = rho_of(run_mode(DistanceMode::landmark, true));
  EXPECT_GE(std::fabs(rho), 0.99) << "rho " << rho;
}

TEST_F(SpiralBenchmark, PrecomputedAndDijkstraAgreeExactly) {
  // Both modes give the same float32 geodesics, so with one seed the runs are
  // the same run.
  const auto& a = run_mode(DistanceMode::precomputed, false);
  const auto& b = run_mode(DistanceMode::dijkstra, false);
  EXPECT_EQ(a.match, b.match);
  EXPECT_EQ(a.gw_cost, b.gw_cost);
  EXPECT_EQ(a.iterations, b.iterations);
}

TEST(SampledGw, SeedsReproduceAndDiffer) {
  dist::Comm comm;
  const auto src = spiral(120), tgt = swiss_roll(150);
  const auto gs = graph::build_knn_graph(device_points(src), 5);
  const auto gt = graph::build_knn_graph(device_points(tgt), 5);
  auto ps = precomputed_from_graph(gs, comm), pt = precomputed_from_graph(gt, comm);
  SampledGwOptions o;
  o.samples = 30;
  o.max_iter = 30;
  o.epsilon = 0.01;
  const auto a = sampled_gw(*ps, *pt, o, comm);
  const auto b = sampled_gw(*ps, *pt, o, comm);
  EXPECT_EQ(a.err_list, b.err_list);
  EXPECT_EQ(a.match, b.match);
  o.seed = 1;
  const auto c = sampled_gw(*ps, *pt, o, comm);
  EXPECT_NE(a.err_list, c.err_list);
}

TEST(SampledGw, WithoutTheKeptPlanTheSolveIsTheSame) {
  // keep_plan only decides whether T's rows are widened into the result: the
  // matching, costs and errors are those of a run that keeps them.
  dist::Comm comm;
  const auto src = spiral(120), tgt = swiss_roll(150);
  const auto gs = graph::build_knn_graph(device_points(src), 5);
  const auto gt = graph::build_knn_graph(device_points(tgt), 5);
  const auto both = landmark_providers(gs, gt, 20, comm);
  auto& ps = both.source;
  auto& pt = both.target;
  SampledGwOptions o;
  o.samples = 30;
  o.max_iter = 20;
  o.epsilon = 0.01;
  o.mixed_precision = true;
  const auto kept = sampled_gw(*ps, *pt, o, comm);
  o.keep_plan = false;
  const auto bare = sampled_gw(*ps, *pt, o, comm);
  EXPECT_EQ(kept.plan.extent(0), 120u);
  EXPECT_EQ(kept.plan.extent(1), 150u);
  EXPECT_EQ(bare.plan.size(), 0u);
  EXPECT_EQ(kept.match, bare.match);
  EXPECT_EQ(kept.err_list, bare.err_list);
  EXPECT_EQ(kept.cost_list, bare.cost_list);
  EXPECT_EQ(kept.gw_cost, bare.gw_cost);
}

TEST(SampledGw, SemiRelaxedKeepsSourceMarginal) {
  // TorchGW's test: row sums stay within 0.01 of p while the target relaxes.
  dist::Comm comm;
  const auto src = spiral(100), tgt = swiss_roll(130);
  const auto gs = graph::build_knn_graph(device_points(src), 5);
  const auto gt = graph::build_knn_graph(device_points(tgt), 5);
  auto ps = precomputed_from_graph(gs, comm), pt = precomputed_from_graph(gt, comm);
  SampledGwOptions o;
  o.samples = 40;
  o.max_iter = 40;
  o.epsilon = 0.01;
  o.semi_relaxed = true;
  o.rho = 0.5;
  const auto r = sampled_gw(*ps, *pt, o, comm);
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), r.plan);
  double column_spread = 0;
  std::vector<double> col(130, 0.0);
  for (std::int64_t i = 0; i < 100; ++i) {
    double row = 0;
    for (std::int64_t k = 0; k < 130; ++k) {
      row += h(i, k);
      col[k] += h(i, k);
    }
    EXPECT_NEAR(row, 0.01, 0.01);
  }
  for (double c : col) column_spread = std::max(column_spread, std::fabs(c - 1.0 / 130));
  EXPECT_GT(column_spread, 1e-4);  // the target marginal did move
}

TEST(SampledGw, OptionsAreChecked) {
  SampledGwOptions o;
  EXPECT_NO_THROW(o.validate());
  o.samples = 0;
  EXPECT_THROW(o.validate(), Error);
  o = SampledGwOptions();
  o.alpha = 0;
  EXPECT_THROW(o.validate(), Error);
  o = SampledGwOptions();
  o.sinkhorn_check_every = 0;
  EXPECT_THROW(o.validate(), Error);
  EXPECT_THROW(parse_distance_mode("geodesic", "mode"), Error);
  EXPECT_EQ(parse_distance_mode("landmark", "mode"), DistanceMode::landmark);
}

TEST(SampledGw, BadMarginalsAreErrors) {
  dist::Comm comm;
  const std::vector<float> d = {0, 1, 1, 0};
  auto a = precomputed_from_matrix(2, d, "a", comm), b = precomputed_from_matrix(2, d, "b", comm);
  SampledGwOptions o;
  o.max_iter = 2;
  EXPECT_THROW(sampled_gw(*a, *b, o, comm, {0.5}, {}), Error);
  EXPECT_THROW(sampled_gw(*a, *b, o, comm, {0.5, -0.5}, {}), Error);
  EXPECT_THROW(sampled_gw(*a, *b, o, comm, {}, {0.0, 0.0}), Error);
  EXPECT_NO_THROW(sampled_gw(*a, *b, o, comm, {0.3, 0.7}, {}));
}

TEST(SampledGw, PrecomputedMatrixIsValidated) {
  dist::Comm comm;
  EXPECT_THROW(precomputed_from_matrix(2, {0, 1, -1, 0}, "m", comm), Error);
  EXPECT_THROW(precomputed_from_matrix(2, {0, 1, std::nanf(""), 0}, "m", comm), Error);
  EXPECT_THROW(precomputed_from_matrix(2, {0, 1, 1}, "m", comm), Error);
}

// Rank blocks are whole 16-row tiles, contiguous and in rank order, and every
// rank holds rows once there are as many tiles as ranks.
TEST(PlanRows, WholeTilesInRankOrder) {
  for (const std::int64_t n : {std::int64_t(150), std::int64_t(16384), std::int64_t(32768), std::int64_t(100000)}) {
    for (const int ranks : {1, 3, 1024}) {
      std::int64_t next = 0, empty = 0;
      for (int r = 0; r < ranks; ++r) {
        const auto b = plan_rows(n, ranks, r);
        EXPECT_EQ(b.begin, next) << n << " " << ranks << " " << r;
        EXPECT_TRUE(b.begin == n || b.begin % plan_row_tile == 0);
        EXPECT_TRUE(b.end == n || (b.end - b.begin) % plan_row_tile == 0);
        empty += b.end == b.begin;
        next = b.end;
      }
      EXPECT_EQ(next, n);
      if (n >= plan_row_tile * ranks) {
        EXPECT_EQ(empty, 0) << n << " points on " << ranks << " ranks";
      }
    }
  }
  EXPECT_EQ(plan_row_tile, 16);
}

TEST(Generators, FollowTorchgwConstruction) {
  const auto s = spiral(101), r = swiss_roll(101);
  ASSERT_EQ(s.dims, 2);
  ASSERT_EQ(r.dims, 3);
  EXPECT_DOUBLE_EQ(s.angle.front(), 0.0);
  EXPECT_DOUBLE_EQ(s.angle.back(), 9.0);
  EXPECT_DOUBLE_EQ(s.angle[50], 4.5);
  // Radial noise: the radius without noise is linspace(0.3, 1); the residual
  // of x/cos θ (away from zeros of cos) has sd 0.05.
  double sum = 0, sum2 = 0;
  int count = 0;
  for (int i = 0; i < 101; ++i) {
    const double c = std::cos(s.angle[i]);
    if (std::fabs(c) < 0.3) continue;
    const double e = s.points[2 * i] / c - (0.3 + 0.7 * i / 100.0);
    sum += e;
    sum2 += e * e;
    ++count;
  }
  EXPECT_NEAR(sum / count, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(sum2 / count), 0.05, 0.015);
  for (int i = 0; i < 101; ++i) {
    EXPECT_GE(r.points[3 * i + 1], 0.0);  // depth in [0, 1)
    EXPECT_LT(r.points[3 * i + 1], 1.0);
  }
  EXPECT_EQ(spiral(101).points, s.points);  // seeded
  EXPECT_NE(spiral(101, 5).points, s.points);
}

TEST(Quality, SpearmanMatchesScipyConventions) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // scipy.stats.spearmanr([1,2,2,3],[1,3,2,4]).statistic = 0.9486832980505139
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 3, 2, 4}), 0.9486832980505139, 1e-15);
}

// The tiled Sinkhorn on 1, 2 and 3 ranks gives the bits of one rank: each rank
// solves its block of rows with the others (MPI_COMM_WORLD) and the whole
// problem alone (MPI_COMM_SELF), and every potential, error, column sum, block
// sum and point gradient must be identical. Includes a rank without rows.

#include <gtest/gtest.h>

#include <map>

#include "kotml/core/phase_timers.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"
#include "tiled_test_support.hpp"

namespace kotml::ot {
namespace {

struct Setup {
  std::int64_t n, m;
  int dim;
  Cost kind;
  bool labelled;
  TiledSinkhornOptions options;
};

/// Returns the one-rank solve's report.
template <class T>
TiledSinkhornReport expect_rank_independent(const Setup& setup, const std::vector<std::int64_t>& tiny_rows = {}) {
  const dist::Comm world;
  const dist::Comm self(MPI_COMM_SELF);
  auto x = test::random_cloud(setup.n, setup.dim, 101);
  const auto y = test::random_cloud(setup.m, setup.dim, 102);
  for (const auto i : tiny_rows) x.weights[static_cast<std::size_t>(i)] = 1e-15;
  PointCost cost;
  cost.kind = setup.kind;
  cost.feature_weight = 0.5;
  if (setup.labelled) cost.label = test::label_table(3, 3, 1.5);

  const RowBlock mine = RowBlock::of(x.n, world.size(), world.rank());
  test::DevicePoints<T> dx(x, mine.begin, mine.count), dy(y), whole(x);
  // The shared solve reduces its column sums one column tile at a time, the
  // lone one in one chunk: the same bits.
  TiledSinkhornOptions chunked = setup.options;
  chunked.column_chunk_bytes = 1;
  TiledSinkhorn<T> shared(world, mine, dx.view(), dy.view(), cost, chunked);
  TiledSinkhorn<T> alone(self, RowBlock::of(x.n, 1, 0), whole.view(), dy.view(), cost, setup.options);
  const auto r_shared = shared.solve();
  const auto r_alone = alone.solve();
  EXPECT_EQ(r_shared.iterations, r_alone.iterations);
  EXPECT_EQ(r_shared.errors, r_alone.errors);
  EXPECT_EQ(r_shared.status, r_alone.status);
  EXPECT_EQ(r_shared.scaling_domain, r_alone.scaling_domain);
  EXPECT_EQ(r_shared.kernel_builds, r_alone.kernel_builds);
  EXPECT_EQ(r_shared.columns_absorbed, r_alone.columns_absorbed);
  EXPECT_EQ(world.sum(r_shared.rows_absorbed), r_alone.rows_absorbed);
  if (setup.options.domain == SinkhornDomain::scaling) {
    EXPECT_TRUE(r_alone.scaling_domain);
    EXPECT_EQ(r_alone.rows_absorbed > 0, !tiny_rows.empty());
  }
  EXPECT_EQ(shared.g(), alone.g());
  const auto f_all = alone.f();
  EXPECT_EQ(shared.f(), std::vector<double>(f_all.begin() + mine.begin, f_all.begin() + mine.begin + mine.count));

  // Column sums of the plan by source label, and block sums.
  std::vector<double> u_all(static_cast<std::size_t>(x.n));
  for (std::size_t i = 0; i < u_all.size(); ++i) u_all[i] = 1.0 + 0.01 * static_cast<double>(i % 7);
  const std::vector<double> u_mine(u_all.begin() + mine.begin, u_all.begin() + mine.begin + mine.count);
  const std::vector<std::int32_t> groups_mine(x.labels.begin() + mine.begin,
                                              x.labels.begin() + mine.begin + mine.count);
  EXPECT_EQ(shared.transpose_apply(u_mine, groups_mine, 3), alone.transpose_apply(u_all, x.labels, 3));
  const auto b_shared = shared.block_sums(groups_mine, 3, y.labels, 3);
  const auto b_alone = alone.block_sums(x.labels, 3, y.labels, 3);
  EXPECT_EQ(b_shared.mass, b_alone.mass);
  EXPECT_EQ(b_shared.cost, b_alone.cost);
  EXPECT_EQ(b_shared.plain_cost, b_alone.plain_cost);
  EXPECT_EQ(b_shared.count, b_alone.count);
  // Row sums by target label: this rank's rows of the whole.
  const std::vector<double> ones(static_cast<std::size_t>(y.n), 1.0);
  const auto rows_alone = alone.apply(ones, y.labels, 3);
  EXPECT_EQ(shared.apply(ones, y.labels, 3),
            std::vector<double>(rows_alone.begin() + 3 * mine.begin, rows_alone.begin() + 3 * (mine.begin + mine.count)));
  // Point gradients (feature costs without labels): this rank's rows of the
  // whole, and every column's exact sum over ranks.
  if (setup.kind != Cost::cosine && !setup.labelled) {
    const auto g_shared = shared.point_gradients();
    const auto g_alone = alone.point_gradients();
    const auto d = static_cast<std::int64_t>(setup.dim);
    EXPECT_EQ(g_shared.rows, std::vector<double>(g_alone.rows.begin() + d * mine.begin,
                                                 g_alone.rows.begin() + d * (mine.begin + mine.count)));
    EXPECT_EQ(g_shared.cols, g_alone.cols);
  }
  return r_alone;
}

TiledSinkhornOptions with(double eps, double tau, DualUpdates updates, CostStorage storage, int max_iter) {
  TiledSinkhornOptions o;
  o.epsilon = eps;
  o.tau_a = o.tau_b = tau;
  o.updates = updates;
  o.storage = storage;
  o.max_iterations = max_iter;
  o.threshold = 1e-7;
  return o;
}

TEST(TiledSinkhornRanks, AlternatingFloatWithLabelsOnline) {
  // 5 row tiles: 3 ranks hold 2, 2 and 1; 2 column tiles, the second short.
  const auto report = expect_rank_independent<float>(
      {300, 270, 6, Cost::cosine, true, with(0.05, 1.0, DualUpdates::alternating, CostStorage::online, 300)});
  EXPECT_EQ(report.joint_passes, report.iterations);  // one pass per iteration
}

TEST(TiledSinkhornRanks, UnbalancedJointPassesWithAnIdleRank) {
  // 2 row tiles: on 3 ranks the last holds none and still joins every pass.
  const auto report = expect_rank_independent<double>(
      {100, 290, 4, Cost::sqeuclidean, false, with(0.2, 0.85, DualUpdates::alternating, CostStorage::online, 300)});
  EXPECT_GT(report.joint_passes, 0);
}

TEST(TiledSinkhornRanks, SymmetricUnbalancedDoubleStored) {
  expect_rank_independent<double>({300, 200, 4, Cost::sqeuclidean, false,
                                   with(0.5, 0.9, DualUpdates::symmetric, CostStorage::stored, 200)});
}

TEST(TiledSinkhornRanks, ScalingDomainFloatWithLabelsAndAbsorbedRows) {
  // Three rows of tiny weight are absorbed on whichever rank holds them.
  auto o = with(0.05, 0.8, DualUpdates::alternating, CostStorage::stored, 300);
  o.domain = SinkhornDomain::scaling;
  expect_rank_independent<float>({300, 270, 6, Cost::cosine, true, o}, {7, 150, 290});
}

TEST(TiledSinkhornRanks, ScalingDomainDoubleWithAnIdleRank) {
  auto o = with(0.05, 1.0, DualUpdates::alternating, CostStorage::automatic, 300);
  expect_rank_independent<double>({100, 90, 3, Cost::cosine, false, o});
}

TEST(TiledSinkhornRanks, ScalingDomainFloatOverThousandsOfEpsilon) {
  // Squared distances between blobs span about 2000ε: automatic takes the
  // scaling domain, and K̃ is rebuilt or rows and columns absorbed on the way.
  auto o = with(0.05, 1.0, DualUpdates::alternating, CostStorage::automatic, 400);
  o.threshold = 0;
  const auto report = expect_rank_independent<float>({300, 270, 4, Cost::sqeuclidean, false, o});
  EXPECT_TRUE(report.scaling_domain);
  EXPECT_FALSE(report.scaling_fallback);
  EXPECT_GT(report.kernel_builds + report.rows_absorbed + report.columns_absorbed, 1);
}

TEST(TiledSinkhornRanks, RelativeEpsilonScaledEuclideanWithAnIdleRank) {
  // 100 rows are two tiles: on 3 ranks the last holds none.
  auto o = with(0.1, 1.0, DualUpdates::alternating, CostStorage::automatic, 400);
  o.relative_epsilon = true;
  o.epsilon_init = 30;
  o.epsilon_decay = 0.85;
  expect_rank_independent<double>({100, 90, 3, Cost::euclidean, false, o});
}

TEST(TiledSinkhornRanks, SolveTimesItsTilesAllreducesAndChecksInsideTheCallersPhase) {
  // The scaling study reads these nested phases (perf/scaling): every tile
  // sweep is one call of "tiles", every error check one of "error", and every
  // column update at least one allreduce, on every rank, rows or none.
  const dist::Comm world;
  const auto x = test::random_cloud(100, 4, 101);
  const auto y = test::random_cloud(290, 4, 102);
  PointCost cost;
  cost.kind = Cost::sqeuclidean;
  const RowBlock mine = RowBlock::of(x.n, world.size(), world.rank());
  test::DevicePoints<double> dx(x, mine.begin, mine.count), dy(y);
  auto options = with(0.2, 1.0, DualUpdates::alternating, CostStorage::online, 40);
  options.threshold = 0;
  TiledSinkhorn<double> solver(world, mine, dx.view(), dy.view(), cost, options);
  timers::reset();
  TiledSinkhornReport report;
  {
    const auto solve = timers::scope("solve");
    report = solver.solve();
  }
  std::map<std::string, timers::PhaseTime> by_name;
  for (const auto& p : timers::phases()) by_name[p.name] = p;
  ASSERT_EQ(by_name.count("solve/tiles"), 1u);
  ASSERT_EQ(by_name.count("solve/allreduce"), 1u);
  ASSERT_EQ(by_name.count("solve/error"), 1u);
  EXPECT_EQ(report.iterations, 40);
  EXPECT_EQ(by_name["solve/tiles"].calls, report.tile_sweeps);
  EXPECT_EQ(by_name["solve/error"].calls, static_cast<std::int64_t>(report.errors.size()));
  EXPECT_GE(by_name["solve/allreduce"].calls, report.iterations);
  const double inside =
      by_name["solve/tiles"].seconds + by_name["solve/allreduce"].seconds + by_name["solve/error"].seconds;
  EXPECT_LE(inside, by_name["solve"].seconds);
  EXPECT_EQ(by_name["solve"].calls, 1);
}

}  // namespace
}  // namespace kotml::ot

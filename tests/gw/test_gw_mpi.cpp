// Sampled GW on 1, 2 and 3 ranks gives the same bits as on one rank: the plan
// rows each rank holds, the matching, the cost and every err. Each rank also
// solves the whole problem alone (MPI_COMM_SELF) and compares.

#include <gtest/gtest.h>

#include <random>

#include "kotml/graph/knn_graph.hpp"
#include "kotml/gw/anchor_sampling.hpp"
#include "kotml/gw/cost_estimate.hpp"
#include "kotml/gw/generators.hpp"
#include "kotml/gw/row_partition.hpp"
#include "kotml/gw/sampled_gw.hpp"
#include "kotml/gw/slack_sinkhorn.hpp"

using namespace kotml;
using namespace kotml::gw;

namespace {

DistanceProviders providers(DistanceMode mode, const graph::CsrGraph<MemSpace>& gs,
                            const graph::CsrGraph<MemSpace>& gt, const dist::Comm& comm) {
  if (mode == DistanceMode::landmark) return landmark_providers(gs, gt, 10, comm);
  DistanceProviders both;
  if (mode == DistanceMode::precomputed) {
    both.source = precomputed_from_graph(gs, comm);
    both.target = precomputed_from_graph(gt, comm);
  } else {  // small caches: evictions happen
    both.source = dijkstra_provider(gs, 16, comm);
    both.target = dijkstra_provider(gt, 16, comm);
  }
  return both;
}

void expect_same_run(DistanceMode mode, bool mixed) {
  const dist::Comm world;
  const dist::Comm self(MPI_COMM_SELF);
  // 150 rows: ten tiles of 16, the last one short, on rank 2 of 3.
  const auto src = spiral(150), tgt = swiss_roll(180);
  const auto gs = graph::build_knn_graph(device_points(src), 5, world);
  const auto gt = graph::build_knn_graph(device_points(tgt), 5, world);
  SampledGwOptions o;
  o.samples = 30;
  o.max_iter = 25;
  o.min_iter_before_converge = 10;
  o.epsilon = 0.01;
  o.mixed_precision = mixed;
  auto w = providers(mode, gs, gt, world);
  const auto distributed = sampled_gw(*w.source, *w.target, o, world);
  auto s = providers(mode, gs, gt, self);
  const auto alone = sampled_gw(*s.source, *s.target, o, self);

  EXPECT_EQ(distributed.match, alone.match);
  EXPECT_EQ(distributed.err_list, alone.err_list);
  EXPECT_EQ(distributed.cost_list, alone.cost_list);
  EXPECT_EQ(distributed.iterations, alone.iterations);
  EXPECT_EQ(distributed.sinkhorn_iterations, alone.sinkhorn_iterations);
  const auto rows = plan_rows(150, world.size(), world.rank());
  EXPECT_EQ(distributed.row_begin, rows.begin);
  EXPECT_EQ(distributed.row_end, rows.end);
  auto mine = Kokkos::create_mirror_view_and_copy(HostSpace(), distributed.plan);
  auto whole = Kokkos::create_mirror_view_and_copy(HostSpace(), alone.plan);
  std::int64_t differing = 0;
  for (std::int64_t i = rows.begin; i < rows.end; ++i)
    for (std::int64_t k = 0; k < 180; ++k) differing += mine(i - rows.begin, k) != whole(i, k);
  EXPECT_EQ(differing, 0);
}

}  // namespace

TEST(GwAcrossRanks, PrecomputedIsBitIdentical) { expect_same_run(DistanceMode::precomputed, false); }
TEST(GwAcrossRanks, DijkstraWithEvictionsIsBitIdentical) { expect_same_run(DistanceMode::dijkstra, false); }
TEST(GwAcrossRanks, LandmarkFloat32IsBitIdentical) { expect_same_run(DistanceMode::landmark, true); }

TEST(GwAcrossRanks, SlackSinkhornPotentialsAreBitIdentical) {
  const dist::Comm world;
  const dist::Comm self(MPI_COMM_SELF);
  const std::int64_t n = 200, k = 90;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> cost(n * k), p(n, 1.0 / n), q(k, 1.0 / k);
  for (auto& c : cost) c = u(rng);
  const auto rows = plan_rows(n, world.size(), world.rank());
  auto solve = [&](const dist::Comm& comm, std::int64_t begin, std::int64_t end) {
    SlackSinkhorn<double> s(std::vector<double>(p.begin() + begin, p.begin() + end), q, 1e-10, 1e-10,
                            n, comm);
    Matrix<double> c("cost", end - begin, k);
    auto h = Kokkos::create_mirror_view(c);
    for (std::int64_t i = begin; i < end; ++i)
      for (std::int64_t j = 0; j < k; ++j) h(i - begin, j) = cost[i * k + j];
    Kokkos::deep_copy(c, h);
    SlackSinkhornSettings settings;
    settings.tol = 1e-9;
    settings.max_iter = 500;
    s.solve(c, 100.0, 0.02, settings);
    return std::make_pair(Kokkos::create_mirror_view_and_copy(HostSpace(), s.log_u()),
                          Kokkos::create_mirror_view_and_copy(HostSpace(), s.log_v()));
  };
  const auto [u_world, v_world] = solve(world, rows.begin, rows.end);
  const auto [u_self, v_self] = solve(self, 0, n);
  for (std::int64_t j = 0; j <= k; ++j) EXPECT_EQ(v_world(j), v_self(j)) << j;
  for (std::int64_t i = rows.begin; i < rows.end; ++i) EXPECT_EQ(u_world(i - rows.begin), u_self(i)) << i;
}

TEST(GwAcrossRanks, AnchorPairsAreTheSame) {
  const dist::Comm world;
  const dist::Comm self(MPI_COMM_SELF);
  const std::int64_t n = 130, k = 20;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> t(n * k), mass(n, 0.0);
  for (std::int64_t f = 0; f < n * k; ++f) {
    t[f] = u(rng) * u(rng);
    mass[f / k] += t[f];
  }
  auto block = [&](std::int64_t begin, std::int64_t end) {
    Matrix<double> m("plan", end - begin, k);
    auto h = Kokkos::create_mirror_view(m);
    for (std::int64_t i = begin; i < end; ++i)
      for (std::int64_t j = 0; j < k; ++j) h(i - begin, j) = t[i * k + j];
    Kokkos::deep_copy(m, h);
    return m;
  };
  const auto rows = plan_rows(n, world.size(), world.rank());
  AnchorSampler<double> a(n, 64, world), b(n, 64, self);
  const auto x = a.draw(block(rows.begin, rows.end), rows.begin, mass, 5, 2);
  const auto y = b.draw(block(0, n), 0, mass, 5, 2);
  EXPECT_EQ(x.source, y.source);
  EXPECT_EQ(x.target, y.target);
}

TEST(GwAcrossRanks, CostEstimateOfSplitRowsIsTheWholeBlocks) {
  // The blocks' maxima and infinities are taken over every rank: infinities
  // sit in the first source row and the last target row only (so on one rank
  // each), and the largest finite entries on other ranks' rows.
  const dist::Comm world;
  const dist::Comm self(MPI_COMM_SELF);
  const std::int64_t n = 140, k = 70, m = 9;
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<float> u(0.0f, 2.0f);
  std::vector<float> dx(n * m), dy(k * m);
  for (auto& v : dx) v = u(rng);
  for (auto& v : dy) v = u(rng);
  dx[3] = inf;
  dx[(n / 2) * m + 1] = 7.5f;
  dy[(k - 1) * m + 4] = inf;
  dy[5] = 6.0f;
  auto block = [](const std::vector<float>& v, std::int64_t begin, std::int64_t end, std::int64_t cols) {
    DistanceBlock d("raw", end - begin, cols);
    auto h = Kokkos::create_mirror_view(d);
    for (std::int64_t i = begin; i < end; ++i)
      for (std::int64_t t = 0; t < cols; ++t) h(i - begin, t) = v[static_cast<std::size_t>(i * cols + t)];
    Kokkos::deep_copy(d, h);
    return d;
  };
  const auto rows = plan_rows(n, world.size(), world.rank());
  const auto targets = plan_rows(k, world.size(), world.rank());
  CostEstimate<float> shared(rows.end - rows.begin, k, m, world), alone(n, k, m, self);
  Matrix<float> lambda_shared("lambda", rows.end - rows.begin, k), lambda_alone("lambda", n, k);
  const double top_shared =
      shared.build(block(dx, rows.begin, rows.end, m), block(dy, targets.begin, targets.end, m), lambda_shared, world);
  const double top_alone = alone.build(block(dx, 0, n, m), block(dy, 0, k, m), lambda_alone, self);
  EXPECT_EQ(top_shared, top_alone);
  auto mine = Kokkos::create_mirror_view_and_copy(HostSpace(), lambda_shared);
  auto whole = Kokkos::create_mirror_view_and_copy(HostSpace(), lambda_alone);
  std::int64_t differing = 0;
  for (std::int64_t i = rows.begin; i < rows.end; ++i)
    for (std::int64_t j = 0; j < k; ++j) differing += mine(i - rows.begin, j) != whole(i, j);
  EXPECT_EQ(differing, 0);
}

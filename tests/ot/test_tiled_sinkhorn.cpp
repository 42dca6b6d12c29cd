// The tiled Sinkhorn on one rank: its tile costs against the reference
// formulas, stored against recomputed tiles (same bits), its plans against the
// dense solver's, its variants against each other, its plan applications
// against dense products, and its input checks. OTT-JAX fixtures: test_ott.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <type_traits>

#include "kotml/core/error.hpp"
#include "kotml/ot/sinkhorn.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"
#include "tiled_test_support.hpp"

namespace kotml::ot {
namespace {

using test::DevicePoints;
using test::HostCloud;
using test::random_cloud;

const dist::Comm& self() {
  static const dist::Comm comm(MPI_COMM_SELF);
  return comm;
}

template <class T>
struct Solved {
  std::vector<double> f, g;
  TiledSinkhornReport report;
};

template <class T>
Solved<T> solve(const HostCloud& x, const HostCloud& y, const PointCost& cost, const TiledSinkhornOptions& o) {
  DevicePoints<T> dx(x), dy(y);
  TiledSinkhorn<T> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
  Solved<T> s;
  s.report = solver.solve();
  s.f = solver.f();
  s.g = solver.g();
  return s;
}

/// Every cell its own block: block_sums then lists each cost and plan entry.
template <class T>
PlanBlockSums cell_sums(TiledSinkhorn<T>& solver, std::int64_t n, std::int64_t m) {
  std::vector<std::int32_t> rows(static_cast<std::size_t>(n)), cols(static_cast<std::size_t>(m));
  std::iota(rows.begin(), rows.end(), 0);
  std::iota(cols.begin(), cols.end(), 0);
  return solver.block_sums(rows, static_cast<std::int32_t>(n), cols, static_cast<std::int32_t>(m));
}

TiledSinkhornOptions tight() {
  TiledSinkhornOptions o;
  o.epsilon = 0.5;
  o.threshold = 1e-12;
  o.max_iterations = 5000;
  return o;
}

// ----------------------------------------------------------------- costs

template <class T>
void check_tile_costs(Cost kind, bool labelled, double tolerance) {
  // 70 × 300: a short second row tile and a short second column tile.
  const auto x = random_cloud(70, 5, 1), y = random_cloud(300, 5, 2);
  PointCost cost;
  cost.kind = kind;
  cost.feature_weight = 0.75;
  if (labelled) cost.label = test::label_table(3, 3, 1.5);
  DevicePoints<T> dx(x), dy(y);
  TiledSinkhornOptions o;
  o.storage = CostStorage::online;
  TiledSinkhorn<T> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
  const auto sums = cell_sums(solver, x.n, y.n);
  double worst = 0;
  for (std::int64_t i = 0; i < x.n; ++i)
    for (std::int64_t j = 0; j < y.n; ++j) {
      // The reference in the points' precision.
      std::vector<double> xi(x.points.begin() + i * 5, x.points.begin() + i * 5 + 5);
      std::vector<double> yj(y.points.begin() + j * 5, y.points.begin() + j * 5 + 5);
      for (auto& v : xi) v = static_cast<T>(v);
      for (auto& v : yj) v = static_cast<T>(v);
      const double want = point_cost_reference(cost, xi.data(), yj.data(), 5, x.labels[static_cast<std::size_t>(i)],
                                               y.labels[static_cast<std::size_t>(j)]);
      const double got = sums.plain_cost[static_cast<std::size_t>(i * y.n + j)];
      worst = std::max(worst, std::fabs(got - want) / std::max(1.0, std::fabs(want)));
      ASSERT_EQ(sums.count[static_cast<std::size_t>(i * y.n + j)], 1);
    }
  EXPECT_LT(worst, tolerance) << cost_name(kind) << (labelled ? " with labels" : "");
}

TEST(TiledSinkhorn, TileCostsAreOttsFormulas) {
  for (Cost kind : {Cost::sqeuclidean, Cost::euclidean, Cost::cosine})
    for (bool labelled : {false, true}) {
      check_tile_costs<double>(kind, labelled, 1e-13);
      check_tile_costs<float>(kind, labelled, 1e-4);
    }
}

TEST(TiledSinkhorn, CosineOfAZeroVectorIsOne) {
  HostCloud x = random_cloud(3, 4, 5), y = random_cloud(4, 4, 6);
  std::fill(x.points.begin(), x.points.begin() + 4, 0.0);
  PointCost cost;
  cost.kind = Cost::cosine;
  DevicePoints<double> dx(x), dy(y);
  TiledSinkhorn<double> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, TiledSinkhornOptions());
  const auto sums = cell_sums(solver, x.n, y.n);
  for (std::int64_t j = 0; j < y.n; ++j) EXPECT_EQ(sums.plain_cost[static_cast<std::size_t>(j)], 1.0);
}

// --------------------------------------------------------------- storage

template <class T>
void check_stored_equals_online(DualUpdates updates, bool labelled, double tau) {
  const auto x = random_cloud(130, 7, 11), y = random_cloud(290, 7, 12);
  PointCost cost;
  cost.kind = Cost::cosine;
  cost.feature_weight = 0.25;
  if (labelled) cost.label = test::label_table(3, 3, 1.5);
  TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.updates = updates;
  o.tau_a = tau;
  o.tau_b = tau;
  o.max_iterations = 200;
  o.storage = CostStorage::stored;
  o.domain = SinkhornDomain::log;  // the scaling domain reads K̃, not the costs
  const auto stored = solve<T>(x, y, cost, o);
  o.storage = CostStorage::online;
  const auto online = solve<T>(x, y, cost, o);
  EXPECT_TRUE(stored.report.stored);
  EXPECT_FALSE(online.report.stored);
  EXPECT_EQ(stored.f, online.f);
  EXPECT_EQ(stored.g, online.g);
  EXPECT_EQ(stored.report.errors, online.report.errors);
  EXPECT_EQ(stored.report.iterations, online.report.iterations);
}

TEST(TiledSinkhorn, StoredCostsGiveTheBitsOfRecomputedOnes) {
  for (auto updates : {DualUpdates::alternating, DualUpdates::symmetric})
    for (bool labelled : {false, true}) {
      check_stored_equals_online<double>(updates, labelled, 1.0);
      check_stored_equals_online<float>(updates, labelled, 0.9);
    }
}

TEST(TiledSinkhorn, StorageFollowsTheMemoryBudget) {
  const auto x = random_cloud(100, 3, 1), y = random_cloud(100, 3, 2);
  TiledSinkhornOptions o;
  o.max_iterations = 10;
  o.cost_memory = 1 << 20;  // 2 × 1 tiles of 64 × 256 doubles = 256 KiB: fits
  EXPECT_TRUE(solve<double>(x, y, PointCost(), o).report.stored);
  o.cost_memory = 100 << 10;
  const auto small = solve<double>(x, y, PointCost(), o).report;
  EXPECT_FALSE(small.stored);
  EXPECT_EQ(small.stored_bytes, std::size_t(2 * 64 * 256 * 8));
  EXPECT_EQ(small.cost_memory, std::size_t(100 << 10));
}

// ------------------------------------------------------------ the joint pass

/// Alternating updates in one pass per iteration (recomputed tiles kept in
/// strips, or stored tiles read twice) against the two half-step passes that
/// a budget without room for the strips leaves: the same bits.
template <class T>
void check_joint_pass(const PointCost& cost, TiledSinkhornOptions o, std::int64_t n, std::int64_t m) {
  const auto x = random_cloud(n, 5, 41), y = random_cloud(m, 5, 42);
  o.storage = CostStorage::online;
  o.cost_memory = 1;  // no room for a strip: two passes
  const auto two = solve<T>(x, y, cost, o);
  o.cost_memory = 0;  // the default budget holds the strips
  const auto joint = solve<T>(x, y, cost, o);
  o.storage = CostStorage::stored;
  o.domain = SinkhornDomain::log;
  const auto stored = solve<T>(x, y, cost, o);
  const std::string what = std::string(cost_name(cost.kind)) + " tau " + std::to_string(o.tau_a) + " eps_init " +
                           std::to_string(o.epsilon_init) + (std::is_same<T, float>::value ? " float" : " double");
  EXPECT_EQ(two.report.joint_passes, 0) << what;
  EXPECT_EQ(two.report.strip_bytes, std::size_t(0)) << what;
  EXPECT_GT(joint.report.strip_bytes, std::size_t(0)) << what;
  EXPECT_EQ(stored.report.strip_bytes, std::size_t(0)) << what;
  for (const auto* one : {&joint, &stored}) {
    EXPECT_GT(one->report.joint_passes, one->report.iterations / 2) << what;
    EXPECT_LT(one->report.tile_sweeps, two.report.tile_sweeps) << what;
    EXPECT_EQ(one->report.iterations, two.report.iterations) << what;
    EXPECT_EQ(one->report.errors, two.report.errors) << what;
    EXPECT_EQ(one->report.shift_retries, two.report.shift_retries) << what;
    EXPECT_EQ(one->f, two.f) << what;
    EXPECT_EQ(one->g, two.g) << what;
  }
}

TEST(TiledSinkhorn, JointPassGivesTheBitsOfTwoHalfStepPasses) {
  PointCost cosine;
  cosine.kind = Cost::cosine;
  cosine.feature_weight = 0.25;
  cosine.label = test::label_table(3, 3, 1.5);
  PointCost squared;
  squared.kind = Cost::sqeuclidean;
  TiledSinkhornOptions o;
  o.epsilon = 0.02;
  o.max_iterations = 300;
  o.threshold = 1e-6;
  for (double tau : {1.0, 0.8}) {
    o.tau_a = o.tau_b = tau;
    // 3 row tiles (the last short) and 2 column tiles (the second short).
    check_joint_pass<double>(cosine, o, 150, 300);
    check_joint_pass<float>(cosine, o, 150, 300);
    check_joint_pass<double>(squared, o, 150, 300);
  }
  // ε-scaling: while ε_t moves, iterations take two passes; at ε, one.
  o.tau_a = o.tau_b = 1.0;
  o.epsilon_init = 100;
  o.epsilon_decay = 0.5;
  check_joint_pass<double>(squared, o, 70, 260);
  check_joint_pass<float>(cosine, o, 70, 260);
}

/// The scaling domain's joint pass (one read of K̃ per iteration) against its
/// two sweeps: the same bits, absorptions, rebuilds, retries and fallbacks.
/// Returns the joint run's report.
template <class T>
TiledSinkhornReport check_scaling_joint_pass(const HostCloud& x, const HostCloud& y, const PointCost& cost,
                                             TiledSinkhornOptions o, const std::vector<double>& f0,
                                             const std::vector<double>& g0, const char* what) {
  std::vector<Solved<T>> runs;
  for (bool joint : {false, true}) {
    o.joint_passes = joint;
    DevicePoints<T> dx(x), dy(y);
    TiledSinkhorn<T> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
    if (!f0.empty()) solver.set_potentials(f0, g0);
    Solved<T> s;
    s.report = solver.solve();
    s.f = solver.f();
    s.g = solver.g();
    runs.push_back(std::move(s));
  }
  const auto& two = runs[0].report;
  const auto& one = runs[1].report;
  EXPECT_EQ(two.joint_passes, 0) << what;
  EXPECT_GT(one.joint_passes, one.iterations / 2) << what;
  EXPECT_LT(one.tile_sweeps, two.tile_sweeps) << what;
  EXPECT_EQ(one.iterations, two.iterations) << what;
  EXPECT_EQ(one.errors, two.errors) << what;
  EXPECT_EQ(one.scaling_domain, two.scaling_domain) << what;
  EXPECT_EQ(one.scaling_fallback, two.scaling_fallback) << what;
  EXPECT_EQ(one.kernel_builds, two.kernel_builds) << what;
  EXPECT_EQ(one.rows_absorbed, two.rows_absorbed) << what;
  EXPECT_EQ(one.columns_absorbed, two.columns_absorbed) << what;
  EXPECT_EQ(one.shift_retries, two.shift_retries) << what;
  EXPECT_EQ(runs[1].f, runs[0].f) << what;
  EXPECT_EQ(runs[1].g, runs[0].g) << what;
  return one;
}

TEST(TiledSinkhorn, ScalingJointPassGivesTheBitsOfTwoSweeps) {
  // Absorbed rows (weights 1e-15), and columns absorbed or K̃ rebuilt (a far warm start).
  auto x = random_cloud(134, 4, 71);  // row tiles of 64, 64 and 6 rows: whole and partial groups of four
  const auto y = random_cloud(300, 4, 72);
  for (std::size_t i = 0; i < 134; i += 13) x.weights[i] = 1e-15;
  PointCost cosine;
  cosine.kind = Cost::cosine;
  TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.tau_a = o.tau_b = 0.6;
  o.threshold = 1e-6;
  o.max_iterations = 3000;
  o.domain = SinkhornDomain::scaling;
  // In float, columns are absorbed (their entries of K̃ rewritten between
  // passes); double's bound, 2^200, is not reached.
  const std::vector<double> f0(134, 4.0), g0(300, -1.0);
  EXPECT_GT(check_scaling_joint_pass<float>(x, y, cosine, o, f0, g0, "absorbing, float").columns_absorbed, 0);
  check_scaling_joint_pass<double>(x, y, cosine, o, f0, g0, "absorbing, double");
  // 2400 columns: ten column tiles, each row tile's K̃ re-read after 600 KB (float).
  const auto y_wide = random_cloud(2400, 4, 73);
  const std::vector<double> g_wide(2400, -1.0);
  EXPECT_GT(check_scaling_joint_pass<float>(x, y_wide, cosine, o, f0, g_wide, "absorbing, wide, float")
                .columns_absorbed,
            0);
  check_scaling_joint_pass<double>(x, y_wide, cosine, o, f0, g_wide, "absorbing, wide, double");
  // Balanced, a label term, automatic domain, ε-scaling into it.
  PointCost pairot = cosine;
  pairot.feature_weight = 0.25;
  pairot.label = test::label_table(3, 3, 1.5);
  o = TiledSinkhornOptions();
  o.epsilon = 0.05;
  o.max_iterations = 200;
  o.threshold = 0;
  o.epsilon_init = 20;
  o.epsilon_decay = 0.7;
  check_scaling_joint_pass<float>(x, y, pairot, o, {}, {}, "pairOT cost, float");
  // A column of weight 1e-300 zeroes its column of K̃ in float: forced, the
  // scaling domain fails at a column sum and the log domain finishes.
  auto y_light = y;
  y_light.weights[5] = 1e-300;
  o = TiledSinkhornOptions();
  o.epsilon = 0.05;
  o.threshold = 0;
  o.max_iterations = 100;
  o.domain = SinkhornDomain::scaling;
  check_scaling_joint_pass<float>(x, y_light, cosine, o, {}, {}, "falling back, float");
}

// ------------------------------------------------------------ the fixed point

/// The tiled solver's plan against the dense solver's (kotml's convention,
/// P = a⊗b·exp((f+g−C)/ε)) on the same costs: the same entropic plan. Balanced
/// problems only: with τ < 1 OTT's problem (entropy −εH(P)) and POT's and the
/// dense solver's (εKL(P|a⊗b)) have different solutions; OTT fixtures check
/// the unbalanced case (test_ott.cpp).
void check_against_dense(Cost kind, double tau, bool relative) {
  const auto x = random_cloud(90, 4, 21), y = random_cloud(70, 4, 22);
  PointCost cost;
  cost.kind = kind;
  auto o = tight();
  o.tau_a = tau;
  o.tau_b = tau;
  o.relative_epsilon = relative;
  o.epsilon = relative ? 0.1 : 0.5;
  DevicePoints<double> dx(x), dy(y);
  TiledSinkhorn<double> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
  const auto report = solver.solve();
  ASSERT_TRUE(report.converged);
  const double eps = solver.epsilon();
  const auto tiled = test::plan_from_potentials(cost, x, y, solver.f(), solver.g(), eps);

  Matrix<double> C("C", x.n, y.n);
  auto ch = Kokkos::create_mirror_view(C);
  double mean = 0;
  for (std::int64_t i = 0; i < x.n; ++i)
    for (std::int64_t j = 0; j < y.n; ++j) {
      ch(i, j) = point_cost_reference(cost, &x.points[static_cast<std::size_t>(i * 4)],
                                      &y.points[static_cast<std::size_t>(j * 4)], 4);
      mean += ch(i, j);
    }
  mean /= static_cast<double>(x.n * y.n);
  if (relative) {
    EXPECT_NEAR(eps, 0.1 * mean, 1e-14 * mean);
  }
  Kokkos::deep_copy(C, ch);
  Vector<double> a("a", x.n), b("b", y.n), f("f", x.n), g("g", y.n);
  Kokkos::deep_copy(a, HostVector<const double>(x.weights.data(), x.weights.size()));
  Kokkos::deep_copy(b, HostVector<const double>(y.weights.data(), y.weights.size()));
  Matrix<double> P("P", x.n, y.n);
  SinkhornOptions so;
  so.epsilon = eps;
  so.tau_a = tau;
  so.tau_b = tau;
  so.tol = 1e-13;
  so.max_iter = 20000;
  so.keep_plan = true;
  DenseSinkhorn<double> dense;
  const auto s = dense.solve(C, a, b, so, f, g, P);
  ASSERT_EQ(s.status, SolveStatus::optimal);
  auto ph = Kokkos::create_mirror_view_and_copy(HostSpace(), P);
  double worst = 0;
  for (std::int64_t i = 0; i < x.n; ++i)
    for (std::int64_t j = 0; j < y.n; ++j)
      worst = std::max(worst, std::fabs(ph(i, j) - tiled[static_cast<std::size_t>(i * y.n + j)]));
  EXPECT_LT(worst, 1e-10) << cost_name(kind) << " tau " << tau;
}

TEST(TiledSinkhorn, ReachesTheDenseSolversPlan) {
  check_against_dense(Cost::euclidean, 1.0, false);
  check_against_dense(Cost::sqeuclidean, 1.0, true);
}

TEST(TiledSinkhorn, VariantsReachTheSameFixedPoint) {
  const auto x = random_cloud(100, 3, 31), y = random_cloud(80, 3, 32);
  PointCost cost;
  cost.kind = Cost::sqeuclidean;
  for (double tau : {1.0, 0.7}) {
    auto o = tight();
    o.epsilon = 0.3;
    o.tau_a = o.tau_b = tau;
    const auto plain = solve<double>(x, y, cost, o);
    o.updates = DualUpdates::symmetric;
    const auto symmetric = solve<double>(x, y, cost, o);
    o.updates = DualUpdates::alternating;
    o.epsilon_init = 50;
    o.epsilon_decay = 0.9;
    const auto scaled = solve<double>(x, y, cost, o);
    o.updates = DualUpdates::symmetric;
    o.epsilon_decay = 0.3;
    const auto scaled_symmetric = solve<double>(x, y, cost, o);
    ASSERT_TRUE(plain.report.converged && symmetric.report.converged && scaled.report.converged &&
                scaled_symmetric.report.converged);
    const auto p0 = test::plan_from_potentials(cost, x, y, plain.f, plain.g, 0.3);
    for (const auto* other : {&symmetric, &scaled, &scaled_symmetric}) {
      const auto p = test::plan_from_potentials(cost, x, y, other->f, other->g, 0.3);
      double worst = 0;
      for (std::size_t k = 0; k < p.size(); ++k) worst = std::max(worst, std::fabs(p[k] - p0[k]));
      EXPECT_LT(worst, 1e-10) << "tau " << tau;
    }
    // Symmetric updates average, so they take more iterations, each one sweep.
    EXPECT_GT(symmetric.report.iterations, plain.report.iterations);
    // Each threefold cut of ε moves the log-sum-exps by more than the guessed
    // shifts allow: rows and columns were redone, and the fixed point held.
    EXPECT_GT(scaled_symmetric.report.shift_retries, 0) << "tau " << tau;
  }
}

// ------------------------------------------------------ the scaling domain

/// The largest |Δ| between two potential vectors, in units of ε.
double worst_over_eps(const std::vector<double>& p, const std::vector<double>& q, double eps) {
  EXPECT_EQ(p.size(), q.size());
  double worst = 0;
  for (std::size_t k = 0; k < p.size(); ++k)
    if (std::isfinite(p[k]) || std::isfinite(q[k])) worst = std::max(worst, std::fabs(p[k] - q[k]) / eps);
  return worst;
}

/// A fixed number of iterations in both domains: the same iterates up to
/// rounding. Returns the scaling domain's report.
template <class T>
TiledSinkhornReport check_domains_agree(const HostCloud& x, const HostCloud& y, const PointCost& cost,
                                        TiledSinkhornOptions o, double tolerance) {
  o.threshold = 0;
  o.domain = SinkhornDomain::log;
  const auto log_domain = solve<T>(x, y, cost, o);
  o.domain = SinkhornDomain::automatic;
  const auto scaling = solve<T>(x, y, cost, o);
  EXPECT_FALSE(log_domain.report.scaling_domain);
  EXPECT_TRUE(scaling.report.scaling_domain);
  EXPECT_FALSE(scaling.report.scaling_fallback);
  EXPECT_GE(scaling.report.kernel_builds, 1);
  EXPECT_EQ(scaling.report.iterations, log_domain.report.iterations);
  EXPECT_LT(worst_over_eps(scaling.f, log_domain.f, o.epsilon), tolerance) << "tau " << o.tau_a;
  EXPECT_LT(worst_over_eps(scaling.g, log_domain.g, o.epsilon), tolerance) << "tau " << o.tau_a;
  EXPECT_EQ(scaling.report.errors.size(), log_domain.report.errors.size());
  for (std::size_t k = 0; k < std::min(scaling.report.errors.size(), log_domain.report.errors.size()); ++k)
    EXPECT_NEAR(scaling.report.errors[k], log_domain.report.errors[k],
                1e3 * tolerance * log_domain.report.errors[k] + 1e-2 * tolerance)
        << "check " << k;
  return scaling.report;
}

/// pairOT's kind of problem (half a cosine plus a label term, ε = 0.05).
template <class T>
void check_domains_agree(double tau, double tolerance) {
  const auto x = random_cloud(150, 6, 51), y = random_cloud(300, 6, 52);
  PointCost cost;
  cost.kind = Cost::cosine;
  cost.feature_weight = 0.25;
  cost.label = test::label_table(3, 3, 1.5);
  TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.tau_a = o.tau_b = tau;
  o.max_iterations = 300;
  EXPECT_EQ(check_domains_agree<T>(x, y, cost, o, tolerance).kernel_builds, 1);
}

TEST(TiledSinkhorn, ScalingAndLogDomainsIterateAlike) {
  check_domains_agree<double>(1.0, 1e-11);
  check_domains_agree<double>(0.8, 1e-11);
  check_domains_agree<float>(1.0, 2e-4);
  check_domains_agree<float>(0.8, 2e-4);
}

TEST(TiledSinkhorn, AutomaticDomainFollowsTheCostRangeAndTheStorage) {
  const auto x = random_cloud(100, 4, 61), y = random_cloud(120, 4, 62);
  TiledSinkhornOptions o;
  o.max_iterations = 20;
  PointCost cosine;
  cosine.kind = Cost::cosine;
  o.epsilon = 0.05;  // costs in [0, 2] = 40ε: K̃ is representable
  EXPECT_TRUE(solve<float>(x, y, cosine, o).report.scaling_domain);
  o.epsilon = 0.002;  // 1000ε
  EXPECT_TRUE(solve<float>(x, y, cosine, o).report.scaling_domain);
  EXPECT_TRUE(solve<double>(x, y, cosine, o).report.scaling_domain);
  o.epsilon = 0.05;
  o.storage = CostStorage::online;
  EXPECT_FALSE(solve<float>(x, y, cosine, o).report.scaling_domain);
  o.storage = CostStorage::automatic;
  o.updates = DualUpdates::symmetric;
  EXPECT_FALSE(solve<float>(x, y, cosine, o).report.scaling_domain);
  o.updates = DualUpdates::alternating;
  o.cost_memory = 64 * 256 * 4 * 3;  // two tiles of costs fit, K̃ beside them does not
  const auto tight_memory = solve<float>(x, y, cosine, o).report;
  EXPECT_TRUE(tight_memory.stored);
  EXPECT_FALSE(tight_memory.scaling_domain);
  o.cost_memory = 0;
  o.domain = SinkhornDomain::log;
  EXPECT_FALSE(solve<float>(x, y, cosine, o).report.scaling_domain);
  // A column of weight 1e-30 keeps only entries near 1e-28 in the first K̃:
  // below float's 2^-64, far above double's 2^-640.
  o.domain = SinkhornDomain::automatic;
  o.epsilon = 0.05;
  auto light = y;
  light.weights[7] = 1e-30;
  EXPECT_FALSE(solve<float>(x, light, cosine, o).report.scaling_domain);
  EXPECT_TRUE(solve<double>(x, light, cosine, o).report.scaling_domain);
}

TEST(TiledSinkhorn, ScalingDomainTakesCostsSpanningThousandsOfEpsilon) {
  // Squared distances between blobs: rows span about 2000ε, so most of K̃
  // underflows to zero; the domains still iterate alike, through absorptions
  // and rebuilds.
  const auto x = random_cloud(200, 4, 63), y = random_cloud(180, 4, 64);
  TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.max_iterations = 400;
  const auto wide_double = check_domains_agree<double>(x, y, PointCost(), o, 1e-11);
  const auto wide_float = check_domains_agree<float>(x, y, PointCost(), o, 2e-3);
  // Float rounding, not the domain, sets that difference: against double, the
  // float scaling domain is as close as the float log domain.
  const auto exact = solve<double>(x, y, PointCost(), o);
  o.domain = SinkhornDomain::log;
  const auto float_log = solve<float>(x, y, PointCost(), o);
  o.domain = SinkhornDomain::automatic;
  const auto float_scaling = solve<float>(x, y, PointCost(), o);
  const double log_off = worst_over_eps(float_log.f, exact.f, o.epsilon);
  const double scaling_off = worst_over_eps(float_scaling.f, exact.f, o.epsilon);
  std::printf("float against double, in eps: log %.3g, scaling %.3g\n", log_off, scaling_off);
  EXPECT_LT(scaling_off, 2 * log_off + 1e-4);
  EXPECT_GT(wide_double.rows_absorbed + wide_float.rows_absorbed + wide_float.kernel_builds, 1);
  o.tau_a = o.tau_b = 0.9;
  check_domains_agree<double>(x, y, PointCost(), o, 1e-11);
}

TEST(TiledSinkhorn, ScalingDomainNeedsStoredCostsAndAlternatingUpdates) {
  TiledSinkhornOptions o;
  o.domain = SinkhornDomain::scaling;
  o.storage = CostStorage::online;
  EXPECT_THROW(o.validate(), Error);
  o.storage = CostStorage::automatic;
  o.updates = DualUpdates::symmetric;
  EXPECT_THROW(o.validate(), Error);
  o.updates = DualUpdates::alternating;
  EXPECT_NO_THROW(o.validate());
  const auto x = random_cloud(100, 4, 61), y = random_cloud(120, 4, 62);
  o.cost_memory = 1000;  // nothing fits: online
  EXPECT_THROW(solve<double>(x, y, PointCost(), o), Error);
}

TEST(TiledSinkhorn, ScalingDomainAbsorbsRowsAndColumnsAndRebuildsTheKernel) {
  // Rows of weight 1e-15 have scalings a_i/R_i below 2^-40 in float: they are
  // absorbed one by one (from f0 = 4). An unbalanced warm start far from the
  // fixed point (f0, then the first g from it) moves g: upwards by more than
  // 40 ln 2 ε (f0 = 4), its columns are absorbed one by one; downwards by more
  // than 80 ln 2 ε (f0 = −8), K̃ is rebuilt around it.
  auto x = random_cloud(130, 4, 71);
  const auto y = random_cloud(110, 4, 72);
  for (std::size_t i = 0; i < 130; i += 13) x.weights[i] = 1e-15;
  PointCost cost;
  cost.kind = Cost::cosine;
  TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.tau_a = o.tau_b = 0.6;
  o.threshold = 1e-6;
  o.max_iterations = 3000;
  DevicePoints<float> dx(x), dy(y);
  for (const double start : {4.0, -8.0}) {
    const std::vector<double> f0(130, start), g0(110, -1.0);
    std::vector<std::vector<double>> potentials;
    for (auto domain : {SinkhornDomain::log, SinkhornDomain::scaling}) {
      o.domain = domain;
      TiledSinkhorn<float> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
      solver.set_potentials(f0, g0);
      const auto report = solver.solve();
      ASSERT_TRUE(report.converged);
      if (domain == SinkhornDomain::scaling) {
        EXPECT_TRUE(report.scaling_domain);
        if (start > 0) {
          EXPECT_GE(report.rows_absorbed, 10) << "f0 " << start;
          EXPECT_EQ(report.kernel_builds, 1) << "f0 " << start;
          EXPECT_GE(report.columns_absorbed, 100) << "f0 " << start;
        } else {
          EXPECT_GE(report.kernel_builds, 2) << "f0 " << start;
        }
      }
      potentials.push_back(solver.f());
      potentials.push_back(solver.g());
    }
    EXPECT_LT(worst_over_eps(potentials[0], potentials[2], o.epsilon), 1e-2) << "f0 " << start;
    EXPECT_LT(worst_over_eps(potentials[1], potentials[3], o.epsilon), 1e-2) << "f0 " << start;
  }
}

TEST(TiledSinkhorn, ScalingDomainFallsBackToTheLogDomain) {
  // A column of weight 1e-300 has g_j ≈ ε log 1e-300: its column of K̃ is zero
  // in float. The automatic rule sees that column and takes the log domain;
  // forced, the scaling domain fails at its first column sum and the log
  // domain finishes.
  const auto x = random_cloud(90, 3, 81);
  auto y = random_cloud(80, 3, 82);
  y.weights[5] = 1e-300;
  PointCost cost;
  cost.kind = Cost::cosine;
  TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.threshold = 0;
  o.max_iterations = 300;
  o.domain = SinkhornDomain::scaling;
  const auto forced = solve<float>(x, y, cost, o);
  o.domain = SinkhornDomain::automatic;
  const auto automatic = solve<float>(x, y, cost, o);
  o.domain = SinkhornDomain::log;
  const auto plain = solve<float>(x, y, cost, o);
  EXPECT_TRUE(forced.report.scaling_fallback);
  EXPECT_FALSE(forced.report.scaling_domain);
  EXPECT_FALSE(automatic.report.scaling_fallback);
  EXPECT_FALSE(automatic.report.scaling_domain);
  EXPECT_EQ(automatic.f, plain.f);
  EXPECT_LT(worst_over_eps(forced.f, plain.f, o.epsilon), 2e-4);
  EXPECT_LT(worst_over_eps(forced.g, plain.g, o.epsilon), 2e-4);
}

TEST(TiledSinkhorn, WarmStartFromConvergedPotentialsStopsAtTheFirstCheck) {
  const auto x = random_cloud(120, 3, 41), y = random_cloud(90, 3, 42);
  auto o = tight();
  o.threshold = 1e-9;
  DevicePoints<double> dx(x), dy(y);
  TiledSinkhorn<double> first(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), PointCost(), o);
  const auto cold = first.solve();
  ASSERT_TRUE(cold.converged);
  ASSERT_GT(cold.iterations, o.inner_iterations);
  TiledSinkhorn<double> second(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), PointCost(), o);
  second.set_potentials(first.f(), first.g());
  const auto warm = second.solve();
  EXPECT_TRUE(warm.converged);
  EXPECT_EQ(warm.iterations, o.inner_iterations);
}

TEST(TiledSinkhorn, StopsAtTheIterationLimitWithTheErrorsOfEachCheck) {
  const auto x = random_cloud(80, 3, 51), y = random_cloud(60, 3, 52);
  TiledSinkhornOptions o;
  o.epsilon = 0.01;
  o.threshold = 0;
  o.max_iterations = 25;
  o.inner_iterations = 10;
  const auto s = solve<double>(x, y, PointCost(), o);
  EXPECT_EQ(s.report.status, SolveStatus::max_iter);
  // Whole blocks of 10, as in OTT: the limit of 25 runs 30 iterations.
  EXPECT_EQ(s.report.iterations, 30);
  EXPECT_EQ(s.report.errors.size(), 3u);
  EXPECT_FALSE(s.report.converged);
}

// ----------------------------------------------------------- applications

/// got(q, j) = Σ_{i: label_i = q} plan_ij·u_i (three labels) within 1e-12.
void expect_grouped_column_sums(const std::vector<double>& got, const std::vector<double>& plan, const HostCloud& x,
                                std::int64_t m, const std::vector<double>& u) {
  for (std::int64_t j = 0; j < m; ++j)
    for (int q = 0; q < 3; ++q) {
      double want = 0;
      for (std::int64_t i = 0; i < x.n; ++i)
        if (x.labels[static_cast<std::size_t>(i)] == q)
          want += plan[static_cast<std::size_t>(i * m + j)] * u[static_cast<std::size_t>(i)];
      EXPECT_NEAR(got[static_cast<std::size_t>(q * m + j)], want, 1e-12) << "group " << q << ", column " << j;
    }
}

TEST(TiledSinkhorn, PlanApplicationsEqualDenseProducts) {
  const auto x = random_cloud(150, 4, 61), y = random_cloud(270, 4, 62);
  PointCost cost;
  cost.kind = Cost::cosine;
  cost.label = test::label_table(3, 3, 0.5);
  auto o = tight();
  o.epsilon = 0.05;
  o.threshold = 1e-6;
  DevicePoints<double> dx(x), dy(y);
  TiledSinkhorn<double> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
  ASSERT_TRUE(solver.solve().converged);
  const auto plan = test::plan_from_potentials(cost, x, y, solver.f(), solver.g(), 0.05);
  std::vector<double> u(static_cast<std::size_t>(x.n)), v(static_cast<std::size_t>(y.n));
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = std::sin(1.0 + static_cast<double>(i));
  for (std::size_t j = 0; j < v.size(); ++j) v[j] = std::cos(2.0 + static_cast<double>(j));
  const auto t_u = solver.transpose_apply(u, x.labels, 3);
  const auto t_v = solver.apply(v, y.labels, 3);
  expect_grouped_column_sums(t_u, plan, x, y.n, u);
  for (std::int64_t i = 0; i < x.n; ++i)
    for (int q = 0; q < 3; ++q) {
      double want = 0;
      for (std::int64_t j = 0; j < y.n; ++j)
        if (y.labels[static_cast<std::size_t>(j)] == q)
          want += plan[static_cast<std::size_t>(i * y.n + j)] * v[static_cast<std::size_t>(j)];
      EXPECT_NEAR(t_v[static_cast<std::size_t>(i * 3 + q)], want, 1e-12);
    }
  // Balanced and converged: the columns of the plan sum to b.
  std::vector<double> ones(static_cast<std::size_t>(x.n), 1.0);
  const auto column_mass = solver.transpose_apply(ones, std::vector<std::int32_t>(ones.size(), 0), 1);
  double l1 = 0;
  for (std::int64_t j = 0; j < y.n; ++j) l1 += std::fabs(column_mass[static_cast<std::size_t>(j)] - y.weights[static_cast<std::size_t>(j)]);
  EXPECT_LT(l1, 1e-6);
  // Block sums over selected cells.
  std::vector<std::int32_t> rows = x.labels, cols = y.labels;
  rows[0] = -1;
  const auto blocks = solver.block_sums(rows, 3, cols, 3);
  for (int p = 0; p < 3; ++p)
    for (int q = 0; q < 3; ++q) {
      double mass = 0, weighted = 0, plain = 0;
      std::int64_t count = 0;
      for (std::int64_t i = 0; i < x.n; ++i)
        for (std::int64_t j = 0; j < y.n; ++j) {
          if (rows[static_cast<std::size_t>(i)] != p || cols[static_cast<std::size_t>(j)] != q) continue;
          const double c = point_cost_reference(cost, &x.points[static_cast<std::size_t>(i * 4)],
                                                &y.points[static_cast<std::size_t>(j * 4)], 4, p, q);
          mass += plan[static_cast<std::size_t>(i * y.n + j)];
          weighted += plan[static_cast<std::size_t>(i * y.n + j)] * c;
          plain += c;
          ++count;
        }
      const std::size_t b = static_cast<std::size_t>(p * 3 + q);
      EXPECT_NEAR(blocks.mass[b], mass, 1e-12);
      EXPECT_NEAR(blocks.cost[b], weighted, 1e-12);
      EXPECT_NEAR(blocks.plain_cost[b], plain, 1e-9);
      EXPECT_EQ(blocks.count[b], count);
    }
}

// The plan's exact column sums swept and reduced in chunks of column tiles
// (TiledSinkhornOptions::column_chunk_bytes) are the bits of one whole sweep:
// chunks of one tile, of two (the last one short), and one chunk. 700 columns
// are three column tiles, the last partial.
TEST(TiledSinkhorn, ColumnSumsInChunksAreTheBitsOfOneSweep) {
  const auto x = random_cloud(150, 4, 67), y = random_cloud(700, 4, 68);
  PointCost cost;
  cost.kind = Cost::sqeuclidean;
  auto o = tight();
  o.epsilon = 0.5;
  o.threshold = 1e-6;
  DevicePoints<double> dx(x), dy(y);
  std::vector<double> u(static_cast<std::size_t>(x.n));
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = 1.0 + std::sin(static_cast<double>(i));
  TiledSinkhorn<double> whole(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
  ASSERT_TRUE(whole.solve().converged);
  const auto sums = whole.transpose_apply(u, x.labels, 3);
  const auto gradients = whole.point_gradients().cols;
  const std::size_t one_tile = 3 * 256 * 4 * sizeof(std::int64_t);  // 3 groups × 256 columns × 4 limbs
  for (const std::size_t bytes : {std::size_t(1), 2 * one_tile}) {
    SCOPED_TRACE("column_chunk_bytes " + std::to_string(bytes));
    o.column_chunk_bytes = bytes;
    TiledSinkhorn<double> chunked(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
    chunked.solve();
    EXPECT_EQ(chunked.transpose_apply(u, x.labels, 3), sums);
    EXPECT_EQ(chunked.point_gradients().cols, gradients);
  }
  // And against the dense plan.
  const auto plan = test::plan_from_potentials(cost, x, y, whole.f(), whole.g(), o.epsilon);
  expect_grouped_column_sums(sums, plan, x, y.n, u);
}

// The point gradients through the plan against the dense sums, for both
// feature costs with a feature weight, 150 rows (three row tiles) and 270
// columns (two column tiles, the second short); float within its rounding.
// The cosine cost and a label term are refused.
template <class T>
void check_point_gradients(Cost kind) {
  SCOPED_TRACE(std::string(cost_name(kind)) + (std::is_same<T, float>::value ? " float" : " double"));
  const auto x = random_cloud(150, 4, 63), y = random_cloud(270, 4, 64);
  PointCost cost;
  cost.kind = kind;
  cost.feature_weight = 0.7;
  auto o = tight();
  o.epsilon = 0.5;
  o.threshold = 1e-6;
  DevicePoints<T> dx(x), dy(y);
  TiledSinkhorn<T> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
  ASSERT_TRUE(solver.solve().converged);
  const auto plan = test::plan_from_potentials(cost, x, y, solver.f(), solver.g(), o.epsilon);
  const auto got = solver.point_gradients();
  ASSERT_EQ(got.rows.size(), static_cast<std::size_t>(x.n * 4));
  ASSERT_EQ(got.cols.size(), static_cast<std::size_t>(y.n * 4));
  std::vector<double> rows(got.rows.size(), 0.0), cols(got.cols.size(), 0.0);
  double scale = 0;
  for (std::int64_t i = 0; i < x.n; ++i)
    for (std::int64_t j = 0; j < y.n; ++j) {
      const double* xi = &x.points[static_cast<std::size_t>(i * 4)];
      const double* yj = &y.points[static_cast<std::size_t>(j * 4)];
      double distance = 0;
      for (int k = 0; k < 4; ++k) distance += (xi[k] - yj[k]) * (xi[k] - yj[k]);
      distance = std::sqrt(distance);
      const double t = plan[static_cast<std::size_t>(i * y.n + j)];
      const double w = kind == Cost::sqeuclidean ? 2 * 0.7 * t : 0.7 * t / distance;
      for (int k = 0; k < 4; ++k) {
        rows[static_cast<std::size_t>(i * 4 + k)] += w * (xi[k] - yj[k]);
        cols[static_cast<std::size_t>(j * 4 + k)] += w * (yj[k] - xi[k]);
      }
    }
  for (const double v : rows) scale = std::max(scale, std::fabs(v));
  const double tol = (std::is_same<T, float>::value ? 1e-4 : 1e-11) * scale;
  for (std::size_t e = 0; e < rows.size(); ++e) EXPECT_NEAR(got.rows[e], rows[e], tol) << "row entry " << e;
  for (std::size_t e = 0; e < cols.size(); ++e) EXPECT_NEAR(got.cols[e], cols[e], tol) << "column entry " << e;
  // Balanced and converged: the plan's moves cancel, Σ_i ∂/∂x_i + Σ_j ∂/∂y_j = 0.
  for (int k = 0; k < 4; ++k) {
    double total = 0;
    for (std::int64_t i = 0; i < x.n; ++i) total += got.rows[static_cast<std::size_t>(i * 4 + k)];
    for (std::int64_t j = 0; j < y.n; ++j) total += got.cols[static_cast<std::size_t>(j * 4 + k)];
    EXPECT_NEAR(total, 0.0, tol);
  }
}

TEST(TiledSinkhorn, PointGradientsEqualDenseSums) {
  check_point_gradients<double>(Cost::sqeuclidean);
  check_point_gradients<double>(Cost::euclidean);
  check_point_gradients<float>(Cost::sqeuclidean);
  const auto x = random_cloud(20, 3, 65), y = random_cloud(30, 3, 66);
  DevicePoints<double> dx(x), dy(y);
  for (const bool labelled : {false, true}) {
    PointCost cost;
    cost.kind = labelled ? Cost::sqeuclidean : Cost::cosine;
    if (labelled) cost.label = test::label_table(3, 3, 0.5);
    TiledSinkhorn<double> solver(self(), RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, tight());
    solver.solve();
    try {
      solver.point_gradients();
      ADD_FAILURE() << "no error for " << (labelled ? "a label term" : "the cosine cost");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cost"), std::string::npos) << e.what();
    }
  }
}

// ------------------------------------------------------------- bad input

TEST(TiledSinkhorn, BadInputIsAUserError) {
  const auto x = random_cloud(20, 3, 71), y = random_cloud(30, 3, 72);
  const auto expect_error = [&](HostCloud xs, HostCloud ys, PointCost cost, TiledSinkhornOptions o,
                                const std::string& words) {
    DevicePoints<double> dx(xs), dy(ys);
    try {
      TiledSinkhorn<double> solver(self(), RowBlock::of(xs.n, 1, 0), dx.view(), dy.view(), cost, o);
      ADD_FAILURE() << "no error for " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  TiledSinkhornOptions o;
  auto nan_x = x;
  nan_x.points[4] = std::nan("");
  expect_error(nan_x, y, PointCost(), o, "non-finite coordinate");
  auto zero_b = y;
  std::fill(zero_b.weights.begin(), zero_b.weights.end(), 0.0);
  expect_error(x, zero_b, PointCost(), o, "sum to zero");
  auto negative = x;
  negative.weights[3] = -1;
  expect_error(negative, y, PointCost(), o, "negative");
  auto bad = o;
  bad.tau_a = 1.5;
  expect_error(x, y, PointCost(), bad, "(0, 1]");
  bad = o;
  bad.epsilon = 0;
  expect_error(x, y, PointCost(), bad, "positive");
  auto wide = random_cloud(30, 4, 73);
  expect_error(x, wide, PointCost(), o, "dimensions");
  PointCost labelled;
  labelled.label = test::label_table(2, 2, 1.0);  // labels run to 2
  expect_error(x, y, labelled, o, "outside the label table");
}

}  // namespace
}  // namespace kotml::ot

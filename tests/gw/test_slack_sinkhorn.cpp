// The slack-augmented Sinkhorn against torchgw's own solver (balanced) and POT's
// unbalanced Sinkhorn (semi-relaxed target), on committed fixtures.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "kotml/gw/slack_sinkhorn.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;
using namespace kotml::gw;

namespace {

struct SlackCase {
  std::int64_t n, k;
  double penalty, epsilon, rho, slack_p, slack_q;
  std::vector<double> cost, p, q, plan_balanced, plan_semi;
};

SlackCase load() {
  std::ifstream in(test::test_source_path("gw/fixtures/sinkhorn_slack.json"));
  const auto j = nlohmann::json::parse(in);
  SlackCase c;
  c.n = j.at("n");
  c.k = j.at("k");
  c.penalty = j.at("penalty");
  c.epsilon = j.at("epsilon");
  c.rho = j.at("rho");
  c.slack_p = j.at("slack_p");
  c.slack_q = j.at("slack_q");
  c.cost = j.at("cost").get<std::vector<double>>();
  c.p = j.at("p").get<std::vector<double>>();
  c.q = j.at("q").get<std::vector<double>>();
  c.plan_balanced = j.at("plan_balanced").get<std::vector<double>>();
  c.plan_semi = j.at("plan_semi_relaxed").get<std::vector<double>>();
  return c;
}

template <class S>
Matrix<S> device_cost(const SlackCase& c) {
  Matrix<S> m("cost", c.n, c.k);
  auto h = Kokkos::create_mirror_view(m);
  for (std::int64_t f = 0; f < c.n * c.k; ++f) h.data()[f] = static_cast<S>(c.cost[f]);
  Kokkos::deep_copy(m, h);
  return m;
}

/// The whole (N+1)×(K+1) plan from the potentials, slack row and column included.
template <class S>
std::vector<double> augmented_plan(const SlackSinkhorn<S>& s, const SlackCase& c) {
  auto u = Kokkos::create_mirror_view_and_copy(HostSpace(), s.log_u());
  auto v = Kokkos::create_mirror_view_and_copy(HostSpace(), s.log_v());
  std::vector<double> t((c.n + 1) * (c.k + 1));
  for (std::int64_t i = 0; i <= c.n; ++i)
    for (std::int64_t k = 0; k <= c.k; ++k) {
      const double lu = i < c.n ? static_cast<double>(u(i)) : static_cast<double>(s.log_u_slack());
      double cost = 0.0;
      if (i < c.n && k < c.k) cost = c.cost[i * c.k + k];
      else if (i < c.n || k < c.k) cost = c.penalty;
      t[i * (c.k + 1) + k] = std::exp(lu + static_cast<double>(v(k)) - cost / c.epsilon);
    }
  return t;
}

/// rel_tol for the real block; slack_tol for the slack row and column, whose
/// potentials are pinned only weakly (their entries carry little mass, so a
/// shift of log u_slack against log v_slack moves the marginals by little).
template <class S>
void check_against(bool semi_relaxed, double rel_tol, double slack_tol) {
  const SlackCase c = load();
  dist::Comm comm;
  SlackSinkhorn<S> solver(c.p, c.q, c.slack_p, c.slack_q, c.n, comm);
  SlackSinkhornSettings settings;
  settings.max_iter = 20000;
  settings.tol = sizeof(S) == 8 ? 1e-15 : 1e-6;
  settings.semi_relaxed = semi_relaxed;
  settings.rho = c.rho;
  const auto summary = solver.solve(device_cost<S>(c), c.penalty, c.epsilon, settings);
  EXPECT_TRUE(summary.converged) << summary.marginal_error;
  const auto ours = augmented_plan(solver, c);
  const auto& ref = semi_relaxed ? c.plan_semi : c.plan_balanced;
  double slack_mass = 0;
  for (std::size_t f = 0; f < ref.size(); ++f) {
    const std::int64_t i = f / (c.k + 1), k = f % (c.k + 1);
    const bool slack = i == c.n || k == c.k;
    EXPECT_NEAR(ours[f], ref[f], (slack ? slack_tol : rel_tol) * ref[f] + 1e-18)
        << "entry " << i << "," << k;
    if (slack) slack_mass += ref[f];
  }
  EXPECT_GT(slack_mass, 0.1);  // the fixture exercises the slack row and column

  // The real block from plan() is the same numbers.
  Matrix<S> block("block", c.n, c.k);
  solver.plan(device_cost<S>(c), c.epsilon, block);
  auto b = Kokkos::create_mirror_view_and_copy(HostSpace(), block);
  for (std::int64_t i = 0; i < c.n; ++i)
    for (std::int64_t k = 0; k < c.k; ++k)
      EXPECT_NEAR(b(i, k), ref[i * (c.k + 1) + k], 2 * rel_tol * ref[i * (c.k + 1) + k]);
}

}  // namespace

TEST(SlackSinkhorn, BalancedMatchesTorchgw) { check_against<double>(false, 1e-9, 1e-9); }
TEST(SlackSinkhorn, SemiRelaxedMatchesPotUnbalanced) { check_against<double>(true, 1e-9, 1e-9); }
// Converged to |P1 − a| < 1e-6 in float32.
TEST(SlackSinkhorn, Float32MatchesTorchgw) { check_against<float>(false, 1e-5, 2e-3); }

TEST(SlackSinkhorn, WarmStartNeedsFewerIterations) {
  const SlackCase c = load();
  dist::Comm comm;
  SlackSinkhorn<double> solver(c.p, c.q, c.slack_p, c.slack_q, c.n, comm);
  SlackSinkhornSettings settings;
  settings.tol = 1e-10;
  settings.max_iter = 20000;
  const auto cold = solver.solve(device_cost<double>(c), c.penalty, c.epsilon, settings);
  const auto warm = solver.solve(device_cost<double>(c), c.penalty, c.epsilon, settings);
  EXPECT_GT(cold.iterations, 10);
  EXPECT_EQ(warm.iterations, 1);  // already at the fixed point: the first check passes
  solver.reset();
  const auto again = solver.solve(device_cost<double>(c), c.penalty, c.epsilon, settings);
  EXPECT_EQ(again.iterations, cold.iterations);
}

TEST(SlackSinkhorn, CheckEveryTenStopsOnMultiplesOfTen) {
  const SlackCase c = load();
  dist::Comm comm;
  SlackSinkhorn<double> solver(c.p, c.q, c.slack_p, c.slack_q, c.n, comm);
  SlackSinkhornSettings settings;
  settings.tol = 1e-6;
  settings.max_iter = 2000;
  settings.check_every = 10;
  const auto s = solver.solve(device_cost<double>(c), c.penalty, c.epsilon, settings);
  EXPECT_TRUE(s.converged);
  EXPECT_EQ(s.iterations % 10, 0);
  EXPECT_LT(s.marginal_error, 1e-6);
}

// Sinkhorn in the log and the scaling domain: values against POT, invariants (marginals, plan and
// potentials agree), gradients against finite differences, batched results equal
// to one-at-a-time results bit for bit, warm starts, degenerate inputs.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <type_traits>

#include "kotml/core/error.hpp"
#include "kotml/ot/gradient.hpp"
#include "kotml/ot/sinkhorn.hpp"
#include "ot_test_support.hpp"

namespace kotml::ot {
namespace {

using test::Case;
using test::relative_error;
using test::to_host;

SinkhornOptions options_for(const Case& c, double tol) {
  SinkhornOptions o;
  if (c.relative > 0) {
    o.epsilon = c.relative;
    o.relative_epsilon = true;
  } else {
    o.epsilon = c.epsilon;
  }
  o.tau_a = c.tau_a;
  o.tau_b = c.tau_b;
  o.tol = tol;
  o.max_iter = 200000;
  return o;
}

const char* name_of(SinkhornDomain d) {
  return d == SinkhornDomain::log ? "log" : d == SinkhornDomain::scaling ? "scaling" : "automatic";
}

template <class T>
void check_against_pot(double tol, double cost_tol, double marginal_tol, double epsilon_tol) {
  for (const Case& c : test::load_cases("sinkhorn"))
   for (const SinkhornDomain domain : {SinkhornDomain::log, SinkhornDomain::scaling}) {
    SCOPED_TRACE(c.name + " " + name_of(domain));
    auto clouds = test::batch_of<T>(c);
    SinkhornOptions o = options_for(c, tol);
    o.keep_plan = true;
    o.domain = domain;
    auto r = sinkhorn<T>(clouds, {{0, 1}}, c.cost, o);
    const SinkhornSummary s = r.summary(0);
    EXPECT_EQ(s.status, SolveStatus::optimal);
    EXPECT_LE(relative_error(s.epsilon, c.epsilon), epsilon_tol);
    EXPECT_LE(relative_error(s.cost, c.expected_cost), cost_tol) << s.cost << " vs " << c.expected_cost;
    EXPECT_LE(relative_error(s.objective, c.expected_objective), cost_tol)
        << s.objective << " vs " << c.expected_objective;
    auto plan = to_host(r.plan);
    for (std::int64_t i = 0; i < c.n; ++i) {
      double row = 0;
      for (std::int64_t j = 0; j < c.m; ++j) row += plan(i * c.m + j);
      EXPECT_NEAR(row, c.row_marginal[static_cast<std::size_t>(i)], marginal_tol) << "row " << i;
    }
    for (std::int64_t j = 0; j < c.m; ++j) {
      double col = 0;
      for (std::int64_t i = 0; i < c.n; ++i) col += plan(i * c.m + j);
      EXPECT_NEAR(col, c.col_marginal[static_cast<std::size_t>(j)], marginal_tol) << "col " << j;
    }
  }
}

TEST(Sinkhorn, MatchesPotInDouble) { check_against_pot<double>(1e-13, 1e-9, 1e-10, 1e-12); }

// Float points shift the mean cost (relative ε) by float rounding.
TEST(Sinkhorn, MatchesPotInFloat) { check_against_pot<float>(2e-6, 2e-5, 5e-6, 1e-6); }

TEST(Sinkhorn, ReportedMarginalErrorMatchesThePlan) {
  for (const Case& c : test::load_cases("sinkhorn")) {
    if (c.tau_a < 1 || c.tau_b < 1) continue;
    SCOPED_TRACE(c.name);
    auto clouds = test::batch_of<double>(c);
    SinkhornOptions o = options_for(c, 1e-4);  // stop early: the error is visible
    o.check_every = 1;
    o.keep_plan = true;
    auto r = sinkhorn<double>(clouds, {{0, 1}}, c.cost, o);
    auto plan = to_host(r.plan);
    const double sa = std::accumulate(c.a.begin(), c.a.end(), 0.0);
    const double sb = std::accumulate(c.b.begin(), c.b.end(), 0.0);
    double err = 0, transport = 0;
    auto C = test::host_cost(c);
    for (std::int64_t i = 0; i < c.n; ++i) {
      double row = 0;
      for (std::int64_t j = 0; j < c.m; ++j) {
        row += plan(i * c.m + j);
        transport += plan(i * c.m + j) * C(i, j);
      }
      err += std::fabs(row - c.a[static_cast<std::size_t>(i)] / sa);
    }
    for (std::int64_t j = 0; j < c.m; ++j) {
      double col = 0;
      for (std::int64_t i = 0; i < c.n; ++i) col += plan(i * c.m + j);
      err += std::fabs(col - c.b[static_cast<std::size_t>(j)] / sb);
    }
    const SinkhornSummary s = r.summary(0);
    EXPECT_NEAR(s.marginal_error, err, 1e-12 + 1e-6 * err);
    EXPECT_LE(relative_error(s.cost, transport), 1e-13);
    EXPECT_LT(s.marginal_error, 1e-4);
  }
}

// The dense solver on a host-computed cost and the batch solver on the points
// agree; not bit for bit, since the batch's SIMD cost kernel may fuse
// multiply-adds the scalar cost does not.
TEST(Sinkhorn, DenseSolverAgreesWithBatchSolver) {
  for (const Case& c : test::load_cases("sinkhorn")) {
    SCOPED_TRACE(c.name);
    auto clouds = test::batch_of<double>(c);
    const SinkhornOptions o = options_for(c, 1e-12);
    auto r = sinkhorn<double>(clouds, {{0, 1}}, c.cost, o);
    auto host = test::host_cost(c);
    Matrix<double> C("C", c.n, c.m);
    Kokkos::deep_copy(C, host);
    Vector<double> f("f", c.n), g("g", c.m);
    DenseSinkhorn<double> dense;
    const SinkhornSummary d =
        dense.solve(C, test::device_vector(c.a), test::device_vector(c.b), o, f, g);
    const SinkhornSummary s = r.summary(0);
    EXPECT_LE(relative_error(d.cost, s.cost), 1e-12);
    EXPECT_LE(relative_error(d.objective, s.objective), 1e-12);
    EXPECT_LE(relative_error(d.epsilon, s.epsilon), 1e-14);
    EXPECT_EQ(d.status, SolveStatus::optimal);
    auto f1 = to_host(f), f2 = to_host(r.f);
    for (std::int64_t i = 0; i < c.n; ++i) EXPECT_NEAR(f1(i), f2(i), 1e-10 * (1 + std::fabs(f2(i))));
  }
}

// A batch of clouds of different sizes and the pairs between them, with a pair
// from a cloud to itself.
struct RandomBatch {
  std::vector<std::vector<double>> points;
  std::vector<std::vector<double>> weights;
  std::vector<Pair> pairs{{0, 1}, {1, 2}, {3, 0}, {2, 2}, {4, 1}, {0, 4}, {3, 2}};
  int dim = 3;
  RandomBatch() : RandomBatch({17, 23, 9, 31, 12}) {}
  explicit RandomBatch(const std::vector<std::int64_t>& sizes) {
    for (int c = 0; c < static_cast<int>(sizes.size()); ++c) {
      points.push_back(test::normal_points(sizes[c], dim, 100 + static_cast<std::uint64_t>(c), 0.2 * c));
      std::vector<double> w(static_cast<std::size_t>(sizes[c]));
      random::Stream s(7, random::Purpose::test_data, 200 + static_cast<std::uint64_t>(c));
      for (auto& x : w) x = 0.2 + s.uniform();
      weights.push_back(w);
    }
  }
  template <class T>
  CloudBatch<T> clouds(const std::vector<int>& which) const {
    std::vector<std::vector<T>> p;
    std::vector<std::vector<double>> w;
    for (int c : which) {
      p.push_back(test::cast_to<T>(points[static_cast<std::size_t>(c)]));
      w.push_back(weights[static_cast<std::size_t>(c)]);
    }
    return make_cloud_batch<T>(p, dim, w);
  }
  std::vector<int> all() const {
    std::vector<int> which(points.size());
    std::iota(which.begin(), which.end(), 0);
    return which;
  }
};

/// The workspace that holds the largest problem of a batch alone: chunks of
/// one or a few problems, none beyond the workspace (so none in tiles).
template <class T>
std::size_t largest_problem_bytes(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs) {
  const BatchLayout layout = BatchLayout::of(clouds, pairs);
  std::int64_t largest = 0;
  for (std::int64_t u = 0; u < layout.problems(); ++u) largest = std::max(largest, layout.rows(u) * layout.cols(u));
  return 2 * sizeof(T) * static_cast<std::size_t>(largest);
}

template <class T>
void check_batched_equals_single(Cost cost, double tau, SinkhornDomain domain) {
  SCOPED_TRACE(name_of(domain));
  RandomBatch rb;
  SinkhornOptions o;
  o.domain = domain;
  o.epsilon = 0.3;
  o.tau_a = o.tau_b = tau;
  o.tol = std::is_same<T, float>::value ? 1e-5 : 1e-11;
  o.max_iter = 5000;
  o.point_gradients = cost != Cost::cosine;
  auto all = rb.clouds<T>({0, 1, 2, 3, 4});
  auto batch = sinkhorn<T>(all, rb.pairs, cost, o);
  SinkhornOptions small = o;
  small.workspace_bytes = largest_problem_bytes(all, rb.pairs);  // chunks of one or two problems,
  small.team_solve_bytes = 0;   // iterated row block by row block
  auto chunked = sinkhorn<T>(all, rb.pairs, cost, small);
  auto bs = batch.summaries(), cs = chunked.summaries();
  auto bf = to_host(batch.f), bg = to_host(batch.g), cf = to_host(chunked.f);
  for (std::size_t u = 0; u < rb.pairs.size(); ++u) {
    SCOPED_TRACE("pair " + std::to_string(u));
    EXPECT_EQ(bs[u].cost, cs[u].cost);
    EXPECT_EQ(bs[u].objective, cs[u].objective);
    EXPECT_EQ(bs[u].iterations, cs[u].iterations);
    EXPECT_EQ(bs[u].status, cs[u].status);
    const Pair p = rb.pairs[u];
    auto alone_clouds = p.source == p.target ? rb.clouds<T>({p.source}) : rb.clouds<T>({p.source, p.target});
    const Pair alone_pair = p.source == p.target ? Pair{0, 0} : Pair{0, 1};
    auto alone = sinkhorn<T>(alone_clouds, {alone_pair}, cost, o);
    const SinkhornSummary s = alone.summary(0);
    EXPECT_EQ(bs[u].cost, s.cost);
    EXPECT_EQ(bs[u].objective, s.objective);
    EXPECT_EQ(bs[u].marginal_error, s.marginal_error);
    EXPECT_EQ(bs[u].iterations, s.iterations);
    EXPECT_EQ(bs[u].status, SolveStatus::optimal);
    auto af = to_host(alone.f), ag = to_host(alone.g);
    for (std::int64_t i = 0; i < batch.layout.rows(static_cast<std::int64_t>(u)); ++i) {
      EXPECT_EQ(bf(batch.layout.row_offset[u] + i), af(i));
      EXPECT_EQ(cf(batch.layout.row_offset[u] + i), af(i));
    }
    for (std::int64_t j = 0; j < batch.layout.cols(static_cast<std::int64_t>(u)); ++j)
      EXPECT_EQ(bg(batch.layout.col_offset[u] + j), ag(j));
    if (o.point_gradients) {
      auto bgrad = to_host(batch.source_gradient), agrad = to_host(alone.source_gradient);
      for (std::int64_t i = 0; i < batch.layout.rows(static_cast<std::int64_t>(u)); ++i)
        for (int k = 0; k < rb.dim; ++k) EXPECT_EQ(bgrad(batch.layout.row_offset[u] + i, k), agrad(i, k));
    }
  }
}

TEST(Sinkhorn, BatchedEqualsOneAtATimeBitwise) {
  for (const SinkhornDomain domain : {SinkhornDomain::log, SinkhornDomain::scaling}) {
    check_batched_equals_single<double>(Cost::euclidean, 1.0, domain);
    check_batched_equals_single<double>(Cost::sqeuclidean, 0.7, domain);
    check_batched_equals_single<float>(Cost::sqeuclidean, 1.0, domain);
    check_batched_equals_single<float>(Cost::cosine, 1.0, domain);
  }
}

// The two formulations run the same iteration. After the same number of
// iterations (no stopping) they hold the same potentials and point gradients to
// rounding; run to the tolerance, both converge to the same cost and objective.
// ε spans problems whose scalings stay near 1 to ones that must be absorbed
// many times (span/ε near the float limit).
template <class T>
void check_domains_agree(Cost cost, double tau, double relative_epsilon, double tol, double potential_tol,
                         const RandomBatch& rb = RandomBatch()) {
  SCOPED_TRACE(std::string(std::is_same<T, float>::value ? "float" : "double") + " tau " + std::to_string(tau) +
               " eps " + std::to_string(relative_epsilon));
  auto clouds = rb.clouds<T>(rb.all());
  SinkhornOptions o;
  o.epsilon = relative_epsilon;
  o.relative_epsilon = true;
  o.tau_a = o.tau_b = tau;
  o.point_gradients = true;
  auto run = [&](SinkhornDomain domain, double stop, int iterations) {
    SinkhornOptions d = o;
    d.domain = domain;
    d.tol = stop;
    d.max_iter = iterations;
    return sinkhorn<T>(clouds, rb.pairs, cost, d);
  };
  {
    SCOPED_TRACE("fixed iterations");
    auto log = run(SinkhornDomain::log, 0, 200), scaled = run(SinkhornDomain::scaling, 0, 200);
    auto ls = log.summaries(), ss = scaled.summaries();
    auto lf = to_host(log.f), sf = to_host(scaled.f), lg = to_host(log.g), sg = to_host(scaled.g);
    auto lgrad = to_host(log.source_gradient), sgrad = to_host(scaled.source_gradient);
    for (std::size_t u = 0; u < rb.pairs.size(); ++u) {
      SCOPED_TRACE("pair " + std::to_string(u));
      EXPECT_TRUE(ss[u].scaling_domain);
      EXPECT_FALSE(ls[u].scaling_domain);
      EXPECT_EQ(ss[u].iterations, 200);
      EXPECT_LE(relative_error(ss[u].cost, ls[u].cost), potential_tol);
      const auto row = static_cast<std::int64_t>(log.layout.row_offset[u]);
      const auto col = static_cast<std::int64_t>(log.layout.col_offset[u]);
      const double scale = log.epsilon;
      for (std::int64_t i = 0; i < log.layout.rows(static_cast<std::int64_t>(u)); ++i) {
        EXPECT_NEAR(sf(row + i), lf(row + i), potential_tol * (scale + std::fabs(lf(row + i)))) << "f " << i;
        for (int k = 0; k < rb.dim; ++k)
          EXPECT_NEAR(sgrad(row + i, k), lgrad(row + i, k), 10 * potential_tol * (1 + std::fabs(lgrad(row + i, k))));
      }
      for (std::int64_t j = 0; j < log.layout.cols(static_cast<std::int64_t>(u)); ++j)
        EXPECT_NEAR(sg(col + j), lg(col + j), potential_tol * (scale + std::fabs(lg(col + j)))) << "g " << j;
    }
  }
  {
    SCOPED_TRACE("to the tolerance");
    auto ls = run(SinkhornDomain::log, tol, 1000000).summaries();
    auto ss = run(SinkhornDomain::scaling, tol, 1000000).summaries();
    for (std::size_t u = 0; u < rb.pairs.size(); ++u) {
      SCOPED_TRACE("pair " + std::to_string(u));
      EXPECT_EQ(ls[u].status, SolveStatus::optimal);
      EXPECT_EQ(ss[u].status, SolveStatus::optimal);
      EXPECT_LT(ss[u].marginal_error, 2 * tol);
      EXPECT_LE(std::abs(ss[u].iterations - ls[u].iterations), 2 * o.check_every);
      EXPECT_LE(relative_error(ss[u].cost, ls[u].cost), 100 * tol);
      EXPECT_LE(relative_error(ss[u].objective, ls[u].objective), 100 * tol);
    }
  }
}

TEST(Sinkhorn, ScalingAndLogDomainsReachTheSamePotentials) {
  for (const double eps : {1.0, 0.1, 0.03}) {
    check_domains_agree<double>(Cost::sqeuclidean, 1.0, eps, 1e-8, 1e-9);
    check_domains_agree<double>(Cost::euclidean, 0.8, eps, 1e-8, 1e-9);
    check_domains_agree<float>(Cost::sqeuclidean, 1.0, eps, 1e-5, 1e-4);
    check_domains_agree<float>(Cost::euclidean, 0.8, eps, 1e-5, 1e-4);
  }
}

// Rows of at least scaling_stream_min_row_bytes are read four at a time by the
// scaling domain's host row pass, whose blocks of rows (238 and 24 rows here)
// leave rows over for the one-row loop; both ways reach the log domain's
// potentials. (Each grouped row has the bits of a row read alone:
// SimdLevels.StreamingScalingKernelsHaveTheBitsOfTheirOneRowForms.)
TEST(Sinkhorn, LongRowsOfTheScalingDomainReachTheLogDomainsPotentials) {
  RandomBatch long_rows({262, 1100});
  long_rows.pairs = {{0, 1}};
  check_domains_agree<double>(Cost::sqeuclidean, 1.0, 0.5, 1e-8, 1e-9, long_rows);
  check_domains_agree<float>(Cost::sqeuclidean, 1.0, 0.5, 1e-5, 1e-4, long_rows);
}

// The automatic choice: the scaling domain where the initial kernel is
// representable (ε large against the spread of the costs), the log domain
// otherwise; both give the answer.
TEST(Sinkhorn, AutomaticDomainFollowsTheSpreadOfTheCosts) {
  RandomBatch rb;
  auto clouds = rb.clouds<float>({0, 1, 2, 3, 4});
  SinkhornOptions o;
  o.relative_epsilon = true;
  o.tol = 1e-5;
  o.max_iter = 200000;
  o.epsilon = 0.5;
  for (const auto& s : sinkhorn<float>(clouds, rb.pairs, Cost::sqeuclidean, o).summaries()) {
    EXPECT_TRUE(s.scaling_domain);
    EXPECT_EQ(s.status, SolveStatus::optimal);
  }
  o.epsilon = 1e-3;  // costs span thousands of ε: exp(−C/ε) underflows
  for (const auto& s : sinkhorn<float>(clouds, rb.pairs, Cost::sqeuclidean, o).summaries()) {
    EXPECT_FALSE(s.scaling_domain);
    EXPECT_EQ(s.status, SolveStatus::optimal);
  }
}

// Forced onto a problem whose kernel underflows, the scaling domain fails and
// the log domain solves the problem from the last absorbed potentials.
TEST(Sinkhorn, ForcedScalingDomainFallsBackToTheLogDomain) {
  RandomBatch rb;
  auto clouds = rb.clouds<float>({0, 1, 2, 3, 4});
  SinkhornOptions o;
  o.relative_epsilon = true;
  o.epsilon = 2e-4;
  o.tol = 1e-5;
  o.max_iter = 200000;
  o.domain = SinkhornDomain::log;
  auto log = sinkhorn<float>(clouds, rb.pairs, Cost::sqeuclidean, o).summaries();
  o.domain = SinkhornDomain::scaling;
  auto forced = sinkhorn<float>(clouds, rb.pairs, Cost::sqeuclidean, o).summaries();
  int fell_back = 0;
  for (std::size_t u = 0; u < log.size(); ++u) {
    SCOPED_TRACE("pair " + std::to_string(u));
    ASSERT_EQ(log[u].status, SolveStatus::optimal);
    ASSERT_EQ(forced[u].status, SolveStatus::optimal);
    fell_back += forced[u].scaling_domain ? 0 : 1;
    EXPECT_LE(relative_error(forced[u].cost, log[u].cost), 1e-3);
  }
  EXPECT_GT(fell_back, 0);
}

// A workspace kept between calls (training keeps one per precision) changes no
// bit: calls of growing and shrinking size through one workspace give the
// results of calls without it, in both domains.
TEST(Sinkhorn, ReusedWorkspaceGivesTheSameBits) {
  RandomBatch rb;
  auto clouds = rb.clouds<float>({0, 1, 2, 3, 4});
  SinkhornWorkspace<float> workspace;
  for (const SinkhornDomain domain : {SinkhornDomain::scaling, SinkhornDomain::log})
    for (const std::vector<Pair>& pairs : {std::vector<Pair>{{0, 1}}, rb.pairs, std::vector<Pair>{{3, 2}, {1, 1}}}) {
      SinkhornOptions o;
      o.domain = domain;
      o.epsilon = 0.2;
      o.relative_epsilon = true;
      o.tol = 1e-6;
      o.point_gradients = true;
      const auto fresh = sinkhorn<float>(clouds, pairs, Cost::euclidean, o);
      const auto reused = sinkhorn<float>(clouds, pairs, Cost::euclidean, o, nullptr, &workspace);
      EXPECT_GE(workspace.cost.extent(0), static_cast<std::size_t>(fresh.layout.rows(0) * fresh.layout.cols(0)));
      const auto a = fresh.summaries(), b = reused.summaries();
      for (std::size_t u = 0; u < a.size(); ++u) {
        EXPECT_EQ(a[u].cost, b[u].cost);
        EXPECT_EQ(a[u].objective, b[u].objective);
        EXPECT_EQ(a[u].iterations, b[u].iterations);
      }
      auto fa = to_host(fresh.f), fb = to_host(reused.f);
      for (std::size_t i = 0; i < fa.extent(0); ++i) EXPECT_EQ(fa(i), fb(i));
      auto ga = to_host(fresh.source_gradient), gb = to_host(reused.source_gradient);
      for (std::size_t i = 0; i < ga.extent(0); ++i)
        for (std::size_t k = 0; k < ga.extent(1); ++k) EXPECT_EQ(ga(i, k), gb(i, k));
    }
}

TEST(Sinkhorn, RelativeEpsilonIsAFractionOfTheBatchMeanCost) {
  RandomBatch rb;
  auto clouds = rb.clouds<double>({0, 1, 2, 3, 4});
  SinkhornOptions o;
  o.epsilon = 0.5;
  o.relative_epsilon = true;
  auto r = sinkhorn<double>(clouds, rb.pairs, Cost::euclidean, o);
  double total = 0, entries = 0;
  for (const Pair& p : rb.pairs) {
    const auto& x = rb.points[static_cast<std::size_t>(p.source)];
    const auto& y = rb.points[static_cast<std::size_t>(p.target)];
    const std::size_t n = x.size() / 3, m = y.size() / 3;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j)
        total += ground_cost<double>(Cost::euclidean, &x[3 * i], &y[3 * j], 3, 0.0, 0.0);
    entries += static_cast<double>(n * m);
  }
  EXPECT_LE(relative_error(r.epsilon, 0.5 * total / entries), 1e-12);
  // Summed while stored (one chunk) or in a pass of their own (several): same bits.
  // And with problems in tiles (beyond a one-byte workspace), whose costs the
  // pass of their own sums too.
  for (const std::size_t workspace : {largest_problem_bytes(clouds, rb.pairs), std::size_t(1)}) {
    SCOPED_TRACE("workspace " + std::to_string(workspace));
    SinkhornOptions chunked = o;
    chunked.workspace_bytes = workspace;
    auto c = sinkhorn<double>(clouds, rb.pairs, Cost::euclidean, chunked);
    EXPECT_EQ(c.epsilon, r.epsilon);
    auto fl = sinkhorn<float>(rb.clouds<float>({0, 1, 2, 3, 4}), rb.pairs, Cost::sqeuclidean, o);
    auto flc = sinkhorn<float>(rb.clouds<float>({0, 1, 2, 3, 4}), rb.pairs, Cost::sqeuclidean, chunked);
    EXPECT_EQ(fl.epsilon, flc.epsilon);
    if (workspace > 1) {
      EXPECT_EQ(fl.summary(2).cost, flc.summary(2).cost);
    }
  }
}

// A balanced problem whose costs alone pass the workspace goes to the tiled
// engine (tiled_sinkhorn.hpp) on this rank: the same problem and tolerance, in
// OTT's cost forms and its own update order. Its results (cost, objective, the
// potentials up to their constant shift, point gradients, reported error)
// agree with the batch kernel's within what the tolerance allows, next to
// problems still solved in chunks, and are the same bits on every call. An
// unbalanced problem stays in the batch kernel (same bits as with room).
template <class T>
void check_tiled_route(Cost cost, double tau, SinkhornDomain domain) {
  SCOPED_TRACE(std::string(cost_name(cost)) + " tau " + std::to_string(tau) + " " + name_of(domain) +
               (std::is_same<T, float>::value ? " float" : " double"));
  const bool single = std::is_same<T, float>::value;
  RandomBatch rb;
  auto clouds = rb.clouds<T>({0, 1, 2, 3, 4});
  SinkhornOptions o;
  o.domain = domain;
  o.epsilon = 0.3;
  o.tau_a = o.tau_b = tau;
  o.tol = single ? 1e-6 : 1e-12;
  o.max_iter = 100000;
  o.point_gradients = cost != Cost::cosine;
  const auto whole = sinkhorn<T>(clouds, rb.pairs, cost, o);
  SinkhornOptions tight = o;
  tight.workspace_bytes = 2 * sizeof(T) * 250;  // pairs of more than 250 entries go to tiles
  const auto tiled = sinkhorn<T>(clouds, rb.pairs, cost, tight);
  const auto again = sinkhorn<T>(clouds, rb.pairs, cost, tight);
  const auto ws = whole.summaries(), ts = tiled.summaries(), as = again.summaries();
  auto wf = to_host(whole.f), wg = to_host(whole.g), tf = to_host(tiled.f), tg = to_host(tiled.g);
  auto af = to_host(again.f);
  const double value_tol = single ? 2e-4 : 1e-9, potential_tol = single ? 2e-3 : 1e-8;
  if (tau < 1.0) {
    for (std::size_t u = 0; u < rb.pairs.size(); ++u) {
      EXPECT_EQ(ts[u].cost, ws[u].cost);
      EXPECT_EQ(ts[u].objective, ws[u].objective);
    }
    for (std::size_t i = 0; i < tf.extent(0); ++i) EXPECT_EQ(tf(i), wf(i));
    return;
  }
  int in_tiles = 0;
  for (std::size_t u = 0; u < rb.pairs.size(); ++u) {
    SCOPED_TRACE("pair " + std::to_string(u));
    const auto n = tiled.layout.rows(static_cast<std::int64_t>(u)), m = tiled.layout.cols(static_cast<std::int64_t>(u));
    EXPECT_EQ(ts[u].cost, as[u].cost);
    if (n * m <= 250) {  // in a chunk, as with room
      EXPECT_EQ(ts[u].cost, ws[u].cost);
      EXPECT_EQ(ts[u].objective, ws[u].objective);
      continue;
    }
    ++in_tiles;
    EXPECT_EQ(ts[u].status, SolveStatus::optimal);
    EXPECT_EQ(ws[u].status, SolveStatus::optimal);
    EXPECT_LE(relative_error(ts[u].cost, ws[u].cost), value_tol);
    EXPECT_LE(relative_error(ts[u].objective, ws[u].objective), value_tol);
    EXPECT_LE(ts[u].marginal_error, 10 * o.tol);
    EXPECT_EQ(ts[u].cost, as[u].cost);
    EXPECT_EQ(ts[u].objective, as[u].objective);
    EXPECT_EQ(ts[u].iterations, as[u].iterations);
    // Balanced potentials are defined up to f + s, g − s.
    double shift = 0;
    for (std::int64_t i = 0; i < n; ++i)
      shift += static_cast<double>(tf(tiled.layout.row_offset[u] + i)) - static_cast<double>(wf(whole.layout.row_offset[u] + i));
    shift /= static_cast<double>(n);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto r = tiled.layout.row_offset[u] + i;
      EXPECT_NEAR(static_cast<double>(tf(r)) - shift, static_cast<double>(wf(r)), potential_tol);
      EXPECT_EQ(tf(r), af(r));
    }
    for (std::int64_t j = 0; j < m; ++j) {
      const auto c = tiled.layout.col_offset[u] + j;
      EXPECT_NEAR(static_cast<double>(tg(c)) + shift, static_cast<double>(wg(c)), potential_tol);
    }
  }
  EXPECT_EQ(in_tiles, 4);
  if (!o.point_gradients) return;
  for (const bool source : {true, false}) {
    auto want = to_host(source ? whole.source_gradient : whole.target_gradient);
    auto got = to_host(source ? tiled.source_gradient : tiled.target_gradient);
    auto repeat = to_host(source ? again.source_gradient : again.target_gradient);
    double scale = 0;
    for (std::size_t i = 0; i < want.extent(0); ++i)
      for (std::size_t k = 0; k < want.extent(1); ++k) scale = std::max(scale, std::fabs(want(i, k)));
    for (std::size_t i = 0; i < want.extent(0); ++i)
      for (std::size_t k = 0; k < want.extent(1); ++k) {
        EXPECT_NEAR(got(i, k), want(i, k), (single ? 1e-3 : 1e-8) * scale) << (source ? "source " : "target ") << i;
        EXPECT_EQ(got(i, k), repeat(i, k));
      }
  }
}

// A non-finite point (a diverged metric, in training) is a numerical error of
// its problem in the batch kernel and in tiles alike, not an exception: the
// caller names the cause.
TEST(Sinkhorn, NonFinitePointsAreANumericalErrorInTilesToo) {
  RandomBatch rb;
  rb.points[0][4] = std::nan("");
  auto clouds = rb.clouds<double>({0, 1});
  for (const std::size_t workspace : {std::size_t(1) << 30, std::size_t(1)}) {
    SinkhornOptions o;
    o.workspace_bytes = workspace;
    o.point_gradients = true;
    const auto s = sinkhorn<double>(clouds, {{0, 1}, {1, 1}}, Cost::sqeuclidean, o).summaries();
    EXPECT_EQ(s[0].status, SolveStatus::numerical_error) << "workspace " << workspace;
    EXPECT_FALSE(std::isfinite(s[0].cost)) << "workspace " << workspace;
    EXPECT_NE(s[1].status, SolveStatus::numerical_error) << "workspace " << workspace;
    EXPECT_TRUE(std::isfinite(s[1].cost)) << "workspace " << workspace;
  }
}

TEST(Sinkhorn, ProblemsBeyondTheWorkspaceAreSolvedInTiles) {
  for (const SinkhornDomain domain : {SinkhornDomain::log, SinkhornDomain::automatic}) {
    check_tiled_route<double>(Cost::euclidean, 1.0, domain);
    check_tiled_route<double>(Cost::sqeuclidean, 1.0, domain);
    check_tiled_route<double>(Cost::sqeuclidean, 0.7, domain);
    check_tiled_route<float>(Cost::sqeuclidean, 1.0, domain);
    check_tiled_route<float>(Cost::cosine, 1.0, domain);
  }
}

// Objective of one dense problem as a function of its cost.
double dense_objective(const HostMatrix<double>& host, const Case& c, const SinkhornOptions& o,
                       HostMatrix<double>* plan = nullptr) {
  Matrix<double> C("C", c.n, c.m);
  Kokkos::deep_copy(C, host);
  Vector<double> f("f", c.n), g("g", c.m);
  Matrix<double> P("P", c.n, c.m);
  SinkhornOptions with_plan = o;
  with_plan.keep_plan = plan != nullptr;
  DenseSinkhorn<double> solver;
  const auto s = solver.solve(C, test::device_vector(c.a), test::device_vector(c.b), with_plan, f, g,
                              plan ? P : Matrix<double>());
  EXPECT_EQ(s.status, SolveStatus::optimal);
  if (plan) *plan = to_host(P);
  return s.objective;
}

TEST(Sinkhorn, GradientWithRespectToCostIsThePlan) {
  for (const Case& c : test::load_cases("sinkhorn")) {
    if (c.name != "balanced_euclidean_eps0.1" && c.name != "unbalanced_both_tau0.8" &&
        c.name != "unbalanced_source_only_tau0.6")
      continue;
    SCOPED_TRACE(c.name);
    SinkhornOptions o = options_for(c, 1e-14);
    o.relative_epsilon = false;
    o.epsilon = c.epsilon;
    auto C = test::host_cost(c);
    HostMatrix<double> plan;
    dense_objective(C, c, o, &plan);
    const double h = 1e-5;
    for (auto [i, j] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {3, 7}, {c.n - 1, c.m - 1}, {5, 2}}) {
      auto up = HostMatrix<double>("up", c.n, c.m), down = HostMatrix<double>("down", c.n, c.m);
      Kokkos::deep_copy(up, C);
      Kokkos::deep_copy(down, C);
      up(i, j) += h;
      down(i, j) -= h;
      const double fd = (dense_objective(up, c, o) - dense_objective(down, c, o)) / (2 * h);
      EXPECT_NEAR(fd, plan(i, j), 1e-7 * std::max(1.0, std::fabs(plan(i, j))) + 1e-9) << i << "," << j;
    }
  }
}

TEST(Sinkhorn, PlanFromPotentialsMatchesTheSolversPlan) {
  for (const Case& c : test::load_cases("sinkhorn")) {
    SCOPED_TRACE(c.name);
    SinkhornOptions o = options_for(c, 1e-12);
    auto host = test::host_cost(c);
    Matrix<double> C("C", c.n, c.m), P("P", c.n, c.m), Q("Q", c.n, c.m);
    Kokkos::deep_copy(C, host);
    Vector<double> f("f", c.n), g("g", c.m);
    o.keep_plan = true;
    DenseSinkhorn<double> solver;
    const auto a = test::device_vector(c.a), b = test::device_vector(c.b);
    const auto s = solver.solve(C, a, b, o, f, g, P);
    sinkhorn_plan<double>(C, a, b, f, g, s.epsilon, o.balanced(), Q);
    auto p = to_host(P), q = to_host(Q);
    for (std::int64_t i = 0; i < c.n; ++i)
      for (std::int64_t j = 0; j < c.m; ++j) EXPECT_NEAR(q(i, j), p(i, j), 1e-12 * p(i, j) + 1e-300);
  }
}

// Objective of one cloud pair after projecting both clouds by A.
double mapped_objective(const std::vector<double>& x, const std::vector<double>& y, std::int64_t n,
                        std::int64_t m, int d, const std::vector<double>& a, int k, Cost cost,
                        const SinkhornOptions& o, HostMatrix<double>* grad = nullptr) {
  auto X = test::device_matrix<double>(x, n, d), Y = test::device_matrix<double>(y, m, d);
  auto A = test::device_matrix<double>(a, k, d);
  Matrix<double> pool("pool", n + m, d);
  Kokkos::deep_copy(Kokkos::subview(pool, std::make_pair(std::int64_t(0), n), Kokkos::ALL), X);
  Kokkos::deep_copy(Kokkos::subview(pool, std::make_pair(n, n + m), Kokkos::ALL), Y);
  Matrix<double> Z("Z", n + m, k);
  project<double>(pool, A, Z);
  Vector<double> w("w", n + m);
  std::vector<double> wh(static_cast<std::size_t>(n + m));
  for (std::int64_t i = 0; i < n + m; ++i) wh[static_cast<std::size_t>(i)] = 1.0 + 0.1 * (i % 5);
  w = test::device_vector(wh);
  CloudBatch<double> clouds(Z, w, {{0, 0, n}, {n, n, m}});
  SinkhornOptions with_grad = o;
  with_grad.point_gradients = grad != nullptr;
  auto r = sinkhorn<double>(clouds, {{0, 1}}, cost, with_grad);
  if (grad) *grad = problem_map_gradient<double>(clouds, {{0, 1}}, r.layout, 0, r.source_gradient, r.target_gradient, pool);
  return r.summary(0).objective;
}

TEST(Sinkhorn, GradientWithRespectToTheMapMatchesFiniteDifferences) {
  const std::int64_t n = 12, m = 10;
  const int d = 4, k = 2;
  auto x = test::normal_points(n, d, 300);
  auto y = test::normal_points(m, d, 301, 0.5);
  auto a = test::normal_points(k, d, 302);
  // The batch kernel, and the tiled engine (a balanced problem beyond a one-byte workspace).
  for (const std::size_t workspace : {std::size_t(1) << 30, std::size_t(1)})
  for (Cost cost : {Cost::euclidean, Cost::sqeuclidean})
    for (double tau : {1.0, 0.75}) {
      if (workspace == 1 && tau < 1.0) continue;
      SCOPED_TRACE(std::string(cost_name(cost)) + " tau " + std::to_string(tau) + " workspace " +
                   std::to_string(workspace));
      SinkhornOptions o;
      o.epsilon = 0.2;
      o.tau_a = o.tau_b = tau;
      o.tol = workspace > 1 ? 1e-15 : 1e-13;  // the tiled engine's error floor is a little higher
      o.max_iter = 100000;
      o.workspace_bytes = workspace;
      HostMatrix<double> grad;
      mapped_objective(x, y, n, m, d, a, k, cost, o, &grad);
      const double h = 1e-6;
      for (int r = 0; r < k; ++r)
        for (int c = 0; c < d; ++c) {
          auto up = a, down = a;
          up[static_cast<std::size_t>(r * d + c)] += h;
          down[static_cast<std::size_t>(r * d + c)] -= h;
          const double fd = (mapped_objective(x, y, n, m, d, up, k, cost, o) -
                             mapped_objective(x, y, n, m, d, down, k, cost, o)) /
                            (2 * h);
          EXPECT_NEAR(grad(r, c), fd, 2e-6 * std::max(1.0, std::fabs(fd))) << r << "," << c;
        }
    }
}

TEST(Sinkhorn, PointGradientsChainToTheMapGradientOfAWeightedSum) {
  RandomBatch rb;
  auto clouds = rb.clouds<double>({0, 1, 2, 3, 4});
  SinkhornOptions o;
  o.epsilon = 0.3;
  o.point_gradients = true;
  auto r = sinkhorn<double>(clouds, rb.pairs, Cost::euclidean, o);
  std::vector<double> coef;
  for (std::size_t u = 0; u < rb.pairs.size(); ++u) coef.push_back(0.5 + 0.25 * static_cast<double>(u));
  Matrix<double> G("G", clouds.points().extent(0), rb.dim);
  accumulate_point_gradients<double>(clouds, rb.pairs, r.layout, coef, r.source_gradient, r.target_gradient, G);
  // With X = the pool itself (A = identity), the map gradient is Gᵀ X.
  Matrix<double> grad("grad", rb.dim, rb.dim);
  map_gradient<double>(G, clouds.points(), grad);
  auto got = to_host(grad);
  HostMatrix<double> want("want", rb.dim, rb.dim);
  for (std::size_t u = 0; u < rb.pairs.size(); ++u) {
    auto one = problem_map_gradient<double>(clouds, rb.pairs, r.layout, static_cast<std::int64_t>(u),
                                            r.source_gradient, r.target_gradient, clouds.points());
    for (int i = 0; i < rb.dim; ++i)
      for (int j = 0; j < rb.dim; ++j) want(i, j) += coef[u] * one(i, j);
  }
  for (int i = 0; i < rb.dim; ++i)
    for (int j = 0; j < rb.dim; ++j) EXPECT_NEAR(got(i, j), want(i, j), 1e-12 * (1 + std::fabs(want(i, j))));
}

TEST(Sinkhorn, WarmStartFromConvergedPotentialsStopsAtTheFirstCheck) {
  RandomBatch rb;
  auto clouds = rb.clouds<double>({0, 1, 2, 3, 4});
  SinkhornOptions o;
  o.epsilon = 0.5;
  o.tol = 1e-9;
  o.max_iter = 20000;
  auto cold = sinkhorn<double>(clouds, rb.pairs, Cost::sqeuclidean, o);
  SinkhornWarmStart<double> warm{cold.f, cold.g};
  auto hot = sinkhorn<double>(clouds, rb.pairs, Cost::sqeuclidean, o, &warm);
  auto cs = cold.summaries(), hs = hot.summaries();
  for (std::size_t u = 0; u < cs.size(); ++u) {
    EXPECT_GT(cs[u].iterations, o.check_every + 1);
    ASSERT_EQ(cs[u].status, SolveStatus::optimal);
    EXPECT_EQ(hs[u].iterations, o.check_every + 1) << "pair " << u;
    EXPECT_LE(relative_error(hs[u].cost, cs[u].cost), 1e-7);
  }
}

TEST(Sinkhorn, SinglePointSourceSendsEverythingFromIt) {
  std::vector<double> x{0.5, -1.0};
  auto y = test::normal_points(6, 2, 400);
  std::vector<double> b{1, 2, 3, 1, 2, 1};
  auto clouds = make_cloud_batch<double>({x, y}, 2, {{}, b});
  SinkhornOptions o;
  o.epsilon = 0.05;
  o.keep_plan = true;
  auto r = sinkhorn<double>(clouds, {{0, 1}}, Cost::euclidean, o);
  auto plan = to_host(r.plan);
  double expected = 0;
  for (int j = 0; j < 6; ++j) {
    EXPECT_NEAR(plan(j), b[static_cast<std::size_t>(j)] / 10.0, 1e-12);
    expected += b[static_cast<std::size_t>(j)] / 10.0 *
                ground_cost<double>(Cost::euclidean, x.data(), &y[static_cast<std::size_t>(2 * j)], 2, 0.0, 0.0);
  }
  EXPECT_LE(relative_error(r.summary(0).cost, expected), 1e-12);
  EXPECT_EQ(r.summary(0).status, SolveStatus::optimal);
}

TEST(Sinkhorn, DuplicatesTinyAndHugeEpsilonStayFinite) {
  // Duplicated points and a cloud transported onto itself.
  auto x = test::normal_points(10, 2, 500);
  x.insert(x.end(), x.begin(), x.begin() + 8);  // 4 duplicates
  auto clouds = make_cloud_batch<double>({x}, 2);
  for (double eps : {1e-4, 1e-2, 1.0, 1e4}) {
    SCOPED_TRACE(eps);
    SinkhornOptions o;
    o.epsilon = eps;
    o.relative_epsilon = true;
    o.max_iter = 3000;
    o.tol = 1e-9;
    auto r = sinkhorn<double>(clouds, {{0, 0}}, Cost::sqeuclidean, o);
    const auto s = r.summary(0);
    EXPECT_TRUE(std::isfinite(s.cost));
    EXPECT_TRUE(std::isfinite(s.objective));
    EXPECT_NE(s.status, SolveStatus::numerical_error);
    auto f = to_host(r.f);
    for (std::size_t i = 0; i < f.extent(0); ++i) EXPECT_TRUE(std::isfinite(f(i)));
    EXPECT_GE(s.cost, 0.0);
    if (eps == 1e-4) {
      EXPECT_LT(s.cost, 1e-3 * r.epsilon / 1e-4);  // near the identity coupling
    }
    if (eps == 1e4) {
      // Almost the independent coupling: cost → mean of C over a⊗b.
      double mean = 0;
      const std::size_t n = x.size() / 2;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
          mean += ground_cost<double>(Cost::sqeuclidean, &x[2 * i], &x[2 * j], 2, 0.0, 0.0);
      mean /= static_cast<double>(n * n);
      EXPECT_LE(relative_error(s.cost, mean), 1e-3);
    }
  }
}

TEST(Sinkhorn, ZeroWeightPointsGetFinitePotentialsAndNoMass) {
  auto x = test::normal_points(8, 2, 600);
  auto y = test::normal_points(7, 2, 601);
  std::vector<double> a{1, 0, 1, 1, 0, 1, 1, 1}, b{0, 1, 1, 1, 1, 1, 0};
  auto clouds = make_cloud_batch<float>({test::cast_to<float>(x), test::cast_to<float>(y)}, 2, {a, b});
  SinkhornOptions o;
  o.epsilon = 0.1;
  o.keep_plan = true;
  o.tol = 1e-6;
  auto r = sinkhorn<float>(clouds, {{0, 1}}, Cost::euclidean, o);
  auto plan = to_host(r.plan);
  auto f = to_host(r.f);
  auto g = to_host(r.g);
  for (int j = 0; j < 7; ++j) EXPECT_EQ(plan(1 * 7 + j), 0.0f);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(plan(i * 7 + 0), 0.0f);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isfinite(f(i)));
  for (int j = 0; j < 7; ++j) EXPECT_TRUE(std::isfinite(g(j)));
  EXPECT_EQ(r.summary(0).status, SolveStatus::optimal);
}

TEST(Sinkhorn, MaxIterIsReported) {
  RandomBatch rb;
  auto clouds = rb.clouds<double>({0, 1});
  SinkhornOptions o;
  o.epsilon = 0.01;
  o.max_iter = 5;
  o.tol = 0;
  auto r = sinkhorn<double>(clouds, {{0, 1}}, Cost::sqeuclidean, o);
  EXPECT_EQ(r.summary(0).status, SolveStatus::max_iter);
  EXPECT_EQ(r.summary(0).iterations, 5);
}

TEST(Sinkhorn, InvalidOptionsAreErrors) {
  RandomBatch rb;
  auto clouds = rb.clouds<double>({0, 1});
  SinkhornOptions o;
  o.epsilon = 0;
  EXPECT_THROW(sinkhorn<double>(clouds, {{0, 1}}, Cost::euclidean, o), Error);
  o.epsilon = -1;
  EXPECT_THROW(sinkhorn<double>(clouds, {{0, 1}}, Cost::euclidean, o), Error);
  o.epsilon = 0.1;
  o.tau_a = 0;
  EXPECT_THROW(sinkhorn<double>(clouds, {{0, 1}}, Cost::euclidean, o), Error);
  o.tau_a = 1;
  o.point_gradients = true;
  EXPECT_THROW(sinkhorn<double>(clouds, {{0, 1}}, Cost::cosine, o), Error);
  o.point_gradients = false;
  EXPECT_THROW(sinkhorn<double>(clouds, {{0, 2}}, Cost::euclidean, o), Error);
}

}  // namespace
}  // namespace kotml::ot

// Exact OT by network simplex: values against POT's emd2, optimality
// certificates (marginals, dual feasibility, complementary slackness, zero
// duality gap), EMD(X, X) = 0, gradients against finite differences, warm
// starts, batched results equal to one-at-a-time results bit for bit.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "kotml/core/error.hpp"
#include "kotml/ot/gradient.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "ot_test_support.hpp"

namespace kotml::ot {
namespace {

using test::Case;
using test::relative_error;
using test::to_host;

std::vector<double> normalised(const std::vector<double>& w) {
  const double s = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<double> out(w);
  for (auto& x : out) x /= s;
  return out;
}

/// Checks the optimality certificate of problem u of a batch result against a
/// dense cost: plan marginals, f_i + g_j ≤ C_ij, equality on the support, and
/// <P,C> = a·f + b·g.
void check_certificate(const EmdBatchResult& r, std::int64_t u, const HostMatrix<double>& C,
                       const std::vector<double>& a_raw, const std::vector<double>& b_raw) {
  const auto a = normalised(a_raw), b = normalised(b_raw);
  const std::int64_t n = r.layout.rows(u), m = r.layout.cols(u);
  auto rows = to_host(r.plan_row);
  auto cols = to_host(r.plan_col);
  auto values = to_host(r.plan_value);
  auto f = to_host(r.f);
  auto g = to_host(r.g);
  const EmdSummary s = r.summary(u);
  EXPECT_EQ(s.status, SolveStatus::optimal);
  EXPECT_LE(s.plan_size, n + m - 1);
  const std::int64_t at = r.layout.node_offset(u);
  std::vector<double> row_sum(static_cast<std::size_t>(n)), col_sum(static_cast<std::size_t>(m));
  double transport = 0;
  const double scale = 1.0 + s.cost;
  for (std::int32_t e = 0; e < s.plan_size; ++e) {
    const auto i = rows(at + e), j = cols(at + e);
    if (e > 0) {
      const bool ordered = rows(at + e - 1) < i || (rows(at + e - 1) == i && cols(at + e - 1) < j);
      EXPECT_TRUE(ordered) << "plan entries must be sorted by row, then column";
    }
    EXPECT_GT(values(at + e), 0.0);
    row_sum[static_cast<std::size_t>(i)] += values(at + e);
    col_sum[static_cast<std::size_t>(j)] += values(at + e);
    transport += values(at + e) * C(i, j);
    EXPECT_NEAR(f(r.layout.row_offset[u] + i) + g(r.layout.col_offset[u] + j), C(i, j), 1e-10 * scale);
  }
  EXPECT_LE(relative_error(transport, s.cost), 1e-13);
  for (std::int64_t i = 0; i < n; ++i) EXPECT_NEAR(row_sum[static_cast<std::size_t>(i)], a[static_cast<std::size_t>(i)], 1e-13);
  for (std::int64_t j = 0; j < m; ++j) EXPECT_NEAR(col_sum[static_cast<std::size_t>(j)], b[static_cast<std::size_t>(j)], 1e-13);
  double dual = 0, worst = -1e300;
  for (std::int64_t i = 0; i < n; ++i) {
    const double fi = f(r.layout.row_offset[u] + i);
    EXPECT_TRUE(std::isfinite(fi));
    dual += a[static_cast<std::size_t>(i)] * fi;
    for (std::int64_t j = 0; j < m; ++j) worst = std::max(worst, fi + g(r.layout.col_offset[u] + j) - C(i, j));
  }
  for (std::int64_t j = 0; j < m; ++j) dual += b[static_cast<std::size_t>(j)] * g(r.layout.col_offset[u] + j);
  EXPECT_LE(worst, 1e-10 * scale) << "dual feasibility";
  EXPECT_LE(std::fabs(s.cost - dual), 1e-9 * scale) << "duality gap";
  double fa = 0, gb = 0;
  for (std::int64_t i = 0; i < n; ++i) fa += a[static_cast<std::size_t>(i)] * f(r.layout.row_offset[u] + i);
  for (std::int64_t j = 0; j < m; ++j) gb += b[static_cast<std::size_t>(j)] * g(r.layout.col_offset[u] + j);
  double largest = 0;
  for (std::size_t i = 0; i < f.extent(0); ++i) largest = std::max(largest, std::fabs(f(i)));
  EXPECT_NEAR(fa, gb, 1e-14 * (1 + largest) * static_cast<double>(n + m)) << "centred potentials";
}

template <class T>
void check_against_pot(double tol) {
  for (const Case& c : test::load_cases("emd")) {
    SCOPED_TRACE(c.name);
    auto clouds = test::batch_of<T>(c);
    auto r = emd<T>(clouds, {{0, 1}}, c.cost, EmdOptions{});
    EXPECT_LE(relative_error(r.summary(0).cost, c.expected_cost), tol)
        << r.summary(0).cost << " vs " << c.expected_cost;
    if (std::is_same<T, double>::value) check_certificate(r, 0, test::host_cost(c), c.a, c.b);
  }
}

TEST(Emd, MatchesPotAndIsCertifiedOptimal) { check_against_pot<double>(1e-12); }

// Float coordinates round the points (and so the costs) to float precision.
TEST(Emd, MatchesPotWithFloatPoints) { check_against_pot<float>(1e-6); }

TEST(Emd, DenseSolverEqualsBatchSolverBitwise) {
  for (const Case& c : test::load_cases("emd")) {
    SCOPED_TRACE(c.name);
    auto r = emd<double>(test::batch_of<double>(c), {{0, 1}}, c.cost, EmdOptions{});
    const auto dense = emd_dense(test::host_cost(c), c.a, c.b, EmdOptions{});
    const EmdSummary s = r.summary(0);
    EXPECT_EQ(dense.summary.cost, s.cost);
    EXPECT_EQ(dense.summary.iterations, s.iterations);
    ASSERT_EQ(dense.summary.plan_size, s.plan_size);
    auto values = to_host(r.plan_value);
    auto cols = to_host(r.plan_col);
    for (std::int32_t e = 0; e < s.plan_size; ++e) {
      EXPECT_EQ(dense.plan_value[static_cast<std::size_t>(e)], values(e));
      EXPECT_EQ(dense.plan_col[static_cast<std::size_t>(e)], cols(e));
    }
    EXPECT_EQ(dense.basis, r.basis_of(0));
    auto f = to_host(r.f);
    for (std::int64_t i = 0; i < c.n; ++i) EXPECT_EQ(dense.f[static_cast<std::size_t>(i)], f(i));
  }
}

TEST(Emd, TransportOfACloudOntoItselfCostsExactlyZero) {
  for (Cost cost : {Cost::euclidean, Cost::sqeuclidean}) {
    auto x = test::normal_points(40, 3, 700);
    x.insert(x.end(), x.begin(), x.begin() + 15);  // 5 duplicated points
    std::vector<double> w(x.size() / 3);
    random::Stream s(3, random::Purpose::test_data, 701);
    for (auto& v : w) v = 0.1 + s.uniform();
    w[4] = 0;
    for (const auto& weights : {std::vector<double>{}, w}) {
      auto clouds = make_cloud_batch<double>({x}, 3, {weights});
      auto r = emd<double>(clouds, {{0, 0}}, cost, EmdOptions{});
      EXPECT_EQ(r.summary(0).cost, 0.0);
      EXPECT_EQ(r.summary(0).status, SolveStatus::optimal);
    }
  }
}

struct RandomBatch {
  std::vector<std::vector<double>> points;
  std::vector<std::vector<double>> weights;
  std::vector<Pair> pairs{{0, 1}, {1, 2}, {3, 0}, {2, 2}, {4, 1}, {0, 4}, {3, 2}, {1, 0}};
  int dim = 3;
  RandomBatch() {
    const std::int64_t sizes[5] = {27, 33, 19, 41, 22};
    for (int c = 0; c < 5; ++c) {
      points.push_back(test::normal_points(sizes[c], dim, 800 + static_cast<std::uint64_t>(c), 0.3 * c));
      std::vector<double> w(static_cast<std::size_t>(sizes[c]));
      random::Stream s(9, random::Purpose::test_data, 900 + static_cast<std::uint64_t>(c));
      for (auto& x : w) x = s.uniform() < 0.1 ? 0.0 : 0.2 + s.uniform();
      weights.push_back(w);
    }
  }
  CloudBatch<double> clouds(const std::vector<int>& which, double scale = 1.0) const {
    std::vector<std::vector<double>> p;
    std::vector<std::vector<double>> w;
    for (int c : which) {
      auto q = points[static_cast<std::size_t>(c)];
      for (auto& x : q) x *= scale;
      p.push_back(q);
      w.push_back(weights[static_cast<std::size_t>(c)]);
    }
    return make_cloud_batch<double>(p, dim, w);
  }
};

TEST(Emd, BatchedEqualsOneAtATimeBitwise) {
  RandomBatch rb;
  auto all = rb.clouds({0, 1, 2, 3, 4});
  EmdOptions o;
  o.point_gradients = true;
  auto batch = emd<double>(all, rb.pairs, Cost::euclidean, o);
  EmdOptions tiny = o;
  tiny.workspace_bytes = 1;  // one problem per chunk
  auto chunked = emd<double>(all, rb.pairs, Cost::euclidean, tiny);
  auto bs = batch.summaries(), cs = chunked.summaries();
  auto bf = to_host(batch.f), bv = to_host(batch.plan_value);
  auto bgr = to_host(batch.source_gradient);
  for (std::size_t u = 0; u < rb.pairs.size(); ++u) {
    SCOPED_TRACE("pair " + std::to_string(u));
    const Pair p = rb.pairs[u];
    auto alone_clouds = p.source == p.target ? rb.clouds({p.source}) : rb.clouds({p.source, p.target});
    auto alone = emd<double>(alone_clouds, {p.source == p.target ? Pair{0, 0} : Pair{0, 1}}, Cost::euclidean, o);
    const EmdSummary s = alone.summary(0);
    EXPECT_EQ(bs[u].cost, s.cost);
    EXPECT_EQ(cs[u].cost, s.cost);
    EXPECT_EQ(bs[u].iterations, s.iterations);
    EXPECT_EQ(bs[u].plan_size, s.plan_size);
    EXPECT_EQ(batch.basis_of(static_cast<std::int64_t>(u)), alone.basis_of(0));
    auto af = to_host(alone.f), av = to_host(alone.plan_value);
    auto agr = to_host(alone.source_gradient);
    for (std::int64_t i = 0; i < batch.layout.rows(static_cast<std::int64_t>(u)); ++i) {
      EXPECT_EQ(bf(batch.layout.row_offset[u] + i), af(i));
      for (int k = 0; k < rb.dim; ++k) EXPECT_EQ(bgr(batch.layout.row_offset[u] + i, k), agr(i, k));
    }
    for (std::int32_t e = 0; e < s.plan_size; ++e) EXPECT_EQ(bv(batch.layout.node_offset(static_cast<std::int64_t>(u)) + e), av(e));
    // Certificate for each problem of the batch.
    HostMatrix<double> C("C", batch.layout.rows(static_cast<std::int64_t>(u)), batch.layout.cols(static_cast<std::int64_t>(u)));
    const auto& x = rb.points[static_cast<std::size_t>(p.source)];
    const auto& y = rb.points[static_cast<std::size_t>(p.target)];
    for (std::size_t i = 0; i < C.extent(0); ++i)
      for (std::size_t j = 0; j < C.extent(1); ++j)
        C(i, j) = ground_cost<double>(Cost::euclidean, &x[3 * i], &y[3 * j], 3, 0.0, 0.0);
    check_certificate(batch, static_cast<std::int64_t>(u), C, rb.weights[static_cast<std::size_t>(p.source)],
                      rb.weights[static_cast<std::size_t>(p.target)]);
  }
}

TEST(Emd, WarmStartResumesFromThePreviousBasis) {
  RandomBatch rb;
  auto clouds = rb.clouds({0, 1, 2, 3, 4});
  auto cold = emd<double>(clouds, rb.pairs, Cost::sqeuclidean, EmdOptions{});
  // The same problems again: the optimal basis needs no pivot.
  auto same = emd<double>(clouds, rb.pairs, Cost::sqeuclidean, EmdOptions{}, cold.basis);
  // Slightly changed costs (as after one training step): fewer pivots, same optimum as a cold solve.
  auto moved = rb.clouds({0, 1, 2, 3, 4}, 1.001);
  auto moved_cold = emd<double>(moved, rb.pairs, Cost::sqeuclidean, EmdOptions{});
  auto moved_warm = emd<double>(moved, rb.pairs, Cost::sqeuclidean, EmdOptions{}, cold.basis);
  auto c = cold.summaries(), s = same.summaries(), mc = moved_cold.summaries(), mw = moved_warm.summaries();
  std::int64_t pivots_cold = 0, pivots_warm = 0;
  for (std::size_t u = 0; u < c.size(); ++u) {
    SCOPED_TRACE("pair " + std::to_string(u));
    EXPECT_FALSE(c[u].warm_started);
    EXPECT_TRUE(s[u].warm_started);
    EXPECT_EQ(s[u].iterations, 0);
    // Flows are recomputed from the supplies along the tree: the same plan up to rounding.
    EXPECT_LE(relative_error(s[u].cost, c[u].cost), 1e-14);
    EXPECT_TRUE(mw[u].warm_started);
    EXPECT_LE(relative_error(mw[u].cost, mc[u].cost), 1e-12);
    EXPECT_EQ(mw[u].status, SolveStatus::optimal);
    pivots_cold += mc[u].iterations;
    pivots_warm += mw[u].iterations;
  }
  EXPECT_LT(pivots_warm * 5, pivots_cold);
}

TEST(Emd, InvalidWarmBasisFallsBackToAColdStart) {
  RandomBatch rb;
  auto clouds = rb.clouds({0, 1});
  auto cold = emd<double>(clouds, {{0, 1}}, Cost::euclidean, EmdOptions{});
  const std::int64_t nodes = cold.layout.rows(0) + cold.layout.cols(0);
  const auto n = static_cast<std::int32_t>(cold.layout.rows(0));
  std::vector<std::vector<std::int32_t>> bad;
  bad.push_back(std::vector<std::int32_t>(static_cast<std::size_t>(nodes), 0));   // rows hung from rows
  auto cycle = std::vector<std::int32_t>(static_cast<std::size_t>(nodes), basis_root);
  cycle[0] = n;      // row 0 → column 0
  cycle[static_cast<std::size_t>(n)] = 0;  // column 0 → row 0: a cycle
  bad.push_back(cycle);
  auto absent = cold.basis_of(0);
  for (auto& p : absent) if (p != basis_absent) p = basis_absent;  // active nodes marked absent
  bad.push_back(absent);
  for (const auto& basis : bad) {
    auto r = emd<double>(clouds, {{0, 1}}, Cost::euclidean, EmdOptions{}, test::device_vector(basis));
    EXPECT_FALSE(r.summary(0).warm_started);
    EXPECT_EQ(r.summary(0).cost, cold.summary(0).cost);
  }
  EXPECT_THROW(emd<double>(clouds, {{0, 1}}, Cost::euclidean, EmdOptions{}, test::device_vector(std::vector<std::int32_t>{1, 2})),
               Error);
}

TEST(Emd, GradientWithRespectToCostIsThePlan) {
  // A generic problem (unique optimum): W is linear in C near it, with slope P.
  const std::int64_t n = 12, m = 9;
  auto x = test::normal_points(n, 2, 1300), y = test::normal_points(m, 2, 1301);
  std::vector<double> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(m));
  random::Stream s(5, random::Purpose::test_data, 1302);
  for (auto& v : a) v = 0.5 + s.uniform();
  for (auto& v : b) v = 0.5 + s.uniform();
  HostMatrix<double> C("C", n, m);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j)
      C(i, j) = ground_cost<double>(Cost::euclidean, &x[static_cast<std::size_t>(2 * i)], &y[static_cast<std::size_t>(2 * j)], 2, 0.0, 0.0);
  const auto base = emd_dense(C, a, b, EmdOptions{});
  HostMatrix<double> plan("plan", n, m);
  for (std::size_t e = 0; e < base.plan_value.size(); ++e) plan(base.plan_row[e], base.plan_col[e]) = base.plan_value[e];
  const double h = 1e-7;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      HostMatrix<double> up("up", n, m), down("down", n, m);
      Kokkos::deep_copy(up, C);
      Kokkos::deep_copy(down, C);
      up(i, j) += h;
      down(i, j) -= h;
      const double fd = (emd_dense(up, a, b, EmdOptions{}).summary.cost - emd_dense(down, a, b, EmdOptions{}).summary.cost) / (2 * h);
      EXPECT_NEAR(fd, plan(i, j), 1e-7) << i << "," << j;
    }
}

// W(A) for one pair of clouds projected by A, and its map gradient.
double mapped_emd(const std::vector<double>& x, const std::vector<double>& y, std::int64_t n, std::int64_t m,
                  int d, const std::vector<double>& a, int k, Cost cost, HostMatrix<double>* grad = nullptr) {
  std::vector<double> pool(x);
  pool.insert(pool.end(), y.begin(), y.end());
  auto X = test::device_matrix<double>(pool, n + m, d);
  auto A = test::device_matrix<double>(a, k, d);
  Matrix<double> Z("Z", n + m, k);
  project<double>(X, A, Z);
  std::vector<double> wh(static_cast<std::size_t>(n + m));
  for (std::int64_t i = 0; i < n + m; ++i) wh[static_cast<std::size_t>(i)] = 1.0 + 0.3 * (i % 4);
  CloudBatch<double> clouds(Z, test::device_vector(wh), {{0, 0, n}, {n, n, m}});
  EmdOptions o;
  o.point_gradients = grad != nullptr;
  auto r = emd<double>(clouds, {{0, 1}}, cost, o);
  if (grad) *grad = problem_map_gradient<double>(clouds, {{0, 1}}, r.layout, 0, r.source_gradient, r.target_gradient, X);
  return r.summary(0).cost;
}

TEST(Emd, GradientWithRespectToTheMapMatchesFiniteDifferences) {
  const std::int64_t n = 14, m = 11;
  const int d = 5, k = 3;
  auto x = test::normal_points(n, d, 1000);
  auto y = test::normal_points(m, d, 1001, 0.4);
  auto a = test::normal_points(k, d, 1002);
  for (Cost cost : {Cost::euclidean, Cost::sqeuclidean}) {
    SCOPED_TRACE(cost_name(cost));
    HostMatrix<double> grad;
    mapped_emd(x, y, n, m, d, a, k, cost, &grad);
    const double h = 1e-7;
    for (int r = 0; r < k; ++r)
      for (int c = 0; c < d; ++c) {
        auto up = a, down = a;
        up[static_cast<std::size_t>(r * d + c)] += h;
        down[static_cast<std::size_t>(r * d + c)] -= h;
        const double fd = (mapped_emd(x, y, n, m, d, up, k, cost) - mapped_emd(x, y, n, m, d, down, k, cost)) / (2 * h);
        EXPECT_NEAR(grad(r, c), fd, 1e-6 * std::max(1.0, std::fabs(fd))) << r << "," << c;
      }
  }
}

TEST(Emd, GradientMatchesGgmlClosedForm) {
  // ∇_A W = Pᵀdiag(r)X − PᵀwY − QᵀwᵀX + Qᵀdiag(c)Y (ggml-ot.md §3.4), written out
  // densely here from the plan, against the solver's sparse point-gradient route.
  const std::int64_t n = 9, m = 12;
  const int d = 4, k = 2;
  auto x = test::normal_points(n, d, 1100);
  auto y = test::normal_points(m, d, 1101, 0.2);
  auto a = test::normal_points(k, d, 1102);
  HostMatrix<double> grad;
  mapped_emd(x, y, n, m, d, a, k, Cost::euclidean, &grad);
  std::vector<double> wh(static_cast<std::size_t>(n + m));
  for (std::int64_t i = 0; i < n + m; ++i) wh[static_cast<std::size_t>(i)] = 1.0 + 0.3 * (i % 4);
  auto P = [&](const std::vector<double>& pts, std::int64_t i, int r) {
    double s = 0;
    for (int c = 0; c < d; ++c) s += a[static_cast<std::size_t>(r * d + c)] * pts[static_cast<std::size_t>(i * d + c)];
    return s;
  };
  HostMatrix<double> C("C", n, m);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int r = 0; r < k; ++r) s += (P(x, i, r) - P(y, j, r)) * (P(x, i, r) - P(y, j, r));
      C(i, j) = std::sqrt(s);
    }
  const auto sol = emd_dense(C, std::vector<double>(wh.begin(), wh.begin() + n), std::vector<double>(wh.begin() + n, wh.end()), EmdOptions{});
  HostMatrix<double> want("want", k, d);
  for (std::size_t e = 0; e < sol.plan_value.size(); ++e) {
    const std::int64_t i = sol.plan_row[e], j = sol.plan_col[e];
    const double w = sol.plan_value[e] / C(i, j);
    for (int r = 0; r < k; ++r)
      for (int c = 0; c < d; ++c)
        want(r, c) += w * (P(x, i, r) - P(y, j, r)) * (x[static_cast<std::size_t>(i * d + c)] - y[static_cast<std::size_t>(j * d + c)]);
  }
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < d; ++c) EXPECT_NEAR(grad(r, c), want(r, c), 1e-12 * (1 + std::fabs(want(r, c))));
}

TEST(Emd, DegenerateInputs) {
  // One point on each side.
  {
    auto clouds = make_cloud_batch<double>({{1.0, 2.0}, {4.0, 6.0}}, 2);
    auto r = emd<double>(clouds, {{0, 1}}, Cost::euclidean, EmdOptions{});
    EXPECT_EQ(r.summary(0).cost, 5.0);
    EXPECT_EQ(r.summary(0).plan_size, 1);
  }
  // Every point identical: all costs zero.
  {
    std::vector<double> same(30, 1.5);
    auto clouds = make_cloud_batch<double>({same, std::vector<double>(20, 1.5)}, 2);
    auto r = emd<double>(clouds, {{0, 1}}, Cost::sqeuclidean, EmdOptions{});
    EXPECT_EQ(r.summary(0).cost, 0.0);
    EXPECT_EQ(r.summary(0).status, SolveStatus::optimal);
  }
  // All weight on one point of each cloud.
  {
    auto x = test::normal_points(6, 2, 1200), y = test::normal_points(5, 2, 1201);
    auto clouds = make_cloud_batch<double>({x, y}, 2, {{0, 0, 3, 0, 0, 0}, {0, 0, 0, 0, 7}});
    auto r = emd<double>(clouds, {{0, 1}}, Cost::euclidean, EmdOptions{});
    EXPECT_NEAR(r.summary(0).cost, ground_cost<double>(Cost::euclidean, &x[4], &y[8], 2, 0.0, 0.0), 1e-15);
    auto f = to_host(r.f), g = to_host(r.g);
    for (std::size_t i = 0; i < f.extent(0); ++i) EXPECT_TRUE(std::isfinite(f(i)));
    for (std::size_t j = 0; j < g.extent(0); ++j) EXPECT_TRUE(std::isfinite(g(j)));
  }
}

TEST(Emd, IterationLimitIsReported) {
  RandomBatch rb;
  EmdOptions o;
  o.max_iter = 3;
  auto r = emd<double>(rb.clouds({0, 3}), {{0, 1}}, Cost::euclidean, o);
  EXPECT_EQ(r.summary(0).status, SolveStatus::max_iter);
  EXPECT_EQ(r.summary(0).iterations, 3);
  o.max_iter = 0;
  EXPECT_THROW(emd<double>(rb.clouds({0, 3}), {{0, 1}}, Cost::euclidean, o), Error);
}

}  // namespace
}  // namespace kotml::ot

#include "kotml/gw/sampled_gw.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <type_traits>

#include "gw_kernels.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/gw/anchor_sampling.hpp"
#include "kotml/gw/cost_estimate.hpp"
#include "kotml/gw/row_partition.hpp"
#include "kotml/gw/slack_sinkhorn.hpp"

namespace kotml::gw {

DistanceMode parse_distance_mode(const std::string& text, const std::string& option) {
  if (text == "precomputed") return DistanceMode::precomputed;
  if (text == "dijkstra") return DistanceMode::dijkstra;
  if (text == "landmark") return DistanceMode::landmark;
  throw Error::option(option, "must be precomputed, dijkstra or landmark, got '" + text + "'");
}

std::string to_string(DistanceMode mode) {
  switch (mode) {
    case DistanceMode::precomputed: return "precomputed";
    case DistanceMode::dijkstra: return "dijkstra";
    case DistanceMode::landmark: return "landmark";
  }
  return "?";
}

void SampledGwOptions::validate() const {
  auto fail = [](const std::string& name, const std::string& why) { throw Error::option(name, why); };
  if (samples < 1) fail("M", "needs at least one anchor pair, got " + std::to_string(samples));
  if (!(alpha > 0.0 && alpha <= 1.0)) fail("alpha", "must be in (0, 1], got " + log::number_text(alpha));
  if (max_iter < 1) fail("max-iter", "must be at least 1");
  if (!(tol >= 0.0)) fail("tol", "must be zero or positive");
  // TorchGW turns epsilon <= 0 into 1e-4 without a word; kotml asks for it.
  if (!(std::isfinite(epsilon) && epsilon > 0.0))
    fail("epsilon", "must be a positive finite number (TorchGW's fallback for epsilon <= 0 is --epsilon 1e-4)");
  if (min_iter_before_converge < 0) fail("min-iter", "must be zero or positive");
  if (s_shared < 0) fail("s-shared", "must be zero (min(N, K)) or positive");
  if (semi_relaxed && !(rho > 0.0 && std::isfinite(rho))) fail("rho", "must be positive");
  if (sinkhorn_max_iter < 1) fail("sinkhorn-max-iter", "must be at least 1");
  if (!(sinkhorn_tol >= 0.0)) fail("sinkhorn-tol", "must be zero or positive");
  if (sinkhorn_check_every < 1) fail("sinkhorn-check-every", "must be at least 1");
}

namespace {

using Doubles = Kokkos::View<double*, MemSpace>;

/// Per-row numbers of every rank, interleaved per row, in global row order
/// (blocks are contiguous and gathered in rank order).
std::vector<double> gather_rows(const dist::Comm& comm, const std::vector<Doubles>& columns) {
  std::vector<double> mine;
  std::vector<Kokkos::View<double*, MemSpace>::HostMirror> hosts;
  for (const auto& c : columns) hosts.push_back(Kokkos::create_mirror_view_and_copy(HostSpace(), c));
  const std::size_t rows = columns.empty() ? 0 : columns[0].extent(0);
  for (std::size_t i = 0; i < rows; ++i)
    for (const auto& h : hosts) mine.push_back(h(i));
  return comm.size() == 1 ? mine : comm.allgatherv(mine);
}

void check_marginal(const std::vector<double>& w, std::int64_t n, const std::string& name) {
  if (w.empty()) return;
  if (static_cast<std::int64_t>(w.size()) != n)
    throw Error("", name, "has " + std::to_string(w.size()) + " weights for " + std::to_string(n) + " points");
  double total = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!(std::isfinite(w[i]) && w[i] >= 0.0))
      throw Error("", name, "weight " + std::to_string(i) + " is negative or not finite");
    total += w[i];
  }
  if (!(total > 0.0)) throw Error("", name, "the weights sum to zero");
}

/// A plan is a transport plan only if its mass is finite and no more than the
/// source's (rows can lose mass to the slack column, never gain it). A cost
/// over an epsilon too small for the precision overflows the Sinkhorn's
/// exponentials and breaks this; the result must then not be written.
void check_plan_mass(const std::vector<double>& per_row, double p_mass, double epsilon, bool single) {
  double mass = 0;
  for (std::size_t i = 0; i < per_row.size(); i += 3) mass += per_row[i];
  constexpr double slack = 0.05;  // far above the inner Sinkhorn's row tolerance
  if (std::isfinite(mass) && mass >= 0.0 && mass <= p_mass * (1.0 + slack)) return;
  std::ostringstream why;
  why << "the plan is not a transport plan (mass " << mass << " for a source mass of " << p_mass
      << "): epsilon " << epsilon << " is too small for these costs in " << (single ? "float32" : "float64")
      << "; raise --epsilon" << (single ? " or drop --mixed-precision" : "");
  throw Error("", "gw", why.str());
}

template <class S>
SampledGwResult solve(DistanceProvider& source, DistanceProvider& target, const SampledGwOptions& o,
                      const dist::Comm& comm, const std::vector<double>& p_in,
                      const std::vector<double>& q_in) {
  const std::int64_t n = source.size(), k = target.size(), m_count = o.samples;
  const dist::Block own = plan_rows(n, comm.size(), comm.rank());
  const std::int64_t rows = own.end - own.begin;
  const dist::Block own_target = plan_rows(k, comm.size(), comm.rank());

  // Marginals (float64, as TorchGW keeps them) and slack masses.
  std::vector<double> p = p_in, q = q_in;
  if (p.empty()) p.assign(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n));
  if (q.empty()) q.assign(static_cast<std::size_t>(k), 1.0 / static_cast<double>(k));
  double p_mass = 0, q_mass = 0;
  for (double w : p) p_mass += w;
  for (double w : q) q_mass += w;
  const double larger_side = static_cast<double>(std::max(n, k));
  const double shared_fraction = o.s_shared > 0 ? static_cast<double>(o.s_shared) / larger_side
                                                : static_cast<double>(std::min(n, k)) / larger_side;
  const double slack_p = std::max(q_mass - shared_fraction, 1e-10);
  const double slack_q = std::max(p_mass - shared_fraction, 1e-10);
  const std::vector<double> p_local(p.begin() + own.begin, p.begin() + own.end);

  Matrix<S> plan(no_init("kotml::gw::plan"), rows, k), lambda(no_init("kotml::gw::lambda"), rows, k);
  DistanceBlock dx_raw(no_init("kotml::gw::dx_raw"), rows, m_count);
  DistanceBlock dy_raw(no_init("kotml::gw::dy_raw"), own_target.end - own_target.begin, m_count);
  Doubles row_mass("kotml::gw::row_mass", rows), row_cost("kotml::gw::row_cost", rows),
      row_change("kotml::gw::row_change", rows);
  AnchorSampler<S> sampler(n, m_count, comm);
  CostEstimate<S> estimate(rows, k, m_count, comm);
  SlackSinkhorn<S> sinkhorn(p_local, q, slack_p, slack_q, n, comm);
  SlackSinkhornSettings inner;
  inner.max_iter = o.sinkhorn_max_iter;
  inner.tol = o.sinkhorn_tol;
  inner.check_every = o.sinkhorn_check_every;
  inner.semi_relaxed = o.semi_relaxed;
  inner.rho = o.rho;

  {
    Vector<S> p_dev(no_init("kotml::gw::p_local"), rows), q_dev(no_init("kotml::gw::q"), k);
    detail::fill_from_host(p_dev, p_local);
    detail::fill_from_host(q_dev, q);
    detail::outer_product_plan<S>(p_dev, q_dev, plan, row_mass);
  }
  // Both marginals are in the solver and the plan now; every rank held them whole.
  std::vector<double>().swap(p);
  std::vector<double>().swap(q);

  // ε schedule (TorchGW): at most a tenfold decay over max_iter.
  const double eps0 = o.epsilon;
  const double eps_final = std::max(eps0 / 10.0, std::min(5e-4, eps0));
  const double decay = std::pow(eps_final / eps0, 1.0 / std::max(1, o.max_iter));

  SampledGwResult result;
  result.n_source = n;
  result.n_target = k;
  result.row_begin = own.begin;
  result.row_end = own.end;
  double cost_ema = 0;
  bool have_ema = false;
  double best_ema = std::numeric_limits<double>::infinity();
  int no_improve = 0;
  const int patience = std::max(o.min_iter_before_converge / 2, 20);

  std::vector<double> per_row = gather_rows(comm, {row_mass, row_cost, row_change});
  std::vector<double> mass(static_cast<std::size_t>(n));
  log::Progress progress("gw", o.max_iter, "it");
  std::string progress_detail;
  for (int t = 0; t < o.max_iter; ++t) {
    progress.update(t, progress_detail);
    const double eps = eps0 * std::pow(decay, t);
    result.final_epsilon = eps;

    // 1. Anchor pairs ~ T/ΣT.
    std::optional<timers::Scope> step(std::in_place, "sampling");
    for (std::int64_t i = 0; i < n; ++i)
      mass[static_cast<std::size_t>(i)] = per_row[static_cast<std::size_t>(3 * i)];
    const AnchorPairs anchors = sampler.draw(plan, own.begin, mass, o.seed, static_cast<std::uint64_t>(t));

    // 2. Distances to the anchors.
    step.emplace("distances");
    source.distances(anchors.source, own.begin, dx_raw);
    target.distances(anchors.target, own_target.begin, dy_raw);

    // 3. Λ, and the slack penalty 100·max(max Λ, 1).
    step.emplace("cost");
    const double lambda_max = estimate.build(dx_raw, dy_raw, lambda, comm);
    const double penalty = 100.0 * std::max(lambda_max, 1.0);

    // 4. Sinkhorn on the slack-augmented problem, warm-started.
    step.emplace("sinkhorn");
    const auto inner_summary = sinkhorn.solve(lambda, penalty, eps, inner);
    result.sinkhorn_iterations += inner_summary.iterations;

    // 5. Momentum, with each row's mass, cost and change.
    step.emplace("update");
    detail::momentum_update<S>(lambda, plan, sinkhorn.log_u(), sinkhorn.log_v(),
                               static_cast<S>(1.0 / eps), static_cast<S>(o.alpha), row_mass,
                               row_cost, row_change);
    std::vector<double>().swap(per_row);  // not two copies at once on every rank
    per_row = gather_rows(comm, {row_mass, row_cost, row_change});
    step.reset();

    // 6. TorchGW's convergence checks: every 5 iterations, every iteration
    // from min_iter on, and at the last.
    result.iterations = t + 1;
    if (result.iterations % 5 == 0 || t == o.max_iter - 1 || t >= o.min_iter_before_converge) {
      double gw_cost = 0, change = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        gw_cost += per_row[static_cast<std::size_t>(3 * i + 1)];
        change += per_row[static_cast<std::size_t>(3 * i + 2)];
      }
      const double err = std::sqrt(change);
      result.gw_cost = gw_cost;
      result.err_list.push_back(err);
      result.cost_list.push_back(gw_cost);
      cost_ema = have_ema ? 0.8 * cost_ema + 0.2 * gw_cost : gw_cost;
      have_ema = true;
      progress_detail = "err " + log::scientific_text(err) + " (tol " + log::scientific_text(o.tol) + ")";
      if (log::verbose() && (result.iterations % 20 == 0 || t == o.max_iter - 1)) {
        std::ostringstream line;
        line << "gw: iteration " << result.iterations << "/" << o.max_iter << " err " << err
             << " gw_cost " << gw_cost << " epsilon " << eps << " sinkhorn "
             << inner_summary.iterations;
        log::info(line.str());
      }
      if (t >= o.min_iter_before_converge) {
        if (err < o.tol) break;
        if (cost_ema < best_ema * 0.995) {
          best_ema = cost_ema;
          no_improve = 0;
        } else {
          ++no_improve;
        }
        if (no_improve >= patience) break;
      }
    }
  }

  check_plan_mass(per_row, p_mass, result.final_epsilon, std::is_same<S, float>::value);
  lambda = Matrix<S>();  // the last Λ is not needed: room for the widened rows

  Kokkos::View<std::int64_t*, MemSpace> match(no_init("kotml::gw::match"), rows);
  detail::row_argmax<S>(plan, match);
  auto match_h = Kokkos::create_mirror_view_and_copy(HostSpace(), match);
  const std::vector<std::int64_t> my_match(match_h.data(), match_h.data() + rows);
  result.match = comm.size() == 1 ? my_match : comm.allgatherv(my_match);
  if (o.keep_plan) {
    result.plan = Matrix<double>(no_init("kotml::gw::plan_out"), rows, k);
    detail::widen<S>(plan, result.plan);
  }
  Kokkos::fence();
  return result;
}

}  // namespace

SampledGwResult sampled_gw(DistanceProvider& source, DistanceProvider& target,
                           const SampledGwOptions& options, const dist::Comm& comm,
                           const std::vector<double>& p, const std::vector<double>& q) {
  comm.phase([&] {
    options.validate();
    require(source.size() > 0 && target.size() > 0, "", "", "both clouds need at least one point");
    require(source.size() < std::numeric_limits<NodeId>::max() &&
                target.size() < std::numeric_limits<NodeId>::max(),
            "", "", "clouds of 2^31 points or more are not supported");
    check_marginal(p, source.size(), "p");
    check_marginal(q, target.size(), "q");
  });
  if (options.mixed_precision) return solve<float>(source, target, options, comm, p, q);
  return solve<double>(source, target, options, comm, p, q);
}

}  // namespace kotml::gw

#include "step_engine.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <type_traits>
#include <cmath>
#include <optional>
#include <sstream>

#include "kotml/core/phase_timers.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/ot/cost_row_sums.hpp"
#include "kotml/ot/gradient.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "kotml/ot/sinkhorn.hpp"

namespace kotml::learn::detail {
namespace {

template <class T>
Vector<T> device_copy(const std::string& label, const std::vector<T>& host) {
  Vector<T> v(no_init(label), host.size());
  Kokkos::deep_copy(v, Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(), host.size()));
  return v;
}

/// The error for a non-finite OT cost, blaming what caused it: a metric that
/// has left the finite numbers (a step too large), or an entropic
/// regularisation too small for the costs (the Sinkhorn's exponentials
/// overflow although A is finite).
Error non_finite_cost(const MetricMatrix& a, bool exact, double epsilon) {
  bool finite_metric = true;
  for (std::size_t i = 0; i < a.size(); ++i) finite_metric = finite_metric && std::isfinite(a.data()[i]);
  if (!finite_metric)
    return Error("", "training", "the metric A holds NaN or infinite values: it diverged (try a smaller --lr)");
  if (!exact) {
    std::ostringstream why;
    why << "an OT cost is not finite with a finite metric: the Sinkhorn epsilon " << epsilon
        << " (--entropic-reg times the mean cost) is too small for these costs; raise --entropic-reg";
    return Error("", "training", why.str());
  }
  return Error("", "training", "an exact OT cost is not finite with a finite metric: the projected points overflow");
}

ot::Cost ground_cost(const TrainOptions& options) {
  return options.squared ? ot::Cost::sqeuclidean : ot::Cost::euclidean;
}

}  // namespace

// ------------------------------------------------------------ one step

StepResult StepEngine::run(const std::vector<GlobalId>& batch, const TripletSet& triplets, const MetricMatrix& a,
                           const dist::Comm& comm, const PairOwners* owners, bool want_gradient,
                           double fixed_epsilon) {
  const auto k = static_cast<std::int64_t>(a.extent(0));
  const auto d = static_cast<std::int64_t>(a.extent(1));
  const auto plan = timers::timed("pairs", [&] { return plan_pairs(batch, triplets, comm, owners, want_gradient); });
  const auto pairs = timers::timed("stage and project", [&] { return stage_and_project(plan, a, comm); });
  double epsilon = fixed_epsilon;
  if (!options_.ot.exact() && !(fixed_epsilon > 0.0))
    epsilon = timers::timed("epsilon", [&] { return batch_epsilon(plan, pairs, comm); });
  const auto solutions =
      timers::timed("solve", [&] { return solve_pairs(plan, pairs, epsilon, want_gradient, a, comm); });

  // Every rank gets every pair's cost, by pair id, and the loss.
  std::optional<timers::Scope> timed(std::in_place, "gather costs");
  std::vector<double> pair_cost(triplets.pairs.size(), 0.0);
  if (owners) {
    const auto all_ids = comm.allgatherv(std::vector<std::int64_t>(plan.mine.begin(), plan.mine.end()));
    const auto all_costs = comm.allgatherv(solutions.costs);
    for (std::size_t t = 0; t < all_ids.size(); ++t) pair_cost[static_cast<std::size_t>(all_ids[t])] = all_costs[t];
  } else {
    for (std::size_t t = 0; t < plan.mine.size(); ++t) pair_cost[plan.mine[t]] = solutions.costs[t];
  }
  // With owners every rank holds every pair's cost: the triplets are split.
  const auto hinge = hinge_loss(triplets, pair_cost, options_.alpha, owners ? &comm : nullptr);
  timed.reset();
  StepResult result;
  result.epsilon = epsilon;
  result.loss = hinge.value;
  result.triplets = hinge.n_triplets;
  result.active = hinge.n_active;
  if (!want_gradient) return result;

  const auto h = timers::timed(
      "reduce H",
      [&] { return reduce_point_gradients(batch, triplets, plan, hinge, pairs, solutions, k, comm, owners); });
  result.grad = timers::timed("gradient", [&] { return metric_gradient(batch, plan, h, k, d, comm); });
  return result;
}

StepPlan StepEngine::plan_pairs(const std::vector<GlobalId>& batch, const TripletSet& triplets,
                                const dist::Comm& comm, const PairOwners* owners, bool want_gradient) const {
  const bool exact = options_.ot.exact();
  const auto& pairs = triplets.pairs;
  StepPlan plan;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    if (exact && pairs[p].first == pairs[p].second) continue;  // EMD(X, X) = 0, zero gradient
    const GlobalId u = batch[static_cast<std::size_t>(pairs[p].first)];
    const GlobalId v = batch[static_cast<std::size_t>(pairs[p].second)];
    if (!owners || owners->owner(u, v) == comm.rank()) plan.mine.push_back(p);
  }
  std::map<std::int32_t, std::int32_t> cloud_of;  // batch position -> cloud
  for (auto p : plan.mine) {
    for (auto b : {pairs[p].first, pairs[p].second})
      if (cloud_of.emplace(b, static_cast<std::int32_t>(plan.cloud_donors.size())).second)
        plan.cloud_donors.push_back(batch[static_cast<std::size_t>(b)]);
    plan.problems.push_back({cloud_of[pairs[p].first], cloud_of[pairs[p].second]});
  }
  // This rank's share of the final Σ_u H_uᵀ X_u: the batch positions of the
  // donors whose home it is (in group-by mode the shared support is one term,
  // taken by rank 0).
  if (store_->identical_supports()) {
    if (comm.is_root()) plan.mapped.push_back(0);
  } else {
    for (std::size_t b = 0; b < batch.size(); ++b)
      if (!owners || owners->home(batch[b]) == comm.rank()) plan.mapped.push_back(static_cast<std::int64_t>(b));
  }
  plan.staged = plan.cloud_donors;
  if (want_gradient)
    for (auto b : plan.mapped) plan.staged.push_back(batch[static_cast<std::size_t>(b)]);
  std::sort(plan.staged.begin(), plan.staged.end());
  plan.staged.erase(std::unique(plan.staged.begin(), plan.staged.end()), plan.staged.end());
  return plan;
}

ProjectedPairs StepEngine::stage_and_project(const StepPlan& plan, const MetricMatrix& a, const dist::Comm& comm) {
  const auto a_device = stage::metric_to_device(a);
  ProjectedPairs out;
  // Sinkhorn runs on single-precision projected points unless asked otherwise
  // (EMD always on double).
  out.single = !options_.ot.exact() && options_.ot.sinkhorn_float;
  comm.phase([&] {
    stage_.stage(*store_, plan.staged);
    if (out.single) {
      out.projected_float = stage::project_clouds<float>(stage_, plan.cloud_donors, a_device);
      out.layout = ot::BatchLayout::of(out.projected_float.clouds, plan.problems);
    } else {
      out.projected = stage::project_clouds<double>(stage_, plan.cloud_donors, a_device);
      out.layout = ot::BatchLayout::of(out.projected.clouds, plan.problems);
    }
  });
  return out;
}

double StepEngine::batch_epsilon(const StepPlan& plan, const ProjectedPairs& pairs, const dist::Comm& comm) const {
  // ε relative to the mean cost over every entry of every pair of the batch
  // (GGML-OT), summed exactly across ranks.
  dist::ExactSum cost_sum(1);
  std::int64_t entries = 0;
  comm.phase([&] {
    if (plan.problems.empty()) return;
    const auto cost = ground_cost(options_);
    const std::vector<double> sums =
        pairs.single ? ot::cost_row_sums(pairs.projected_float.clouds, pairs.layout, plan.problems, cost)
                     : ot::cost_row_sums(pairs.projected.clouds, pairs.layout, plan.problems, cost);
    for (double r : sums) cost_sum.add(0, r);
    for (std::int64_t u = 0; u < pairs.layout.problems(); ++u) entries += pairs.layout.rows(u) * pairs.layout.cols(u);
  });
  const double total = cost_sum.allreduce(comm)[0];
  const std::int64_t count = comm.sum(entries);
  const double mean = count > 0 ? total / static_cast<double>(count) : 0.0;
  // GGML-OT clamps the mean at its eps (1e-8) before dividing by it.
  return options_.ot.entropic_reg * std::max(mean, 1e-8);
}

PairSolutions StepEngine::solve_pairs(const StepPlan& plan, const ProjectedPairs& pairs, double epsilon,
                                      bool want_gradient, const MetricMatrix& a, const dist::Comm& comm) {
  PairSolutions out;
  out.costs.assign(plan.mine.size(), 0.0);
  comm.phase([&] {
    if (plan.problems.empty()) return;
    if (options_.ot.exact())
      solve_emd(plan, pairs, want_gradient, out);
    else if (pairs.single)
      solve_sinkhorn(plan, pairs.projected_float.clouds, pairs.layout, epsilon, want_gradient, out);
    else
      solve_sinkhorn(plan, pairs.projected.clouds, pairs.layout, epsilon, want_gradient, out);
    for (double c : out.costs)
      if (!std::isfinite(c)) throw non_finite_cost(a, options_.ot.exact(), epsilon);
  });
  return out;
}

void StepEngine::solve_emd(const StepPlan& plan, const ProjectedPairs& pairs, bool want_gradient, PairSolutions& out) {
  const auto& layout = pairs.layout;
  const auto key_of = [&](std::size_t u) {
    return pair_key(plan.cloud_donors[static_cast<std::size_t>(plan.problems[u].source)],
                    plan.cloud_donors[static_cast<std::size_t>(plan.problems[u].target)]);
  };
  ot::EmdOptions emd_options;
  emd_options.max_iter = options_.ot.emd_max_iter;
  emd_options.workspace_bytes = options_.ot.workspace_bytes;
  emd_options.point_gradients = want_gradient;
  // Each pair starts from its basis of the previous solve (the root tree: cold).
  std::vector<std::int32_t> warm(static_cast<std::size_t>(layout.total_rows() + layout.total_cols()), ot::basis_root);
  bool any_warm = false;
  if (options_.warm_start) {
    for (std::size_t u = 0; u < plan.problems.size(); ++u) {
      const auto nodes = static_cast<std::size_t>(layout.rows(static_cast<std::int64_t>(u)) +
                                                  layout.cols(static_cast<std::int64_t>(u)));
      const auto* basis = bases_.find(key_of(u), nodes);
      if (!basis) continue;
      std::copy(basis->begin(), basis->end(), warm.begin() + layout.node_offset(static_cast<std::int64_t>(u)));
      any_warm = true;
    }
  }
  Vector<const std::int32_t> warm_device;
  if (any_warm) warm_device = device_copy("kotml::learn::warm_basis", warm);
  const auto result = ot::emd(pairs.projected.clouds, plan.problems, ground_cost(options_), emd_options, warm_device);
  const auto summaries = result.summaries();
  for (std::size_t u = 0; u < plan.problems.size(); ++u) {
    out.costs[u] = summaries[u].cost;
    report_.count(summaries[u].status);
    ++solves_;
    iterations_ += summaries[u].iterations;
    warm_started_ += summaries[u].warm_started ? 1 : 0;
    if (options_.warm_start) bases_.store(key_of(u), result.basis_of(static_cast<std::int64_t>(u)));
  }
  if (want_gradient) {
    out.source_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.source_gradient);
    out.target_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.target_gradient);
  }
}

template <class T>
void StepEngine::solve_sinkhorn(const StepPlan& plan, const ot::CloudBatch<T>& clouds, const ot::BatchLayout& layout,
                                double epsilon, bool want_gradient, PairSolutions& out) {
  const auto& problems = plan.problems;
  const auto key_of = [&](std::size_t u) {
    return pair_key(plan.cloud_donors[static_cast<std::size_t>(problems[u].source)],
                    plan.cloud_donors[static_cast<std::size_t>(problems[u].target)]);
  };
  ot::SinkhornOptions sk;
  sk.epsilon = epsilon;
  sk.relative_epsilon = false;
  sk.max_iter = options_.ot.sinkhorn_max_iter;
  sk.tol = options_.ot.sinkhorn_tol;
  sk.domain = options_.ot.sinkhorn_domain;
  sk.workspace_bytes = options_.ot.workspace_bytes;
  sk.point_gradients = want_gradient;
  // Each pair starts from its potentials of the previous solve (zeros: cold);
  // the metric moves little between steps, so few iterations remain.
  ot::SinkhornWarmStart<T> warm;
  bool any_warm = false;
  if (options_.warm_start) {
    std::vector<T> f(static_cast<std::size_t>(layout.total_rows()), T(0)), g(static_cast<std::size_t>(layout.total_cols()), T(0));
    for (std::size_t u = 0; u < problems.size(); ++u) {
      const auto n = layout.rows(static_cast<std::int64_t>(u)), m = layout.cols(static_cast<std::int64_t>(u));
      const auto* state = potentials_.find(key_of(u), static_cast<std::size_t>(n + m));
      if (!state) continue;
      for (std::int64_t i = 0; i < n; ++i)
        f[static_cast<std::size_t>(layout.row_offset[u] + i)] = static_cast<T>((*state)[static_cast<std::size_t>(i)]);
      for (std::int64_t j = 0; j < m; ++j)
        g[static_cast<std::size_t>(layout.col_offset[u] + j)] = static_cast<T>((*state)[static_cast<std::size_t>(n + j)]);
      any_warm = true;
    }
    if (any_warm) {
      warm.f = device_copy("kotml::learn::warm_f", f);
      warm.g = device_copy("kotml::learn::warm_g", g);
    }
  }
  auto& workspace = [this]() -> ot::SinkhornWorkspace<T>& {
    if constexpr (std::is_same<T, float>::value)
      return sinkhorn_float_;
    else
      return sinkhorn_double_;
  }();
  const auto result =
      ot::sinkhorn(clouds, problems, ground_cost(options_), sk, any_warm ? &warm : nullptr, &workspace);
  const auto summaries = result.summaries();
  if (options_.warm_start) {
    const auto f = Kokkos::create_mirror_view_and_copy(HostSpace(), result.f);
    const auto g = Kokkos::create_mirror_view_and_copy(HostSpace(), result.g);
    for (std::size_t u = 0; u < problems.size(); ++u) {
      const auto n = layout.rows(static_cast<std::int64_t>(u)), m = layout.cols(static_cast<std::int64_t>(u));
      std::vector<double> state(static_cast<std::size_t>(n + m));
      for (std::int64_t i = 0; i < n; ++i)
        state[static_cast<std::size_t>(i)] = static_cast<double>(f(static_cast<std::size_t>(layout.row_offset[u] + i)));
      for (std::int64_t j = 0; j < m; ++j)
        state[static_cast<std::size_t>(n + j)] = static_cast<double>(g(static_cast<std::size_t>(layout.col_offset[u] + j)));
      potentials_.store(key_of(u), std::move(state));
    }
  }
  for (std::size_t u = 0; u < problems.size(); ++u) {
    // The regularised objective, whose gradient the solver returns exactly
    // (envelope theorem); GGML-OT uses <P, C> with unrolled autograd.
    out.costs[u] = summaries[u].objective;
    report_.count(summaries[u].status);
    ++solves_;
    iterations_ += summaries[u].iterations;
  }
  if (want_gradient) {
    out.source_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.source_gradient);
    out.target_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.target_gradient);
  }
}

PointGradients StepEngine::reduce_point_gradients(const std::vector<GlobalId>& batch, const TripletSet& triplets,
                                                  const StepPlan& plan, const HingeLoss& hinge,
                                                  const ProjectedPairs& pairs, const PairSolutions& solutions,
                                                  std::int64_t k, const dist::Comm& comm,
                                                  const PairOwners* owners) const {
  PointGradients out;
  const bool shared_support = store_->identical_supports();
  if (shared_support) {
    out.first.assign(batch.size(), 0);
    out.rows = static_cast<std::int64_t>(store_->pool().extent(0));
  } else {
    out.rows = pack_rows(batch, std::vector<std::uint8_t>(batch.size(), 1), out.first);
  }
  // Where this rank's sum keeps batch position b's rows: every row of the
  // batch when the sum is reduced everywhere (one support shared by all donors,
  // or no pair owners), else only the donors of this rank's pairs (−1 for the
  // others), whose sums then travel to their home ranks.
  const bool to_homes = owners != nullptr && !shared_support && comm.size() > 1;
  std::vector<std::int64_t> local_first = out.first;
  std::int64_t local_rows = out.rows;
  if (to_homes) {
    std::vector<std::uint8_t> touched(batch.size(), 0);
    for (const auto p : plan.mine)
      touched[static_cast<std::size_t>(triplets.pairs[p].first)] =
          touched[static_cast<std::size_t>(triplets.pairs[p].second)] = 1;
    local_rows = pack_rows(batch, touched, local_first);
  }
  const auto& layout = pairs.layout;
  dist::ExactSum h_sum(static_cast<std::size_t>(local_rows * k));
  comm.phase([&] {
    for (std::size_t u = 0; u < plan.mine.size(); ++u) {
      const double c = hinge.d_pair_cost[plan.mine[u]];
      if (c == 0.0) continue;
      const auto& pr = triplets.pairs[plan.mine[u]];
      const auto add_rows = [&](const HostMatrix<double>& g, std::int64_t first_row, std::int64_t rows,
                                std::int32_t position) {
        const auto base = local_first[static_cast<std::size_t>(position)];
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t q = 0; q < k; ++q)
            h_sum.add(static_cast<std::size_t>((base + i) * k + q),
                      c * g(static_cast<std::size_t>(first_row + i), static_cast<std::size_t>(q)));
      };
      add_rows(solutions.source_gradient, layout.row_offset[u], layout.rows(static_cast<std::int64_t>(u)), pr.first);
      add_rows(solutions.target_gradient, layout.col_offset[u], layout.cols(static_cast<std::int64_t>(u)), pr.second);
    }
  });
  if (!to_homes) {
    out.h = h_sum.allreduce(comm);
    return out;
  }
  out.h = sum_at_homes(batch, local_first, h_sum, plan, out, k, comm, *owners);
  return out;
}

std::int64_t StepEngine::pack_rows(const std::vector<GlobalId>& batch, const std::vector<std::uint8_t>& take,
                                   std::vector<std::int64_t>& first) const {
  first.assign(batch.size(), -1);
  std::int64_t rows = 0;
  for (std::size_t b = 0; b < batch.size(); ++b)
    if (take[b]) {
      first[b] = rows;
      rows += store_->rows(batch[b]);
    }
  return rows;
}

std::vector<double> StepEngine::sum_at_homes(const std::vector<GlobalId>& batch,
                                             const std::vector<std::int64_t>& local_first, const dist::ExactSum& h_sum,
                                             const StepPlan& plan, const PointGradients& layout, std::int64_t k,
                                             const dist::Comm& comm, const PairOwners& owners) const {
  // To each home rank: per donor it maps that this rank touched, the batch
  // position, then the donor's rows × k sums as carried limbs.
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::vector<std::vector<std::int64_t>> to(ranks);
  for (std::size_t b = 0; b < batch.size(); ++b) {
    if (local_first[b] < 0) continue;
    auto& message = to[static_cast<std::size_t>(owners.home(batch[b]))];
    message.push_back(static_cast<std::int64_t>(b));
    h_sum.append_limbs(static_cast<std::size_t>(local_first[b] * k), static_cast<std::size_t>(store_->rows(batch[b]) * k),
                       message);
  }
  std::vector<std::int64_t> send, send_counts(ranks), recv_counts;
  for (std::size_t r = 0; r < ranks; ++r) {
    send.insert(send.end(), to[r].begin(), to[r].end());
    send_counts[r] = static_cast<std::int64_t>(to[r].size());
  }
  const auto received = comm.alltoallv(send, send_counts, recv_counts);

  // The donors this rank maps, in batch order, in a sum of their rows alone.
  std::vector<std::uint8_t> mapped(batch.size(), 0);
  for (const auto b : plan.mapped) mapped[static_cast<std::size_t>(b)] = 1;
  std::vector<std::int64_t> home_first;
  const std::int64_t home_rows = pack_rows(batch, mapped, home_first);
  dist::ExactSum at_home(static_cast<std::size_t>(home_rows * k));
  constexpr auto limbs = static_cast<std::size_t>(dist::ExactSum::limbs);
  for (std::size_t at = 0; at < received.size();) {
    const auto b = static_cast<std::size_t>(received[at++]);
    const auto values = static_cast<std::size_t>(store_->rows(batch[b]) * k);
    internal_check(b < batch.size() && home_first[b] >= 0 && at + values * limbs <= received.size(),
                   "reduce H: a donor's sums reached a rank that is not its home");
    at_home.add_limbs(static_cast<std::size_t>(home_first[b] * k), values, &received[at]);
    at += values * limbs;
  }
  std::vector<double> h(static_cast<std::size_t>(layout.rows * k), 0.0);
  for (const auto b : plan.mapped) {
    const auto rows = store_->rows(batch[static_cast<std::size_t>(b)]);
    const auto sums = at_home.local_total(static_cast<std::size_t>(home_first[static_cast<std::size_t>(b)] * k),
                                          static_cast<std::size_t>(rows * k));
    std::copy(sums.begin(), sums.end(), h.begin() + layout.first[static_cast<std::size_t>(b)] * k);
  }
  return h;
}

std::vector<double> StepEngine::metric_gradient(const std::vector<GlobalId>& batch, const StepPlan& plan,
                                                const PointGradients& h, std::int64_t k, std::int64_t d,
                                                const dist::Comm& comm) const {
  dist::ExactSum g_sum(static_cast<std::size_t>(k * d));
  comm.phase([&] {
    Matrix<double> grad_block(no_init("kotml::learn::donor_gradient"), static_cast<std::size_t>(k), static_cast<std::size_t>(d));
    for (auto b : plan.mapped) {
      const GlobalId donor = batch[static_cast<std::size_t>(b)];
      const std::int64_t rows = store_->identical_supports() ? h.rows : store_->rows(donor);
      const std::int64_t first = store_->identical_supports() ? 0 : h.first[static_cast<std::size_t>(b)];
      if (rows == 0) continue;
      HostMatrix<double> h_host("kotml::learn::h_block", static_cast<std::size_t>(rows), static_cast<std::size_t>(k));
      std::copy(h.h.begin() + first * k, h.h.begin() + (first + rows) * k, h_host.data());
      auto h_device = Kokkos::create_mirror_view_and_copy(MemSpace(), h_host);
      ot::map_gradient<stage::PointScalar>(h_device, stage_.donor_points(donor), grad_block, false);
      auto g_host = Kokkos::create_mirror_view_and_copy(HostSpace(), grad_block);
      g_sum.add(g_host.data());
    }
  });
  return g_sum.allreduce(comm);
}

}  // namespace kotml::learn::detail

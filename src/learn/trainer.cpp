#include "kotml/learn/trainer.hpp"

#include <Kokkos_Core.hpp>

#include <ctime>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/random.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/dist/pair_placement.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/learn/batches.hpp"
#include "kotml/learn/checkpoint.hpp"
#include "kotml/learn/loss.hpp"
#include "kotml/learn/triplets.hpp"
#include "kotml/ot/cost_row_sums.hpp"
#include "kotml/ot/gradient.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "kotml/ot/sinkhorn.hpp"

namespace kotml::learn {

// ------------------------------------------------------------------ options

TripletMode parse_triplet_mode(const std::string& text) {
  if (text == "all") return TripletMode::all;
  if (text == "sampled") return TripletMode::sampled;
  throw Error::option("triplets", "must be 'all' or 'sampled', got '" + text + "'");
}
DistributionMode parse_distribution_mode(const std::string& text) {
  if (text == "pairs") return DistributionMode::pairs;
  if (text == "batches") return DistributionMode::batches;
  throw Error::option("mode", "must be 'pairs' or 'batches', got '" + text + "'");
}
LrScaling parse_lr_scaling(const std::string& text) {
  if (text == "none") return LrScaling::none;
  if (text == "linear") return LrScaling::linear;
  if (text == "sqrt") return LrScaling::sqrt;
  throw Error::option("lr-scaling", "must be linear, sqrt or none, got '" + text + "'");
}
std::string to_string(TripletMode mode) { return mode == TripletMode::all ? "all" : "sampled"; }
std::string to_string(DistributionMode mode) { return mode == DistributionMode::pairs ? "pairs" : "batches"; }
std::string to_string(LrScaling scaling) {
  return scaling == LrScaling::none ? "none" : (scaling == LrScaling::linear ? "linear" : "sqrt");
}

void TrainOptions::fit_to_features(std::int64_t dim) {
  if (!n_comps_defaulted || n_comps <= dim || dim < 1) return;
  log::note("--n-comps: the default " + std::to_string(n_comps) + " is more than the cohort's " +
            std::to_string(dim) + " features; using " + std::to_string(dim));
  n_comps = dim;
}

void TrainOptions::validate(std::int64_t dim, std::int64_t n_train_donors, std::int64_t n_classes) const {
  if (n_comps < 1) throw Error::option("n-comps", "must be at least 1, got " + std::to_string(n_comps));
  if (n_comps > dim)
    throw Error::option("n-comps", "must not exceed the " + std::to_string(dim) + " features of the cohort, got " +
                                       std::to_string(n_comps));
  if (!std::isfinite(alpha) || !(alpha >= 0.0))
    throw Error::option("alpha", "must be zero or positive, got " + std::to_string(alpha));
  if (!std::isfinite(reg) || !(reg >= 0.0)) throw Error::option("reg", "must be zero or positive, got " + std::to_string(reg));
  adam.validate();
  if (epochs < 1) throw Error::option("epochs", "must be at least 1, got " + std::to_string(epochs));
  if (batch_size < 2) throw Error::option("batch-size", "must be at least 2 donors, got " + std::to_string(batch_size));
  if (!std::isfinite(stop_thr)) throw Error::option("stop-thr", "must be finite");
  ot.validate();
  if (triplets == TripletMode::sampled && t < 1) throw Error::option("t", "must be at least 1, got " + std::to_string(t));
  if (checkpoint_every < 0)
    throw Error::option("checkpoint-every", "must be zero (never) or positive, got " + std::to_string(checkpoint_every));
  if (checkpoint_every > 0 && checkpoint_path.empty())
    throw Error::option("checkpoint", "a checkpoint file is needed with --checkpoint-every");
  if (n_classes < 2)
    throw Error::option("label-col", "training needs donors of at least two classes, got " + std::to_string(n_classes));
  if (n_train_donors < 2) throw Error::option("train-size", "training needs at least two donors");
  if (initial_a.size() > 0 && (static_cast<std::int64_t>(initial_a.extent(0)) != n_comps ||
                               static_cast<std::int64_t>(initial_a.extent(1)) != dim))
    throw Error::option("n-comps", "the initial metric is not n_comps × features");
}

std::string TrainOptions::fingerprint() const {
  std::ostringstream s;
  s.precision(17);
  s << "n_comps=" << n_comps << ";alpha=" << alpha << ";reg=" << reg << ";reg_type=" << to_string(reg_type)
    << ";lr=" << adam.lr << ";beta1=" << adam.beta1 << ";beta2=" << adam.beta2 << ";adam_eps=" << adam.eps
    << ";batch_size=" << batch_size << ";stop_thr=" << stop_thr << ";squared=" << squared
    << ";entropic_reg=" << ot.entropic_reg << ";sinkhorn_max_iter=" << ot.sinkhorn_max_iter
    << ";sinkhorn_tol=" << ot.sinkhorn_tol << ";sinkhorn_float=" << ot.sinkhorn_float
    << ";emd_max_iter=" << ot.emd_max_iter
    << ";triplets=" << to_string(triplets) << ";t=" << t << ";mode=" << to_string(mode)
    << ";lr_scaling=" << to_string(lr_scaling) << ";warm_start=" << warm_start << ";seed=" << seed;
  if (initial_a.size() > 0) {
    std::uint64_t h = 1469598103934665603ULL;
    const auto* bytes = reinterpret_cast<const unsigned char*>(initial_a.data());
    for (std::size_t i = 0; i < initial_a.size() * sizeof(double); ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
    s << ";initial_a=" << std::hex << h;
  }
  return s.str();
}

namespace {

// ------------------------------------------------------------ helpers

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

/// Options, cohort identity and training donors: what a checkpoint must match.
std::string full_fingerprint(const TrainOptions& options, const data::Cohort& cohort,
                             const std::vector<GlobalId>& train_donors, int ranks) {
  std::ostringstream s;
  s << cohort.source << '|' << cohort.feature_element << '|' << cohort.dim << '|' << cohort.options.n_cells << '|'
    << cohort.options.all_cells << '|' << cohort.options.normalize << '|' << cohort.options.group_by << '|'
    << cohort.options.seed << '|' << cohort.options.patient_col << '|' << cohort.options.label_col;
  for (auto u : train_donors) s << '|' << cohort.donors[static_cast<std::size_t>(u)].id;
  std::ostringstream f;
  f << options.fingerprint() << ";cohort=" << std::hex << fnv1a(s.str());
  // In mode batches the rank count changes the batches each rank sees.
  if (options.mode == DistributionMode::batches) f << std::dec << ";ranks=" << ranks;
  return f.str();
}

std::uint64_t pair_key(GlobalId a, GlobalId b) {
  return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
}

/// Owner rank of every unordered pair of training donors, fixed for the whole
/// run, by the 2-D block placement of dist::PairPlacement (so a pair's
/// warm-start state lives on the rank that will solve it again, and a rank
/// needs only the donors of its pairs), and the rank that maps each donor's
/// gradient.
class PairOwners {
 public:
  PairOwners(const std::vector<std::int64_t>& rows_by_donor, const std::vector<GlobalId>& donors, bool with_self,
             int ranks)
      : placement_(sizes_of(rows_by_donor, donors), ranks, with_self) {
    position_.assign(rows_by_donor.size(), -1);
    for (std::size_t i = 0; i < donors.size(); ++i) position_[static_cast<std::size_t>(donors[i])] = static_cast<std::int64_t>(i);
  }
  int owner(GlobalId a, GlobalId b) const { return placement_.owner(position(a), position(b)); }
  int home(GlobalId a) const { return placement_.home(position(a)); }
  /// The donors (cohort indices) this rank holds, increasing.
  std::vector<GlobalId> held_by(const std::vector<GlobalId>& donors, int rank) const {
    std::vector<GlobalId> held;
    for (auto i : placement_.held_by(rank)) held.push_back(donors[static_cast<std::size_t>(i)]);
    std::sort(held.begin(), held.end());
    return held;
  }

 private:
  static std::vector<std::int64_t> sizes_of(const std::vector<std::int64_t>& rows_by_donor,
                                            const std::vector<GlobalId>& donors) {
    std::vector<std::int64_t> sizes;
    for (auto u : donors) sizes.push_back(rows_by_donor[static_cast<std::size_t>(u)]);
    return sizes;
  }
  std::int64_t position(GlobalId a) const {
    const auto p = position_[static_cast<std::size_t>(a)];
    if (p < 0) throw InternalError("training: donor " + std::to_string(a) + " is not a training donor");
    return p;
  }
  dist::PairPlacement placement_;
  std::vector<std::int64_t> position_;
};

std::vector<std::int64_t> rows_by_donor(const data::Cohort& cohort) {
  std::vector<std::int64_t> rows;
  for (const auto& donor : cohort.donors) rows.push_back(donor.n_points);
  return rows;
}
std::vector<std::int64_t> rows_by_donor(const eval::DonorStore& store) {
  std::vector<std::int64_t> rows;
  for (GlobalId u = 0; u < store.n_donors(); ++u) rows.push_back(store.rows(u));
  return rows;
}

/// Σ_j C_ij for each row i of each problem, one thread per row summing in
/// column order: the batch mean cost that sets a relative ε.
template <class T>
Vector<T> device_copy(const std::string& label, const std::vector<T>& host) {
  Vector<T> v(no_init(label), host.size());
  Kokkos::deep_copy(v, Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(), host.size()));
  return v;
}

struct StepResult {
  double loss = 0.0;
  double epsilon = 0.0;  // Sinkhorn: the absolute ε used
  std::int64_t triplets = 0;
  std::int64_t active = 0;
  std::vector<double> grad;  // objective gradient, k·d
};

/// The work of one batch: OT per pair, loss, gradient. Pairs are split over
/// `comm` (the world in mode pairs, this rank alone in mode batches).
class StepEngine {
 public:
  StepEngine(const eval::DonorStore& store, const TrainOptions& options) : store_(store), options_(options) {}

  /// fixed_epsilon > 0 replaces the batch's relative ε (gradient checks hold ε
  /// fixed, as the gradient treats it: GGML-OT detaches the mean-cost scale).
  StepResult run(const std::vector<GlobalId>& batch, const TripletSet& triplets, const MetricMatrix& a,
                 const dist::Comm& comm, const PairOwners* owners, bool want_gradient, double fixed_epsilon = 0.0);

  std::unordered_map<std::uint64_t, std::vector<std::int32_t>>& bases() { return bases_; }
  /// After a step that moved A by more than its own norm the stored trees are
  /// worse starts than the cold one: on the scrna cohort the first Adam step
  /// moves A by 3.2·‖A‖, and the warm re-solves after it took 1.26x the time of
  /// cold ones, while after a 0.68·‖A‖ step they already took 0.85x. Sinkhorn
  /// potentials are kept: they were no slower than zeros after that step.
  void forget_bases_after_step(double relative_move) {
    if (relative_move > 1.0) bases_.clear();
  }
  std::unordered_map<std::uint64_t, std::vector<double>>& potentials() { return potentials_; }

  /// keys[u]: the pair of problem u, for its warm-start potentials.
  template <class T>
  void solve_sinkhorn(const ot::CloudBatch<T>& clouds, const std::vector<ot::Pair>& problems,
                      const std::vector<std::uint64_t>& keys, ot::Cost cost, double epsilon, bool want_gradient,
                      std::vector<double>& costs, HostMatrix<double>& source_gradient,
                      HostMatrix<double>& target_gradient) {
    ot::SinkhornOptions sk;
    sk.epsilon = epsilon;
    sk.relative_epsilon = false;
    sk.max_iter = options_.ot.sinkhorn_max_iter;
    sk.tol = options_.ot.sinkhorn_tol;
    sk.workspace_bytes = options_.ot.workspace_bytes;
    sk.point_gradients = want_gradient;
    const auto layout = ot::BatchLayout::of(clouds, problems);
    // Each pair starts from its potentials of the previous solve (zeros: cold);
    // the metric moves little between steps, so few iterations remain.
    ot::SinkhornWarmStart<T> warm;
    bool any_warm = false;
    if (options_.warm_start) {
      std::vector<T> f(static_cast<std::size_t>(layout.total_rows()), T(0)), g(static_cast<std::size_t>(layout.total_cols()), T(0));
      for (std::size_t u = 0; u < problems.size(); ++u) {
        const auto found = potentials_.find(keys[u]);
        const auto n = layout.rows(static_cast<std::int64_t>(u)), m = layout.cols(static_cast<std::int64_t>(u));
        if (found == potentials_.end() || static_cast<std::int64_t>(found->second.size()) != n + m) continue;
        for (std::int64_t i = 0; i < n; ++i) f[static_cast<std::size_t>(layout.row_offset[u] + i)] = static_cast<T>(found->second[static_cast<std::size_t>(i)]);
        for (std::int64_t j = 0; j < m; ++j) g[static_cast<std::size_t>(layout.col_offset[u] + j)] = static_cast<T>(found->second[static_cast<std::size_t>(n + j)]);
        any_warm = true;
      }
      if (any_warm) {
        warm.f = device_copy("kotml::learn::warm_f", f);
        warm.g = device_copy("kotml::learn::warm_g", g);
      }
    }
    const auto result = ot::sinkhorn(clouds, problems, cost, sk, any_warm ? &warm : nullptr);
    const auto summaries = result.summaries();
    if (options_.warm_start) {
      const auto f = Kokkos::create_mirror_view_and_copy(HostSpace(), result.f);
      const auto g = Kokkos::create_mirror_view_and_copy(HostSpace(), result.g);
      for (std::size_t u = 0; u < problems.size(); ++u) {
        const auto n = layout.rows(static_cast<std::int64_t>(u)), m = layout.cols(static_cast<std::int64_t>(u));
        std::vector<double> state(static_cast<std::size_t>(n + m));
        for (std::int64_t i = 0; i < n; ++i) state[static_cast<std::size_t>(i)] = static_cast<double>(f(static_cast<std::size_t>(layout.row_offset[u] + i)));
        for (std::int64_t j = 0; j < m; ++j) state[static_cast<std::size_t>(n + j)] = static_cast<double>(g(static_cast<std::size_t>(layout.col_offset[u] + j)));
        potentials_[keys[u]] = std::move(state);
      }
    }
    for (std::size_t u = 0; u < problems.size(); ++u) {
      // The regularised objective, whose gradient the solver returns exactly
      // (envelope theorem); GGML-OT uses <P, C> with unrolled autograd.
      costs[u] = summaries[u].objective;
      report_.count(summaries[u].status);
      ++solves_;
      pivots_ += summaries[u].iterations;
    }
    if (want_gradient) {
      source_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.source_gradient);
      target_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.target_gradient);
    }
  }

  eval::SolveReport& report() { return report_; }
  /// Solves, solver iterations (EMD pivots, Sinkhorn iterations) and
  /// warm-started EMD solves so far on this rank (--verbose prints them).
  std::int64_t solves_ = 0, pivots_ = 0, warm_ = 0;

 private:
  const eval::DonorStore& store_;
  const TrainOptions& options_;
  eval::BatchStage stage_;
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> bases_;
  std::unordered_map<std::uint64_t, std::vector<double>> potentials_;  // Sinkhorn: f then g per pair
  eval::SolveReport report_;
};

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

StepResult StepEngine::run(const std::vector<GlobalId>& batch, const TripletSet& triplets, const MetricMatrix& a,
                           const dist::Comm& comm, const PairOwners* owners, bool want_gradient,
                           double fixed_epsilon) {
  const bool exact = options_.ot.exact();
  const auto k = static_cast<std::int64_t>(a.extent(0));
  const auto d = static_cast<std::int64_t>(a.extent(1));
  const auto& pairs = triplets.pairs;

  // Pairs this rank solves, and the donors it needs on the device.
  std::optional<timers::Scope> timed(std::in_place, "pairs");
  std::vector<std::size_t> mine;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    if (exact && pairs[p].first == pairs[p].second) continue;  // EMD(X, X) = 0, zero gradient
    const GlobalId u = batch[static_cast<std::size_t>(pairs[p].first)];
    const GlobalId v = batch[static_cast<std::size_t>(pairs[p].second)];
    if (!owners || owners->owner(u, v) == comm.rank()) mine.push_back(p);
  }
  std::vector<GlobalId> cloud_donors;
  std::map<std::int32_t, std::int32_t> cloud_of;  // batch position -> cloud
  std::vector<ot::Pair> problems;
  for (auto p : mine) {
    for (auto b : {pairs[p].first, pairs[p].second})
      if (cloud_of.emplace(b, static_cast<std::int32_t>(cloud_donors.size())).second)
        cloud_donors.push_back(batch[static_cast<std::size_t>(b)]);
    problems.push_back({cloud_of[pairs[p].first], cloud_of[pairs[p].second]});
  }
  // This rank's share of the final Σ_u H_uᵀ X_u: the batch positions of the
  // donors whose home it is (in group-by mode the shared support is one term,
  // taken by rank 0).
  std::vector<std::int64_t> mapped;
  if (store_.identical_supports()) {
    if (comm.is_root()) mapped.push_back(0);
  } else {
    for (std::size_t b = 0; b < batch.size(); ++b)
      if (!owners || owners->home(batch[b]) == comm.rank()) mapped.push_back(static_cast<std::int64_t>(b));
  }
  std::vector<GlobalId> staged(cloud_donors);
  if (want_gradient)
    for (auto b : mapped) staged.push_back(batch[static_cast<std::size_t>(b)]);
  std::sort(staged.begin(), staged.end());
  staged.erase(std::unique(staged.begin(), staged.end()), staged.end());

  timed.emplace("stage and project");
  const auto a_device = eval::metric_to_device(a);
  // Sinkhorn runs on single-precision projected points unless asked otherwise
  // (EMD always on double).
  const bool single = !exact && options_.ot.sinkhorn_float;
  eval::ProjectedCloudsOf<double> projected;
  eval::ProjectedCloudsOf<float> projected_float;
  ot::BatchLayout layout;
  comm.phase([&] {
    stage_.stage(store_, staged);
    if (single) {
      projected_float = eval::project_clouds<float>(stage_, cloud_donors, a_device);
      layout = ot::BatchLayout::of(projected_float.clouds, problems);
    } else {
      projected = eval::project_clouds<double>(stage_, cloud_donors, a_device);
      layout = ot::BatchLayout::of(projected.clouds, problems);
    }
  });

  // Sinkhorn: ε relative to the mean cost over every entry of every pair of
  // the batch (GGML-OT), summed exactly across ranks.
  double epsilon = fixed_epsilon;
  timed.emplace("epsilon");
  if (!exact && !(fixed_epsilon > 0.0)) {
    dist::ExactSum cost_sum(1);
    std::int64_t entries = 0;
    comm.phase([&] {
      if (problems.empty()) return;
      const ot::Cost cost = options_.squared ? ot::Cost::sqeuclidean : ot::Cost::euclidean;
      std::vector<double> sums = single ? ot::cost_row_sums(projected_float.clouds, layout, problems, cost)
                                        : ot::cost_row_sums(projected.clouds, layout, problems, cost);
      for (double r : sums) cost_sum.add(0, r);
      for (std::int64_t u = 0; u < layout.problems(); ++u) entries += layout.rows(u) * layout.cols(u);
    });
    const double total = cost_sum.allreduce(comm)[0];
    const std::int64_t count = comm.sum(entries);
    const double mean = count > 0 ? total / static_cast<double>(count) : 0.0;
    // GGML-OT clamps the mean at its eps (1e-8) before dividing by it.
    epsilon = options_.ot.entropic_reg * std::max(mean, 1e-8);
  }

  // Solve this rank's pairs.
  timed.emplace("solve");
  std::vector<double> my_costs(mine.size(), 0.0);
  HostMatrix<double> source_gradient, target_gradient;
  comm.phase([&] {
    if (problems.empty()) return;
    const ot::Cost cost = options_.squared ? ot::Cost::sqeuclidean : ot::Cost::euclidean;
    if (exact) {
      ot::EmdOptions emd_options;
      emd_options.max_iter = options_.ot.emd_max_iter;
      emd_options.workspace_bytes = options_.ot.workspace_bytes;
      emd_options.point_gradients = want_gradient;
      std::vector<std::int32_t> warm(static_cast<std::size_t>(layout.total_rows() + layout.total_cols()), ot::basis_root);
      bool any_warm = false;
      if (options_.warm_start) {
        for (std::size_t u = 0; u < problems.size(); ++u) {
          const auto found = bases_.find(pair_key(cloud_donors[static_cast<std::size_t>(problems[u].source)],
                                                  cloud_donors[static_cast<std::size_t>(problems[u].target)]));
          const auto nodes = static_cast<std::size_t>(layout.rows(static_cast<std::int64_t>(u)) + layout.cols(static_cast<std::int64_t>(u)));
          if (found == bases_.end() || found->second.size() != nodes) continue;
          std::copy(found->second.begin(), found->second.end(),
                    warm.begin() + layout.node_offset(static_cast<std::int64_t>(u)));
          any_warm = true;
        }
      }
      Vector<const std::int32_t> warm_device;
      if (any_warm) warm_device = device_copy("kotml::learn::warm_basis", warm);
      const auto result = ot::emd(projected.clouds, problems, cost, emd_options, warm_device);
      const auto summaries = result.summaries();
      for (std::size_t u = 0; u < problems.size(); ++u) {
        my_costs[u] = summaries[u].cost;
        report_.count(summaries[u].status);
        ++solves_;
        pivots_ += summaries[u].iterations;
        warm_ += summaries[u].warm_started ? 1 : 0;
        if (options_.warm_start)
          bases_[pair_key(cloud_donors[static_cast<std::size_t>(problems[u].source)],
                          cloud_donors[static_cast<std::size_t>(problems[u].target)])] =
              result.basis_of(static_cast<std::int64_t>(u));
      }
      if (want_gradient) {
        source_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.source_gradient);
        target_gradient = Kokkos::create_mirror_view_and_copy(HostSpace(), result.target_gradient);
      }
    } else {
      std::vector<std::uint64_t> keys;
      for (const auto& pr : problems)
        keys.push_back(pair_key(cloud_donors[static_cast<std::size_t>(pr.source)],
                                cloud_donors[static_cast<std::size_t>(pr.target)]));
      if (single)
        solve_sinkhorn(projected_float.clouds, problems, keys, cost, epsilon, want_gradient, my_costs,
                       source_gradient, target_gradient);
      else
        solve_sinkhorn(projected.clouds, problems, keys, cost, epsilon, want_gradient, my_costs, source_gradient,
                       target_gradient);
    }
    for (double c : my_costs)
      if (!std::isfinite(c)) throw non_finite_cost(a, exact, epsilon);
  });

  // Every rank gets every pair's cost, by pair id.
  timed.emplace("gather costs");
  std::vector<std::int64_t> ids(mine.begin(), mine.end());
  std::vector<double> pair_cost(pairs.size(), 0.0);
  if (owners) {
    const auto all_ids = comm.allgatherv(ids);
    const auto all_costs = comm.allgatherv(my_costs);
    for (std::size_t t = 0; t < all_ids.size(); ++t) pair_cost[static_cast<std::size_t>(all_ids[t])] = all_costs[t];
  } else {
    for (std::size_t t = 0; t < mine.size(); ++t) pair_cost[mine[t]] = my_costs[t];
  }
  const auto hinge = hinge_loss(triplets, pair_cost, options_.alpha);
  StepResult result;
  result.epsilon = epsilon;
  result.loss = hinge.value;
  result.triplets = hinge.n_triplets;
  result.active = hinge.n_active;
  if (!want_gradient) return result;

  // H: Σ over pairs of coefficient × point gradients, per point of the batch.
  timed.emplace("reduce H");
  std::vector<std::int64_t> h_row(batch.size(), 0);
  std::int64_t h_rows = 0;
  if (store_.identical_supports()) {
    h_rows = static_cast<std::int64_t>(store_.pool().extent(0));
  } else {
    for (std::size_t b = 0; b < batch.size(); ++b) {
      h_row[b] = h_rows;
      h_rows += store_.rows(batch[b]);
    }
  }
  dist::ExactSum h_sum(static_cast<std::size_t>(h_rows * k));
  comm.phase([&] {
    for (std::size_t u = 0; u < mine.size(); ++u) {
      const double c = hinge.d_pair_cost[mine[u]];
      if (c == 0.0) continue;
      const auto& pr = pairs[mine[u]];
      const auto add_rows = [&](const HostMatrix<double>& g, std::int64_t first_row, std::int64_t rows, std::int32_t position) {
        const auto base = h_row[static_cast<std::size_t>(position)];
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t q = 0; q < k; ++q)
            h_sum.add(static_cast<std::size_t>((base + i) * k + q), c * g(static_cast<std::size_t>(first_row + i), static_cast<std::size_t>(q)));
      };
      add_rows(source_gradient, layout.row_offset[u], layout.rows(static_cast<std::int64_t>(u)), pr.first);
      add_rows(target_gradient, layout.col_offset[u], layout.cols(static_cast<std::int64_t>(u)), pr.second);
    }
  });
  const auto h = h_sum.allreduce(comm);

  // ∂L/∂A = Σ_u H_uᵀ X_u: each rank maps its block of donors, summed exactly.
  timed.emplace("gradient");
  dist::ExactSum g_sum(static_cast<std::size_t>(k * d));
  comm.phase([&] {
    Matrix<double> grad_block(no_init("kotml::learn::donor_gradient"), static_cast<std::size_t>(k), static_cast<std::size_t>(d));
    for (auto b : mapped) {
      const GlobalId donor = batch[static_cast<std::size_t>(b)];
      const std::int64_t rows = store_.identical_supports() ? h_rows : store_.rows(donor);
      const std::int64_t first = store_.identical_supports() ? 0 : h_row[static_cast<std::size_t>(b)];
      if (rows == 0) continue;
      HostMatrix<double> h_host("kotml::learn::h_block", static_cast<std::size_t>(rows), static_cast<std::size_t>(k));
      std::copy(h.begin() + first * k, h.begin() + (first + rows) * k, h_host.data());
      auto h_device = Kokkos::create_mirror_view_and_copy(MemSpace(), h_host);
      ot::map_gradient<eval::PointScalar>(h_device, stage_.donor_points(donor), grad_block, false);
      auto g_host = Kokkos::create_mirror_view_and_copy(HostSpace(), grad_block);
      g_sum.add(g_host.data());
    }
  });
  result.grad = g_sum.allreduce(comm);
  return result;
}

std::vector<int> labels_of(const data::Cohort& cohort, const std::vector<GlobalId>& donors) {
  std::vector<int> labels;
  for (auto u : donors) labels.push_back(cohort.donors[static_cast<std::size_t>(u)].label);
  return labels;
}

TripletSet make_triplets(const std::vector<int>& labels, const TrainOptions& options, std::int64_t epoch_index,
                         std::int64_t batch_index) {
  if (options.triplets == TripletMode::all) return all_triplets(labels);
  random::Stream stream(options.seed, random::Purpose::triplets,
                        (static_cast<std::uint64_t>(epoch_index) << 20) + static_cast<std::uint64_t>(batch_index));
  return sampled_triplets(labels, options.t, stream);
}

/// ‖a − b‖_F / ‖b‖_F (infinite when b = 0 and a ≠ b).
double relative_distance(const MetricMatrix& a, const MetricMatrix& b) {
  double moved = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double delta = a.data()[i] - b.data()[i];
    moved += delta * delta;
    norm += b.data()[i] * b.data()[i];
  }
  if (norm > 0) return std::sqrt(moved / norm);
  return moved > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

bool all_finite(const MetricMatrix& a) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a.data()[i])) return false;
  return true;
}

/// Collective: every rank's warm-start bases, for a checkpoint.
WarmBases gather_bases(const std::unordered_map<std::uint64_t, std::vector<std::int32_t>>& bases,
                       const dist::Comm& comm) {
  std::vector<std::int64_t> packed;
  std::vector<std::uint64_t> keys;
  for (const auto& entry : bases) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  for (auto key : keys) {
    const auto& b = bases.at(key);
    packed.push_back(static_cast<std::int64_t>(key >> 32));
    packed.push_back(static_cast<std::int64_t>(key & 0xffffffffULL));
    packed.push_back(static_cast<std::int64_t>(b.size()));
    packed.insert(packed.end(), b.begin(), b.end());
  }
  const auto all = comm.allgatherv(packed);
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int32_t>> sorted;
  for (std::size_t i = 0; i < all.size();) {
    const auto first = all[i], second = all[i + 1];
    const auto n = static_cast<std::size_t>(all[i + 2]);
    std::vector<std::int32_t> basis(all.begin() + static_cast<std::ptrdiff_t>(i + 3),
                                    all.begin() + static_cast<std::ptrdiff_t>(i + 3 + n));
    sorted[{first, second}] = std::move(basis);
    i += 3 + n;
  }
  WarmBases warm;
  warm.offset.push_back(0);
  for (const auto& [key, basis] : sorted) {
    warm.first.push_back(key.first);
    warm.second.push_back(key.second);
    warm.basis.insert(warm.basis.end(), basis.begin(), basis.end());
    warm.offset.push_back(static_cast<std::int64_t>(warm.basis.size()));
  }
  return warm;
}

/// Collective: every rank's Sinkhorn warm-start potentials, for a checkpoint.
WarmBases gather_potentials(const std::unordered_map<std::uint64_t, std::vector<double>>& potentials,
                            const dist::Comm& comm) {
  std::vector<std::uint64_t> keys;
  for (const auto& entry : potentials) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  std::vector<std::int64_t> heads;
  std::vector<double> values;
  for (auto key : keys) {
    const auto& p = potentials.at(key);
    heads.push_back(static_cast<std::int64_t>(key >> 32));
    heads.push_back(static_cast<std::int64_t>(key & 0xffffffffULL));
    heads.push_back(static_cast<std::int64_t>(p.size()));
    values.insert(values.end(), p.begin(), p.end());
  }
  const auto all_heads = comm.allgatherv(heads);
  const auto all_values = comm.allgatherv(values);
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<double>> sorted;
  std::size_t at = 0;
  for (std::size_t i = 0; i < all_heads.size(); i += 3) {
    const auto n = static_cast<std::size_t>(all_heads[i + 2]);
    sorted[{all_heads[i], all_heads[i + 1]}] =
        std::vector<double>(all_values.begin() + static_cast<std::ptrdiff_t>(at),
                            all_values.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  WarmBases warm;
  warm.offset.push_back(0);
  for (const auto& [key, p] : sorted) {
    warm.first.push_back(key.first);
    warm.second.push_back(key.second);
    warm.potentials.insert(warm.potentials.end(), p.begin(), p.end());
    warm.offset.push_back(static_cast<std::int64_t>(warm.potentials.size()));
  }
  return warm;
}

/// Checks that the store holds what this rank needs (an internal error
/// otherwise) and prints, with --verbose, how many training donors and cells
/// the ranks hold.
void report_placement(const data::Cohort& cohort, const std::vector<GlobalId>& train_donors,
                      const std::vector<GlobalId>& needed, const eval::DonorStore& store, const dist::Comm& comm) {
  std::int64_t cells = 0, total_cells = 0;
  for (auto u : needed) {
    if (!store.has(u))
      throw InternalError("training: donor " + cohort.donors[static_cast<std::size_t>(u)].id +
                          " is not loaded on rank " + std::to_string(comm.rank()) + ", which needs it");
    cells += store.rows(u);
  }
  for (auto u : train_donors) total_cells += store.rows(u);
  const auto held = static_cast<std::int64_t>(needed.size());
  const std::int64_t fewest = -comm.max(-held), most = comm.max(held), most_cells = comm.max(cells);
  log::info("placement: each rank holds " + std::to_string(fewest) + " to " + std::to_string(most) + " of " +
            std::to_string(train_donors.size()) + " training donors (at most " + std::to_string(most_cells) + " of " +
            std::to_string(total_cells) + " cells)");
}

double lr_factor(const TrainOptions& options, int ranks) {
  if (options.mode != DistributionMode::batches) return 1.0;
  switch (options.lr_scaling) {
    case LrScaling::none:
      return 1.0;
    case LrScaling::linear:
      return static_cast<double>(ranks);
    case LrScaling::sqrt:
      return std::sqrt(static_cast<double>(ranks));
  }
  return 1.0;
}

}  // namespace

// ------------------------------------------------------------------ placement

std::vector<GlobalId> donors_to_hold(const data::Cohort& cohort, const std::vector<GlobalId>& train_donors,
                                     const TrainOptions& options, int ranks, int rank) {
  if (options.mode == DistributionMode::batches || cohort.identical_supports) {
    std::vector<GlobalId> all(train_donors);
    std::sort(all.begin(), all.end());
    return all;
  }
  const PairOwners owners(rows_by_donor(cohort), train_donors, !options.ot.exact(), ranks);
  return owners.held_by(train_donors, rank);
}

// ------------------------------------------------------------------ train

TrainResult train(const data::Cohort& cohort, const eval::DonorStore& store,
                  const std::vector<GlobalId>& train_donors, const TrainOptions& options,
                  const dist::Comm& comm) {
  const auto labels = labels_of(cohort, train_donors);
  const std::int64_t n_classes = static_cast<std::int64_t>(std::set<int>(labels.begin(), labels.end()).size());
  options.validate(cohort.dim, static_cast<std::int64_t>(train_donors.size()), n_classes);
  const auto k = options.n_comps, d = cohort.dim;
  const std::string fingerprint = full_fingerprint(options, cohort, train_donors, comm.size());

  TrainResult result;
  if (options.initial_a.size() > 0) {
    result.a = MetricMatrix("metric_A", static_cast<std::size_t>(k), static_cast<std::size_t>(d));
    Kokkos::deep_copy(result.a, options.initial_a);
  } else {
    result.a = initial_metric(k, d, options.seed);
  }
  Adam adam(options.adam, static_cast<std::size_t>(k * d));
  adam.set_lr(options.adam.lr * lr_factor(options, comm.size()));
  MetricMatrix a_before_step("kotml::learn::a_before_step", static_cast<std::size_t>(k), static_cast<std::size_t>(d));
  StepEngine engine(store, options);
  std::optional<PairOwners> owners;
  if (options.mode == DistributionMode::pairs)
    timers::timed("pair owners", [&] { owners.emplace(rows_by_donor(store), train_donors, !options.ot.exact(), comm.size()); });
  report_placement(cohort, train_donors, donors_to_hold(cohort, train_donors, options, comm.size(), comm.rank()),
                   store, comm);

  std::int64_t epochs_done = 0;
  if (!options.restart_from.empty()) {
    Checkpoint c;
    comm.phase([&] {
      c = read_checkpoint(options.restart_from);
      if (c.fingerprint != fingerprint)
        throw Error(options.restart_from, "",
                    "checkpoint from another configuration (options, cohort or training donors differ): "
                    "checkpoint has '" + c.fingerprint + "', this run '" + fingerprint + "'");
      if (static_cast<std::int64_t>(c.a.extent(0)) != k || static_cast<std::int64_t>(c.a.extent(1)) != d)
        throw Error(options.restart_from, "A", "metric shape does not match this run");
    });
    Kokkos::deep_copy(result.a, c.a);
    adam.restore(c.adam_steps, c.adam_m, c.adam_v);
    result.history = c.history;
    result.converged = c.converged;
    epochs_done = c.epochs_done;
    for (std::size_t p = 0; p < c.warm.first.size(); ++p) {
      const GlobalId u = c.warm.first[p], v = c.warm.second[p];
      if (owners && owners->owner(u, v) != comm.rank()) continue;
      if (!c.warm.basis.empty())
        engine.bases()[pair_key(u, v)] = std::vector<std::int32_t>(
            c.warm.basis.begin() + c.warm.offset[p], c.warm.basis.begin() + c.warm.offset[p + 1]);
      else
        engine.potentials()[pair_key(u, v)] = std::vector<double>(
            c.warm.potentials.begin() + c.warm.offset[p], c.warm.potentials.begin() + c.warm.offset[p + 1]);
    }
  }

  std::vector<std::string> warnings;
  std::int64_t skipped = 0;
  const dist::Comm self(MPI_COMM_SELF);
  double seconds_total = 0.0, cpu_total = 0.0;
  std::int64_t epochs_timed = 0;
  log::Progress progress("epoch", options.epochs, "epochs", epochs_done);
  std::string progress_detail;
  for (std::int64_t epoch = epochs_done + 1; epoch <= options.epochs && !result.converged; ++epoch) {
    progress.update(epoch - 1, progress_detail);
    comm.barrier();
    Kokkos::Timer timer;
    const std::clock_t cpu_start = std::clock();
    const auto batches = stratified_batches(labels, options.batch_size, options.seed, epoch - 1);
    EpochRecord record;
    record.epoch = epoch;
    record.min_grad_norm = std::numeric_limits<double>::infinity();
    double loss_sum = 0.0;
    const std::int64_t per_step = options.mode == DistributionMode::batches ? comm.size() : 1;
    const auto n_batches = static_cast<std::int64_t>(batches.size());
    for (std::int64_t first = 0; first < n_batches; first += per_step) {
      StepResult step;
      bool have_step = false;
      if (options.mode == DistributionMode::pairs) {
        std::vector<GlobalId> batch;
        for (auto pos : batches[static_cast<std::size_t>(first)]) batch.push_back(train_donors[static_cast<std::size_t>(pos)]);
        const auto triplets = make_triplets(labels_of(cohort, batch), options, epoch - 1, first);
        if (triplets.size() == 0) {
          ++skipped;
          continue;
        }
        step = engine.run(batch, triplets, result.a, comm, &*owners, true);
        have_step = true;
      } else {
        // Mode batches: batch first + rank for this rank, alone; then the
        // ranks' gradients and losses are averaged exactly.
        const std::int64_t mine = first + comm.rank();
        StepResult local;
        bool valid = false;
        if (mine < n_batches) {
          std::vector<GlobalId> batch;
          for (auto pos : batches[static_cast<std::size_t>(mine)]) batch.push_back(train_donors[static_cast<std::size_t>(pos)]);
          const auto triplets = make_triplets(labels_of(cohort, batch), options, epoch - 1, mine);
          if (triplets.size() > 0) {
            // A failure on this rank alone must reach every rank before the
            // next collective.
            std::optional<Error> failure;
            try {
              local = engine.run(batch, triplets, result.a, self, nullptr, true);
            } catch (const Error& e) {
              failure = e;
            }
            comm.agree(failure);
            valid = true;
          } else {
            comm.agree(std::nullopt);
            ++skipped;
          }
        } else {
          comm.agree(std::nullopt);
        }
        const std::int64_t contributors = comm.sum(valid ? 1 : 0);
        if (contributors == 0) continue;
        dist::ExactSum sums(static_cast<std::size_t>(k * d + 1));
        comm.phase([&] {
          if (!valid) return;
          std::vector<double> row(local.grad);
          row.push_back(local.loss);
          sums.add(row);
        });
        auto total = sums.allreduce(comm);
        step.loss = total.back() / static_cast<double>(contributors);
        total.pop_back();
        for (auto& g : total) g /= static_cast<double>(contributors);
        step.grad = std::move(total);
        step.triplets = comm.sum(local.triplets);
        step.active = comm.sum(local.active);
        have_step = true;
      }
      if (!have_step) continue;
      if (!std::isfinite(step.loss))
        throw Error("", "training", "the loss is not finite at epoch " + std::to_string(epoch) + " (try a smaller --lr)");
      const double grad_norm = frobenius_norm(step.grad);
      if (!std::isfinite(grad_norm))
        throw Error("", "training", "the gradient is not finite at epoch " + std::to_string(epoch) + " (try a smaller --lr)");
      record.grad_norm = grad_norm;
      record.min_grad_norm = std::min(record.min_grad_norm, grad_norm);
      if (options.stop_thr > 0.0 && grad_norm < options.stop_thr) result.converged = true;
      const auto timed_step = timers::scope("optimiser step");
      std::vector<double> total_grad(step.grad);
      add_regularizer_gradient(result.a, options.reg_type, options.reg, total_grad);
      Kokkos::deep_copy(a_before_step, result.a);
      adam.step(result.a, total_grad);
      engine.forget_bases_after_step(relative_distance(result.a, a_before_step));
      if (!all_finite(result.a))
        throw Error("", "training", "the metric became non-finite at epoch " + std::to_string(epoch) + " (try a smaller --lr)");
      loss_sum += step.loss;
      ++record.steps;
      record.triplets += step.triplets;
      record.active_triplets += step.active;
    }
    record.seconds = comm.max(timer.seconds());
    record.cpu_seconds = comm.max(static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
    record.loss = record.steps > 0 ? loss_sum / static_cast<double>(record.steps) : 0.0;
    if (record.steps == 0) record.min_grad_norm = 0.0;
    record.regularizer = regularizer_value(result.a, options.reg_type, options.reg);
    result.history.push_back(record);
    seconds_total += record.seconds;
    cpu_total += record.cpu_seconds;
    ++epochs_timed;
    epochs_done = epoch;
    progress_detail = "loss " + log::scientific_text(record.loss);
    progress.update(epoch, progress_detail);
    log::info("epoch " + std::to_string(epoch) + ": loss " + std::to_string(record.loss) + ", gradient norm " +
              std::to_string(record.grad_norm) + ", " + std::to_string(record.seconds) + " s; OT on this rank so far: " +
              std::to_string(engine.solves_) + " solves, " + std::to_string(engine.pivots_) + " iterations, " +
              std::to_string(engine.warm_) + " warm-started (cumulative)");
    if (options.checkpoint_every > 0 && (epoch % options.checkpoint_every == 0)) {
      Checkpoint c;
      c.fingerprint = fingerprint;
      c.epochs_done = epochs_done;
      c.converged = result.converged;
      c.seed = options.seed;
      c.a = result.a;
      c.adam_steps = adam.steps();
      c.adam_m = adam.first_moment();
      c.adam_v = adam.second_moment();
      c.history = result.history;
      c.warm = options.ot.exact() ? gather_bases(engine.bases(), comm) : gather_potentials(engine.potentials(), comm);
      comm.phase([&] {
        if (comm.is_root()) write_checkpoint(options.checkpoint_path, c);
      });
    }
  }
  result.epochs_run = epochs_done;
  result.epoch_time_s = epochs_timed > 0 ? seconds_total / static_cast<double>(epochs_timed) : 0.0;
  result.epoch_cpu_s = epochs_timed > 0 ? cpu_total / static_cast<double>(epochs_timed) : 0.0;
  skipped = comm.sum(skipped);
  if (skipped > 0)
    warnings.push_back("training: " + std::to_string(skipped) + " batch(es) without a valid triplet were skipped");
  for (const auto& w : engine.report().warnings("training")) warnings.push_back(w);
  comm.gather_warnings(warnings);
  return result;
}

double triplet_loss(const data::Cohort& cohort, const eval::DonorStore& store, const std::vector<GlobalId>& donors,
                    const MetricMatrix& a, const TrainOptions& options, const dist::Comm& comm) {
  const auto triplets = all_triplets(labels_of(cohort, donors));
  if (triplets.size() == 0) return 0.0;
  StepEngine engine(store, options);
  const PairOwners owners(rows_by_donor(store), donors, !options.ot.exact(), comm.size());
  return engine.run(donors, triplets, a, comm, &owners, false).loss;
}

double loss_and_gradient(const data::Cohort& cohort, const eval::DonorStore& store,
                         const std::vector<GlobalId>& donors, const MetricMatrix& a, const TrainOptions& options,
                         const dist::Comm& comm, std::vector<double>& grad, double* epsilon) {
  const auto triplets = make_triplets(labels_of(cohort, donors), options, 0, 0);
  StepEngine engine(store, options);
  const PairOwners owners(rows_by_donor(store), donors, !options.ot.exact(), comm.size());
  auto step = engine.run(donors, triplets, a, comm, &owners, true, epsilon ? *epsilon : 0.0);
  if (epsilon) *epsilon = step.epsilon;
  grad = step.grad;
  add_regularizer_gradient(a, options.reg_type, options.reg, grad);
  return step.loss + regularizer_value(a, options.reg_type, options.reg);
}

}  // namespace kotml::learn

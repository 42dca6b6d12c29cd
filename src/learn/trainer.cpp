#include "kotml/learn/trainer.hpp"

#include <Kokkos_Core.hpp>

#include <ctime>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/random.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/learn/batches.hpp"
#include "kotml/learn/checkpoint.hpp"
#include "kotml/learn/triplets.hpp"
#include "step_engine.hpp"

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
    throw Error::option("alpha", "must be zero or positive, got " + log::number_text(alpha));
  if (!std::isfinite(reg) || !(reg >= 0.0)) throw Error::option("reg", "must be zero or positive, got " + log::number_text(reg));
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
    << ";sinkhorn_domain=" << ot::to_string(ot.sinkhorn_domain)
    << ";emd_max_iter=" << ot.emd_max_iter
    // Only when set: fingerprints of checkpoints written before the option stay valid.
    << (ot.workspace_bytes != stage::OtSettings{}.workspace_bytes ? ";cost_memory=" + std::to_string(ot.workspace_bytes)
                                                                  : std::string())
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

using detail::PairOwners;
using detail::StepEngine;
using detail::StepResult;

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

/// Checks that the store holds what this rank needs (an internal error
/// otherwise) and prints, with --verbose, how many training donors and cells
/// the ranks hold.
void report_placement(const data::Cohort& cohort, const std::vector<GlobalId>& train_donors,
                      const std::vector<GlobalId>& needed, const stage::DonorStore& store, const dist::Comm& comm) {
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

// ------------------------------------------------------------ the run

/// One training run: the epoch loop and the state it carries (A, Adam, the
/// step engine's warm starts), one method per phase.
class TrainingRun {
 public:
  /// reader: given in mode batches, each step reads the donors of this rank's
  /// batch through it and stages them alone (`store` then starts empty).
  TrainingRun(const data::Cohort& cohort, const stage::DonorStore& store, const std::vector<GlobalId>& train_donors,
              const TrainOptions& options, const dist::Comm& comm, data::CohortReader* reader = nullptr)
      : cohort_(cohort),
        train_donors_(train_donors),
        options_(options),
        comm_(comm),
        labels_(labels_of(cohort, train_donors)),
        fingerprint_(full_fingerprint(options, cohort, train_donors, comm.size())),
        adam_(options.adam, static_cast<std::size_t>(options.n_comps * cohort.dim)),
        engine_(store, options),
        reader_(reader) {
    const auto k = options.n_comps, d = cohort.dim;
    if (options.initial_a.size() > 0) {
      result_.a = MetricMatrix("metric_A", static_cast<std::size_t>(k), static_cast<std::size_t>(d));
      Kokkos::deep_copy(result_.a, options.initial_a);
    } else {
      result_.a = initial_metric(k, d, options.seed);
    }
    a_before_step_ = MetricMatrix("kotml::learn::a_before_step", static_cast<std::size_t>(k), static_cast<std::size_t>(d));
    adam_.set_lr(options.adam.lr * lr_factor(options, comm.size()));
    if (options.mode == DistributionMode::pairs)
      timers::timed("pair owners",
                    [&] { owners_.emplace(store, train_donors, !options.ot.exact(), comm.size()); });
    // The check asks the placement the steps use (owners_) rather than
    // building the cohort's again: one O(pairs) table less on every rank.
    if (!reader_)
      timers::timed("placement", [&] {
        report_placement(cohort, train_donors,
                         owners_ && !cohort.identical_supports
                             ? owners_->held_by(comm.rank())
                             : donors_to_hold(cohort, train_donors, options, comm.size(), comm.rank()),
                         store, comm);
      });
  }

  TrainResult run() {
    if (!options_.restart_from.empty()) timers::timed("restore", [&] { restore(options_.restart_from); });
    double seconds_total = 0.0, cpu_total = 0.0;
    std::int64_t epochs_timed = 0;
    log::Progress progress("epoch", options_.epochs, "epochs", epochs_done_);
    std::string progress_detail;
    for (std::int64_t epoch = epochs_done_ + 1; epoch <= options_.epochs && !result_.converged; ++epoch) {
      progress.update(epoch - 1, progress_detail);
      const auto record = run_epoch(epoch);
      result_.history.push_back(record);
      seconds_total += record.seconds;
      cpu_total += record.cpu_seconds;
      ++epochs_timed;
      epochs_done_ = epoch;
      progress_detail = "loss " + log::scientific_text(record.loss);
      progress.update(epoch, progress_detail);
      log::info("epoch " + std::to_string(epoch) + ": loss " + std::to_string(record.loss) + ", gradient norm " +
                std::to_string(record.grad_norm) + ", " + std::to_string(record.seconds) +
                " s; OT on this rank so far: " + std::to_string(engine_.solves()) + " solves, " +
                std::to_string(engine_.iterations()) + " iterations, " + std::to_string(engine_.warm_started()) +
                " warm-started (cumulative)");
      if (options_.checkpoint_every > 0 && (epoch % options_.checkpoint_every == 0)) write_checkpoint_now();
    }
    result_.epochs_run = epochs_done_;
    result_.epoch_time_s = epochs_timed > 0 ? seconds_total / static_cast<double>(epochs_timed) : 0.0;
    result_.epoch_cpu_s = epochs_timed > 0 ? cpu_total / static_cast<double>(epochs_timed) : 0.0;
    report_warnings();
    return result_;
  }

 private:
  /// Phase "restore": A, Adam, history and this rank's warm starts from a
  /// checkpoint of the same configuration.
  void restore(const std::string& path) {
    const auto k = options_.n_comps, d = cohort_.dim;
    Checkpoint c;
    comm_.phase([&] {
      c = read_checkpoint(path);
      if (c.fingerprint != fingerprint_)
        throw Error(path, "",
                    "checkpoint from another configuration (options, cohort or training donors differ): "
                    "checkpoint has '" + c.fingerprint + "', this run '" + fingerprint_ + "'");
      if (static_cast<std::int64_t>(c.a.extent(0)) != k || static_cast<std::int64_t>(c.a.extent(1)) != d)
        throw Error(path, "A", "metric shape does not match this run");
    });
    Kokkos::deep_copy(result_.a, c.a);
    adam_.restore(c.adam_steps, c.adam_m, c.adam_v);
    result_.history = c.history;
    result_.converged = c.converged;
    epochs_done_ = c.epochs_done;
    const auto owned = [&](GlobalId u, GlobalId v) { return !owners_ || owners_->owner(u, v) == comm_.rank(); };
    if (options_.ot.exact())
      engine_.bases().restore(c.warm, owned);
    else
      engine_.potentials().restore(c.warm, owned);
  }

  /// One pass over the epoch's stratified batches, a step each (mode pairs) or
  /// one batch per rank per step (mode batches).
  EpochRecord run_epoch(std::int64_t epoch) {
    // The epoch's clock starts on every rank at once: the wait for the last
    // rank out of the set-up (or the last epoch) is a phase of its own.
    timers::timed("epoch start", [&] { comm_.barrier(); });
    Kokkos::Timer timer;
    const std::clock_t cpu_start = std::clock();
    const auto batches = stratified_batches(labels_, options_.batch_size, options_.seed, epoch - 1);
    EpochRecord record;
    record.epoch = epoch;
    record.min_grad_norm = std::numeric_limits<double>::infinity();
    double loss_sum = 0.0;
    const std::int64_t per_step = options_.mode == DistributionMode::batches ? comm_.size() : 1;
    const auto n_batches = static_cast<std::int64_t>(batches.size());
    for (std::int64_t first = 0; first < n_batches; first += per_step) {
      const auto step = options_.mode == DistributionMode::pairs ? pairs_step(batches, first, epoch)
                                                                 : batches_step(batches, first, epoch);
      if (!step) continue;
      optimiser_step(*step, epoch, record);
      loss_sum += step->loss;
      ++record.steps;
      record.triplets += step->triplets;
      record.active_triplets += step->active;
    }
    record.seconds = comm_.max(timer.seconds());
    record.cpu_seconds = comm_.max(static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
    record.loss = record.steps > 0 ? loss_sum / static_cast<double>(record.steps) : 0.0;
    if (record.steps == 0) record.min_grad_norm = 0.0;
    record.regularizer = regularizer_value(result_.a, options_.reg_type, options_.reg);
    return record;
  }

  std::vector<GlobalId> batch_donors(const std::vector<std::vector<std::int64_t>>& batches, std::int64_t index) const {
    std::vector<GlobalId> batch;
    for (auto pos : batches[static_cast<std::size_t>(index)]) batch.push_back(train_donors_[static_cast<std::size_t>(pos)]);
    return batch;
  }

  /// Mode pairs: batch `first` on every rank, its pairs split by owner.
  std::optional<StepResult> pairs_step(const std::vector<std::vector<std::int64_t>>& batches, std::int64_t first,
                                       std::int64_t epoch) {
    const auto batch = batch_donors(batches, first);
    const auto triplets =
        timers::timed("triplets", [&] { return make_triplets(labels_of(cohort_, batch), options_, epoch - 1, first); });
    if (triplets.size() == 0) {
      ++skipped_;
      return std::nullopt;
    }
    return engine_.run(batch, triplets, result_.a, comm_, &*owners_, true);
  }

  /// Mode batches: batch first + rank for this rank, alone; then the ranks'
  /// gradients and losses are averaged exactly.
  std::optional<StepResult> batches_step(const std::vector<std::vector<std::int64_t>>& batches, std::int64_t first,
                                         std::int64_t epoch) {
    const auto k = options_.n_comps, d = cohort_.dim;
    const std::int64_t mine = first + comm_.rank();
    const bool have_batch = mine < static_cast<std::int64_t>(batches.size());
    if (reader_) stage_own_batch(have_batch ? batch_donors(batches, mine) : std::vector<GlobalId>{});
    StepResult local;
    bool valid = false;
    if (have_batch) {
      const auto batch = batch_donors(batches, mine);
      const auto triplets =
          timers::timed("triplets", [&] { return make_triplets(labels_of(cohort_, batch), options_, epoch - 1, mine); });
      if (triplets.size() > 0) {
        // A failure on this rank alone must reach every rank before the next
        // collective.
        std::optional<Error> failure;
        try {
          local = engine_.run(batch, triplets, result_.a, self_, nullptr, true);
        } catch (const Error& e) {
          failure = e;
        }
        comm_.agree(failure);
        valid = true;
      } else {
        comm_.agree(std::nullopt);
        ++skipped_;
      }
    } else {
      comm_.agree(std::nullopt);
    }
    const auto timed = timers::scope("reduce");
    const std::int64_t contributors = comm_.sum(valid ? 1 : 0);
    if (contributors == 0) return std::nullopt;
    dist::ExactSum sums(static_cast<std::size_t>(k * d + 1));
    comm_.phase([&] {
      if (!valid) return;
      std::vector<double> row(local.grad);
      row.push_back(local.loss);
      sums.add(row);
    });
    auto total = sums.allreduce(comm_);
    StepResult step;
    step.loss = total.back() / static_cast<double>(contributors);
    total.pop_back();
    for (auto& g : total) g /= static_cast<double>(contributors);
    step.grad = std::move(total);
    step.triplets = comm_.sum(local.triplets);
    step.active = comm_.sum(local.active);
    return step;
  }

  /// Phases "read" and "stage" of a streamed step (collective): this rank
  /// holds exactly the donors of its batch, staged alone.
  void stage_own_batch(std::vector<GlobalId> batch) {
    std::sort(batch.begin(), batch.end());
    batch_store_.reset();  // the last batch's points go before this one's come
    timers::timed("read", [&] { reader_->hold(batch); });
    timers::timed("stage", [&] {
      batch_store_.emplace(reader_->cohort_for_staging(), stage::DonorStore::take_points);
      engine_.use_store(*batch_store_);
    });
  }

  /// Phase "optimiser step": checks, the regulariser's gradient and one Adam
  /// step, the same on every rank.
  void optimiser_step(const StepResult& step, std::int64_t epoch, EpochRecord& record) {
    if (!std::isfinite(step.loss))
      throw Error("", "training", "the loss is not finite at epoch " + std::to_string(epoch) + " (try a smaller --lr)");
    const double grad_norm = frobenius_norm(step.grad);
    if (!std::isfinite(grad_norm))
      throw Error("", "training", "the gradient is not finite at epoch " + std::to_string(epoch) + " (try a smaller --lr)");
    record.grad_norm = grad_norm;
    record.min_grad_norm = std::min(record.min_grad_norm, grad_norm);
    if (options_.stop_thr > 0.0 && grad_norm < options_.stop_thr) result_.converged = true;
    const auto timed = timers::scope("optimiser step");
    std::vector<double> total_grad(step.grad);
    add_regularizer_gradient(result_.a, options_.reg_type, options_.reg, total_grad);
    Kokkos::deep_copy(a_before_step_, result_.a);
    adam_.step(result_.a, total_grad);
    engine_.forget_bases_after_step(relative_distance(result_.a, a_before_step_));
    if (!all_finite(result_.a))
      throw Error("", "training", "the metric became non-finite at epoch " + std::to_string(epoch) + " (try a smaller --lr)");
  }

  /// Phase "checkpoint": the state after epochs_done_, written by rank 0.
  void write_checkpoint_now() {
    const auto timed = timers::scope("checkpoint");
    Checkpoint c;
    c.fingerprint = fingerprint_;
    c.epochs_done = epochs_done_;
    c.converged = result_.converged;
    c.seed = options_.seed;
    c.a = result_.a;
    c.adam_steps = adam_.steps();
    c.adam_m = adam_.first_moment();
    c.adam_v = adam_.second_moment();
    c.history = result_.history;
    if (options_.ot.exact())
      engine_.bases().gather_into(c.warm, comm_);
    else
      engine_.potentials().gather_into(c.warm, comm_);
    comm_.phase([&] {
      if (comm_.is_root()) write_checkpoint(options_.checkpoint_path, c);
    });
  }

  void report_warnings() {
    std::vector<std::string> warnings;
    const auto skipped = comm_.sum(skipped_);
    if (skipped > 0)
      warnings.push_back("training: " + std::to_string(skipped) + " batch(es) without a valid triplet were skipped");
    for (const auto& w : engine_.report().warnings("training")) warnings.push_back(w);
    comm_.gather_warnings(warnings);
  }

  const data::Cohort& cohort_;
  const std::vector<GlobalId>& train_donors_;
  const TrainOptions& options_;
  const dist::Comm& comm_;
  const dist::Comm self_{MPI_COMM_SELF};
  const std::vector<int> labels_;
  const std::string fingerprint_;
  Adam adam_;
  StepEngine engine_;
  data::CohortReader* reader_;
  std::optional<stage::DonorStore> batch_store_;  // streamed mode batches: this step's batch
  std::optional<PairOwners> owners_;
  MetricMatrix a_before_step_;
  TrainResult result_;
  std::int64_t epochs_done_ = 0;
  std::int64_t skipped_ = 0;
};

/// The user errors a run can have before it starts: options, donors and
/// classes, and pairs too large for exact EMD.
void check_run(const data::Cohort& cohort, const std::vector<GlobalId>& train_donors, const TrainOptions& options) {
  const auto labels = labels_of(cohort, train_donors);
  const std::int64_t n_classes = static_cast<std::int64_t>(std::set<int>(labels.begin(), labels.end()).size());
  options.validate(cohort.dim, static_cast<std::int64_t>(train_donors.size()), n_classes);
  options.ot.check_emd_size(cohort, train_donors);
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
  const PairOwners owners(cohort, train_donors, !options.ot.exact(), ranks);
  return owners.held_by(rank);
}

// ------------------------------------------------------------------ train

TrainResult train(const data::Cohort& cohort, const stage::DonorStore& store,
                  const std::vector<GlobalId>& train_donors, const TrainOptions& options,
                  const dist::Comm& comm) {
  check_run(cohort, train_donors, options);
  return TrainingRun(cohort, store, train_donors, options, comm).run();
}

TrainResult train(data::CohortReader& reader, const std::vector<GlobalId>& train_donors, const TrainOptions& options,
                  const dist::Comm& comm) {
  const auto& cohort = reader.cohort();
  check_run(cohort, train_donors, options);
  if (options.mode == DistributionMode::pairs || cohort.identical_supports) {
    timers::timed("read", [&] { reader.hold(donors_to_hold(cohort, train_donors, options, comm.size(), comm.rank())); });
    const auto store = timers::timed(
        "stage", [&] { return stage::DonorStore(reader.cohort_for_staging(), stage::DonorStore::take_points); });
    return TrainingRun(cohort, store, train_donors, options, comm).run();
  }
  timers::timed("read", [&] { reader.hold({}); });
  const stage::DonorStore nothing_yet(cohort);
  return TrainingRun(cohort, nothing_yet, train_donors, options, comm, &reader).run();
}

double triplet_loss(const data::Cohort& cohort, const stage::DonorStore& store, const std::vector<GlobalId>& donors,
                    const MetricMatrix& a, const TrainOptions& options, const dist::Comm& comm) {
  const auto triplets = all_triplets(labels_of(cohort, donors));
  if (triplets.size() == 0) return 0.0;
  StepEngine engine(store, options);
  const PairOwners owners(store, donors, !options.ot.exact(), comm.size());
  return engine.run(donors, triplets, a, comm, &owners, false).loss;
}

double loss_and_gradient(const data::Cohort& cohort, const stage::DonorStore& store,
                         const std::vector<GlobalId>& donors, const MetricMatrix& a, const TrainOptions& options,
                         const dist::Comm& comm, std::vector<double>& grad, double* epsilon) {
  const auto triplets = make_triplets(labels_of(cohort, donors), options, 0, 0);
  StepEngine engine(store, options);
  const PairOwners owners(store, donors, !options.ot.exact(), comm.size());
  auto step = engine.run(donors, triplets, a, comm, &owners, true, epsilon ? *epsilon : 0.0);
  if (epsilon) *epsilon = step.epsilon;
  grad = step.grad;
  add_regularizer_gradient(a, options.reg_type, options.reg, grad);
  return step.loss + regularizer_value(a, options.reg_type, options.reg);
}

}  // namespace kotml::learn

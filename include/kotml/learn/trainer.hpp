#pragma once
// GGML training of the ground metric A across MPI ranks.
//
// One step (one batch of donors):
//   1. triplets of the batch and their unique donor pairs (triplets.hpp);
//   2. OT per pair on the projected clouds A·X (exact EMD, warm-started from the
//      pair's previous basis, or Sinkhorn with ε relative to the batch's mean
//      cost), with gradients with respect to the projected points;
//   3. the hinge loss over triplets and its derivative per pair (loss.hpp);
//   4. the gradient ∂L/∂A = Σ_donors H_uᵀ X_u, where H_u sums the pairs'
//      point gradients weighted by their loss derivatives;
//   5. the regulariser's gradient and one Adam step, the same on every rank.
//
// Distribution (mode "pairs", the default): the pairs of a batch are owned by
// ranks under a 2-D block placement of the training donors' pair matrix, fixed
// for the run (dist::PairPlacement: balanced by n·m, a pair always goes to the
// same rank so its warm-start state stays there, and a rank needs only about
// 2N/√P of the N donors). Costs are gathered by
// pair id, and the point gradients H and the per-donor gradients are summed with
// dist::ExactSum, whose result does not depend on which rank added what: the
// learned A is bit-identical on any number of ranks.
// Mode "batches": each rank trains on its own batch of the epoch's stratified
// batch list (batch s·R + r at step s), the gradients and losses of the ranks
// are averaged (exactly), and the learning rate scales with the global batch
// (--lr-scaling linear|sqrt|none).
//
// Random streams: batches of epoch e from Stream(seed, batches, e); sampled
// triplets of batch b in epoch e from Stream(seed, triplets, e·2^20 + b); A from
// Stream(seed, metric_init, 0). A checkpoint after epoch e therefore needs only
// e, A, the Adam state and the warm-start state (EMD bases or Sinkhorn
// potentials per pair) to continue bit-identically.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/data/cohort_reader.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/stage/donor_store.hpp"
#include "kotml/stage/ot_settings.hpp"
#include "kotml/stage/projection.hpp"
#include "kotml/learn/adam.hpp"
#include "kotml/learn/metric.hpp"

namespace kotml::learn {

enum class TripletMode { all, sampled };
enum class DistributionMode { pairs, batches };
enum class LrScaling { none, linear, sqrt };

TripletMode parse_triplet_mode(const std::string& text);
DistributionMode parse_distribution_mode(const std::string& text);
LrScaling parse_lr_scaling(const std::string& text);
std::string to_string(TripletMode mode);
std::string to_string(DistributionMode mode);
std::string to_string(LrScaling scaling);

struct TrainOptions {
  std::int64_t n_comps = 5;
  bool n_comps_defaulted = false;     // not asked for: fit_to_features may lower it
  double alpha = 1.0;
  double reg = 1e-3;
  RegNorm reg_type = RegNorm::frobenius;
  AdamOptions adam;                   // lr 0.1, betas (0.9, 0.999), eps 1e-8
  std::int64_t epochs = 30;
  std::int64_t batch_size = 512;      // donors per batch (per rank in mode batches)
  double stop_thr = 1e-6;             // stop after an epoch with a step whose objective gradient norm is below; ≤ 0: never
  bool squared = false;               // ||A(x−y)||² ground cost
  stage::OtSettings ot;
  TripletMode triplets = TripletMode::all;
  int t = 3;                          // sampled triplets: positives/negatives per anchor
  DistributionMode mode = DistributionMode::pairs;
  LrScaling lr_scaling = LrScaling::linear;
  bool warm_start = true;             // start each pair from its previous solve: EMD basis, Sinkhorn potentials
  std::uint64_t seed = 42;
  std::int64_t checkpoint_every = 0;  // epochs; 0: no checkpoints
  std::string checkpoint_path;        // written atomically
  std::string restart_from;           // checkpoint to continue from
  MetricMatrix initial_a;             // start from this k×d matrix instead of the seeded one (empty: seeded)

  /// A default n_comps (5) above the cohort's `dim` features becomes `dim`,
  /// with one note on stderr: a 2-D cohort trains without --n-comps 2. A value
  /// the user asked for is left for validate() to refuse.
  void fit_to_features(std::int64_t dim);
  /// Error naming the option for invalid values, including n_comps > dim and
  /// too few training donors or classes.
  void validate(std::int64_t dim, std::int64_t n_train_donors, std::int64_t n_classes) const;
  /// Everything that shapes the trajectory (not epochs, checkpoint settings or
  /// mode-independent output options), as one line; a checkpoint stores it.
  std::string fingerprint() const;
};

struct EpochRecord {
  std::int64_t epoch = 0;       // 1-based
  double loss = 0.0;            // mean objective (hinge) loss over the epoch's steps
  double regularizer = 0.0;     // reg·||A|| after the epoch
  double grad_norm = 0.0;       // objective gradient norm of the epoch's last step
  double min_grad_norm = 0.0;   // smallest objective gradient norm of the epoch
  double seconds = 0.0;         // wall time of the epoch's batch loop (slowest rank)
  double cpu_seconds = 0.0;     // process CPU time of that loop (largest over ranks): a
                                // measure that holds on a shared, oversubscribed machine
  std::int64_t steps = 0;
  std::int64_t triplets = 0;
  std::int64_t active_triplets = 0;
};

struct TrainResult {
  MetricMatrix a;
  std::vector<EpochRecord> history;   // every epoch from the first, restored ones included
  bool converged = false;
  double epoch_time_s = 0.0;          // mean of the epochs' seconds run in this process
  double epoch_cpu_s = 0.0;           // mean of their cpu_seconds
  std::int64_t epochs_run = 0;        // epochs completed in total
};

/// The training donors (cohort indices, increasing) whose points rank `rank` of
/// `ranks` needs for the whole run: in mode pairs, the donors of the pairs it
/// owns under the 2-D block placement (dist::PairPlacement), about 2N/√P of N;
/// in mode batches and in group-by mode, every training donor (train() with a
/// reader streams mode batches instead).
std::vector<GlobalId> donors_to_hold(const data::Cohort& cohort, const std::vector<GlobalId>& train_donors,
                                     const TrainOptions& options, int ranks, int rank);

/// Collective. Trains A on the training donors (cohort indices, increasing) of
/// the cohort; the store must hold at least the points of donors_to_hold on
/// this rank (an internal error otherwise). Warnings (skipped batches, solver
/// trouble) are printed on rank 0.
TrainResult train(const data::Cohort& cohort, const stage::DonorStore& store,
                  const std::vector<GlobalId>& train_donors, const TrainOptions& options,
                  const dist::Comm& comm);

/// Collective. The same, reading through the reader only the points this rank
/// needs: in mode pairs its donors_to_hold, once; in mode batches (not group-by)
/// the donors of the batch it trains on at each step, the others released, so a
/// rank holds one batch's donors at a time. The reader's cohort holds no points
/// afterwards (the store took them).
TrainResult train(data::CohortReader& reader, const std::vector<GlobalId>& train_donors, const TrainOptions& options,
                  const dist::Comm& comm);

/// Collective. The triplet loss (all triplets, no regulariser) of A on the given
/// donors: the validation loss of the mode-batches study.
double triplet_loss(const data::Cohort& cohort, const stage::DonorStore& store,
                    const std::vector<GlobalId>& donors, const MetricMatrix& a,
                    const TrainOptions& options, const dist::Comm& comm);

/// Collective. Loss (with regulariser) and its gradient with respect to A of one
/// full batch of the given donors, exactly as a training step computes them
/// (for gradient checks). grad receives k·d values. With Sinkhorn, the batch's
/// ε = entropic_reg × mean cost depends on A, but the gradient treats it as a
/// constant (GGML-OT detaches that scale too): pass epsilon pointing to 0 to
/// receive the ε used, or to a positive value to hold ε there.
double loss_and_gradient(const data::Cohort& cohort, const stage::DonorStore& store,
                         const std::vector<GlobalId>& donors, const MetricMatrix& a,
                         const TrainOptions& options, const dist::Comm& comm,
                         std::vector<double>& grad, double* epsilon = nullptr);

}  // namespace kotml::learn

#pragma once
// One training step of GGML (one batch of donors), in phases; each phase is a
// timer region of its own (phase_timers.hpp) and a Kokkos profiling region:
//
//   pairs     which of the batch's donor pairs this rank solves (its pairs
//             under the run's PairOwners), which donors it stages, and which
//             donors' gradients it maps;
//   stage and project   the staged donors on the device, projected by A;
//   epsilon   Sinkhorn only: ε = entropic_reg × the batch's mean cost, summed
//             exactly over ranks;
//   solve     OT per pair (EMD warm-started from the pair's last basis, or
//             Sinkhorn from its last potentials): costs and point gradients;
//   gather costs   every pair's cost on every rank, by pair id; the hinge loss;
//   reduce H  H = Σ_pairs ∂L/∂D_p × the pair's point gradients, per point of
//             the batch (rows of the batch's donors in batch order, × k),
//             summed exactly over ranks;
//   gradient  ∂L/∂A = Σ_u H_uᵀ X_u, each donor mapped by its home rank,
//             summed exactly.
//
// Every sum across ranks is dist::ExactSum and every gather is by id, so the
// result is the same bits whichever rank solved or mapped what.

#include <cstdint>
#include <map>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/stage/donor_store.hpp"
#include "kotml/stage/ot_settings.hpp"
#include "kotml/stage/donor_placement.hpp"
#include "kotml/stage/projection.hpp"
#include "kotml/learn/loss.hpp"
#include "kotml/learn/metric.hpp"
#include "kotml/learn/trainer.hpp"
#include "kotml/learn/triplets.hpp"
#include "kotml/learn/warm_starts.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/sinkhorn.hpp"

namespace kotml::learn::detail {

/// Training's placement of donor pairs on ranks (stage::DonorPlacement over the
/// training donors, with self pairs under Sinkhorn), fixed for the run so that a
/// pair's warm-start state lives on the rank that solves it again.
using PairOwners = stage::DonorPlacement;

struct StepResult {
  double loss = 0.0;
  double epsilon = 0.0;  // Sinkhorn: the absolute ε used
  std::int64_t triplets = 0;
  std::int64_t active = 0;
  std::vector<double> grad;  // objective gradient, k·d
};

/// Phase "pairs": this rank's part of a step.
struct StepPlan {
  std::vector<std::size_t> mine;       // ids (into triplets.pairs) of the pairs this rank solves
  std::vector<GlobalId> cloud_donors;  // donors of those pairs, cloud c = cloud_donors[c]
  std::vector<ot::Pair> problems;      // problem u = pair mine[u], as clouds
  std::vector<std::int64_t> mapped;    // batch positions whose gradient this rank maps
  std::vector<GlobalId> staged;        // donors on the device: clouds and mapped, increasing
};

/// Phase "stage and project": this rank's clouds projected by A, in single
/// precision (Sinkhorn on float) or double (EMD, or Sinkhorn on double).
struct ProjectedPairs {
  bool single = false;
  stage::ProjectedCloudsOf<double> projected;
  stage::ProjectedCloudsOf<float> projected_float;
  ot::BatchLayout layout;
};

/// Phase "solve": the OT cost of each of this rank's problems and, when asked,
/// the gradients of the costs with respect to the projected points (rows of
/// the layout's sources and targets).
struct PairSolutions {
  std::vector<double> costs;
  HostMatrix<double> source_gradient, target_gradient;
};

/// Phase "reduce H": per point of the batch, Σ_pairs ∂L/∂D_p × its gradient.
/// With pair owners, each rank holds only the rows of the donors it maps
/// (StepPlan::mapped); the other rows are zero.
struct PointGradients {
  std::vector<double> h;            // rows × k, donors in batch order (group-by: the shared support)
  std::vector<std::int64_t> first;  // first row of batch position b
  std::int64_t rows = 0;
};

/// The work of one batch: OT per pair, loss, gradient. Pairs are split over
/// `comm` (the world in mode pairs, this rank alone in mode batches).
class StepEngine {
 public:
  StepEngine(const stage::DonorStore& store, const TrainOptions& options) : store_(&store), options_(options) {}
  /// Later steps read their points from this store (mode batches that stage
  /// each step's batch alone).
  void use_store(const stage::DonorStore& store) { store_ = &store; }

  /// fixed_epsilon > 0 replaces the batch's relative ε (gradient checks hold ε
  /// fixed, as the gradient treats it: GGML-OT detaches the mean-cost scale).
  StepResult run(const std::vector<GlobalId>& batch, const TripletSet& triplets, const MetricMatrix& a,
                 const dist::Comm& comm, const PairOwners* owners, bool want_gradient, double fixed_epsilon = 0.0);

  WarmStarts<std::int32_t>& bases() { return bases_; }
  WarmStarts<double>& potentials() { return potentials_; }
  /// After a step that moved A by more than its own norm the stored trees are
  /// worse starts than the cold one: on the scrna cohort the first Adam step
  /// moves A by 3.2·‖A‖, and the warm re-solves after it took 1.26x the time of
  /// cold ones, while after a 0.68·‖A‖ step they already took 0.85x. Sinkhorn
  /// potentials are kept: they were no slower than zeros after that step.
  void forget_bases_after_step(double relative_move) {
    if (relative_move > 1.0) bases_.clear();
  }

  stage::SolveReport& report() { return report_; }
  /// Solves, solver iterations (EMD pivots, Sinkhorn iterations) and
  /// warm-started EMD solves so far on this rank (--verbose prints them).
  std::int64_t solves() const { return solves_; }
  std::int64_t iterations() const { return iterations_; }
  std::int64_t warm_started() const { return warm_started_; }

 private:
  StepPlan plan_pairs(const std::vector<GlobalId>& batch, const TripletSet& triplets, const dist::Comm& comm,
                      const PairOwners* owners, bool want_gradient) const;
  ProjectedPairs stage_and_project(const StepPlan& plan, const MetricMatrix& a, const dist::Comm& comm);
  double batch_epsilon(const StepPlan& plan, const ProjectedPairs& pairs, const dist::Comm& comm) const;
  PairSolutions solve_pairs(const StepPlan& plan, const ProjectedPairs& pairs, double epsilon, bool want_gradient,
                            const MetricMatrix& a, const dist::Comm& comm);
  void solve_emd(const StepPlan& plan, const ProjectedPairs& pairs, bool want_gradient, PairSolutions& out);
  template <class T>
  void solve_sinkhorn(const StepPlan& plan, const ot::CloudBatch<T>& clouds, const ot::BatchLayout& layout,
                      double epsilon, bool want_gradient, PairSolutions& out);
  PointGradients reduce_point_gradients(const std::vector<GlobalId>& batch, const TripletSet& triplets,
                                        const StepPlan& plan, const HingeLoss& hinge, const ProjectedPairs& pairs,
                                        const PairSolutions& solutions, std::int64_t k, const dist::Comm& comm,
                                        const PairOwners* owners) const;
  /// The rows of the batch positions b with take[b], packed in batch order:
  /// first[b] is b's first row (−1 where not taken); returns the rows in all.
  std::int64_t pack_rows(const std::vector<GlobalId>& batch, const std::vector<std::uint8_t>& take,
                         std::vector<std::int64_t>& first) const;
  /// reduce H with pair owners: each rank's exact sums of the donors its pairs
  /// touch (local_first[b] ≥ 0) go to the donors' home ranks (one alltoallv of carried limbs) instead
  /// of an allreduce of every row of the batch; integer additions, so the same
  /// bits. Returns rows × k with the home donors' rows filled.
  std::vector<double> sum_at_homes(const std::vector<GlobalId>& batch, const std::vector<std::int64_t>& local_first,
                                   const dist::ExactSum& h_sum,
                                   const StepPlan& plan, const PointGradients& layout, std::int64_t k,
                                   const dist::Comm& comm, const PairOwners& owners) const;
  std::vector<double> metric_gradient(const std::vector<GlobalId>& batch, const StepPlan& plan,
                                      const PointGradients& h, std::int64_t k, std::int64_t d,
                                      const dist::Comm& comm) const;

  const stage::DonorStore* store_;
  const TrainOptions& options_;
  stage::BatchStage stage_;
  WarmStarts<std::int32_t> bases_;
  WarmStarts<double> potentials_;
  ot::SinkhornWorkspace<float> sinkhorn_float_;  // cost buffers kept from step to step
  ot::SinkhornWorkspace<double> sinkhorn_double_;
  stage::SolveReport report_;
  std::int64_t solves_ = 0, iterations_ = 0, warm_started_ = 0;
};

}  // namespace kotml::learn::detail

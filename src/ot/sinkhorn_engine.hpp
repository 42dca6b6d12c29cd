#pragma once
// The Sinkhorn engine shared by the batch solver (costs from point clouds) and
// the dense solver (one given cost matrix). Each problem iterates in the
// stabilised scaling domain (sinkhorn_scaling.cpp) or in the log domain (here),
// as SinkhornOptions::domain and the problem's costs decide; the evaluation
// (cost, objective, plan, gradients) is shared and works from the potentials.
//
// A "slot" is one problem whose cost (n×m, row-major) and transposed cost (m×n)
// are stored; its rows and columns own ranges of flat per-row and per-column
// arrays (potentials, weights). A slot small enough to stay in a core's cache is
// iterated whole by one Kokkos team (one launch for its whole solve); a larger
// one is split into blocks of consecutive rows (or columns), one team per block,
// with a launch per half-step, so a batch of small problems and one large
// problem both fill the machine. Each row's log-sum-exp is one fixed sequence of
// operations (kotml/ot/lse.hpp) and per-row partial results are summed per slot in
// row order: the result of a slot does not depend on the path, the block size,
// the team size, the thread count or the other slots.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

#include "kotml/core/math.hpp"
#include "kotml/core/types.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/ot/fast_exp.hpp"
#include "kotml/ot/sinkhorn.hpp"
#include "kotml/ot/lse.hpp"

namespace kotml::ot::detail {

/// Blocks of consecutive lines: {slot, first line, one past the last line}.
using BlockList = Kokkos::View<std::int64_t* [3], MemSpace>;
using LinePolicy = Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
using LineMember = LinePolicy::member_type;

/// One team thread per line on CPUs (vectorisation happens inside the line);
/// on GPUs a team of threads, each with 32 vector lanes sharing a line.
LinePolicy line_policy(std::int64_t blocks);

/// Per-slot description, on the device and on the host.
struct SlotTable {
  std::vector<std::int64_t> problem, cost_offset, row_begin, col_begin, rows, cols;
  std::vector<std::int64_t> source_point, target_point;  // first pool row of each side (clouds only)
  Vector<std::int64_t> d_problem, d_cost_offset, d_row_begin, d_col_begin, d_rows, d_cols;
  Vector<std::int64_t> d_source_point, d_target_point;

  std::int64_t count() const { return static_cast<std::int64_t>(problem.size()); }
  void add(std::int64_t problem_id, std::int64_t cost_at, std::int64_t row_at, std::int64_t col_at,
           std::int64_t n, std::int64_t m, std::int64_t source_at = 0, std::int64_t target_at = 0);
  /// Copies the host vectors to the device.
  void upload();
};

/// A block list from flat {slot, first, last} triples, on the device.
BlockList block_list(const std::vector<std::int64_t>& flat, const char* label);

/// Blocks over the rows (by_rows) or columns of the listed slots, sized so that
/// a block covers about `entries` cost entries.
BlockList make_blocks(const SlotTable& slots, const std::vector<std::int64_t>& which, bool by_rows,
                      std::int64_t entries = 32768);

/// Flat per-row and per-column state of a batch (all problems, not only a chunk).
template <class T>
struct SinkhornState {
  Vector<T> a, log_a, f, fa, lse_row;  // rows: weight, log weight, potential, f/ε + log a, final LSE
  Vector<T> b, log_b, g, gb, lse_col;  // columns
  Vector<double> row_err, row_cost;    // rows: per-row error at a check, per-row <P,C> part

  void allocate(std::int64_t rows, std::int64_t cols);
};

/// Per-problem outputs (indexed by problem id).
struct SinkhornOutputs {
  Vector<double> cost, objective, marginal_error;
  Vector<std::int32_t> iterations, status, scaling_domain;
  void allocate(std::int64_t problems);
};

/// The optional plan output: problem u's plan at offset[u] of `plan`.
template <class T>
struct PlanOutput {
  Vector<T> plan;
  Vector<const std::int64_t> offset;
  bool wanted() const { return plan.extent(0) > 0; }
};

/// The optional point gradients: the pool of projected points (points_t: the
/// same coordinate-major, for the host SIMD kernel; may be empty) and where
/// each row's and column's gradient goes.
template <class T>
struct GradientOutput {
  Cost kind = Cost::euclidean;
  Matrix<const T> points;
  Matrix<const double> points_t;
  Matrix<double> source, target;
  bool wanted() const { return points.extent(0) > 0; }
};

/// One run of the engine: the slots, their stored costs and the space for their
/// transposed costs (both at the slots' cost offsets), the options and the
/// absolute ε, and what to produce beyond the per-problem scalars. The engine
/// fills the transposed-cost space: with Cᵀ for a log-domain slot before it
/// iterates; a scaling-domain slot keeps its kernel K̃ (n×m, row-major) there
/// while it iterates and writes Cᵀ there before the evaluation.
template <class T>
struct SinkhornProblem {
  const SlotTable& slots;
  Vector<const T> cost;
  Vector<T> cost_t;
  const SinkhornOptions& options;
  double epsilon;
  PlanOutput<T> plan;
  GradientOutput<T> gradients;
};

/// cost_t ← Cᵀ for the listed slots (line j of a slot gathers column j).
template <class T>
void transpose_slots(const SlotTable& slots, const std::vector<std::int64_t>& which, const Vector<const T>& cost,
                     const Vector<T>& cost_t);

/// Per-slot iteration counts and statuses, filled by the iteration phases.
struct SlotProgress {
  std::vector<std::int32_t> iterations, status;
  std::vector<char> scaling;  // 1: the scaling domain gave the slot's result
  explicit SlotProgress(std::int64_t slots);
};

/// The slots (of `candidates`) that the scaling domain takes: all of them when
/// forced, otherwise those whose initial kernel is representable. Sets f to the
/// row shifts f̄_i = min_j (C_ij − g_j) of the chosen slots.
template <class T>
std::vector<std::int64_t> choose_scaling(const SinkhornProblem<T>& problem, SinkhornState<T>& state,
                                         const std::vector<std::int64_t>& candidates);

/// Scaling-domain iterations on the listed slots (sinkhorn_scaling.cpp), from
/// g and the row shifts in f. On return f, g, fa and gb hold the potentials
/// and cost_t holds Cᵀ again for these slots. Returns the slots that failed
/// (non-finite error): their g is the last absorbed one, for the log domain.
template <class T>
std::vector<std::int64_t> iterate_scaling(const SinkhornProblem<T>& problem, SinkhornState<T>& state,
                                          const std::vector<std::int64_t>& which, SlotProgress& progress);

/// Runs the iterations on every slot from the potentials in `state` (f is not
/// needed; g is), then evaluates cost, objective, marginal error and status
/// into `out`, and the plan and gradients if asked for.
template <class T>
void run_sinkhorn(const SinkhornProblem<T>& problem, SinkhornState<T>& state, SinkhornOutputs& out);

/// Cost, objective, marginal error and status (numerical_error where one is
/// not finite; otherwise left as it is) of each slot from its state: a, b, f,
/// g, the final log-sum-exps lse_row and lse_col, and the per-row parts of
/// ⟨P, C⟩ in row_cost. The one place these are formed: the batch kernel's
/// evaluation and the tiled route (sinkhorn.cpp) both end here.
template <class T>
void finalize(const SlotTable& slots, const SinkhornState<T>& state, SinkhornOutputs& out, double epsilon,
              double tau_a, double tau_b);

}  // namespace kotml::ot::detail

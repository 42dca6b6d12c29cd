#pragma once
// Entropic OT between point sets too large for one rank: one Sinkhorn problem
// (log domain; stored costs may iterate in the scaling domain, below) whose
// costs are read tile by tile, stored when they fit the rank's memory budget
// and recomputed from the points otherwise, with the rows of x spread over MPI
// ranks. Semantics are those of OTT-JAX 0.6
// (ott.solvers.linear.sinkhorn.Sinkhorn, lse_mode, on a PointCloud).
//
// Problem. Points x_i (n, split over ranks) and y_j (m, on every rank), weights
// a ≥ 0 and b ≥ 0, cost c_ij (point_cost.hpp), ε > 0, and τ_a, τ_b ∈ (0, 1]
// (marginal penalties ρ = ε·τ/(1−τ); τ = 1 holds a marginal exactly). The plan
// is never stored; it is
//
//   T_ij = exp((f_i + g_j − c_ij) / ε)                      (OTT's convention:
//                                                            a and b enter only
//                                                            through the updates)
//
// Iteration t (ε_t = ε·max(init·decay^t, 1), OTT's Epsilon scheduler; ε_t = ε
// without ε-scaling), from f = g = 0 (−∞ where a weight is 0) or a warm start:
//
//   g_j ← τ_b·(ε_t log b_j − ε_t LSE_i((f_i − c_ij)/ε_t))   then
//   f_i ← τ_a·(ε_t log a_i − ε_t LSE_j((g_j − c_ij)/ε_t))   (alternating), or
//
//   both from the previous (f, g), each averaged half-and-half with its old
//   value (symmetric; OTT's parallel_dual_updates with momentum 0.5).
//
// Iterations run in blocks of `inner_iterations`, as OTT's fixed-point loop
// runs them (so max_iterations rounds up to a whole number of blocks). After
// each block the error of the current (f, g) is recorded, with ε (not ε_t) in
// the marginals:
//   balanced, alternating:  ‖Tᵀ1 − b‖₁
//   otherwise:              ‖T1 − ∇_a‖₁ + ‖Tᵀ1 − ∇_b‖₁,  ∇_a = a·exp(−f/ρ_a)
//                           (∇ = the weight itself when τ = 1)
// and the solve stops after the first error below `threshold` (converged), at a
// non-finite error (numerical_error), or after the last block (max_iter). The
// log-sum-exps an error needs are those of the next update, so checks cost no
// extra pass over the costs.
//
// Tiles and distribution. Rows are cut into tiles of RowBlock::tile_rows rows,
// global and aligned, and every rank owns whole tiles (RowBlock::of); columns
// into tiles of 256. A rank holds its rows of x and all of y.
//   * Row updates are local: one thread per row tile walks the column tiles in
//     order, merging per-tile log-sum-exps: a row's result does not depend on
//     the rank count or the thread count.
//   * Column updates need every rank's rows. Each column's sum
//     Σ_i exp((f_i − c_ij)/ε − s_j) is taken per global row tile (rows in order),
//     then deposited into 128-bit fixed point (dist/fixed_point.hpp), and the
//     fixed-point numbers are summed over ranks with one MPI_Allreduce of
//     4·m int64 per half-step. Integer sums are exact in any order, so g is
//     bit-identical for any rank count. The shift s_j is the column's log-sum-exp
//     of the previous update (known alike on every rank); where a total leaves
//     [2^-20, 2^30] (a stale shift early on), that half-step is redone with the
//     exact column maxima (one MPI_MAX allreduce) as shifts.
//   * Alternating updates make one pass per iteration (the joint pass): each
//     row tile's f update is finished while its costs are at hand, and the
//     same costs then give that tile's part of the next column sums, with the
//     new f. The iterates are those of the two half-steps, bit for bit. A row
//     must be complete before its column part, so recomputed tiles are kept
//     in a strip of one row tile × all column tiles per thread (64·m·sizeof(T)
//     bytes; 5 MB at m = 20,000 in float), charged to `cost_memory` with
//     each thread's own column limbs (its deposits need no atomics); stored
//     tiles, and K̃ in the scaling domain (below), are read again. Without
//     room for them, and around a change of ε_t, the two half-steps run as
//     two passes.
//   * Where y does not fit a rank either, the next step is a ring: y in blocks,
//     each rank's block passed on after every column sweep, with the fixed-point
//     column sums travelling with their block. Not built.
//
// Cost storage. A tile is computed by a register-blocked product X̂·Ŷᵀ (host
// SIMD copies per level; fused multiply-adds in feature order) plus the norms and label
// terms, in a thread's scratch pad right before its exps, so it never goes back
// to memory. When the rank's whole tile set fits `cost_memory`, tiles are
// computed once and stored (tile-major), and every later half-step only reads
// them. Stored and recomputed tiles are the same bits, so the choice never
// changes a result.
//
// Scaling domain (stored costs, alternating updates, at the target ε). The
// log-sum-exps above are also
//
//   LSE_i (f_i − c_ij)/ε = log S_j − ḡ_j/ε,   S_j = Σ_i α_i K̃_ij,
//   LSE_j (g_j − c_ij)/ε = log R_i − f̄_i/ε,   R_i = Σ_j K̃_ij β_j,
//
// with K̃_ij = exp((f̄_i + ḡ_j − c_ij)/ε) stored next to the costs (same tile
// layout), α_i = exp((f_i − f̄_i)/ε) and β_j = exp((g_j − ḡ_j)/ε). An update
// then reads K̃ once and takes no exp per entry. f and g, the updates, the
// errors and the stopping rule are those of the log domain, so both domains
// iterate to the same fixed point through iterates that differ by rounding.
//   * K̃ is built before the first row update at the target ε, with ḡ = g and
//     f̄_i = min_j (c_ij − ḡ_j), so that every row's largest entry is 1. ε-scaling
//     steps and symmetric updates stay in the log domain.
//   * Absorption keeps α and β in [2^−Θ, 2^Θ] (Θ = 40 float, 200 double): a row
//     whose α leaves it is rebuilt with f̄_i = f_i (a decision of that row alone,
//     so it does not depend on the rank count). A column whose β leaves it but
//     stays within [2^−2Θ, 2^2Θ] absorbs it alike on every rank: ḡ_j = g_j ±
//     ¾Θ ln 2·ε, ahead of g_j the way it drifted (β restarts at 2^∓¾Θ, so a
//     steady drift is absorbed 1.75 times less often), and that column's
//     entries of K̃ recomputed (they move by the old β times 2^±¾Θ: up to
//     2^2.75Θ over a row's largest, 1, or down toward the flush below, where a
//     column that empties sends the solve to the log domain; α_i K̃_ij β_j, a
//     plan entry, keeps the column sums in range). A β beyond [2^−2Θ, 2^2Θ]
//     rebuilds K̃ with ḡ = g on every rank.
//   * S_j is summed per row tile in T and deposited in fixed point after a
//     power-of-two scale 2^−e_j (e_j from the last total, or from the exact
//     column maxima when a total leaves [2^−20, 2^30]), so it is exact over ranks
//     like the log domain's column sums. R_i is local.
//   * exp flushes entries below e^−87 (float) or e^−708 (double) to zero, so
//     K̃ may be mostly zeros when the costs span hundreds of ε. A flushed entry
//     stands for a plan entry α_i K̃_ij β_j < 2^(2Θ)·e^−87 ≈ e^−32 (float;
//     e^−431 double) until the next absorption, so the sums lose little. Every
//     row has an entry 1 by construction; automatic takes this domain when the
//     first K̃ also keeps, in every column of positive weight, an entry ≥ 2^−64
//     (float) or 2^−640 (double), and when K̃ fits the memory budget beside the
//     costs. (After a column update with ḡ = g a column's largest entry is
//     about b_j/n, so this holds unless weights or costs are extreme.) A zero,
//     infinite or NaN S_j or R_i (where the weight is positive) sends the rest
//     of the solve back to the log domain.
//
// Precision: T (float or double) is the type of the points, costs, exps and
// per-tile sums; potentials and log-sum-exps are kept in double.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/point_cost.hpp"
#include "kotml/ot/sinkhorn.hpp"

namespace kotml::ot {

/// This rank's rows of x: [begin, begin + count) of `total`, begin a multiple of
/// tile_rows.
struct RowBlock {
  static constexpr std::int64_t tile_rows = 64;
  std::int64_t total = 0;
  std::int64_t begin = 0;
  std::int64_t count = 0;

  /// Rank `rank` of `ranks`: whole row tiles, as even as possible, in rank order.
  static RowBlock of(std::int64_t total, int ranks, int rank);
};

/// One side's points (LayoutRight rows), weights and, with a label term, labels.
template <class T>
struct TiledPoints {
  Matrix<const T> points;
  Vector<const double> weights;
  Vector<const std::int32_t> labels;
};

enum class CostStorage { automatic, stored, online };
enum class DualUpdates { alternating, symmetric };

/// "automatic", "stored", "online" / "alternating", "symmetric"; parse_* throw
/// Error::option(option, ...) listing the choices.
const char* storage_name(CostStorage storage);
CostStorage parse_storage(const std::string& name, const std::string& option = "cost-storage");
const char* updates_name(DualUpdates updates);
DualUpdates parse_updates(const std::string& name, const std::string& option = "updates");

struct TiledSinkhornOptions {
  double epsilon = 0.05;
  bool relative_epsilon = false;  // ε · mean of all n·m costs (OTT relative_epsilon="mean")
  double tau_a = 1.0;
  double tau_b = 1.0;
  double threshold = 1e-3;
  int inner_iterations = 10;
  int max_iterations = 2000;
  DualUpdates updates = DualUpdates::alternating;
  double epsilon_init = 1.0;   // ε-scaling: ε_t = ε·max(epsilon_init·epsilon_decay^t, 1)
  double epsilon_decay = 1.0;  // ≤ 1
  CostStorage storage = CostStorage::automatic;
  std::size_t cost_memory = 0;  // bytes per rank for stored costs (or, recomputed, the joint pass's
                                // row strips); 0: a quarter of the rank's free memory
  SinkhornDomain domain = SinkhornDomain::automatic;  // scaling needs stored costs
  bool joint_passes = true;  // alternating: one pass per iteration where possible (false: two, for comparisons)
  /// The plan's exact column sums (transpose_apply, point_gradients) are swept
  /// and reduced over ranks in chunks of column tiles whose fixed-point limbs
  /// take about this many bytes, whatever m and the number of groups.
  std::size_t column_chunk_bytes = std::size_t(64) << 20;

  /// Throws Error::option for ε ≤ 0 or non-finite, τ outside (0, 1], threshold
  /// < 0, inner_iterations < 1, max_iterations < 1, epsilon_init < 1 or
  /// epsilon_decay outside (0, 1].
  void validate() const;
  bool balanced() const { return tau_a == 1.0 && tau_b == 1.0; }
};

struct TiledSinkhornReport {
  int iterations = 0;
  std::vector<double> errors;  // one per check, in order
  bool converged = false;
  SolveStatus status = SolveStatus::max_iter;
  double epsilon = 0;          // the absolute target ε
  bool stored = false;         // costs stored, or recomputed per tile
  std::size_t stored_bytes = 0;  // the largest rank's bytes for stored costs
  std::size_t cost_memory = 0;   // the smallest rank's budget that decided
  std::int64_t tile_sweeps = 0;     // passes over every tile of a rank
  std::int64_t shift_retries = 0;   // sweeps whose guessed shifts failed (this rank): row tiles
                                    // redone in two passes, or columns with exact maxima
  bool scaling_domain = false;      // the scaling domain ran (and did not fall back)
  bool scaling_fallback = false;    // it failed and the log domain finished the solve
  std::int64_t kernel_builds = 0;   // whole-K̃ builds
  std::int64_t rows_absorbed = 0;   // single rows of K̃ rebuilt (this rank)
  std::int64_t columns_absorbed = 0;  // single columns of K̃ rebuilt (alike on every rank)
  std::int64_t joint_passes = 0;    // alternating iterations whose f update and next column
                                    // sums shared one pass over the tiles
  std::size_t strip_bytes = 0;      // the largest rank's row strips for joint passes of
                                    // recomputed costs (0: stored costs, or no joint pass)
  double seconds = 0;               // solve time on rank 0
};

/// Sums over the blocks (row group p, column group q) of selected cells.
struct PlanBlockSums {
  std::int32_t row_groups = 0, col_groups = 0;
  std::vector<double> mass;        // Σ T_ij          (p·col_groups + q)
  std::vector<double> cost;        // Σ T_ij c_ij
  std::vector<double> plain_cost;  // Σ c_ij
  std::vector<std::int64_t> count; // cells
};

/// Gradients of the transport objective with respect to the points (see
/// TiledSinkhorn::point_gradients): this rank's rows (count × d) and every
/// column (m × d), row-major.
struct TiledPointGradients {
  std::vector<double> rows, cols;
};

template <class T>
class TiledSinkhorn {
 public:
  /// Collective. x: this rank's rows (rows.count of them), y: all m columns.
  /// Checks shapes, weights (finite, ≥ 0, positive total over all ranks) and
  /// labels, and throws Error (agreed on every rank) for bad input.
  TiledSinkhorn(const dist::Comm& comm, const RowBlock& rows, const TiledPoints<T>& x,
                const TiledPoints<T>& y, const PointCost& cost, const TiledSinkhornOptions& options);
  ~TiledSinkhorn();
  TiledSinkhorn(const TiledSinkhorn&) = delete;
  TiledSinkhorn& operator=(const TiledSinkhorn&) = delete;

  /// Warm start (OTT's convention): this rank's f and all of g.
  void set_potentials(const std::vector<double>& f_local, const std::vector<double>& g);

  /// Collective. Iterates from the potentials held (zeros, or a warm start).
  TiledSinkhornReport solve();

  /// The potentials: this rank's rows of f, every column of g.
  std::vector<double> f() const;
  std::vector<double> g() const;
  /// The absolute ε (after a relative one is resolved). Collective on first use.
  double epsilon();

  // ---- the plan, applied tile by tile from the potentials held (collective)

  /// out(q, j) = Σ over all ranks' rows i with group_i = q of T_ij·u_i (q <
  /// n_groups, j < m), summed exactly: identical on every rank, for any rank
  /// count. u and groups: this rank's rows. Row-major n_groups × m.
  std::vector<double> transpose_apply(const std::vector<double>& u, const std::vector<std::int32_t>& groups,
                                      std::int32_t n_groups);
  /// The same into out[0, n_groups·m), host memory the caller holds (such as a
  /// sim::folded buffer: every rank writes the same values, itself).
  void transpose_apply(const std::vector<double>& u, const std::vector<std::int32_t>& groups, std::int32_t n_groups,
                       double* out);
  /// out(i, q) = Σ over columns j with group_j = q of T_ij·v_j, this rank's rows
  /// (row-major count × n_groups).
  std::vector<double> apply(const std::vector<double>& v, const std::vector<std::int32_t>& groups,
                            std::int32_t n_groups);
  /// Block sums over cells whose row group and column group are ≥ 0 (−1: not
  /// selected), summed exactly over ranks.
  PlanBlockSums block_sums(const std::vector<std::int32_t>& row_groups, std::int32_t n_row_groups,
                           const std::vector<std::int32_t>& col_groups, std::int32_t n_col_groups);

  /// Through the plan T held now, for a feature cost c = λ_f·φ(x, y) without a
  /// label term:
  ///   ∂/∂x_i = Σ_j T_ij ∂c_ij/∂x_i,   ∂/∂y_j = Σ_i T_ij ∂c_ij/∂y_j,
  /// with ∂c/∂x = 2λ_f (x − y) (sqeuclidean) or λ_f (x − y)/‖x − y‖ (euclidean;
  /// 0 at x = y), and ∂c/∂y = −∂c/∂x. At a converged (f, g) these are the
  /// gradients of the regularised objective (envelope theorem). A row's sum
  /// runs over the column tiles in order; a column's is deposited per row tile
  /// in wide fixed point and summed exactly over ranks, so both are identical
  /// for any rank count. Throws Error::option for the cosine cost or a label
  /// term.
  TiledPointGradients point_gradients();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class TiledSinkhorn<float>;
extern template class TiledSinkhorn<double>;

/// Coordinates of `points` that are NaN or infinite (one reduction; float and double).
template <class T>
std::int64_t count_non_finite(const Matrix<const T>& points);

/// Bytes a rank may give to stored costs by default: a quarter of the memory
/// available to it (MemAvailable over the ranks sharing the node).
std::size_t default_cost_memory(const dist::Comm& comm);

}  // namespace kotml::ot

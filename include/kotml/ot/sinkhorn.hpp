#pragma once
// Entropic optimal transport by Sinkhorn (log or stabilised scaling domain), batched, in float or double.
//
// Problem (for one pair, marginals a ∈ R^n, b ∈ R^m, cost C ∈ R^{n×m}, ε > 0):
//
//   min_P  <P, C> + ε·KL(P | a⊗b) + ρ_a·KL(P1 | a) + ρ_b·KL(Pᵀ1 | b)
//
// with the generalised KL(p|q) = Σ p log(p/q) − p + q. The marginal penalties are
// given as τ = ρ/(ρ+ε) ∈ (0, 1] (OTT-JAX and pairOT's convention); τ = 1 (ρ = ∞)
// holds that marginal exactly. τ_a = τ_b = 1 is the balanced problem; there a
// and b are each normalised to unit mass first. In POT's terms the unbalanced
// problem is ot.unbalanced.sinkhorn_unbalanced(a, b, C, reg=ε, reg_m=ρ,
// reg_type="kl") with ρ = ε·τ/(1−τ); the balanced one is ot.sinkhorn(a, b, C,
// ε, method="sinkhorn_log"), whose entropy term differs from ours by a constant,
// so the plans coincide.
//
// Potentials (f, g) parametrise the plan as
//
//   P_ij = a_i b_j exp((f_i + g_j − C_ij) / ε)
//
// (POT's log_u = f/ε + log a, log_v = g/ε + log b). One iteration updates
//   f_i ← −τ_a ε LSE_j(log b_j + (g_j − C_ij)/ε),   then
//   g_j ← −τ_b ε LSE_i(log a_i + (f_i − C_ij)/ε),
// each log-sum-exp taken row by row over a stored cost and its transpose, with a
// vectorised exp (fast_exp.hpp). Every `check_every` iterations the f-update also
// yields the marginal error of the previous iterate from its log-sum-exps,
// without forming the plan:
//   err = Σ_i |r_i(f_old) − r_i(f_new)|,  r_i(f) = a_i exp(f_i/ε + LSE_i)
// which for balanced problems is ||P1 − a||₁ (the columns being exact after the
// g-update), and for unbalanced ones the change of the row marginal over one
// update (zero at the fixed point). The solver stops after the iteration in which
// err < tol. The reported marginal_error is recomputed from the returned state:
// ||P1 − a||₁ + ||Pᵀ1 − b||₁ (balanced), the update change as above (unbalanced).
//
// Outputs per problem: cost <P,C>; objective (the value of the problem above);
// potentials; iterations; marginal error; status; optionally the plan and the
// gradients of the objective with respect to the projected points.
//
// Gradients. By the envelope theorem, the gradient of the objective with respect
// to C is the plan P (POT's and GGML-OT's choice). Through C(A): with projected
// points p_i = A x_i, q_j = A y_j,
//   ∂/∂p_i = Σ_j P_ij ∂C_ij/∂p_i,   ∂C/∂p = (p−q)/||p−q|| (euclidean; 0 at p = q),
//                                    ∂C/∂p = 2(p−q)        (sqeuclidean),
// computed row by row without forming n×m×d tensors (cosine: not supported).
// Note this is the gradient of the objective, not of <P,C> alone (which also
// moves with P); the two agree as ε → 0.
//
// Two formulations of the same iteration (SinkhornDomain):
//  * log domain, as above: one exp per cost entry and half-step;
//  * stabilised scaling domain (Schmitzer 2019, "Stabilized sparse scaling
//    algorithms for entropy regularized transport problems"; POT's
//    sinkhorn_stabilized): with absorbed potentials (f̄, ḡ) the kernel
//      K̃_ij = exp((f̄_i + ḡ_j − C_ij)/ε)
//    is stored once, and the potentials are f = f̄ + ε log u, g = ḡ + ε log v
//    with scalings u, v. The f-update becomes s = K̃ (b∘v),
//      u_i = s_i^(−τ_a) exp(−(1−τ_a) f̄_i/ε)     (u = 1/s when balanced),
//    and the g-update likewise with K̃ᵀ(a∘u). Each row of K̃ is read once per
//    iteration: its dot product gives u_i, and the same row, still in cache,
//    is added into the column sums Σ_i a_i u_i K̃_ij. No exp is taken in the
//    iterations. When a scaling leaves [2^−Θ, 2^Θ] (Θ = 40 for float, 200 for
//    double; checked every check_every iterations) it is absorbed into
//    (f̄, ḡ) and K̃ is recomputed from C.
//    The error and the stopping rule are the log domain's, computed from the
//    same quantities (r_i(f) = a_i u_i s_i), so both reach the same potentials
//    to within the tolerance. `automatic` takes the scaling domain for a
//    problem when no entry of its initial K̃ can underflow:
//      max_i (max_j − min_j)(C_ij − ḡ_j) ≤ ε·L,  L = 60 (float), 600 (double),
//    with f̄_i = min_j (C_ij − ḡ_j) so that each row's largest entry is 1;
//    otherwise, and for small ε, the log domain. A scaling-domain problem whose
//    error turns non-finite is solved again in the log domain from its last
//    absorbed potentials.
//
// Determinism: each row's log-sum-exp is a fixed sequence of operations, and row
// contributions are summed in row order, so a problem's results do not depend
// on the thread count, the backend's team sizes, or the rest of the batch
// (except through a relative ε).

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/cost.hpp"

namespace kotml::ot {

/// Which formulation iterates (see the header comment).
enum class SinkhornDomain { automatic, log, scaling };

/// "auto", "log", "scaling"; parsing throws Error::option(option, ...) otherwise.
const char* to_string(SinkhornDomain domain);
SinkhornDomain parse_sinkhorn_domain(const std::string& text, const char* option = "sinkhorn-domain");

struct SinkhornOptions {
  /// ε > 0: absolute, or a fraction of the batch's mean cost (relative_epsilon),
  /// the mean taken over every entry of every problem's cost matrix, unweighted
  /// (GGML-OT's entropic_reg semantics).
  double epsilon = 0.05;
  bool relative_epsilon = false;
  /// τ ∈ (0, 1] for the source (rows) and target (columns) marginals; 1 = exact.
  double tau_a = 1.0;
  double tau_b = 1.0;
  int max_iter = 1000;
  /// Tolerance on the marginal error (L1), checked every check_every iterations.
  double tol = 1e-9;
  int check_every = 10;
  /// Keep each problem's dense plan (batch solver) / fill the plan (dense solver).
  bool keep_plan = false;
  /// Compute the gradients of the objective with respect to the projected points
  /// (batch solver; euclidean and sqeuclidean costs).
  bool point_gradients = false;
  /// Device memory the batch solver may use for stored costs (a cost and its
  /// transpose per problem); problems are solved in chunks that fit. A balanced
  /// problem larger than this on its own (and whose plan is not kept) is solved
  /// by the tiled engine (tiled_sinkhorn.hpp) on this rank, its costs stored
  /// within this budget or recomputed tile by tile: the same problem and
  /// tolerance, equal to the batch kernel's result within the tolerance, not
  /// bit for bit. An unbalanced one is still solved here, whatever its size.
  std::size_t workspace_bytes = std::size_t(1) << 30;
  /// Problems whose cost and transposed cost take at most this many bytes are
  /// iterated whole by one team (they stay in a core's cache; one launch for the
  /// whole solve); larger ones row block by row block across all teams. Both
  /// paths compute the same bits; this only moves work around.
  std::size_t team_solve_bytes = std::size_t(2) << 20;
  /// The formulation: automatic picks the scaling domain per problem where its
  /// kernel is representable. `scaling` forces it (a problem whose kernel is not
  /// representable is still solved, in the log domain, after it fails).
  SinkhornDomain domain = SinkhornDomain::automatic;

  /// Throws Error::option for ε ≤ 0 or non-finite, τ outside (0, 1],
  /// max_iter < 1, tol < 0, check_every < 1.
  void validate() const;
  bool balanced() const { return tau_a == 1.0 && tau_b == 1.0; }
};

/// Scalar results of one problem.
struct SinkhornSummary {
  double cost = 0;            // <P, C>
  double objective = 0;       // value of the regularised problem
  double marginal_error = 0;  // see the header comment
  double epsilon = 0;         // absolute ε used
  std::int32_t iterations = 0;
  SolveStatus status = SolveStatus::optimal;
  bool scaling_domain = false;  // the result came from the scaling domain
};

/// Warm start for the batch solver: potentials in the layout of the batch's
/// results (BatchLayout::of(clouds, pairs)). Zeros are a cold start, so a warm
/// start may mix previous potentials for some pairs with zeros for new ones.
/// Only g matters for the first update; f is accepted for symmetry.
template <class T>
struct SinkhornWarmStart {
  Vector<T> f;  // layout.total_rows()
  Vector<T> g;  // layout.total_cols()
};

template <class T>
struct SinkhornBatchResult {
  double epsilon = 0;  // absolute ε used for every problem
  BatchLayout layout;
  // Per problem (U entries each).
  Vector<double> cost;
  Vector<double> objective;
  Vector<double> marginal_error;
  Vector<std::int32_t> iterations;
  Vector<std::int32_t> status;  // SolveStatus values
  Vector<std::int32_t> scaling_domain;  // 1 where the scaling domain gave the result
  // Potentials, laid out by `layout`.
  Vector<T> f;
  Vector<T> g;
  // With keep_plan: problem u's n_u×m_u plan, row-major, at plan_offset[u].
  Vector<T> plan;
  std::vector<std::int64_t> plan_offset;
  // With point_gradients: ∂objective/∂(projected source point) for each row of
  // each problem (layout.total_rows() × k), and for target points (total_cols() × k).
  Matrix<double> source_gradient;
  Matrix<double> target_gradient;

  /// Host copy of problem u's scalars.
  SinkhornSummary summary(std::int64_t u) const;
  /// Host copies of every problem's scalars, in problem order.
  std::vector<SinkhornSummary> summaries() const;
};

/// The batch solver's largest buffers (the stored costs and the space for their
/// transposes or kernels), kept between calls by a caller that solves batch
/// after batch (training): reusing them saves their allocation and the page
/// faults of touching fresh memory at every step. They grow to the largest
/// chunk asked for; their contents between calls mean nothing.
template <class T>
struct SinkhornWorkspace {
  Vector<T> cost, cost_t;
};

/// Solves every pair of the batch. The cost between two points is
/// ground_cost(cost, ...) of their (already projected) coordinates. Throws
/// Error::option for invalid options or a cosine cost with point_gradients.
/// With `workspace`, the cost buffers come from it (and are left in it).
template <class T>
SinkhornBatchResult<T> sinkhorn(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs,
                                Cost cost, const SinkhornOptions& options,
                                const SinkhornWarmStart<T>* warm = nullptr,
                                SinkhornWorkspace<T>* workspace = nullptr);

/// Log-domain Sinkhorn on one dense cost matrix (the sampled Gromov-Wasserstein
/// inner solver): N×K up to a few thousand each, float or double. Keeps its
/// workspace (the transposed cost) between calls, so repeated solves with costs
/// of the same shape allocate nothing. Rows are processed in blocks, so one
/// problem fills every core or the GPU.
template <class T>
class DenseSinkhorn {
 public:
  /// C: n×m cost; a: n, b: m marginals (≥ 0, not all zero on either side).
  /// f (n), g (m): the initial potentials on entry (zeros: cold start) and the
  /// final ones on return. With options.keep_plan, `plan` (n×m) receives P.
  /// options.relative_epsilon takes ε relative to the mean of C.
  SinkhornSummary solve(const Matrix<const T>& C, const Vector<const double>& a,
                        const Vector<const double>& b, const SinkhornOptions& options,
                        const Vector<T>& f, const Vector<T>& g, const Matrix<T>& plan = {});

 private:
  Vector<T> cost_t_;  // transposed cost, m×n
};

/// P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε) for a dense problem (n×m), with a and
/// b as the solver used them (normalised to unit mass if the problem was
/// balanced: pass normalise = options.balanced()).
template <class T>
void sinkhorn_plan(const Matrix<const T>& C, const Vector<const double>& a,
                   const Vector<const double>& b, const Vector<const T>& f,
                   const Vector<const T>& g, double epsilon, bool normalise, const Matrix<T>& plan);

}  // namespace kotml::ot

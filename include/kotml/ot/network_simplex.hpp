#pragma once
// Exact optimal transport (earth mover's distance) by the primal network simplex
// on the complete bipartite graph, in double precision, many problems at once.
//
// For marginals a (n), b (m), each normalised to unit mass, and cost C:
//   min <P, C>  subject to  P ≥ 0, P1 = a, Pᵀ1 = b.
// Zero weights are allowed (those points are left out of the solve and get
// their potential from the c-transform), and n ≠ m.
//
// Algorithm: the spanning-tree network simplex of LEMON as POT uses it (an
// artificial root joined to every node, big-M artificial costs, Cunningham's
// strongly feasible trees against cycling, block-search pivoting over arcs in
// blocks of ⌈√(n·m)⌉ with the best arc of the first block holding an improving
// one). It is written as device-callable code over per-problem scratch arrays
// and run by one Kokkos thread per problem, so a batch of pairs fills every
// core (or a GPU); a single problem is inherently sequential.
//
// Results per problem: cost <P,C>; a sparse plan with at most n+m−1 entries;
// dual potentials (f, g) with f_i + g_j ≤ C_ij, equality on the plan's support,
// centred so that a·f = b·g (POT's center_dual), hence <P,C> = a·f + b·g; status;
// pivot count; and the final basis, which warm-starts the next solve of the same
// pair (training re-solves each pair with slightly changed costs every epoch: the
// previous optimal basis is primal feasible for the same weights, so the simplex
// resumes from it).
//
// Gradients: W is piecewise linear in C with ∂W/∂C = P (where the optimum is
// unique). Through projected points p_i = A x_i, q_j = A y_j:
//   ∂W/∂p_i = Σ_j w_ij (p_i − q_j),  w_ij = P_ij / ||p_i − q_j|| (0 when the
//   distance is 0) for the euclidean cost, w_ij = 2 P_ij for sqeuclidean.
// map_gradient (gradient.hpp) turns these into GGML-OT's
//   ∇_A W = Pᵀdiag(r)X − PᵀwY − QᵀwᵀX + Qᵀdiag(c)Y.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/cost.hpp"

namespace kotml::ot {

struct EmdOptions {
  /// Pivots per problem before giving up with SolveStatus::max_iter.
  std::int64_t max_iter = 10'000'000;
  /// Compute ∂W/∂(projected points) (batch solver; euclidean and sqeuclidean).
  bool point_gradients = false;
  /// Memory the batch solver may use for per-problem scratch (a cost and a
  /// one-byte arc state per arc, ~9 bytes per arc). On host backends each
  /// thread solves in its own scratch pad, sized for the largest problem, when
  /// one pad per thread fits; otherwise (and on GPUs) problems are solved in
  /// chunks that fit. A problem larger than this on its own is still solved.
  std::size_t workspace_bytes = std::size_t(1) << 30;

  /// Throws Error::option for max_iter < 1.
  void validate() const;
};

/// Basis encoding, per node of a problem (rows 0..n−1, then columns n..n+m−1,
/// local indices): the node's parent in the spanning tree (a node of the other
/// side), basis_root (−1) for a node hung from the artificial root, or
/// basis_absent (−2) for a zero-weight node left out of the solve.
/// A basis of all basis_root is the cold start.
inline constexpr std::int32_t basis_root = -1;
inline constexpr std::int32_t basis_absent = -2;

struct EmdSummary {
  double cost = 0;
  std::int64_t iterations = 0;  // pivots
  std::int32_t plan_size = 0;   // non-zero entries of the sparse plan
  SolveStatus status = SolveStatus::optimal;
  bool warm_started = false;    // the given basis was used (false: invalid, cold start)
};

struct EmdBatchResult {
  BatchLayout layout;
  // Per problem (U entries each).
  Vector<double> cost;
  Vector<std::int32_t> status;      // SolveStatus values
  Vector<std::int64_t> iterations;  // pivots
  Vector<std::int32_t> warm_started;
  // Potentials, laid out by `layout`.
  Vector<double> f;
  Vector<double> g;
  // Sparse plans: problem u's entries are [layout.node_offset(u),
  // layout.node_offset(u) + plan_size[u]) of plan_row (local source index),
  // plan_col (local target index) and plan_value, rows ascending, then columns.
  Vector<std::int32_t> plan_size;
  Vector<std::int32_t> plan_row;
  Vector<std::int32_t> plan_col;
  Vector<double> plan_value;
  // Final bases (node-indexed: n_u + m_u entries at layout.node_offset(u)).
  Vector<std::int32_t> basis;
  // With point_gradients: ∂W/∂(projected source points) (total_rows × k) and
  // ∂W/∂(projected target points) (total_cols × k).
  Matrix<double> source_gradient;
  Matrix<double> target_gradient;

  EmdSummary summary(std::int64_t u) const;
  std::vector<EmdSummary> summaries() const;
  /// Host copy of problem u's basis, to store with the pair for the next epoch.
  std::vector<std::int32_t> basis_of(std::int64_t u) const;
};

/// Solves every pair of the batch (any point type; costs and the solve are in
/// double). warm_basis, if given, is node-indexed like EmdBatchResult::basis
/// (layout.node_offset); a problem whose given basis is not a valid spanning
/// forest for its weights starts cold (EmdSummary::warm_started tells).
template <class T>
EmdBatchResult emd(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs, Cost cost,
                   const EmdOptions& options, const Vector<const std::int32_t>& warm_basis = {});

/// One problem on a dense host cost matrix, solved on the calling thread.
struct EmdSolution {
  EmdSummary summary;
  std::vector<std::int32_t> plan_row;
  std::vector<std::int32_t> plan_col;
  std::vector<double> plan_value;
  std::vector<double> f;  // n
  std::vector<double> g;  // m
  std::vector<std::int32_t> basis;  // n + m
};

/// C: n×m costs (finite); a, b: weights ≥ 0, each with a positive sum (normalised
/// here). warm_basis: n+m entries, or empty for a cold start.
EmdSolution emd_dense(const HostMatrix<const double>& C, const std::vector<double>& a,
                      const std::vector<double>& b, const EmdOptions& options,
                      const std::vector<std::int32_t>& warm_basis = {});

}  // namespace kotml::ot

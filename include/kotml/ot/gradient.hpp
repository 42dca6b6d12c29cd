#pragma once
// From gradients with respect to projected points to the gradient with respect
// to the metric A (k×d).
//
// With p = A x for every point, ∂L/∂A = Σ_points (∂L/∂p) xᵀ. The solvers return
// ∂(cost of problem u)/∂p for the source and target points of every problem
// (source_gradient, target_gradient in their results). For a loss
// L = Σ_u coef_u · W_u, the cheap route is
//   1. accumulate_point_gradients: G[point] = Σ_u coef_u ∂W_u/∂p (per pool row,
//      summed over problems in increasing problem index), an N×k matrix;
//   2. map_gradient: ∂L/∂A = Gᵀ X (X: the unprojected pool rows, N×d).
// This costs O(N·k·d) instead of O(U·(n+m)·k·d) for per-problem map gradients.
// Both steps are deterministic for a given batch (fixed summation order, no
// atomics). Across MPI ranks that split the problems, sum per-problem (or
// per-point) contributions exactly (dist::ExactSum) to stay bit-identical.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/ot/batch.hpp"

namespace kotml::ot {

/// point_gradient (clouds.points().extent(0) × k, overwritten) receives, for each
/// pool row r, Σ_u coef[u] · (source_gradient of r in problem u, if r belongs to
/// pairs[u].source) + coef[u] · (target_gradient of r in problem u, if r belongs
/// to pairs[u].target), added in increasing u. Rows no problem uses get 0.
template <class T>
void accumulate_point_gradients(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs,
                                const BatchLayout& layout, const std::vector<double>& coef,
                                const Matrix<const double>& source_gradient,
                                const Matrix<const double>& target_gradient,
                                const Matrix<double>& point_gradient);

/// grad_A (k×d) = Gᵀ X, or grad_A += Gᵀ X with accumulate: G is N×k, X is N×d
/// (the unprojected points, any scalar). Each entry is summed over rows in order.
template <class T>
void map_gradient(const Matrix<const double>& G, const Matrix<const T>& X,
                  const Matrix<double>& grad_A, bool accumulate = false);

/// ∂W_u/∂A (k×d) of a single problem u: Σ_i ∂W/∂p_i x_iᵀ + Σ_j ∂W/∂q_j y_jᵀ, with X
/// the unprojected pool (rows as clouds.points()). For tests and for callers that
/// need one problem's contribution on its own (exact cross-rank sums).
template <class T>
HostMatrix<double> problem_map_gradient(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs,
                                        const BatchLayout& layout, std::int64_t u,
                                        const Matrix<const double>& source_gradient,
                                        const Matrix<const double>& target_gradient,
                                        const Matrix<const T>& X);

}  // namespace kotml::ot

#pragma once
// Ground costs between point sets, and the linear map A of metric learning.
//
// The learned metric maps points x ∈ R^d to A x ∈ R^k (A: k×d); every cost is
// then a cost between projected points. Solvers take projected clouds
// (project() below computes X Aᵀ once per batch), and report gradients with
// respect to the projected points; map_gradient() in gradient.hpp chains them to
// a gradient with respect to A.
//
// Costs:
//   euclidean    C(x, y) = ||x − y||          (GGML-OT's default, unsquared)
//   sqeuclidean  C(x, y) = ||x − y||²         (POT's ot.dist default)
//   cosine       C(x, y) = 1 − x·y / (||x|| ||y||), and 1 when either norm is 0
//                (a zero vector is treated as orthogonal to everything)

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

#include "kotml/core/math.hpp"
#include "kotml/core/types.hpp"

namespace kotml::ot {

enum class Cost : std::int32_t { euclidean = 0, sqeuclidean = 1, cosine = 2 };

/// "euclidean", "sqeuclidean", "cosine".
const char* cost_name(Cost cost);
/// Parses a cost name; throws Error::option(option, ...) listing the choices.
Cost parse_cost(const std::string& name, const std::string& option = "cost");

/// Euclidean norm of a row, accumulated in R. Device-callable.
template <class R, class P>
KOKKOS_INLINE_FUNCTION R row_norm(const P* x, int dim) {
  R s = 0;
  for (int c = 0; c < dim; ++c) s += static_cast<R>(x[c]) * static_cast<R>(x[c]);
  return kmath::sqrt(s);
}

/// Cost between two rows, computed directly from the coordinates (no
/// cancellation: identical points cost exactly 0), accumulated in R.
/// norm_x and norm_y are used by the cosine cost only (row_norm of each).
/// Device-callable.
template <class R, class P, class Q>
KOKKOS_INLINE_FUNCTION R ground_cost(Cost kind, const P* x, const Q* y, int dim, R norm_x,
                                     R norm_y) {
  if (kind == Cost::cosine) {
    if (!(norm_x > R(0)) || !(norm_y > R(0))) return R(1);
    R dot = 0;
    for (int c = 0; c < dim; ++c) dot += static_cast<R>(x[c]) * static_cast<R>(y[c]);
    return R(1) - dot / (norm_x * norm_y);
  }
  R s = 0;
  for (int c = 0; c < dim; ++c) {
    const R diff = static_cast<R>(x[c]) - static_cast<R>(y[c]);
    s += diff * diff;
  }
  return kind == Cost::sqeuclidean ? s : kmath::sqrt(s);
}

/// Dense cost matrix C (n×m) between the rows of X (n×d) and Y (m×d), all in
/// MemSpace. For large d it uses the GEMM form ||x||² + ||y||² − 2 x·y
/// (KokkosBlas::gemm) and recomputes directly every entry where that form loses
/// more than about 10 bits to cancellation, so near and identical points keep
/// their exact cost; for small d it computes every entry directly.
template <class T>
void cost_matrix(Cost kind, const Matrix<const T>& X, const Matrix<const T>& Y, const Matrix<T>& C);

/// Euclidean norm of every row of X, in double (the cosine cost needs them).
template <class T>
void point_norms(const Matrix<const T>& X, const Vector<double>& norms);

/// Projection by the metric: Z = X Aᵀ (Z: n×k, X: n×d, A: k×d), accumulated in
/// double whatever T is, each entry summed in a fixed order (deterministic).
template <class T>
void project(const Matrix<const T>& X, const Matrix<const double>& A, const Matrix<T>& Z);

}  // namespace kotml::ot

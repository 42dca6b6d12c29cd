#pragma once
// One row of a cost matrix from point coordinates: the costs from point x to
// `count` points other(0), other(1), ... of the same pool, in double, each
// passed to write(j, value), and their sum in column order.
//
// Each cost is ground_cost's sum over coordinates in coordinate order. On host
// backends eight targets are done at once, so that the eight sums run as
// independent chains instead of one latency-bound chain per entry; when the
// targets are consecutive pool rows and a transposed copy of the pool is at hand
// (coordinate-major), the eight chains run in SIMD registers (cost_row_host, in
// cost_rows.cpp, built for several x86 SIMD levels). On GPUs each vector lane
// takes one target.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

#include "kotml/core/device_copy.hpp"
#include "kotml/core/math.hpp"
#include "kotml/core/types.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/ot/lse.hpp"

namespace kotml::ot::detail {

/// Host kernel on the transposed pool (coordinate k of pool row r at
/// pool_t[k·stride + r]): costs from the point whose coordinates start at x to
/// the `count` points whose coordinates start at yt (consecutive rows), written
/// to out (converted; out may be null) and, with `summed`, summed in column
/// order (returns 0 otherwise: the ordered sum is a serial chain that costs as
/// much as the costs). norms_y: the targets' norms (cosine only).
double cost_row_host(Cost kind, const double* x, const double* yt, std::int64_t stride, int dim,
                     std::int64_t count, double norm_x, const double* norms_y, float* out, bool summed);
double cost_row_host(Cost kind, const double* x, const double* yt, std::int64_t stride, int dim,
                     std::int64_t count, double norm_x, const double* norms_y, double* out, bool summed);

/// Host kernel: the gradient of Σ_j P_j C_j with respect to one point x (line
/// of a Sinkhorn plan: P_j = exp(own + h_j − s·c_j)), through C = ||x − y||
/// (w_j = P_j / C_j, 0 where C_j = 0) or C = ||x − y||² (w_j = 2 P_j):
///   grad_k = Σ_j w_j (x_k − y_jk),
/// with x and the m targets (consecutive rows) in the transposed pool. grad:
/// dim contiguous doubles.
void row_gradient_host(const float* c, const float* h, std::int64_t m, float s, float own, bool squared,
                       const double* x, const double* yt, std::int64_t stride, int dim, double* grad);
void row_gradient_host(const double* c, const double* h, std::int64_t m, double s, double own, bool squared,
                       const double* x, const double* yt, std::int64_t stride, int dim, double* grad);

/// The pool's coordinates, coordinate-major (dim × N), in double.
template <class T>
Matrix<double> transposed_pool(const Matrix<const T>& points);

/// What the cost kernels read besides the pool: its point norms (cosine cost
/// only, else empty) and, on host backends, the coordinate-major copy for
/// cost_row_host (empty on GPUs, whose kernels read the pool as it is).
struct PoolViews {
  Vector<double> norms;
  Matrix<double> points_t;
};
template <class T>
PoolViews pool_views(const Matrix<const T>& points, Cost kind);

template <class Member, class P, class Other, class Write>
KOKKOS_INLINE_FUNCTION double cost_row(const Member& team, Cost kind, const Matrix<const P>& points,
                                       std::int64_t x, const Other& other, std::int64_t count,
                                       const Vector<const double>& norms, const Write& write) {
  const int dim = static_cast<int>(points.extent(1));
  const bool cosine = kind == Cost::cosine;
  const double norm_x = cosine ? norms(x) : 0.0;
#ifdef KOTML_DEVICE_PASS
  double sum = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(team, count),
      [&](const std::int64_t j, double& local) {
        const std::int64_t y = other(j);
        const double v = ground_cost<double>(kind, &points(x, 0), &points(y, 0), dim, norm_x, cosine ? norms(y) : 0.0);
        write(j, v);
        local += v;
      },
      sum);
  return sum;
#else
  (void)team;
  constexpr int lanes = 8;
  const P* px = &points(x, 0);
  double sum = 0;
  std::int64_t j = 0;
  for (; j + lanes <= count; j += lanes) {
    const P* py[lanes];
    for (int l = 0; l < lanes; ++l) py[l] = &points(other(j + l), 0);
    double acc[lanes] = {};
    if (cosine) {
      for (int k = 0; k < dim; ++k) {
        const double xk = static_cast<double>(px[k]);
        for (int l = 0; l < lanes; ++l) acc[l] += xk * static_cast<double>(py[l][k]);
      }
    } else {
      for (int k = 0; k < dim; ++k) {
        const double xk = static_cast<double>(px[k]);
        for (int l = 0; l < lanes; ++l) {
          const double diff = xk - static_cast<double>(py[l][k]);
          acc[l] += diff * diff;
        }
      }
    }
    for (int l = 0; l < lanes; ++l) {
      double v;
      if (cosine) {
        const double norm_y = norms(other(j + l));
        v = (norm_x > 0 && norm_y > 0) ? 1.0 - acc[l] / (norm_x * norm_y) : 1.0;
      } else {
        v = kind == Cost::sqeuclidean ? acc[l] : kmath::sqrt(acc[l]);
      }
      write(j + l, v);
      sum += v;
    }
  }
  for (; j < count; ++j) {
    const std::int64_t y = other(j);
    const double v = ground_cost<double>(kind, px, &points(y, 0), dim, norm_x, cosine ? norms(y) : 0.0);
    write(j, v);
    sum += v;
  }
  return sum;
#endif
}

}  // namespace kotml::ot::detail

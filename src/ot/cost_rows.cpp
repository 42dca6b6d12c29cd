// Host SIMD kernel for rows of costs between a point and consecutive pool
// points (see cost_rows.hpp), and the transposed pool it reads.

#include "cost_rows.hpp"

#include <cmath>
#include <type_traits>

#include "kotml/core/simd_levels.hpp"
#include "kotml/ot/fast_exp.hpp"

namespace kotml::ot::detail {
namespace {

/// The row in chunks of columns held on the stack in double: coordinate by
/// coordinate over the whole chunk (contiguous loops the compiler vectorises,
/// each entry still summed in coordinate order as ground_cost does), then the
/// finishing step (square root, cosine) over the chunk.
template <class T>
__attribute__((always_inline)) inline double cost_row_lanes(Cost kind, const double* __restrict x,
                                                           const double* __restrict yt, std::int64_t stride,
                                                           int dim, std::int64_t count, double norm_x,
                                                           const double* __restrict norms_y, T* __restrict out,
                                                           bool summed) {
  // x lives in the same transposed pool: coordinate k at x[k·stride].
  constexpr std::int64_t chunk = 256;
  double acc[chunk];
  double sum = 0;
  for (std::int64_t j0 = 0; j0 < count; j0 += chunk) {
    const std::int64_t width = count - j0 < chunk ? count - j0 : chunk;
    for (std::int64_t j = 0; j < width; ++j) acc[j] = 0;
    if (kind == Cost::cosine) {
      for (int k = 0; k < dim; ++k) {
        const double xk = x[k * stride];
        const double* __restrict y = yt + k * stride + j0;
        for (std::int64_t j = 0; j < width; ++j) acc[j] += xk * y[j];
      }
      for (std::int64_t j = 0; j < width; ++j) {
        const double norm_y = norms_y[j0 + j];
        acc[j] = (norm_x > 0 && norm_y > 0) ? 1.0 - acc[j] / (norm_x * norm_y) : 1.0;
      }
    } else {
      for (int k = 0; k < dim; ++k) {
        const double xk = x[k * stride];
        const double* __restrict y = yt + k * stride + j0;
        for (std::int64_t j = 0; j < width; ++j) {
          const double diff = xk - y[j];
          acc[j] += diff * diff;
        }
      }
      if (kind == Cost::euclidean)
        for (std::int64_t j = 0; j < width; ++j) acc[j] = std::sqrt(acc[j]);
    }
    if (out)
      for (std::int64_t j = 0; j < width; ++j) out[j0 + j] = static_cast<T>(acc[j]);
    if (summed)
      for (std::int64_t j = 0; j < width; ++j) sum += acc[j];
  }
  return sum;
}

}  // namespace

KOTML_SIMD_DISPATCHED(double, cost_row_host,
                      (Cost kind, const double* x, const double* yt, std::int64_t stride, int dim, std::int64_t count,
                       double norm_x, const double* norms_y, float* out, bool summed),
                      (kind, x, yt, stride, dim, count, norm_x, norms_y, out, summed),
                      cost_row_lanes(kind, x, yt, stride, dim, count, norm_x, norms_y, out, summed))

KOTML_SIMD_DISPATCHED(double, cost_row_host,
                      (Cost kind, const double* x, const double* yt, std::int64_t stride, int dim, std::int64_t count,
                       double norm_x, const double* norms_y, double* out, bool summed),
                      (kind, x, yt, stride, dim, count, norm_x, norms_y, out, summed),
                      cost_row_lanes(kind, x, yt, stride, dim, count, norm_x, norms_y, out, summed))

namespace {

/// See row_gradient_host. Columns go in chunks whose weights are kept on the
/// stack; every sum runs in a fixed order (eight lanes, then the tail), chunk
/// after chunk.
template <class T>
__attribute__((always_inline)) inline void row_gradient_lanes(const T* __restrict c, const T* __restrict h,
                                                              std::int64_t m, T s, T own, bool squared,
                                                              const double* __restrict x,
                                                              const double* __restrict yt, std::int64_t stride,
                                                              int dim, double* __restrict grad) {
  constexpr int chunk = 256, lanes = 8;
  T plan[chunk];
  double w[chunk];
  double lane_total[lanes] = {}, tail_total = 0;
  for (int k = 0; k < dim; ++k) grad[k] = 0;
  for (std::int64_t j0 = 0; j0 < m; j0 += chunk) {
    const int width = static_cast<int>(m - j0 < chunk ? m - j0 : chunk);
    // Three loops the compiler vectorises, instead of one it left scalar: the
    // plan entries in T; the weights in double, with the division done for
    // every column on a positive divisor and only selects after it (a division
    // inside a branch is not if-converted); Σ w in eight lanes.
    for (int j = 0; j < width; ++j) plan[j] = fast_exp(own + h[j0 + j] - s * c[j0 + j]);
    for (int j = 0; j < width; ++j) {
      const double p = static_cast<double>(plan[j]);
      const double cj = static_cast<double>(c[j0 + j]);
      const double per_distance = p / (cj > 0 ? cj : 1.0);
      const double euclidean = cj > 0 ? per_distance : 0.0;
      w[j] = squared ? 2 * p : euclidean;
    }
    const int full_lanes = width - width % lanes;
    for (int j = 0; j < full_lanes; j += lanes)
      for (int l = 0; l < lanes; ++l) lane_total[l] += w[j + l];
    for (int j = full_lanes; j < width; ++j) tail_total += w[j];
    // grad_k accumulates Σ_j w_j y_jk, eight columns per step.
    const int full = width - width % lanes;
    for (int k = 0; k < dim; ++k) {
      const double* y = yt + k * stride + j0;
      double acc[lanes] = {};
      for (int j = 0; j < full; j += lanes)
        for (int l = 0; l < lanes; ++l) acc[l] += w[j + l] * y[j + l];
      double dot = 0;
      for (int l = 0; l < lanes; ++l) dot += acc[l];
      for (int j = full; j < width; ++j) dot += w[j] * y[j];
      grad[k] += dot;
    }
  }
  double total = tail_total;
  for (int l = 0; l < lanes; ++l) total += lane_total[l];
  // Σ_j w_j (x_k − y_jk) = (Σ_j w_j) x_k − Σ_j w_j y_jk
  for (int k = 0; k < dim; ++k) grad[k] = total * x[k * stride] - grad[k];
}

}  // namespace

KOTML_SIMD_DISPATCHED(void, row_gradient_host,
                      (const float* c, const float* h, std::int64_t m, float s, float own, bool squared,
                       const double* x, const double* yt, std::int64_t stride, int dim, double* grad),
                      (c, h, m, s, own, squared, x, yt, stride, dim, grad),
                      row_gradient_lanes(c, h, m, s, own, squared, x, yt, stride, dim, grad))

KOTML_SIMD_DISPATCHED(void, row_gradient_host,
                      (const double* c, const double* h, std::int64_t m, double s, double own, bool squared,
                       const double* x, const double* yt, std::int64_t stride, int dim, double* grad),
                      (c, h, m, s, own, squared, x, yt, stride, dim, grad),
                      row_gradient_lanes(c, h, m, s, own, squared, x, yt, stride, dim, grad))

namespace {

template <class T>
void transpose_points(const Matrix<const T>& points, const Matrix<double>& out) {
  Kokkos::parallel_for(
      "kotml::ot::transposed_pool",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {points.extent(0), points.extent(1)}),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t k) { out(k, r) = static_cast<double>(points(r, k)); });
}

}  // namespace

template <class T>
Matrix<double> transposed_pool(const Matrix<const T>& points) {
  Matrix<double> out(no_init("kotml::ot::transposed_pool"), points.extent(1), points.extent(0));
  transpose_points(points, out);
  return out;
}

template Matrix<double> transposed_pool<float>(const Matrix<const float>&);
template Matrix<double> transposed_pool<double>(const Matrix<const double>&);

template <class T>
PoolViews pool_views(const Matrix<const T>& points, Cost kind) {
  PoolViews views;
  if (kind == Cost::cosine) {
    views.norms = Vector<double>(no_init("kotml::ot::point_norms"), points.extent(0));
    point_norms<T>(points, views.norms);
  }
  if (std::is_same<ExecSpace::memory_space, HostSpace>::value) views.points_t = transposed_pool<T>(points);
  return views;
}

template PoolViews pool_views<float>(const Matrix<const float>&, Cost);
template PoolViews pool_views<double>(const Matrix<const double>&, Cost);

}  // namespace kotml::ot::detail

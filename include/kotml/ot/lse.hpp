#pragma once
// The log-sum-exp family: the inner loops of every log-domain Sinkhorn in kotml
// (the batched small-problem solver, the tiled large-problem solver and sampled
// GW's slack Sinkhorn), over costs stored row-major in lines or tiles.
//
// Rows (one line of costs, a full row or one tile's part of it):
//   LSE_j (h_j − s·c_j),  j < m.
// The host kernel first tries one pass shifted by the caller's guess of the
// result (the line's LSE from the previous iteration, which is close once the
// iteration settles) and keeps it when the sum is in a safe range; otherwise,
// and on GPUs always, it takes two passes (maximum, then the sum of exps shifted
// by it), so no term overflows and the largest is exactly 1. Either way the
// result depends only on the inputs and the guess, never on threads.
//
// On host backends the row goes to row_lse_host (row_lse.cpp), compiled for
// several x86 SIMD levels and picked at load time by the CPU (GCC function
// multiversioning), with a fixed number of accumulation lanes so that its bits
// do not depend on the thread count. On GPUs the row is split over the vector
// lanes of a team thread.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"
#include "kotml/ot/fast_exp.hpp"

namespace kotml::ot::detail {

// ------------------------------------------------------------------- rows

/// shift: the guess (NaN or ±∞ for none).
double row_lse_host(const double* c, const double* h, std::int64_t m, double s, double shift);
float row_lse_host(const float* c, const float* h, std::int64_t m, float s, float shift);

/// Σ_j exp(h_j − s·c_j − shift) with row_lse's lanes: one piece of a row whose
/// shift (its log-sum-exp from the previous update) the caller already knows.
double row_sum_host(const double* c, const double* h, std::int64_t m, double s, double shift);
float row_sum_host(const float* c, const float* h, std::int64_t m, float s, float shift);

/// Σ_j p_j c_j with p_j = exp(own + h_j − s·c_j) (a row of the plan and its
/// transport cost), each p_j also stored in plan unless it is null.
double row_transport_host(const double* c, const double* h, std::int64_t m, double s, double own, double* plan);
double row_transport_host(const float* c, const float* h, std::int64_t m, float s, float own, float* plan);

/// The portable version: the row is split over the vector lanes of the calling
/// team thread (GPUs). Also compiled for host backends, where the tests check it.
template <class Member, class T>
KOKKOS_INLINE_FUNCTION T row_lse_lanes(const Member& team, const T* c, const T* h, std::int64_t m, T s) {
  T top = -kmath::infinity<T>();
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(team, m),
      [&](const std::int64_t j, T& local) {
        const T v = h[j] - s * c[j];
        local = v > local ? v : local;
      },
      Kokkos::Max<T>(top));
  if (!(top > -kmath::infinity<T>())) return top;
  T sum = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(team, m),
      [&](const std::int64_t j, T& local) { local += fast_exp(h[j] - s * c[j] - top); }, sum);
  return top + kmath::log(sum);
}

/// Σ_j exp(h_j − s·c_j − shift) over a row by one team thread: the host clone,
/// or the row split over the thread's vector lanes.
template <class Member, class T>
KOKKOS_INLINE_FUNCTION T row_sum(const Member& team, const T* c, const T* h, std::int64_t m, T s, T shift) {
#ifdef KOTML_DEVICE_PASS
  T sum = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(team, m),
      [&](const std::int64_t j, T& local) { local += fast_exp(h[j] - s * c[j] - shift); }, sum);
  return sum;
#else
  (void)team;
  return row_sum_host(c, h, m, s, shift);
#endif
}

/// One thread, no vector lanes (portable two passes: maximum, then the sum).
template <class T>
KOKKOS_INLINE_FUNCTION T row_lse_serial(const T* c, const T* h, std::int64_t m, T s) {
  T top = -kmath::infinity<T>();
  for (std::int64_t j = 0; j < m; ++j) {
    const T v = h[j] - s * c[j];
    top = v > top ? v : top;
  }
  if (!(top > -kmath::infinity<T>())) return top;
  T sum = 0;
  for (std::int64_t j = 0; j < m; ++j) sum += fast_exp(h[j] - s * c[j] - top);
  return top + kmath::log(sum);
}

/// One row by one thread outside a team: the host clone, or the portable loop.
template <class T>
KOKKOS_INLINE_FUNCTION T row_lse_one(const T* c, const T* h, std::int64_t m, T s) {
#ifdef KOTML_DEVICE_PASS
  return row_lse_serial(c, h, m, s);
#else
  return row_lse_host(c, h, m, s, kmath::infinity<T>());
#endif
}

/// Called by one team thread for one row; `shift` is the guess of the result.
template <class Member, class T>
KOKKOS_INLINE_FUNCTION T row_lse(const Member& team, const T* c, const T* h, std::int64_t m, T s, T shift) {
#ifdef KOTML_DEVICE_PASS
  (void)shift;
  return row_lse_lanes(team, c, h, m, s);
#else
  (void)team;
  return row_lse_host(c, h, m, s, shift);
#endif
}

// ---------------------------------------------------------------- columns
//
// Columns of a tile of `rows` × `width` costs (row-major, leading dimension ld),
// with a value u_i per row: the column maxima and the shifted column sums
//   top[c] = max(top[c], max_i (u_i − s·c_ic)),
//   acc[c] += Σ_i exp(u_i − s·c_ic − shift[c])     (rows added in order).
// Each column is one fixed sequence of operations whatever the SIMD width (the
// lanes run across columns), so a column's partial sum over a tile depends only
// on the tile. Callers combine tiles exactly (fixed point) or by maximum.

template <class T>
KOKKOS_FORCEINLINE_FUNCTION void column_max_tile(const T* c, std::int64_t ld, std::int64_t rows,
                                                 std::int64_t width, const T* u, T s, T* top) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* row = c + i * ld;
    const T ui = u[i];
    for (std::int64_t k = 0; k < width; ++k) {
      const T v = ui - s * row[k];
      top[k] = v > top[k] ? v : top[k];
    }
  }
}

template <class T>
KOKKOS_FORCEINLINE_FUNCTION void column_sum_tile(const T* c, std::int64_t ld, std::int64_t rows,
                                                 std::int64_t width, const T* u, T s, const T* shift, T* acc) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* row = c + i * ld;
    const T ui = u[i];
    for (std::int64_t k = 0; k < width; ++k) acc[k] += fast_exp(ui - s * row[k] - shift[k]);
  }
}

/// The same, compiled for several x86 SIMD levels (lse_host.cpp).
void column_max_tile_host(const double* c, std::int64_t ld, std::int64_t rows, std::int64_t width,
                          const double* u, double s, double* top);
void column_max_tile_host(const float* c, std::int64_t ld, std::int64_t rows, std::int64_t width, const float* u,
                          float s, float* top);
void column_sum_tile_host(const double* c, std::int64_t ld, std::int64_t rows, std::int64_t width,
                          const double* u, double s, const double* shift, double* acc);
void column_sum_tile_host(const float* c, std::int64_t ld, std::int64_t rows, std::int64_t width, const float* u,
                          float s, const float* shift, float* acc);

/// Dispatch: host clones on CPU backends, the portable loops in device code.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void column_max(const T* c, std::int64_t ld, std::int64_t rows, std::int64_t width,
                                            const T* u, T s, T* top) {
#ifdef KOTML_DEVICE_PASS
  column_max_tile(c, ld, rows, width, u, s, top);
#else
  column_max_tile_host(c, ld, rows, width, u, s, top);
#endif
}

template <class T>
KOKKOS_FORCEINLINE_FUNCTION void column_sum(const T* c, std::int64_t ld, std::int64_t rows, std::int64_t width,
                                            const T* u, T s, const T* shift, T* acc) {
#ifdef KOTML_DEVICE_PASS
  column_sum_tile(c, ld, rows, width, u, s, shift, acc);
#else
  column_sum_tile_host(c, ld, rows, width, u, s, shift, acc);
#endif
}

/// log(exp(x) + exp(y)) for running log-sum-exps merged piece by piece; −∞
/// terms add nothing.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T log_add_exp(T x, T y) {
  if (!(x > -kmath::infinity<T>())) return y;
  if (!(y > -kmath::infinity<T>())) return x;
  const T top = x > y ? x : y;
  const T low = x > y ? y : x;
  return top + kmath::log1p(kmath::exp(low - top));
}

}  // namespace kotml::ot::detail

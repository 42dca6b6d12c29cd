#pragma once
// Row log-sum-exp, the inner loop of every Sinkhorn half-step:
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

/// shift: the guess (NaN or ±∞ for none).
double row_lse_host(const double* c, const double* h, std::int64_t m, double s, double shift);
float row_lse_host(const float* c, const float* h, std::int64_t m, float s, float shift);

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

}  // namespace kotml::ot::detail

#pragma once
// The one place that knows where Kokkos keeps its math functions: in
// Kokkos::Experimental up to 3.6, in Kokkos:: from 3.7 on (the Experimental copies
// are gone in 4.0). Kernels call kotml::kmath::exp and friends, never std:: (not
// device-callable) and never Kokkos::Experimental directly.

#include <Kokkos_Core.hpp>

#include <cmath>

// Defined while a GPU compiler translates device code. Kernel bodies that call
// host-only SIMD helpers on CPU backends keep a portable loop under it.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || defined(__SYCL_DEVICE_ONLY__)
#define KOTML_DEVICE_PASS 1
#endif

namespace kotml::kmath {

#if KOKKOS_VERSION >= 30700
namespace impl = ::Kokkos;
#else
namespace impl = ::Kokkos::Experimental;
#endif

using impl::exp;
using impl::expm1;
using impl::fabs;
using impl::fmax;
using impl::fmin;
using impl::isfinite;
using impl::isinf;
using impl::isnan;
using impl::log;
using impl::log1p;
using impl::pow;
using impl::sqrt;
using impl::cbrt;
using impl::floor;
using impl::ceil;
using impl::lgamma;
using impl::cos;
using impl::sin;
using impl::atan2;

/// a·b + c rounded once (IEEE fused multiply-add) on every backend, so that a
/// sum built from it has the same bits on CPUs and GPUs. (Kokkos 3.4 has no fma.)
KOKKOS_FORCEINLINE_FUNCTION float fma(float a, float b, float c) {
#ifdef KOTML_DEVICE_PASS
  return ::fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
KOKKOS_FORCEINLINE_FUNCTION double fma(double a, double b, double c) {
#ifdef KOTML_DEVICE_PASS
  return ::fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

template <class T>
KOKKOS_INLINE_FUNCTION constexpr T min(T a, T b) { return b < a ? b : a; }
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T max(T a, T b) { return a < b ? b : a; }
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T clamp(T x, T lo, T hi) { return x < lo ? lo : (hi < x ? hi : x); }

template <class T>
KOKKOS_INLINE_FUNCTION constexpr T infinity() {
  return ::Kokkos::Experimental::infinity<T>::value;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T epsilon() {
  return ::Kokkos::Experimental::epsilon<T>::value;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T max_value() {
  return ::Kokkos::Experimental::finite_max<T>::value;
}

/// Adds exp(x) to a running log-sum-exp held as (max, scaled sum): one pass over
/// the data, one exp per element, no overflow. Start with m = -inf, s = 0.
/// Terms equal to -inf (zero weights) are skipped.
template <class T>
KOKKOS_INLINE_FUNCTION void lse_accumulate(T x, T& m, T& s) {
  if (!(x > -infinity<T>())) return;  // exp(-inf) adds nothing; -inf - -inf would be NaN
  if (x <= m) {
    s += exp(x - m);
  } else {
    s = s * exp(m - x) + T(1);
    m = x;
  }
}

/// The log of a running sum kept by lse_accumulate; -inf when nothing was added.
template <class T>
KOKKOS_INLINE_FUNCTION T lse_finish(T m, T s) {
  return s > T(0) ? m + log(s) : -infinity<T>();
}

}  // namespace kotml::kmath

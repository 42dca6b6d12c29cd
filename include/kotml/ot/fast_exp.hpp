#pragma once
// A branch-free exp that compilers vectorise, for the log-sum-exp kernels of
// Sinkhorn. On CPUs the exp dominates a log-domain iteration; glibc's scalar exp
// does not vectorise without -ffast-math (hpc-anchors §2d), this does, in every
// SIMD width, with plain arithmetic and integer bit operations only.
//
// Method: x = k·ln2 + r with k = round(x/ln2) (the 1.5·2^52 shifter trick, which
// also yields k as integer bits), r reduced in two steps (Cody–Waite), e^r from
// its Taylor polynomial on |r| ≤ ln2/2 (degree 13 in double, 7 in float, below
// one ulp of truncation error), and 2^k put into the exponent field.
//
// Domain and accuracy (tests/ot/test_fast_exp.cpp measures them):
//   double: x < −708 gives 0 (flushing the subnormal range); x > 709 is clamped
//           to 709; relative error ≤ 4 ulp elsewhere.
//   float:  x < −87 gives 0; x > 88 is clamped to 88; relative error ≤ 4 ulp.
//   NaN gives NaN. −∞ gives 0, as a zero weight needs.
// The result is a fixed sequence of IEEE operations (no fused multiply-add is
// written), so every SIMD width gives the same bits.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/bit_cast.hpp"

namespace kotml::ot {

namespace fast_exp_detail {
using kotml::bit_cast;
}  // namespace fast_exp_detail

KOKKOS_FORCEINLINE_FUNCTION double fast_exp(double x) {
  constexpr double lowest = -708.0;
  constexpr double highest = 709.0;
  constexpr double log2e = 1.4426950408889634074;
  constexpr double ln2_hi = 6.93147180369123816490e-01;  // 32 significant bits: k·ln2_hi is exact
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  constexpr double shifter = 6755399441055744.0;  // 1.5·2^52: adding it rounds to an integer
  double xc = x < lowest ? lowest : x;             // NaN passes through both clamps
  xc = xc > highest ? highest : xc;
  const double t = xc * log2e + shifter;
  const double k = t - shifter;
  // k as a two's-complement integer, in unsigned arithmetic: a NaN x gives a
  // meaningless k (and a NaN result) whose signed form could overflow.
  const std::uint64_t ki = fast_exp_detail::bit_cast<std::uint64_t>(t) -
                           fast_exp_detail::bit_cast<std::uint64_t>(shifter);
  double r = xc - k * ln2_hi;
  r = r - k * ln2_lo;
  // e^r = Σ r^i / i!, i ≤ 13, by Horner.
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const double scale = fast_exp_detail::bit_cast<double>((ki + 1023u) << 52);
  const double y = p * scale;
  return x < lowest ? 0.0 : y;
}

KOKKOS_FORCEINLINE_FUNCTION float fast_exp(float x) {
  constexpr float lowest = -87.0f;
  constexpr float highest = 88.0f;
  constexpr float log2e = 1.44269504089f;
  constexpr float ln2_hi = 0.693145751953125f;  // 16 significant bits
  constexpr float ln2_lo = 1.428606765330187e-06f;
  constexpr float shifter = 12582912.0f;  // 1.5·2^23
  float xc = x < lowest ? lowest : x;
  xc = xc > highest ? highest : xc;
  const float t = xc * log2e + shifter;
  const float k = t - shifter;
  const std::uint32_t ki = fast_exp_detail::bit_cast<std::uint32_t>(t) -
                           fast_exp_detail::bit_cast<std::uint32_t>(shifter);
  float r = xc - k * ln2_hi;
  r = r - k * ln2_lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = fast_exp_detail::bit_cast<float>((ki + 127u) << 23);
  const float y = p * scale;
  return x < lowest ? 0.0f : y;
}

}  // namespace kotml::ot

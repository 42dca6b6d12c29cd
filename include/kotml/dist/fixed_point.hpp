#pragma once
// Exact, order-independent sums in wide fixed point: the one facility behind
// every deterministic reduction of kotml (dist::ExactSum on the host, the column
// sums of the tiled and the slack Sinkhorn in kernels).
//
// A number is held as L limbs of 32 bits each, stored in int64 for headroom:
//
//   value = Σ_k limb[k] · 2^(32k + Lowest),   k = 0 .. L−1.
//
// A double x is deposited by writing its 53-bit significand, shifted to the
// weight of its lowest bit, across (at most) three consecutive limbs; bits below
// 2^Lowest are truncated (towards zero, the same for +x and −x). Deposits are
// integer additions, which are associative: the total does not depend on the
// order of the deposits, on which thread or rank made them, or on MPI's
// reduction tree. Each deposit adds less than 2^33 to a limb, so 2^29 deposits
// fit in any limb before carry() must run; carry() moves the excess of every
// limb above its low 32 bits into the next one and leaves the value unchanged.
//
// Device half: deposit() and atomic_deposit() (Kokkos atomics) are
// device-callable, as are carry() and to_double(). Host half: limbs in a
// std::vector or a View, MPI_SUM over int64, and to_double on the host.
//
// Instances: WideFixed (bits from 2^-160, deposits below 2^116) for ExactSum's
// gradients and moments; UnitFixed (bits from 2^-84, deposits below 2^32) for
// sums of exponentials that a Sinkhorn shift keeps near 1.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/bit_cast.hpp"

namespace kotml::dist {

template <int Limbs, int Lowest>
struct FixedPoint {
  static_assert(Limbs >= 3, "a deposit spans three limbs");
  static_assert(Lowest >= -1000 && 32 * Limbs + Lowest <= 1000, "limb weights must be normal doubles");
  static constexpr int limbs = Limbs;
  static constexpr int limb_bits = 32;
  static constexpr int lowest_exponent = Lowest;
  /// A deposit must be below 2^highest_exponent, so that its three parts end in
  /// the top limb at the latest; the top limb's int64 range holds the sums of
  /// many such deposits.
  static constexpr int highest_exponent = 32 * (Limbs - 2) + Lowest + 52;

  /// Splits |x| into the three limb contributions and the first limb they go to.
  /// Returns false when |x| ≥ 2^highest_exponent or x is not finite (nothing is
  /// to be added then); a zero or truncated-away x gives true with zero parts.
  KOKKOS_INLINE_FUNCTION static bool split(double x, std::int64_t parts[3], int& first) {
    const auto bits = kotml::bit_cast<std::uint64_t>(x);
    const int biased = static_cast<int>((bits >> 52) & 0x7ff);
    parts[0] = parts[1] = parts[2] = 0;
    first = 0;
    if (biased == 0x7ff) return false;  // Inf or NaN
    std::uint64_t mantissa = bits & ((std::uint64_t(1) << 52) - 1);
    int exponent;  // weight of the significand's lowest bit
    if (biased == 0) {
      exponent = -1074;
    } else {
      mantissa |= std::uint64_t(1) << 52;
      exponent = biased - 1075;
    }
    if (mantissa == 0) return true;
    if (exponent + 53 > highest_exponent) return false;
    int shift = exponent - Lowest;
    if (shift < 0) {
      mantissa = (-shift >= 64) ? 0 : (mantissa >> -shift);
      shift = 0;
      if (mantissa == 0) return true;
    }
    first = shift / limb_bits;
    const int offset = shift % limb_bits;
    const std::uint64_t low = mantissa & 0xffffffffULL;
    const std::uint64_t high = mantissa >> 32;
    const std::uint64_t t0 = low << offset;   // < 2^63
    const std::uint64_t t1 = high << offset;  // < 2^52
    parts[0] = static_cast<std::int64_t>(t0 & 0xffffffffULL);
    parts[1] = static_cast<std::int64_t>((t0 >> 32) + (t1 & 0xffffffffULL));
    parts[2] = static_cast<std::int64_t>(t1 >> 32);
    if (bits >> 63) {
      parts[0] = -parts[0];
      parts[1] = -parts[1];
      parts[2] = -parts[2];
    }
    return true;
  }

  /// limb[0..Limbs) += x. Returns false (and adds nothing) when x cannot be held.
  KOKKOS_INLINE_FUNCTION static bool deposit(std::int64_t* limb, double x) {
    std::int64_t parts[3];
    int first;
    if (!split(x, parts, first)) return false;
    for (int p = 0; p < 3 && first + p < Limbs; ++p) limb[first + p] += parts[p];
    return true;
  }

  /// The same with atomic additions, for limbs that several threads share.
  KOKKOS_INLINE_FUNCTION static bool atomic_deposit(std::int64_t* limb, double x) {
    std::int64_t parts[3];
    int first;
    if (!split(x, parts, first)) return false;
    for (int p = 0; p < 3 && first + p < Limbs; ++p)
      if (parts[p] != 0) Kokkos::atomic_add(&limb[first + p], parts[p]);
    return true;
  }

  /// Marks a sum of non-negative deposits as unusable: its value becomes at least
  /// 2^(32(Limbs−1) + Lowest + 40), far above any range a caller accepts. Used
  /// for partial sums that overflowed or became NaN.
  KOKKOS_INLINE_FUNCTION static void poison(std::int64_t* limb) { limb[Limbs - 1] += std::int64_t(1) << 40; }
  KOKKOS_INLINE_FUNCTION static void atomic_poison(std::int64_t* limb) {
    Kokkos::atomic_add(&limb[Limbs - 1], std::int64_t(1) << 40);
  }

  /// Moves everything above the low 32 bits of each limb into the next limb;
  /// the value is unchanged and every limb but the top one ends in [0, 2^32).
  KOKKOS_INLINE_FUNCTION static void carry(std::int64_t* limb) {
    for (int k = 0; k + 1 < Limbs; ++k) {
      const std::int64_t low = limb[k] & 0xffffffffLL;  // two's complement: always ≥ 0
      limb[k + 1] += (limb[k] - low) / (std::int64_t(1) << 32);
      limb[k] = low;
    }
  }

  /// The value, rounded once to double (the limbs are modified: carried, and
  /// negated when the value is negative, so pass a copy to keep them).
  KOKKOS_INLINE_FUNCTION static double to_double(std::int64_t* limb) {
    carry(limb);
    const bool negative = limb[Limbs - 1] < 0;
    if (negative) {
      for (int k = 0; k < Limbs; ++k) limb[k] = -limb[k];
      carry(limb);
    }
    // With every limb ≥ 0 the partial sums only grow from the top down, so the
    // rounding is relative to the result even when the total cancelled.
    double sum = 0.0;
    for (int k = Limbs - 1; k >= 0; --k) sum += static_cast<double>(limb[k]) * weight(k);
    return negative ? -sum : sum;
  }

  /// 2^(32k + Lowest), built from its bits (device-callable, exact).
  KOKKOS_INLINE_FUNCTION static double weight(int k) {
    const std::int64_t biased = 32 * k + Lowest + 1023;
    return kotml::bit_cast<double>(static_cast<std::uint64_t>(biased) << 52);
  }
};

/// Gradients, moments and other sums whose terms span many magnitudes.
using WideFixed = FixedPoint<9, -160>;
/// Sums of exp(x − shift) where the shift keeps each term and partial sum small.
using UnitFixed = FixedPoint<4, -84>;

}  // namespace kotml::dist

#pragma once
// Counter-based random streams keyed by (seed, purpose, global index).
//
// A stream never depends on which rank or thread draws from it, so results are
// identical for any rank count: the stream for "subsample donor 17" is the same
// whether donor 17 lives on rank 0 or rank 2. The generator is SplitMix64 over a
// counter, so a stream's position is one integer (checkpointed as such) and a
// stream can be created inside a kernel at no cost.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"

namespace kotml::random {

/// What a stream is for. Two purposes never share a stream even with equal seeds
/// and indices. Values are part of the on-disk checkpoint format: append only.
enum class Purpose : std::uint64_t {
  metric_init = 1,
  subsample = 2,
  splits = 3,
  batches = 4,
  triplets = 5,
  simulate = 6,
  gw_sampling = 7,
  landmarks = 8,
  pca = 9,
  test_data = 10,
  map_auroc_downsample = 11,  // per-cluster cells of pairOT's AUROC (map/auroc)
  map_distance_sample = 12,   // per-cluster cells of pairOT's cluster distance (map/aggregate)
};

KOKKOS_INLINE_FUNCTION constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

KOKKOS_INLINE_FUNCTION constexpr std::uint64_t stream_key(std::uint64_t seed, Purpose purpose,
                                                          std::uint64_t index) {
  return mix64(mix64(mix64(seed ^ 0x6a09e667f3bcc909ULL) ^
                     (static_cast<std::uint64_t>(purpose) * 0x9e3779b97f4a7c15ULL)) ^
               (index * 0xd1b54a32d192ed03ULL + 0x3c6ef372fe94f82bULL));
}

class Stream {
 public:
  Stream() = default;  // defaulted: host and device alike, without annotations
  KOKKOS_INLINE_FUNCTION Stream(std::uint64_t seed, Purpose purpose, std::uint64_t index,
                                std::uint64_t position = 0)
      : key_(stream_key(seed, purpose, index)), position_(position) {}

  /// Number of 64-bit words drawn so far; with the key it restores the stream.
  KOKKOS_INLINE_FUNCTION std::uint64_t position() const { return position_; }

  KOKKOS_INLINE_FUNCTION std::uint64_t next_u64() {
    ++position_;
    return mix64(key_ + position_ * 0x9e3779b97f4a7c15ULL);
  }

  /// Uniform on [0, 1) with 53 random bits.
  KOKKOS_INLINE_FUNCTION double uniform() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
  }

  /// Uniform on (0, 1): safe to take the log of.
  KOKKOS_INLINE_FUNCTION double uniform_open() {
    return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53;
  }

  KOKKOS_INLINE_FUNCTION double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  /// Uniform integer in [0, n), without modulo bias (Lemire's method).
  KOKKOS_INLINE_FUNCTION std::uint64_t below(std::uint64_t n) {
    if (n <= 1) return 0;
    const std::uint64_t threshold = (0 - n) % n;
    while (true) {
      const std::uint64_t x = next_u64();
      if (x * n >= threshold) return mul_high(x, n);
    }
  }

  /// Standard normal by Box–Muller; one value per two uniforms, no cached
  /// second value, so the position alone describes the state.
  KOKKOS_INLINE_FUNCTION double normal() {
    const double u1 = uniform_open();
    const double u2 = uniform();
    return kmath::sqrt(-2.0 * kmath::log(u1)) * kmath::cos(6.283185307179586 * u2);
  }

  KOKKOS_INLINE_FUNCTION double normal(double mean, double sd) { return mean + sd * normal(); }

 private:
  /// High 64 bits of a 64×64 product, spelled out so that it needs no 128-bit
  /// integer type on any backend.
  KOKKOS_INLINE_FUNCTION static std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32;
    const std::uint64_t b_lo = b & 0xffffffffULL, b_hi = b >> 32;
    const std::uint64_t lo_lo = a_lo * b_lo;
    const std::uint64_t hi_lo = a_hi * b_lo;
    const std::uint64_t lo_hi = a_lo * b_hi;
    const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffULL) + lo_hi;
    return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
  }

  std::uint64_t key_ = 0;
  std::uint64_t position_ = 0;
};

}  // namespace kotml::random

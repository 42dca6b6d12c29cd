#include "kotml/dist/exact_sum.hpp"

#include <cmath>
#include <string>

namespace kotml::dist {
namespace {

constexpr std::int64_t low_mask = 0xffffffffLL;
// Each add puts at most 2^33 into a limb; renormalising before 2^29 additions
// keeps every limb far from int64 overflow.
constexpr std::int64_t additions_before_carry = std::int64_t(1) << 29;

void carry(std::int64_t* limb, int n) {
  for (int i = 0; i + 1 < n; ++i) {
    const std::int64_t low = limb[i] & low_mask;  // two's complement low bits: always ≥ 0
    const std::int64_t up = (limb[i] - low) / (std::int64_t(1) << 32);
    limb[i] = low;
    limb[i + 1] += up;
  }
}

}  // namespace

ExactSum::ExactSum(std::size_t width) : width_(width), limbs_(width * limbs, 0) {}

void ExactSum::clear() {
  std::fill(limbs_.begin(), limbs_.end(), 0);
  additions_ = 0;
}

void ExactSum::add(std::size_t index, double value) {
  if (!std::isfinite(value))
    throw Error("", "", "non-finite value (" + std::to_string(value) +
                            ") in a distributed sum: the computation diverged");
  if (value == 0.0) return;
  const double magnitude = std::fabs(value);
  if (magnitude >= std::ldexp(1.0, 90))
    throw Error("", "", "value too large for a distributed sum: " + std::to_string(value));
  int exponent = 0;
  const double fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction · 2^exponent
  std::uint64_t mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
  int shift = exponent - 53 - lowest_exponent;
  if (shift < 0) {
    mantissa = (-shift >= 64) ? 0 : (mantissa >> -shift);
    shift = 0;
  }
  if (mantissa == 0) return;
  const int first = shift / limb_bits;
  const int offset = shift % limb_bits;
  const std::uint64_t m_low = mantissa & 0xffffffffULL;
  const std::uint64_t m_high = mantissa >> 32;
  const std::uint64_t t0 = m_low << offset;   // < 2^63
  const std::uint64_t t1 = m_high << offset;  // < 2^52
  const std::int64_t part0 = static_cast<std::int64_t>(t0 & 0xffffffffULL);
  const std::int64_t part1 = static_cast<std::int64_t>((t0 >> 32) + (t1 & 0xffffffffULL));
  const std::int64_t part2 = static_cast<std::int64_t>(t1 >> 32);
  std::int64_t* limb = &limbs_[index * limbs];
  if (value > 0) {
    limb[first] += part0;
    limb[first + 1] += part1;
    limb[first + 2] += part2;
  } else {
    limb[first] -= part0;
    limb[first + 1] -= part1;
    limb[first + 2] -= part2;
  }
}

void ExactSum::add(const double* values) {
  for (std::size_t i = 0; i < width_; ++i) add(i, values[i]);
  if (++additions_ >= additions_before_carry) {
    for (std::size_t i = 0; i < width_; ++i) carry(&limbs_[i * limbs], limbs);
    additions_ = 0;
  }
}

std::vector<double> ExactSum::to_double(std::vector<std::int64_t> limb, std::size_t width) {
  std::vector<double> total(width, 0.0);
  for (std::size_t i = 0; i < width; ++i) {
    std::int64_t* l = &limb[i * limbs];
    carry(l, limbs);
    // Convert the magnitude: with every limb ≥ 0 the partial sums only grow, so
    // rounding is relative to the result, even when the total cancelled to
    // something tiny.
    const bool negative = l[limbs - 1] < 0;
    if (negative) {
      for (int k = 0; k < limbs; ++k) l[k] = -l[k];
      carry(l, limbs);
    }
    double sum = 0.0;
    for (int k = limbs - 1; k >= 0; --k)
      sum += std::ldexp(static_cast<double>(l[k]), k * limb_bits + lowest_exponent);
    total[i] = negative ? -sum : sum;
  }
  return total;
}

std::vector<double> ExactSum::local_total() const { return to_double(limbs_, width_); }

std::vector<double> ExactSum::allreduce(const Comm& comm) const {
  std::vector<std::int64_t> reduced(limbs_);
  for (std::size_t i = 0; i < width_; ++i) carry(&reduced[i * limbs], limbs);
  if (comm.size() > 1 && !reduced.empty())
    MPI_Allreduce(MPI_IN_PLACE, reduced.data(), static_cast<int>(reduced.size()), MPI_INT64_T,
                  MPI_SUM, comm.raw());
  return to_double(std::move(reduced), width_);
}

}  // namespace kotml::dist

#include "kotml/dist/exact_sum.hpp"

#include <cmath>
#include <string>

#include "kotml/core/progress.hpp"

namespace kotml::dist {
namespace {

// Each deposit adds less than 2^33 to a limb; carrying before 2^29 deposits
// keeps every limb far from int64 overflow.
constexpr std::int64_t additions_before_carry = std::int64_t(1) << 29;

}  // namespace

ExactSum::ExactSum(std::size_t width) : width_(width), limbs_(width * limbs, 0) {}

void ExactSum::clear() {
  std::fill(limbs_.begin(), limbs_.end(), 0);
  additions_ = 0;
}

void ExactSum::add(std::size_t index, double value) {
  if (!std::isfinite(value))
    throw Error("", "", "non-finite value (" + log::number_text(value) +
                            ") in a distributed sum: the computation diverged");
  if (!Fixed::deposit(&limbs_[index * limbs], value))
    throw Error("", "", "value too large for a distributed sum: " + log::number_text(value));
}

void ExactSum::add(const double* values) {
  for (std::size_t i = 0; i < width_; ++i) add(i, values[i]);
  count_addition();
}

void ExactSum::add_rows(const double* values, const std::int32_t* rows, std::size_t count, std::size_t row_width) {
  for (std::size_t p = 0; p < count; ++p) {
    const auto row = static_cast<std::size_t>(rows[p]);
    internal_check(rows[p] >= 0 && (row + 1) * row_width <= width_, "ExactSum::add_rows: row out of range");
    for (std::size_t j = 0; j < row_width; ++j) add(row * row_width + j, values[p * row_width + j]);
  }
  count_addition();
}

void ExactSum::count_addition() {
  if (++additions_ >= additions_before_carry) {
    for (std::size_t i = 0; i < width_; ++i) Fixed::carry(&limbs_[i * limbs]);
    additions_ = 0;
  }
}

std::vector<double> ExactSum::to_double(std::vector<std::int64_t> limb, std::size_t width) {
  std::vector<double> total(width, 0.0);
  for (std::size_t i = 0; i < width; ++i) total[i] = Fixed::to_double(&limb[i * limbs]);
  return total;
}

std::vector<double> ExactSum::local_total() const { return to_double(limbs_, width_); }

std::vector<double> ExactSum::local_total(std::size_t first, std::size_t count) const {
  internal_check(first + count <= width_, "ExactSum::local_total: range out of the sum");
  return to_double(std::vector<std::int64_t>(limbs_.begin() + static_cast<std::ptrdiff_t>(first * limbs),
                                             limbs_.begin() + static_cast<std::ptrdiff_t>((first + count) * limbs)),
                   count);
}

void ExactSum::append_limbs(std::size_t first, std::size_t count, std::vector<std::int64_t>& out) const {
  internal_check(first + count <= width_, "ExactSum::append_limbs: range out of the sum");
  const std::size_t start = out.size();
  out.insert(out.end(), limbs_.begin() + static_cast<std::ptrdiff_t>(first * limbs),
             limbs_.begin() + static_cast<std::ptrdiff_t>((first + count) * limbs));
  for (std::size_t i = 0; i < count; ++i) Fixed::carry(&out[start + i * limbs]);
}

void ExactSum::add_limbs(std::size_t first, std::size_t count, const std::int64_t* values) {
  internal_check(first + count <= width_, "ExactSum::add_limbs: range out of the sum");
  std::int64_t* target = &limbs_[first * limbs];
  for (std::size_t v = 0; v < count * limbs; ++v) target[v] += values[v];
  count_addition();
}

std::vector<double> ExactSum::allreduce(const Comm& comm) const {
  std::vector<std::int64_t> reduced(limbs_);
  return allreduce_fixed_host<Fixed>(&comm, reduced.data(), static_cast<std::int64_t>(width_));
}

}  // namespace kotml::dist

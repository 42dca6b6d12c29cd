#pragma once
// Exact, order-independent summation of double vectors across units and ranks:
// the host half of dist/fixed_point.hpp.
//
// Each value is deposited into one wide fixed-point number per element
// (WideFixed: bits from 2^-160; values below 2^116) whose 32-bit limbs are added
// as 64-bit integers. Integer addition is associative, so the total does not
// depend on the order of the additions: not on how units are spread over ranks,
// not on MPI's reduction tree. That is what makes a learned metric bit-identical
// on 1, 2 or 3 ranks. The cost is a few integer operations per value and an
// allreduce of limbs·width int64.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

#include "kotml/dist/comm.hpp"
#include "kotml/dist/fixed_point.hpp"

namespace kotml::dist {

class ExactSum {
 public:
  using Fixed = WideFixed;
  static constexpr int limbs = Fixed::limbs;

  explicit ExactSum(std::size_t width);

  std::size_t width() const { return width_; }

  /// Adds values[0..width) element-wise. Throws Error for values that are not
  /// finite or too large (|x| ≥ 2^116) to be held.
  void add(const double* values);
  void add(const std::vector<double>& values) { add(values.data()); }
  /// Adds one element.
  void add(std::size_t index, double value);
  /// Sees the sum as rows of row_width elements and adds block row p
  /// (values[p·row_width ..]) to row rows[p], for p < count: a sparse add(),
  /// for blocks that touch few rows of a wide sum. Same errors as add().
  void add_rows(const double* values, const std::int32_t* rows, std::size_t count, std::size_t row_width);

  /// The local total, rounded once to double.
  std::vector<double> local_total() const;
  /// Elements [first, first + count) of the local total, rounded once.
  std::vector<double> local_total(std::size_t first, std::size_t count) const;

  /// Elements [first, first + count), carried, appended to `out` as count ×
  /// limbs int64: what another rank's add_limbs takes, so that sums can travel
  /// to the rank that needs them instead of being reduced on every rank.
  void append_limbs(std::size_t first, std::size_t count, std::vector<std::int64_t>& out) const;
  /// Adds count elements given as carried limbs (append_limbs' layout) to
  /// elements [first, first + count). Integer additions: exact in any order.
  void add_limbs(std::size_t first, std::size_t count, const std::int64_t* values);

  /// Collective: the total over all ranks, identical bits on every rank.
  std::vector<double> allreduce(const Comm& comm) const;

  void clear();

 private:
  static std::vector<double> to_double(std::vector<std::int64_t> limbs, std::size_t width);
  void count_addition();
  std::size_t width_;
  std::vector<std::int64_t> limbs_;  // width_ × limbs, element-major
  std::int64_t additions_ = 0;
};

/// `values` fixed-point numbers of Fixed::limbs limbs each (value-major, host
/// memory, modified: carried, then summed in place), summed over the ranks of
/// `comm` (when given; nullptr: this process alone) and rounded once to double.
/// Carrying first keeps every limb below 2^32, so the sum over ranks cannot
/// overflow. Collective when comm is given. ExactSum::allreduce and the device
/// half's totals below both end here.
template <class Fixed>
std::vector<double> allreduce_fixed_host(const Comm* comm, std::int64_t* limbs, std::int64_t values) {
  for (std::int64_t j = 0; j < values; ++j) Fixed::carry(limbs + j * Fixed::limbs);
  if (comm != nullptr && comm->size() > 1 && values > 0)
    comm->sum_in_place(limbs, static_cast<std::size_t>(values * Fixed::limbs));
  std::vector<double> total(static_cast<std::size_t>(values));
  for (std::int64_t j = 0; j < values; ++j) total[static_cast<std::size_t>(j)] = Fixed::to_double(limbs + j * Fixed::limbs);
  return total;
}

/// The device half's totals: the limbs in any memory space (a host copy where
/// they are not host memory; host limbs are carried and summed in place).
template <class Fixed, class LimbView>
std::vector<double> allreduce_fixed(const Comm* comm, const LimbView& limbs, std::int64_t values) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), limbs);
  return allreduce_fixed_host<Fixed>(comm, host.data(), values);
}

}  // namespace kotml::dist

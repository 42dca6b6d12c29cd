#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kotml/dist/exact_sum.hpp"

using kotml::dist::ExactSum;

TEST(ExactSum, OrderDoesNotChangeTheBits) {
  std::mt19937_64 gen(1);
  std::vector<double> values(5000);
  for (auto& v : values) {
    const double mag = std::pow(10.0, std::uniform_real_distribution<double>(-12, 8)(gen));
    v = std::uniform_real_distribution<double>(-1, 1)(gen) * mag;
  }
  ExactSum forward(1), backward(1), shuffled(1);
  for (double v : values) forward.add(0, v);
  for (auto it = values.rbegin(); it != values.rend(); ++it) backward.add(0, *it);
  std::shuffle(values.begin(), values.end(), gen);
  for (double v : values) shuffled.add(0, v);
  EXPECT_EQ(forward.local_total()[0], backward.local_total()[0]);
  EXPECT_EQ(forward.local_total()[0], shuffled.local_total()[0]);
  // And it is the correctly rounded sum, up to the last bit or so.
  long double reference = 0;
  for (double v : values) reference += v;
  EXPECT_NEAR(forward.local_total()[0], static_cast<double>(reference), 1e-9);
}

TEST(ExactSum, CancellationLeavesTheSmallRemainderExact) {
  ExactSum s(1);
  s.add(0, 1e8);
  s.add(0, 3e-12);
  s.add(0, -1e8);
  EXPECT_EQ(s.local_total()[0], 3e-12);
  ExactSum t(1);
  t.add(0, -1e8);
  t.add(0, -3e-12);
  t.add(0, 1e8);
  EXPECT_EQ(t.local_total()[0], -3e-12);
}

TEST(ExactSum, AddRowsEqualsADenseAddWithZerosElsewhere) {
  // Rows 3 and 0 (of 5, 4 wide) from a 2-row block, several times over.
  std::mt19937_64 gen(2);
  std::uniform_real_distribution<double> pick(-1e3, 1e3);
  ExactSum sparse(20), dense(20);
  for (int round = 0; round < 50; ++round) {
    std::vector<double> block(8);
    for (auto& v : block) v = pick(gen) * std::pow(10.0, round % 7 - 3);
    const std::int32_t rows[2] = {3, 0};
    sparse.add_rows(block.data(), rows, 2, 4);
    std::vector<double> full(20, 0.0);
    for (int j = 0; j < 4; ++j) {
      full[static_cast<std::size_t>(3 * 4 + j)] = block[static_cast<std::size_t>(j)];
      full[static_cast<std::size_t>(j)] = block[static_cast<std::size_t>(4 + j)];
    }
    dense.add(full);
  }
  const auto a = sparse.local_total(), b = dense.local_total();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
  EXPECT_NE(a[0], 0.0);
  EXPECT_EQ(a[4], 0.0);  // row 1 was never touched
  const std::int32_t outside[1] = {5};
  EXPECT_THROW(sparse.add_rows(a.data(), outside, 1, 4), kotml::InternalError);
}

TEST(ExactSum, RejectsNonFinite) {
  ExactSum s(2);
  EXPECT_THROW(s.add(1, std::nan("")), kotml::Error);
  EXPECT_THROW(s.add(0, INFINITY), kotml::Error);
}

TEST(ExactSum, AllreduceIsTheSameForAnyRankCount) {
  kotml::dist::Comm comm;
  const int units = 37, width = 4;
  auto value = [](int u, int k) { return std::sin(1.0 + u * 13.0 + k) * std::pow(2.0, (u * 3) % 40 - 20); };
  ExactSum mine(width), serial(width);
  std::vector<double> row(width);
  for (int u = 0; u < units; ++u) {
    for (int k = 0; k < width; ++k) row[static_cast<std::size_t>(k)] = value(u, k);
    serial.add(row);
    if (u % comm.size() == comm.rank()) mine.add(row);
  }
  const auto total = mine.allreduce(comm);
  const auto expected = serial.local_total();
  for (int k = 0; k < width; ++k) EXPECT_EQ(total[static_cast<std::size_t>(k)], expected[static_cast<std::size_t>(k)]);
}

// ------------------------------------------------------- the device half

namespace {

using kotml::dist::UnitFixed;
using kotml::dist::WideFixed;

std::vector<double> mixed_values(std::size_t count, std::uint64_t seed, double low_exp, double high_exp) {
  std::mt19937_64 gen(seed);
  std::vector<double> values(count);
  for (auto& v : values) {
    const double mag = std::pow(2.0, std::uniform_real_distribution<double>(low_exp, high_exp)(gen));
    v = std::uniform_real_distribution<double>(-1, 1)(gen) * mag;
  }
  return values;
}

/// Deposits every value atomically from a kernel into one fixed-point number.
template <class Fixed>
double kernel_total(const std::vector<double>& values) {
  Kokkos::View<double*, kotml::MemSpace> v("values", values.size());
  Kokkos::deep_copy(v, Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                           values.data(), values.size()));
  Kokkos::View<std::int64_t*, kotml::MemSpace> limbs("limbs", Fixed::limbs);
  Kokkos::View<int, kotml::MemSpace> rejected("rejected");
  Kokkos::parallel_for(
      "deposit", Kokkos::RangePolicy<kotml::ExecSpace>(0, values.size()), KOKKOS_LAMBDA(const std::int64_t i) {
        if (!Fixed::atomic_deposit(limbs.data(), v(i))) Kokkos::atomic_add(&rejected(), 1);
      });
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), limbs);
  int bad = 0;
  Kokkos::deep_copy(bad, rejected);
  EXPECT_EQ(bad, 0);
  return Fixed::to_double(host.data());
}

}  // namespace

TEST(FixedPoint, KernelDepositsEqualExactSum) {
  const auto values = mixed_values(20000, 7, -40, 60);
  ExactSum host(1);
  for (double v : values) host.add(0, v);
  EXPECT_EQ(kernel_total<WideFixed>(values), host.local_total()[0]);
}

TEST(FixedPoint, UnitRangeIsCorrectlyRoundedForSumsOfExponentials) {
  // Terms of a shifted log-sum-exp: in (0, 1], many tiny.
  std::vector<double> values = mixed_values(5000, 3, -70, 0);
  for (auto& v : values) v = std::fabs(v);
  long double reference = 0;
  for (double v : values) reference += v;
  const double total = kernel_total<UnitFixed>(values);
  // Truncation below 2^-84 loses at most 5000·2^-84 in all.
  EXPECT_NEAR(total, static_cast<double>(reference), 5000 * std::ldexp(1.0, -84) + 1e-16 * total);
  std::reverse(values.begin(), values.end());
  EXPECT_EQ(kernel_total<UnitFixed>(values), total);
}

TEST(FixedPoint, RefusesWhatItCannotHold) {
  std::int64_t parts[3];
  int first = 0;
  EXPECT_FALSE(UnitFixed::split(std::ldexp(1.0, 32), parts, first));
  EXPECT_TRUE(UnitFixed::split(std::ldexp(1.0, 32) * 0.75, parts, first));
  EXPECT_FALSE(UnitFixed::split(std::nan(""), parts, first));
  EXPECT_FALSE(UnitFixed::split(-INFINITY, parts, first));
  EXPECT_TRUE(UnitFixed::split(std::ldexp(1.0, -90), parts, first));  // truncated to zero
  EXPECT_EQ(parts[0] | parts[1] | parts[2], 0);
  // Subnormals and negative values round-trip through the wide range.
  for (double x : {std::ldexp(1.0, -150), -3.25e-20, 1e30, -std::ldexp(1.0, 115)}) {
    std::int64_t limbs[WideFixed::limbs] = {};
    ASSERT_TRUE(WideFixed::deposit(limbs, x));
    EXPECT_EQ(WideFixed::to_double(limbs), x);
  }
}

TEST(FixedPoint, PoisonedSumsAreOutOfEveryAcceptedRange) {
  std::int64_t limbs[UnitFixed::limbs] = {};
  ASSERT_TRUE(UnitFixed::deposit(limbs, 0.5));
  UnitFixed::poison(limbs);
  EXPECT_GE(UnitFixed::to_double(limbs), std::ldexp(1.0, 50));
}

TEST(ExactSum, LimbsCarriedToAnotherSumGiveTheSameBits) {
  // Two partial sums of elements 1..2 of a width-4 sum, one moved into the
  // other as limbs, equal one sum of everything.
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-1e3, 1e3);
  ExactSum whole(4), left(4), right(4), at_home(2);
  for (int n = 0; n < 200; ++n)
    for (std::size_t i = 0; i < 4; ++i) {
      const double v = u(gen) * std::pow(10.0, -static_cast<double>(n % 9));
      whole.add(i, v);
      (n % 2 ? left : right).add(i, v);
    }
  std::vector<std::int64_t> message;
  left.append_limbs(1, 2, message);
  right.append_limbs(1, 2, message);
  ASSERT_EQ(message.size(), 4 * static_cast<std::size_t>(ExactSum::limbs));
  at_home.add_limbs(0, 2, message.data());
  at_home.add_limbs(0, 2, message.data() + 2 * ExactSum::limbs);
  const auto expected = whole.local_total(1, 2);
  const auto got = at_home.local_total();
  EXPECT_EQ(got[0], expected[0]);
  EXPECT_EQ(got[1], expected[1]);
  EXPECT_EQ(whole.local_total(1, 2)[1], whole.local_total()[2]);
}

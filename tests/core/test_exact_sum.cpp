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

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"

using kotml::random::Purpose;
using kotml::random::Stream;

TEST(Random, SameKeyGivesSameStream) {
  Stream a(42, Purpose::subsample, 7), b(42, Purpose::subsample, 7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(Random, PurposeIndexAndSeedSeparateStreams) {
  std::set<std::uint64_t> firsts;
  for (std::uint64_t seed : {0ULL, 1ULL, 42ULL})
    for (auto purpose : {Purpose::subsample, Purpose::splits, Purpose::batches})
      for (std::uint64_t index = 0; index < 50; ++index)
        firsts.insert(Stream(seed, purpose, index).next_u64());
  EXPECT_EQ(firsts.size(), 3u * 3u * 50u);
}

TEST(Random, PositionRestoresTheStream) {
  Stream a(3, Purpose::batches, 1);
  for (int i = 0; i < 17; ++i) a.next_u64();
  Stream b(3, Purpose::batches, 1, a.position());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(Random, UniformMomentsAndRange) {
  Stream s(1, Purpose::test_data, 0);
  const int n = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double u = s.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum2 += u * u;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(var, 1.0 / 12, 2e-3);
}

TEST(Random, NormalMoments) {
  Stream s(2, Purpose::test_data, 0);
  const int n = 200000;
  double sum = 0, sum2 = 0, sum4 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = s.normal();
    sum += z;
    sum2 += z * z;
    sum4 += z * z * z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 5 / std::sqrt(double(n)));
  EXPECT_NEAR(sum2 / n, 1.0, 0.02);
  EXPECT_NEAR(sum4 / n, 3.0, 0.1);
}

TEST(Random, BelowIsUnbiasedAndInRange) {
  Stream s(5, Purpose::test_data, 1);
  const std::uint64_t n = 7;
  std::vector<int> counts(n, 0);
  const int draws = 70000;
  for (int i = 0; i < draws; ++i) {
    const auto k = s.below(n);
    ASSERT_LT(k, n);
    ++counts[k];
  }
  for (int c : counts) EXPECT_NEAR(c, draws / 7.0, 5 * std::sqrt(draws / 7.0));
  EXPECT_EQ(s.below(1), 0u);
}

namespace {

// A kernel of its own: CUDA does not allow extended lambdas inside a TEST body
// (a private member function of the generated test class).
kotml::Vector<double> normals_drawn_in_a_kernel(int n) {
  kotml::Vector<double> device("draws", n);
  Kokkos::parallel_for("draw", Kokkos::RangePolicy<kotml::ExecSpace>(0, n), KOKKOS_LAMBDA(int i) {
    Stream s(9, Purpose::test_data, static_cast<std::uint64_t>(i));
    device(i) = s.normal();
  });
  return device;
}

}  // namespace

TEST(Random, StreamsWorkInsideKernels) {
  // The same stream drawn in a kernel and on the host gives the same numbers (to
  // a few ulps: a GPU's log and cos may round differently from the host's).
  const int n = 64;
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), normals_drawn_in_a_kernel(n));
  for (int i = 0; i < n; ++i) {
    Stream s(9, Purpose::test_data, static_cast<std::uint64_t>(i));
    EXPECT_DOUBLE_EQ(host(i), s.normal());
  }
}

// The device samplers against their exact moments and probabilities, and the
// property the scrna simulator relies on: a stream re-created at the same key
// redraws the same values, on the host and inside a kernel.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/samplers.hpp"

using kotml::random::Purpose;
using kotml::random::Stream;
namespace sample = kotml::data::sample;

namespace {

struct Moments {
  double mean = 0, variance = 0;
};

template <class Draw>
Moments moments(int n, Draw draw) {
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw();
    s += x;
    s2 += x * x;
  }
  Moments m;
  m.mean = s / n;
  m.variance = (s2 - s * m.mean) / (n - 1);
  return m;
}

double poisson_pmf(double lambda, int k) { return std::exp(k * std::log(lambda) - lambda - std::lgamma(k + 1.0)); }

}  // namespace

TEST(Samplers, GammaMomentsMatchShape) {
  const int n = 200000;
  for (const double shape : {0.3, 1.0, 2.5, 9.0}) {
    Stream s(7, Purpose::test_data, static_cast<std::uint64_t>(shape * 10));
    const auto m = moments(n, [&] { return sample::gamma(s, shape); });
    EXPECT_NEAR(m.mean, shape, 5 * std::sqrt(shape / n)) << "shape " << shape;
    EXPECT_NEAR(m.variance / shape, 1.0, 0.04) << "shape " << shape;
  }
}

TEST(Samplers, PoissonMomentsAndProbabilitiesOnBothBranches) {
  const int n = 200000;
  // Means below 10 use inversion, from 10 on transformed rejection.
  for (const double lambda : {0.2, 3.5, 9.99, 10.0, 37.0, 800.0}) {
    Stream s(11, Purpose::test_data, static_cast<std::uint64_t>(lambda * 100));
    std::vector<double> draws(n);
    for (auto& d : draws) d = static_cast<double>(sample::poisson(s, lambda));
    const auto m = moments(n, [&, i = 0]() mutable { return draws[i++]; });
    EXPECT_NEAR(m.mean, lambda, 5 * std::sqrt(lambda / n)) << lambda;
    EXPECT_NEAR(m.variance / lambda, 1.0, 0.03) << lambda;
    // Frequencies of the values near the mean against the exact pmf.
    const int lo = static_cast<int>(std::floor(lambda - std::sqrt(lambda)));
    const int hi = static_cast<int>(std::ceil(lambda + std::sqrt(lambda)));
    for (int k = std::max(lo, 0); k <= hi; ++k) {
      const double p = poisson_pmf(lambda, k);
      if (p * n < 2000) continue;
      double freq = 0;
      for (const double d : draws) freq += d == k;
      freq /= n;
      EXPECT_NEAR(freq, p, 5 * std::sqrt(p * (1 - p) / n)) << "lambda " << lambda << " k " << k;
    }
  }
}

TEST(Samplers, NegativeBinomialVarianceIsMeanPlusPhiMeanSquared) {
  const int n = 200000;
  for (const double mean : {0.5, 4.0, 60.0}) {
    for (const double phi : {0.0, 0.2, 1.0}) {
      Stream s(13, Purpose::test_data, static_cast<std::uint64_t>(mean * 1000 + phi * 10));
      const auto m = moments(n, [&] { return static_cast<double>(sample::negative_binomial(s, mean, phi)); });
      const double variance = mean + phi * mean * mean;
      EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(variance / n)) << mean << " " << phi;
      EXPECT_NEAR(m.variance / variance, 1.0, 0.05) << mean << " " << phi;
    }
  }
}

namespace {
struct DrawInKernel {
  kotml::Vector<std::int64_t> out;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    Stream s(5, Purpose::simulate, static_cast<std::uint64_t>(i));
    out(i) = sample::negative_binomial(s, 3.0 + i % 50, 0.3) + 1000 * sample::poisson(s, 20.0 + i % 7);
  }
};
void draw_in_kernel(const DrawInKernel& k, int n) {
  Kokkos::parallel_for("test::draw_in_kernel", Kokkos::RangePolicy<kotml::ExecSpace>(0, n), k);
}
}  // namespace

TEST(Samplers, KernelDrawsEqualHostDrawsOfTheSameStreams) {
  const int n = 4096;
  DrawInKernel k{kotml::Vector<std::int64_t>("draws", n)};
  draw_in_kernel(k, n);
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), k.out);
  for (int i = 0; i < n; ++i) {
    Stream s(5, Purpose::simulate, static_cast<std::uint64_t>(i));
    const auto expected = sample::negative_binomial(s, 3.0 + i % 50, 0.3) + 1000 * sample::poisson(s, 20.0 + i % 7);
    ASSERT_EQ(host(i), expected) << i;
  }
}

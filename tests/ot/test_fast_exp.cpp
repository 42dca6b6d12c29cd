// Accuracy of the vectorisable exp used by the Sinkhorn kernels, against the
// C library's exp evaluated in long double.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kotml/ot/fast_exp.hpp"

namespace {

using kotml::ot::fast_exp;

template <class T>
double ulp_error(T value, long double exact) {
  const long double ulp = std::nextafter(static_cast<T>(exact), std::numeric_limits<T>::infinity()) -
                          static_cast<T>(exact);
  return static_cast<double>(std::fabs(static_cast<long double>(value) - exact) / ulp);
}

template <class T>
double worst_ulp(T lo, T hi, int samples) {
  double worst = 0;
  for (int s = 0; s <= samples; ++s) {
    const T x = lo + (hi - lo) * static_cast<T>(s) / static_cast<T>(samples);
    worst = std::max(worst, ulp_error(fast_exp(x), std::exp(static_cast<long double>(x))));
  }
  return worst;
}

TEST(FastExp, DoubleWithinFourUlpOverTheWholeNormalRange) {
  EXPECT_LE(worst_ulp<double>(-708.0, 709.0, 400000), 4.0);
  // Dense sampling where Sinkhorn spends its time: shifted exponents in [-50, 0].
  EXPECT_LE(worst_ulp<double>(-50.0, 0.0, 400000), 4.0);
  EXPECT_LE(worst_ulp<double>(-1.0, 1.0, 100000), 4.0);
}

TEST(FastExp, FloatWithinFourUlpOverTheWholeNormalRange) {
  EXPECT_LE(worst_ulp<float>(-87.0f, 88.0f, 400000), 4.0);
  EXPECT_LE(worst_ulp<float>(-20.0f, 0.0f, 400000), 4.0);
}

TEST(FastExp, ExactAtZeroAndSpecialValues) {
  EXPECT_EQ(fast_exp(0.0), 1.0);
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  EXPECT_EQ(fast_exp(-std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_EQ(fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(fast_exp(-709.0), 0.0);   // flushed: below the normal range
  EXPECT_EQ(fast_exp(-1e300), 0.0);
  EXPECT_EQ(fast_exp(-90.0f), 0.0f);
  EXPECT_TRUE(std::isnan(fast_exp(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(fast_exp(std::numeric_limits<float>::quiet_NaN())));
  // Clamped above, finite.
  EXPECT_TRUE(std::isfinite(fast_exp(1e6)));
  EXPECT_NEAR(fast_exp(1e6) / std::exp(709.0), 1.0, 1e-15);
  EXPECT_TRUE(std::isfinite(fast_exp(100.0f)));
}

TEST(FastExp, MonotoneAcrossReductionBoundaries) {
  // Around x = (k + 1/2)·ln2 the reduction switches k; the result must not step back.
  for (int k = -60; k <= 60; ++k) {
    const double x = (k + 0.5) * 0.6931471805599453;
    double prev = fast_exp(x - 1e-12);
    for (int s = -50; s <= 50; ++s) {
      const double v = fast_exp(x + s * 2e-14);
      EXPECT_GE(v, prev * (1 - 4e-16)) << "x = " << x + s * 2e-14;
      prev = v;
    }
  }
}

}  // namespace

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kotml/core/math.hpp"

namespace km = kotml::kmath;

double reference_lse(const std::vector<double>& x) {
  double m = -INFINITY;
  for (double v : x) m = std::max(m, v);
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  return m + std::log(s);
}

TEST(Math, OnlineLogSumExpMatchesTwoPass) {
  const std::vector<std::vector<double>> cases = {
      {0.0}, {1.0, 2.0, 3.0}, {1000.0, 1000.0}, {-1000.0, -1001.0, -999.5},
      {3.0, -INFINITY, 2.0}, {-5.0, 700.0, -700.0, 10.0}};
  for (const auto& x : cases) {
    double m = -km::infinity<double>(), s = 0.0;
    for (double v : x) km::lse_accumulate(v, m, s);
    EXPECT_NEAR(km::lse_finish(m, s), reference_lse(x), 1e-12 * (1 + std::fabs(reference_lse(x))));
  }
}

TEST(Math, LogSumExpOfNothingIsMinusInfinity) {
  double m = -km::infinity<double>(), s = 0.0;
  km::lse_accumulate(-km::infinity<double>(), m, s);
  EXPECT_TRUE(std::isinf(km::lse_finish(m, s)));
  EXPECT_LT(km::lse_finish(m, s), 0);
}

TEST(Math, MinMaxClamp) {
  EXPECT_EQ(km::min(3, 4), 3);
  EXPECT_EQ(km::max(3.5, -1.0), 3.5);
  EXPECT_EQ(km::clamp(5.0, 0.0, 1.0), 1.0);
  EXPECT_EQ(km::clamp(-5.0, 0.0, 1.0), 0.0);
  EXPECT_TRUE(km::isnan(std::nan("")));
  EXPECT_FALSE(km::isfinite(km::infinity<float>()));
}

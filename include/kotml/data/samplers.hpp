#pragma once
// Device-callable samplers on top of random::Stream: gamma, Poisson, negative
// binomial. Each consumes a variable but deterministic number of words from the
// stream, so a kernel that re-creates a cell's stream regenerates the same values
// (the scrna simulator relies on that to size its CSR before filling it).

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"
#include "kotml/core/random.hpp"

namespace kotml::data::sample {

/// Gamma(shape, 1) by Marsaglia and Tsang's squeeze method (ACM TOMS 26(3), 2000);
/// shapes below one through Gamma(shape + 1) · U^(1/shape).
KOKKOS_INLINE_FUNCTION double gamma(random::Stream& s, double shape) {
  if (!(shape > 0.0)) return 0.0;
  double boost = 1.0;
  if (shape < 1.0) {
    boost = kmath::pow(s.uniform_open(), 1.0 / shape);
    shape += 1.0;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / kmath::sqrt(9.0 * d);
  while (true) {
    const double x = s.normal();
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = s.uniform_open();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return boost * d * v;
    if (kmath::log(u) < 0.5 * x2 + d * (1.0 - v + kmath::log(v))) return boost * d * v;
  }
}

/// Poisson(lambda): inversion by sequential search for small means; Hörmann's
/// transformed rejection with squeeze (PTRS, Insurance: Math. and Econ. 12, 1993)
/// from a mean of 10 on, which needs O(1) draws whatever the mean.
KOKKOS_INLINE_FUNCTION std::int64_t poisson(random::Stream& s, double lambda) {
  if (!(lambda > 0.0)) return 0;
  if (lambda < 10.0) {
    const double u = s.uniform();
    double p = kmath::exp(-lambda);
    double cumulative = p;
    std::int64_t k = 0;
    // The tail beyond k = 200 has probability below 1e-100 for lambda < 10.
    while (u > cumulative && k < 200) {
      ++k;
      p *= lambda / static_cast<double>(k);
      cumulative += p;
    }
    return k;
  }
  const double sqrt_lambda = kmath::sqrt(lambda);
  const double log_lambda = kmath::log(lambda);
  const double b = 0.931 + 2.53 * sqrt_lambda;
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double v_r = 0.9277 - 3.6224 / (b - 2.0);
  while (true) {
    const double u = s.uniform() - 0.5;
    const double v = s.uniform_open();
    const double us = 0.5 - kmath::fabs(u);
    const double k = kmath::floor((2.0 * a / us + b) * u + lambda + 0.43);
    if (us >= 0.07 && v <= v_r) return static_cast<std::int64_t>(k);
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (kmath::log(v) + kmath::log(inv_alpha) - kmath::log(a / (us * us) + b) <=
        -lambda + k * log_lambda - kmath::lgamma(k + 1.0))
      return static_cast<std::int64_t>(k);
  }
}

/// Negative binomial with the given mean and dispersion phi (variance
/// mean + phi·mean²), as a gamma–Poisson mixture; phi = 0 is Poisson.
KOKKOS_INLINE_FUNCTION std::int64_t negative_binomial(random::Stream& s, double mean, double phi) {
  if (!(mean > 0.0)) return 0;
  if (!(phi > 0.0)) return poisson(s, mean);
  const double shape = 1.0 / phi;
  return poisson(s, gamma(s, shape) * mean * phi);
}

}  // namespace kotml::data::sample

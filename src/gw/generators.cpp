#include "kotml/gw/generators.hpp"

#include <cmath>

#include "kotml/core/random.hpp"

namespace kotml::gw {
namespace {

constexpr double noise_scale = 0.05;

/// numpy's linspace: start + i·step, with the last point exactly `stop`.
double linspace(double start, double stop, std::int64_t n, std::int64_t i) {
  if (n == 1) return start;
  if (i == n - 1) return stop;
  return start + static_cast<double>(i) * ((stop - start) / static_cast<double>(n - 1));
}

Manifold curve(std::int64_t n, std::uint64_t seed, bool with_depth) {
  Manifold m;
  m.n = n;
  m.dims = with_depth ? 3 : 2;
  m.points.resize(static_cast<std::size_t>(n * m.dims));
  m.angle.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    random::Stream stream(seed, random::Purpose::test_data, static_cast<std::uint64_t>(i));
    const double r = linspace(0.3, 1.0, n, i);
    const double theta = linspace(0.0, 9.0, n, i);
    const double e0 = stream.normal() * noise_scale;
    const double e1 = stream.normal() * noise_scale;
    const double x = (r + e0) * std::cos(theta);
    const double y = (r + e1) * std::sin(theta);
    double* p = &m.points[static_cast<std::size_t>(i * m.dims)];
    if (with_depth) {
      p[0] = x;
      p[1] = stream.uniform();
      p[2] = y;
    } else {
      p[0] = x;
      p[1] = y;
    }
    m.angle[static_cast<std::size_t>(i)] = theta;
  }
  return m;
}

}  // namespace

Manifold spiral(std::int64_t n, std::uint64_t seed) { return curve(n, seed, false); }
Manifold swiss_roll(std::int64_t n, std::uint64_t seed) { return curve(n, seed, true); }

Matrix<double> device_points(const Manifold& cloud) {
  Matrix<double> x("kotml::gw::cloud_points", cloud.n, cloud.dims);
  auto h = Kokkos::create_mirror_view(x);
  for (std::size_t f = 0; f < cloud.points.size(); ++f) h.data()[f] = cloud.points[f];
  Kokkos::deep_copy(x, h);
  return x;
}

}  // namespace kotml::gw
